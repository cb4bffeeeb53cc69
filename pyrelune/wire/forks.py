"""Forks of a worker: a child a cell forks, or the kernel's snapshot, which is not one.

In `wire` because both of the worker's ends of shared state register handlers here:
the worker's own (`worker.channel`, `worker.liveprint`, `worker.flushfirst`) and the
output ring's writer.

The worker's own state has handlers for a child a cell forks (`os.fork`,
multiprocessing): there, its prints and events must not go through the
worker's shared stdout memory or wait for the session. A snapshot (see
`worker.snapshot`) is a fork too, but one that may become the worker: its
state must stay the worker's, so those handlers skip it. So does the handler
that runs before a fork: an interactive worker's waits there until the
session has read its output (a round trip on the control pipe), and the
worker forks a snapshot while idle, where that round trip would take the
session's next command as its answer.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

_snapshot = False  # a snapshot's fork is under way


def in_cell_child(handler: Callable[[], object]) -> None:
    """Call `handler` in every child forked from now on, but a snapshot."""
    os.register_at_fork(after_in_child=lambda: None if _snapshot else handler())


def before_cell_fork(handler: Callable[[], object]) -> None:
    """Call `handler` before every fork from now on, but a snapshot's (which flushes first
    itself, and must not wait for the session: see `worker.snapshot`)."""
    os.register_at_fork(before=lambda: None if _snapshot else handler())


def snapshot_fork() -> int:
    """`os.fork()`, for a snapshot: `in_cell_child` handlers do not run in the child."""
    global _snapshot
    _snapshot = True
    try:
        return os.fork()
    finally:
        _snapshot = False
