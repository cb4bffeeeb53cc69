"""What crosses the warm socket: requests' kinds and their length-prefixed sections.

Client to warm process: 4 bytes naming the kind, sent with the caller's fds
0, 1, 2 and its current directory (SCM_RIGHTS) for `RUN`; then the sections
(`pack`). The forked child answers `COLD` + a reason (run it cold: nothing
ran), or `ACCEPT` + its pid; the client commits with `GO` (until then either
side may give up, so a cell never runs twice), and gets the exit status in
one byte at the end. Imported by the client: it imports nothing.
"""

from __future__ import annotations

RUN = b"RUN1"
STATUS = b"STAT"
STOP = b"STOP"
KIND_SIZE = 4
FDS = 4  # stdin, stdout, stderr, current directory

COLD = b"C"
ACCEPT = b"A"
GO = b"G"

_LENGTH = 8


def pack(*sections: bytes) -> bytes:
    """Sections, each after its length."""
    return b"".join(len(s).to_bytes(_LENGTH, "big") + s for s in sections)


def unpack(data: bytes, count: int) -> list[bytes] | None:
    """`count` sections from the front of `data`, or None while it holds fewer."""
    sections, at = [], 0
    for _ in range(count):
        if len(data) < at + _LENGTH:
            return None
        size = int.from_bytes(data[at : at + _LENGTH], "big")
        at += _LENGTH
        if len(data) < at + size:
            return None
        sections.append(data[at : at + size])
        at += size
    return sections


def environ_bytes(environ: dict[bytes, bytes]) -> bytes:
    """An environment as /proc/PID/environ spells it: `NAME=value` entries, NUL-separated."""
    return b"\0".join(key + b"=" + value for key, value in environ.items())


def environ_of(data: bytes) -> dict[bytes, bytes]:
    pairs = (entry.partition(b"=") for entry in data.split(b"\0") if entry)
    return {key: value for key, _, value in pairs}
