"""The supervisor's I/O with one worker: its pipes read into events, the session's steps done.

Both drivers (`blocking`, `evented`) wait their own way and then call `read`
with what is readable; this reads it without ever blocking, feeds the
session, writes the answers the worker waits for and carries out a kill.
"""

from __future__ import annotations

import _signal
import os
import select
import time

from pyrelune.supervisor.process import describe_exit
from pyrelune.supervisor.session import GRACE, Kill, Send, Session
from pyrelune.wire.events import WORKER_DIED, CellError, Done, Stream, message_limit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from pyrelune.supervisor.capture import CapturedRing
    from pyrelune.supervisor.process import WorkerProcess
    from pyrelune.wire.events import Event

_EVENT_READ = 1 << 16
#: Told after a cell that wrote into its stdout's shared memory (see `wire.ring`).
RING_DAMAGED = ("pyrelune: this cell wrote into the memory its stdout goes through; some of "
                "what it printed may be missing (the next cell starts with that memory afresh)\n")


class WorkerLink:
    """One worker process, the session deciding about it, and a wake-up pipe."""

    def __init__(self, worker: WorkerProcess, cap: int) -> None:
        self.worker = worker
        self.session = Session(message_limit(cap), worker.key)
        self._closed = False
        self._ring: CapturedRing | None = None
        if worker.ring is not None:
            from pyrelune.supervisor.capture import CapturedRing

            self._ring = CapturedRing(worker.ring)
        os.set_blocking(worker.event_fd, False)
        # interrupt() writes here so that a driver's wait notices it at once,
        # even when called from a signal handler or another thread.
        self.wake_r, self._wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self._wake_w, False)

    @property
    def closed(self) -> bool:
        return self._closed

    def fds(self) -> list[int]:
        """What to wait on: capture pipes (and ring), event pipe, exit notifier; none once
        closed."""
        if self._closed:
            return []
        w = self.worker
        fds = [s.fd for s in (w.stdout, w.stderr) if not s.closed]
        if self._ring is not None:
            fds.append(self._ring.fd)
        if self.session.events_open:
            fds.append(w.event_fd)
        if w.exit_fd >= 0:
            fds.append(w.exit_fd)
        return fds

    def capture_fds(self) -> set[int]:
        fds = {self.worker.stdout.fd, self.worker.stderr.fd}
        if self._ring is not None:
            fds.add(self._ring.fd)
        return fds

    @property
    def ring_fd(self) -> int:
        """The ring's doorbell (-1: no ring): reading it as ready reads the ring."""
        return self._ring.fd if self._ring is not None else -1

    def ring_unread(self) -> bool:
        """Whether the worker's ring holds output not read yet."""
        return self._ring is not None and self._ring.ring.unread()

    def _written(self) -> int:
        """How far the ring was written before the pipes are read: only that part may follow them.

        Whatever reached the pipes before a print was there when the ring was
        looked at; what reaches them after it waited for the ring to be read
        first (see `worker.liveprint`).
        """
        return self._ring.ring.written() if self._ring is not None else 0

    def _from_ring(self, upto: int) -> Iterator[Stream]:
        if self._ring is not None and (chunk := self._ring.read(upto)) is not None:
            yield chunk

    def heard(self) -> bool:
        """Whether the cell raised the KeyboardInterrupt it was sent (kernels say so)."""
        interrupts = self.worker.interrupts
        return interrupts is not None and interrupts.heard()

    def drain(self) -> Iterator[Stream]:
        """Every byte the capture pipes hold right now.

        One select asks both pipes: most events come with no output pending,
        and a read that finds nothing costs a syscall and an exception each.
        """
        upto = self._written()
        streams = [s for s in (self.worker.stdout, self.worker.stderr) if not s.closed]
        if streams and (ready := select.select(streams, [], [], 0)[0]):
            for stream in streams:
                if stream in ready:
                    while (chunk := stream.read_available()) is not None:
                        yield chunk
        yield from self._from_ring(upto)

    def read(self, ready: Iterable[int]) -> Iterator[Event]:
        """Turn whatever `ready` says is readable into events, never blocking."""
        ready = set(ready)
        w = self.worker
        if self._ring is not None and self._ring.fd in ready:
            rung = self._ring.ring.hear()
            yield from self.drain()  # the pipes too: what they hold came before
            if rung:
                self._ring.ring.unstick()
        else:
            for stream in (w.stdout, w.stderr):
                if stream.fd in ready and (chunk := stream.read_available()) is not None:
                    yield chunk
        exited = w.exit_fd in ready or (w.exit_fd < 0 and w.reap(block=False) is not None)
        if w.event_fd in ready or exited:
            # After an exit, read the event pipe first: a Done may still sit in it.
            yield from self._read_events()
        if exited and not self.session.finished:
            status = w.reap(block=True) or 0
            yield from self.drain()
            yield self.session.end(CellError(WORKER_DIED, "", describe_exit(status)))

    def _read_events(self) -> Iterator[Event]:
        """The events in the pipe, each after the output the cell wrote before it.

        One drain per read is enough: the worker waits for an answer after
        every event but the final result, which only Done follows (and which
        it writes together with Done), so the output pending now all came
        before the events just read.
        """
        session = self.session
        while session.events_open:
            try:
                data = os.read(self.worker.event_fd, _EVENT_READ)
            except BlockingIOError:
                return
            if not data:
                session.events_ended()
                return
            yield from self.drain()
            for step in session.feed(data):
                if isinstance(step, Send):
                    self.send(step.line)
                elif isinstance(step, Kill):
                    yield from self.kill(step.error)
                    return
                else:
                    if isinstance(step, Done) and self._ring is not None and (
                            self._ring.ring.settle()):  # all it wrote before this is taken
                        yield Stream("stderr", RING_DAMAGED)
                    yield step
            if len(data) < _EVENT_READ:
                return  # the pipe is empty: no need for a read that says so

    def send(self, line: bytes) -> None:
        """Write one command line to the worker; a dead worker is noticed elsewhere."""
        try:
            os.write(self.worker.control_fd, line)
        except BrokenPipeError:
            pass

    def fresh_ring(self, always: bool = False) -> None:
        """Before the next command: a damaged stdout ring (`always`: any) starts afresh.

        Between cells only: the worker starts the same lap before it reads on.
        """
        if self._ring is not None and (lap := self._ring.restart(always)) is not None:
            from pyrelune.wire.commands import FreshRing, to_wire

            self.send(to_wire(FreshRing(lap)))

    def begin(self, timeout: float | None = None, grace: float = GRACE,
              started: float | None = None) -> None:
        """A new cell starts: the session's clock, and no interrupt meant for an earlier one.

        `started`: when the deadline's clock started (a `time.monotonic()`
        value), if before now: a warm cell's counts from its launcher's start.
        """
        self.session.begin(time.monotonic() if started is None else started, timeout, grace)
        if self.worker.interrupts is not None:
            self.worker.interrupts.forget()

    def interrupt(self, grace: float = GRACE, patience: float | None = None) -> None:
        """SIGINT to the cell and its children, the kill armed (see `Session.interrupted`).

        A kernel's worker is told which cell the SIGINT is for (see `interrupts`).
        """
        if self._closed:
            return  # a signal handler's call while the kernel replaces this worker
        if self.worker.interrupts is not None:
            self.worker.interrupts.aim(self.session.cell)
        self.worker.signal_group(_signal.SIGINT)
        self.session.interrupted(time.monotonic(), grace, patience)
        try:
            os.write(self._wake_w, b"!")
        except BlockingIOError:
            pass  # already full of wake-ups

    def kill(self, error: CellError) -> Iterator[Event]:
        """Kill the worker and all it started; what they wrote, then Done with `error`.

        No Done when the cell had ended already (a foreign line read after its
        Done): the worker's death is then told as one between cells.
        """
        self.worker.signal_group(_signal.SIGKILL)
        self.worker.reap(block=True)
        yield from self.drain()
        if not self.session.finished:
            yield self.session.end(error)

    def close(self) -> None:
        """End the worker with everything it started; release the descriptors.

        Marked closed first: an `interrupt()` from a signal handler, which may
        run between any two lines here, must not signal a reaped process
        group or write to a descriptor number that a new pipe may reuse.
        """
        if self._closed:
            return
        self._closed = True
        self.worker.close()
        for fd in (self.wake_r, self._wake_w):
            os.close(fd)
