"""Waiting for a pipe that is about to be written, without falling asleep.

A process that sleeps in `select` or `read` and is woken by another costs
these 2-core virtual machines 20-40 us for the wake-up, and it then runs with
cold caches, which together cost as much as running a small cell. When the
answer is due within a few hundred microseconds (the worker's events right
after a cell was sent, the next request of a host running cells back to
back, the session's answer to a display), polling for it first is faster.
When it does not come, at most `SPIN` seconds of CPU are spent before the
usual sleep, and a process with work on the same CPU goes first meanwhile.
"""

from __future__ import annotations

from os import sched_yield
from select import select
from time import perf_counter

#: The longest a wait polls before it sleeps.
SPIN = 0.0003


def poll(fds: list[int], seconds: float = SPIN) -> list[int]:
    """The fds of `fds` that are readable within `seconds`; empty if none became so."""
    end = perf_counter() + seconds
    while not (ready := select(fds, [], [], 0)[0]):
        if perf_counter() > end:
            break
        sched_yield()  # a process that has work on this CPU goes first
    return ready
