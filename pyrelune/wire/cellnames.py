"""The file names a Jupyter cell's code goes by: ipykernel's scheme, shared by both processes.

ipykernel names a cell `<temp>/ipykernel_<pid>/<hash>.py`, the hash being
MurmurHash2 (32-bit, x86) of the cell's source with a fixed seed; a debugger
front end (JupyterLab, VS Code) computes the same name from the text it shows,
to set breakpoints in it, and a SyntaxError's message names the file
(`invalid syntax (1248372771.py, line 2)`). The worker compiles cells under
these names (`worker.ipyshell.cellfiles`); the supervisor's debugger announces
them and writes the cells there (`protocols.debugger`). The folder is named
after the supervisor's pid, so that it outlives a worker that dies.
"""

from __future__ import annotations

import os
import tempfile

#: The hash's seed, as ipykernel's debugger protocol announces it (`debugInfo`'s `hashSeed`).
HASH_SEED = 0xC70F6907
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes, seed: int = HASH_SEED) -> int:
    """MurmurHash2, 32-bit, as Austin Appleby's x86 reference computes it (little-endian)."""
    length = len(data)
    h = (seed ^ length) & _MASK
    whole = length - length % 4
    for at in range(0, whole, 4):
        k = int.from_bytes(data[at:at + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = data[whole:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    return h ^ (h >> 15)


def folder(supervisor: int) -> str:
    """Where the cells of the kernel whose supervisor is `supervisor` (a pid) are said to be."""
    return os.path.join(tempfile.gettempdir(), f"pyrelune_{supervisor}")


def cell_file(supervisor: int, source: str) -> str:
    return os.path.join(folder(supervisor), f"{murmur2(source.encode())}.py")
