"""The event-loop I/O layer of the engine: a kernel whose worker a loop watches (rpc, Jupyter).

The loop is `loop.reactor.Reactor` for the rpc kernel over a pipe and
for the Jupyter kernel, and asyncio's for rpc over WebSocket: this asks of it
only what `Loop` offers.

The loop reads the transport too, so output streams to the host while the
cell runs and an interrupt is read while it runs. The worker's pipes are
watched with `add_reader`; the session's clock becomes timers (a pause of a
trickle's reading, the kill of an unanswered interrupt). Events go to one
callback, in order, a Done once the kernel is ready for the next cell.
While the events cannot be passed on (`hold`: the client does not read), the
pipes are not read either, and the cell blocks on its own output.
"""

from __future__ import annotations

import time

from pyrelune import spin
from pyrelune.supervisor.kernel import Driver, NoWorker
from pyrelune.supervisor.session import COALESCE, Kill
from pyrelune.wire.events import Done, Stream

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from pyrelune.loop.reactor import Loop, TimerHandle
    from pyrelune.supervisor.kernel import Kernel
    from pyrelune.supervisor.link import WorkerLink
    from pyrelune.wire.events import Event

#: Without a pidfd to say the worker exited, look this often.
_EXIT_POLL = 0.1
#: A running cell's stdout ring (see `wire.ring`) is looked at this soon
#: after it held output, and then ever less often, down to `_RING_IDLE`: a
#: line printed after a silence is seen within that, a flood is read in
#: rounds of a few milliseconds' worth, and the worker never pays to wake us.
_RING_SOON = COALESCE
_RING_IDLE = 0.025


