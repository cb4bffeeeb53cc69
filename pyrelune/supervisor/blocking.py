"""The blocking driver: one cell's events through `select`, for oneshot, the lines kernel and
`pyrelune run` of a notebook.

`supervise` is all a oneshot run needs; `Kernel.events` uses `run`.

It waits on the worker's pipes and the link's wake-up pipe until the
session's next moment (`Session.wake_at`), reads what came, and does what
the clock calls for (`Session.due`).
"""

from __future__ import annotations

import _signal
import os
import select
import time

from pyrelune.supervisor.link import WorkerLink
from pyrelune.supervisor.session import LINGER, Kill
from pyrelune.wire.events import Done, Stream

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from pyrelune.supervisor.process import WorkerProcess
    from pyrelune.wire.events import Event

#: Without a pidfd to say the worker exited, look this often.
_EXIT_POLL = 0.05
#: How often a wait with a `check` calls it (a kernel asking whether its host is gone).
CHECK_EVERY = 1.0


def supervise(
    worker: WorkerProcess, timeout: float | None, grace: float, cap: int,
    started: float | None = None,
) -> Iterator[Event]:
    """A oneshot cell's events through its Done, then the output still in flight.

    Once the cell is over, so is every process it left behind in its group:
    they are killed, and what they wrote in time is kept (see `linger`).
    `grace`: from the deadline's interrupt to the kill (see `Session.begin`);
    `cap`: the output cap the worker cuts its events to; `started`: when the
    deadline's clock started, if not now (see `WorkerLink.begin`).
    """
    link = WorkerLink(worker, cap)
    try:
        link.begin(timeout, grace, started)
        yield from run(link)
        worker.signal_group(_signal.SIGKILL)
        yield from linger(link)
    finally:
        link.close()


def run(link: WorkerLink, soon: bool = False,
        check: Callable[[], None] | None = None) -> Iterator[Event]:
    """Events of the link's current cell, through its Done.

    `soon`: the worker was idle and the cell was just sent to it, so its
    first events may be only microseconds away: poll before sleeping (see
    `spin`). A oneshot worker still starting up gains nothing from it.
    `check`: called at least every `CHECK_EVERY` seconds while the cell runs;
    it raises to abandon the cell (a kernel whose host has gone).
    """
    session = link.session
    streams = link.capture_fds()
    first = soon
    next_check = time.monotonic() + CHECK_EVERY
    while True:
        now = time.monotonic()
        wait = None
        fds = link.fds()
        if session.timed(now):  # a deadline, an interrupt or a pause: the clock has a say
            heard = link.heard()
            due = session.due(now, heard)
            if isinstance(due, Kill):
                yield from link.kill(due.error)
                return
            if due is not None:  # the deadline's Interrupt
                link.interrupt()
            wake = session.wake_at(now, heard)
            wait = None if wake is None else max(0.0, wake - now)
            if session.paused(now):
                fds = [fd for fd in fds if fd not in streams]
        if link.worker.exit_fd < 0:
            wait = _EXIT_POLL if wait is None else min(wait, _EXIT_POLL)
        if check is not None:
            if now >= next_check:
                check()
                next_check = now + CHECK_EVERY
            wait = next_check - now if wait is None else min(wait, next_check - now)
        fds.append(link.wake_r)
        ready = []
        if first:
            from pyrelune import spin

            ready = spin.poll(fds)
            first = False
        if not ready:
            ready = select.select(fds, [], [], wait)[0]
        if link.wake_r in ready:
            drain(link.wake_r)
        output = 0
        for event in link.read(ready):
            yield event
            if isinstance(event, Done):
                return
            if isinstance(event, Stream):
                output += len(event.text)
        session.took(output, time.monotonic())


def linger(link: WorkerLink) -> Iterator[Stream]:
    """Output still in flight after the cell ended, for at most `LINGER` seconds."""
    end = time.monotonic() + LINGER
    w = link.worker
    while not (w.stdout.closed and w.stderr.closed):
        left = end - time.monotonic()
        fds = [s.fd for s in (w.stdout, w.stderr) if not s.closed]
        if left <= 0 or not select.select(fds, [], [], left)[0]:
            return
        yield from link.drain()


def drain(fd: int) -> bool:
    """Empty the nonblocking wake-up pipe `fd`; whether anything was in it."""
    found = False
    try:
        while os.read(fd, 512):
            found = True
    except BlockingIOError:
        pass
    return found
