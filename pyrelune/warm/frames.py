"""What crosses the warm socket: requests' kinds and their length-prefixed sections.

Client to warm process, at once on connecting: 4 bytes naming the kind,
then for `RUN` its sections (`pack`: argv[0], umask, environment, sys.path,
the request). The forked child answers `COLD` + a reason (run it cold:
nothing ran), or `ACCEPT` + its pid; the client commits with `GO`, which
alone carries the caller's fds 0, 1, 2 and its current directory
(SCM_RIGHTS): until then either side may give up, so a cell never runs
twice, and a warm process that stalls before it accepted never holds the
host's pipes. The exit status comes in one byte at the end. Imported by the
client: it imports nothing.
"""

from __future__ import annotations

RUN = b"RUN2"
STATUS = b"STAT"
STOP = b"STOP"
KIND_SIZE = 4
FDS = 4  # stdin, stdout, stderr, current directory
SECTIONS = 5
#: The most a request's sections may claim together: more is no client of ours.
MAX_REQUEST = 1 << 31

COLD = b"C"
ACCEPT = b"A"
GO = b"G"

_LENGTH = 8


def pack(*sections: bytes) -> bytes:
    """Sections, each after its length."""
    return b"".join(len(s).to_bytes(_LENGTH, "big") + s for s in sections)


def unpack(data: bytes | bytearray, count: int) -> list[bytes] | None:
    """`count` sections from the front of `data`, or None while it holds fewer."""
    sections, at = [], 0
    for _ in range(count):
        if len(data) < at + _LENGTH:
            return None
        size = int.from_bytes(data[at : at + _LENGTH], "big")
        at += _LENGTH
        if len(data) < at + size:
            return None
        sections.append(bytes(data[at : at + size]))
        at += size
    return sections


def claimed(data: bytes | bytearray, count: int) -> int:
    """How many bytes the lengths read so far in `data` say its `count` sections take."""
    total, at = 0, 0
    for _ in range(count):
        if len(data) < at + _LENGTH:
            break
        size = int.from_bytes(data[at : at + _LENGTH], "big")
        total += _LENGTH + size
        at += _LENGTH + size
    return total


def environ_bytes(environ: dict[bytes, bytes]) -> bytes:
    """An environment as /proc/PID/environ spells it: `NAME=value` entries, NUL-separated."""
    return b"\0".join(key + b"=" + value for key, value in environ.items())


def paths_bytes(paths: list[str]) -> bytes:
    """File names (sys.path, say) NUL-separated, as the file system spells them."""
    return b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths)


def paths_of(data: bytes) -> list[str]:
    return [p.decode("utf-8", "surrogateescape") for p in data.split(b"\0")] if data else []


def environ_of(data: bytes) -> dict[bytes, bytes]:
    pairs = (entry.partition(b"=") for entry in data.split(b"\0") if entry)
    return {key: value for key, _, value in pairs}