class LoopDriver(Driver):
    """Passes `kernel`'s events to `on_event` as they happen, on `loop`.

    The mode carries out commands with `kernel.apply`; the kernel tells this
    driver what it started, interrupted or is replacing (see `Driver`).
    """

    def __init__(self, loop: Loop, kernel: Kernel, on_event: Callable[[Event], None],
                 on_lost: Callable[[], None] | None = None) -> None:
        """`on_lost`: called as a worker goes (dies, or is replaced), with whatever its
        threads ran beside the cell (a Jupyter kernel's subshells)."""
        super().__init__()
        self.loop = loop
        self._kernel = kernel
        self._on_event = on_event
        self._on_lost = on_lost
        self._watched: set[int] = set()
        self._paused: set[int] = set()  # capture pipes left to fill for a moment
        self._held = False  # no descriptor is read: see `hold`
        self._resume_timer: TimerHandle | None = None
        self._poll_timer: TimerHandle | None = None
        self._ring_timer: TimerHandle | None = None
        self._ring_wait = _RING_SOON
        kernel.driver = self
        self._watch()

    # -- what the kernel tells ---------------------------------------------------

    def started(self) -> None:
        """Watch what the kernel just started, and read its first events at once."""
        self._tell()
        self._catch_quick_end(self._watch())

    def interrupted(self, link: WorkerLink) -> None:
        self._arm_escalation(link)

    def tell(self, event: Event) -> None:
        self._on_event(event)

    def replacing(self) -> None:
        """Stop watching the worker about to go: its descriptor numbers will be reused."""
        if self._on_lost is not None:
            self._on_lost()
        for fd in self._watched:
            self.loop.remove_reader(fd)
        self._watched = set()
        self._paused = set()
        for timer in (self._resume_timer, self._ring_timer):
            if timer is not None:
                timer.cancel()
        self._resume_timer = self._ring_timer = None

    def hold(self) -> None:
        """Read nothing from the worker until `release`: its pipes fill, and the cell waits.

        For a client that does not read: the kernel must not buffer what it cannot send.
        """
        self._held = True
        self._watch()

    def release(self) -> None:
        self._held = False
        self._watch()

    # -- the clock -----------------------------------------------------------------

    def _arm_escalation(self, link: WorkerLink) -> None:
        kill_at = link.session.kill_at(link.heard())
        if kill_at is not None:
            self.loop.call_at(kill_at, self._escalate, link)

    def _escalate(self, link: WorkerLink) -> None:
        """An interrupt's grace period is over: kill the cell if it is still running."""
        if link is not self._kernel.link or link.session.finished:
            return
        due = link.session.due(time.monotonic(), link.heard())
        if isinstance(due, Kill):
            self._deliver(link.kill(due.error))
        else:  # it raised KeyboardInterrupt: more time
            self._arm_escalation(link)

    # -- the worker's descriptors ------------------------------------------------

    def _watch(self) -> list[int]:
        """Follow the worker's descriptors as they open and close; all of them are returned."""
        link = self._kernel.link
        fds = link.fds()
        wanted = set() if self._held else set(fds) - self._paused
        for fd in self._watched - wanted:
            self.loop.remove_reader(fd)
        for fd in wanted - self._watched:
            self.loop.add_reader(fd, self._readable, fd)
        self._watched = wanted
        if link.closed:
            return fds  # no worker (none could start) until the next request
        if link.worker.exit_fd < 0 and self._poll_timer is None:
            self._poll_timer = self.loop.call_later(_EXIT_POLL, self._poll)
        if link.ring_fd >= 0:
            if link.session.finished:  # a look between cells would only cost the next one
                if self._ring_timer is not None:
                    self._ring_timer.cancel()
                    self._ring_timer = None
            elif self._ring_timer is None:
                self._ring_timer = self.loop.call_later(self._ring_wait, self._look_at_ring)
        return fds

    def _poll(self) -> None:
        self._poll_timer = None
        if self._held:
            self._watch()  # look again later
        else:
            self._readable(-1)

    def _look_at_ring(self) -> None:
        """Read what the running cell printed into the ring since the last look (`_RING_SOON`)."""
        self._ring_timer = None
        link = self._kernel.link
        if link.session.finished:
            return
        if link.ring_fd in self._watched and link.ring_unread():
            self._ring_wait = _RING_SOON
            self._readable(link.ring_fd)  # which looks again (`_watch`)
            return
        self._ring_wait = min(self._ring_wait * 2, _RING_IDLE)
        self._watch()

    def _readable(self, fd: int) -> None:
        link = self._kernel.link
        if link.closed:
            return
        output = self._deliver(link.read([fd]))
        if link is not self._kernel.link:
            return  # replaced: the new worker's pipes are watched from the start
        if link.session.finished and (status := link.worker.reap(block=False)) is not None:
            # It died between cells: its exit would stay readable for ever. All it wrote
            # goes out now (its pipes, its ring, a thread's text on its event pipe); its
            # death is told with the next cell.
            self._deliver(link.read(link.fds()))
            try:
                self._kernel.replace_lost(status)
            except NoWorker:
                pass  # told with the next request
            self._watch()
            return
        now = time.monotonic()
        link.session.took(output, now)
        if link.session.paused(now):
            self._paused.update(self._watched & link.capture_fds())
            self._watch()
            if self._resume_timer is None:
                self._resume_timer = self.loop.call_later(COALESCE, self._resume)

    def _resume(self) -> None:
        self._resume_timer = None
        self._paused.clear()
        self._watch()

    def _catch_quick_end(self, fds: list[int]) -> None:
        """Read a cell's first events (on `fds`, the worker's) before the loop sleeps: a short
        cell is over by then."""
        if ready := spin.poll(fds):
            self._deliver(self._kernel.link.read(ready))

    def _deliver(self, events: Iterable[Event]) -> int:
        """Pass the events on; how many characters of stream text there were."""
        output = 0
        for event in events:
            if isinstance(event, Stream):
                output += len(event.text)
            elif isinstance(event, Done):
                done = self._kernel.settle(event)
                if done is None:  # sent again, to a fresh worker: the old one's events are over
                    self._tell()
                    break
                event = done
            self._on_event(event)
        self._watch()
        return output

    def _tell(self) -> None:
        """What the kernel has to tell ahead of the next cell's output (see `Kernel.take_told`)."""
        if told := self._kernel.take_told():
            self._deliver(told)
