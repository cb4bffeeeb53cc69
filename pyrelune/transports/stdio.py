"""Standard input and output as a transport, at the file-descriptor level.

The host's stdout is the protocol channel. Everything here writes with
`os.write` on the descriptor itself, so no Python buffer sits between the
runtime and the host.
"""

from __future__ import annotations

import os


def read_all(fd: int = 0) -> bytes:
    """Everything on `fd` until EOF.

    Read before anything else, even a failure: a host that writes the whole
    request before reading (Vix Note) dies of SIGPIPE if we exit first.
    """
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def write_all(data: bytes, fd: int = 1) -> None:
    """Write every byte of `data` to `fd`."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
