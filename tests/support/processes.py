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


#: Every snapshot `snapshots` has seen: a worker among them was woken from one.
_SEEN: set[int] = set()


def snapshots(kernel: int) -> set[int]:
    """The pids of the kernel `kernel`'s snapshots of its namespace: its workers' children in
    process groups of their own (some may have ended: superseded, or over their budget)."""
    found: set[int] = set()
    for worker in children(kernel):
        found |= _own_snapshots(worker)
    _SEEN.update(found)
    return found


def _own_snapshots(worker: int) -> set[int]:
    found = set()
    for pid in children(worker):
        try:
            if os.getpgid(pid) == pid:
                found.add(pid)
        except ProcessLookupError:
            continue
    return found


def kept(kernel: int, cell: Callable[[], T]) -> T:
    """What `cell()` (a cell run to its end in the kernel `kernel`) gives, once the kernel has
    forked that cell's snapshot, which it does when idle after it."""
    snapshots(kernel)
    for worker in [w for w in children(kernel) if w in _SEEN]:
        # A worker woken from a snapshot forks one of itself at once: let it come before
        # `before` is read, or it would pass for the snapshot of `cell`.
        wait_until(lambda worker=worker: bool(_own_snapshots(worker)))  # type: ignore[misc]
    before = snapshots(kernel)
    given = cell()
    assert wait_until(lambda: bool(snapshots(kernel) - before)), "no snapshot was taken"
    # The one seen may be of the cell before (forked while idle just as `cell` was sent):
    # the worker forks `cell`'s own once idle a few milliseconds, replacing it. Wait until
    # the kernel's snapshots stay as they are for a while: the newest is then `cell`'s.
    seen = [snapshots(kernel)]

    def settled() -> bool:
        now = snapshots(kernel)
        same, seen[0] = now == seen[0], now
        return same

    wait_until(settled, interval=0.1)
    return given
