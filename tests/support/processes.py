"""Whether a process a cell started is still around."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from support.poll import wait_until

T = TypeVar("T")


def running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def gone_soon(pid: int, within: float = 10.0) -> bool:
    """Wait (generously: a noisy machine) for `pid` to end; True when it did."""
    return wait_until(lambda: not running(pid), within)


def children(pid: int) -> list[int]:
    """`pid`'s children, zombies among them, whichever of its threads forked them."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
    return found


def snapshots(kernel: int) -> set[int]:
    """The pids of the kernel `kernel`'s snapshots of its namespace: its workers' children in
    process groups of their own (some may have ended: superseded, or over their budget)."""
    found: set[int] = set()
    for worker in children(kernel):
        for pid in children(worker):
            try:
                if os.getpgid(pid) == pid:
                    found.add(pid)
            except ProcessLookupError:
                continue
    return found


def process_name(pid: int) -> bytes:
    """What /proc/<pid>/comm says (b"" once it is gone)."""
    try:
        return Path(f"/proc/{pid}/comm").read_bytes().rstrip(b"\n")
    except (FileNotFoundError, ProcessLookupError):
        return b""


def kept(kernel: int, cell: Callable[[], T], holds: str | Callable[[T], str]) -> T:
    """What `cell()` (a cell run to its end in the kernel `kernel`) gives, once the kernel has
    forked the snapshot of the namespace it left: a new snapshot named for the cell it holds,
    `holds` (given, or made of what `cell()` gave): its file name without angle brackets,
    such as `In[3]` or `cell 2` (see docs/limits.md, Snapshots)."""
    before = snapshots(kernel)
    given = cell()
    name = holds if isinstance(holds, str) else holds(given)
    wanted = f"snap {name}".encode()[:15]
    assert wait_until(lambda: any(process_name(pid) == wanted
                                  for pid in snapshots(kernel) - before)), (
        f"no snapshot of {name} was taken")
    return given
