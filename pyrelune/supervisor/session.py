"""The session: the supervisor's side of one worker process.

It reads the worker's capture pipes and event pipe without ever blocking on
one of them, enforces the deadline (SIGINT first, SIGKILL to the whole
process group after a grace period), and notices a worker that dies.
"""

from __future__ import annotations

import _signal
import os
import select
import time

from pyrelune import fastjson
from pyrelune.supervisor.process import WorkerProcess, describe_exit
from pyrelune.transports.stdio import LineBuffer
from pyrelune.wire.events import CellError, Display, Done, Stream, from_wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

    from pyrelune.wire.events import Event

#: Between the interrupt and the kill: a cell may clean up, but not for long.
GRACE = 0.4
#: A kernel's cell that did raise its KeyboardInterrupt (its `finally` and
#: `except` blocks are running) may take this long from the interrupt: well
#: within the 2 s after which the lines host kills the whole kernel.
PATIENCE = 1.2
#: After the cell is over, how long stragglers may still deliver output.
LINGER = 0.05
_CONTINUE = b'{"op": "continue"}\n'
_EVENT_READ = 1 << 16
#: How long a trickle of output (less than `_COALESCE_BELOW` characters read
#: at once) may gather in the capture pipes unread (see `Session.trickle`).
COALESCE = 0.002
_COALESCE_BELOW = 1 << 15


class Session:
    """Reads one worker's output and events, in the order the cell made them."""

    def __init__(self, worker: WorkerProcess) -> None:
        self.worker = worker
        self.finished = False  # the current cell's Done has been read
        self.cell = 0  # the number of the current cell (or reset), counted from 1
        self._closed = False
        self._kill_at: float | None = None  # when an unanswered interrupt turns into SIGKILL
        self._patient_until: float | None = None  # the same, once the cell raised it
        self._timeout: float | None = None  # set once the cell's deadline has passed
        self._lines = LineBuffer()  # the event pipe, cut into messages
        self._events_open = True
        os.set_blocking(worker.event_fd, False)
        # interrupt() writes here so that a wait in run() notices it at once,
        # even when called from a signal handler or another thread.
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    def fds(self) -> list[int]:
        """What to wait on: capture pipes, event pipe, exit notifier."""
        w = self.worker
        fds = [s.fd for s in (w.stdout, w.stderr) if not s.closed]
        if self._events_open:
            fds.append(w.event_fd)
        if w.exit_fd >= 0:
            fds.append(w.exit_fd)
        return fds

    def drain(self) -> Iterator[Stream]:
        """Every byte the capture pipes hold right now.

        One select asks both pipes: most events come with no output pending,
        and a read that finds nothing costs a syscall and an exception each.
        """
        streams = [s for s in (self.worker.stdout, self.worker.stderr) if not s.closed]
        if not streams or not (ready := select.select(streams, [], [], 0)[0]):
            return
        for stream in streams:
            if stream in ready:
                while (chunk := stream.read_available()) is not None:
                    yield chunk

    def read(self, ready: Iterable[int]) -> Iterator[Event]:
        """Turn whatever `ready` says is readable into events, never blocking."""
        ready = set(ready)
        w = self.worker
        for stream in (w.stdout, w.stderr):
            if stream.fd in ready and (chunk := stream.read_available()) is not None:
                yield chunk
        exited = w.exit_fd in ready or (w.exit_fd < 0 and w.reap(block=False) is not None)
        if w.event_fd in ready or exited:
            # After an exit, read the event pipe first: a Done may still sit in it.
            yield from self._read_events()
        if exited and not self.finished:
            yield from self._died()

    def _read_events(self) -> Iterator[Event]:
        """The events in the pipe, each after the output the cell wrote before it.

        One drain per read is enough: the worker waits for an answer after
        every event but the final result, which only Done follows (and which
        it writes together with Done), so the output pending now all came
        before the events just read.
        """
        while self._events_open:
            try:
                data = os.read(self.worker.event_fd, _EVENT_READ)
            except BlockingIOError:
                return
            if not data:
                self._events_open = False
                return
            yield from self.drain()
            self._lines.feed(data)
            while (line := self._lines.pop()) is not None:
                try:
                    message = _message(line)
                    event = None if message.get("t") == "sync" else from_wire(message)
                except ValueError as exc:
                    yield from self._stop(exc)
                    return
                if event is None:
                    # The worker switches between stdout and stderr: what it
                    # wrote before is drained above, so it may go on.
                    self.send(_CONTINUE)
                    continue
                self.finished = isinstance(event, Done)
                yield event
                if isinstance(event, Display) and not event.is_result and message.get("wait", True):
                    self.send(_CONTINUE)  # the worker waits for it (Channel.ask)
            if len(data) < _EVENT_READ:
                return  # the pipe is empty: no need for a read that says so

    def _stop(self, problem: ValueError) -> Iterator[Event]:
        """The event pipe carried a line the worker cannot have sent: the cell wrote it.

        The conversation cannot go on (the worker may wait for an answer to a
        message it did send), so the worker is killed, as if it had died.
        """
        self._events_open = False
        yield from self._kill(CellError(
            "worker_died", "", "worker stopped: its event pipe carried a line that is not "
            f"one of its messages ({str(problem)[:120]})"))

    def _died(self) -> Iterator[Event]:
        status = self.worker.reap(block=True)
        assert status is not None
        yield from self.drain()
        self.finished = True
        yield Done(CellError("worker_died", "", describe_exit(status)))

    def send(self, line: bytes) -> None:
        """Write one command line to the worker; a dead worker is noticed elsewhere."""
        try:
            os.write(self.worker.control_fd, line)
        except BrokenPipeError:
            pass

    def begin(self) -> None:
        """Forget the previous cell's end and interrupts: a new cell starts."""
        self.finished = False
        self.cell += 1
        self._kill_at = self._patient_until = None
        self._timeout = None
        if self.worker.interrupts is not None:
            self.worker.interrupts.forget()

    def interrupt(self, grace: float = GRACE, patience: float | None = None) -> None:
        """SIGINT to the cell and its children; SIGKILL to them all if it lasts `grace` more.

        With `patience` (a kernel's worker, which says when it raised the
        KeyboardInterrupt), a cell that did raise it has that long instead.
        A kernel's worker is told which cell the SIGINT is for (see `interrupts`).
        """
        if self._closed:
            return  # a signal handler's call while the kernel replaces this worker
        if self.worker.interrupts is not None:
            self.worker.interrupts.aim(self.cell)
        self.worker.signal_group(_signal.SIGINT)
        if self._kill_at is None:
            now = time.monotonic()
            self._kill_at = now + grace
            if patience is not None:
                self._patient_until = now + max(grace, patience)
        try:
            os.write(self._wake_w, b"!")
        except BlockingIOError:
            pass  # already full of wake-ups

    def run(self, timeout: float | None = None, soon: bool = False) -> Iterator[Event]:
        """Events of the current cell until its Done, within `timeout` seconds.

        `soon`: the worker was idle and the cell was just sent to it, so its
        first events may be only microseconds away: poll before sleeping (see
        `spin`). A oneshot worker still starting up gains nothing from it.

        Past the deadline the cell is interrupted, and killed with its whole
        process group after `GRACE`; the Done then carries a `timeout` error
        with whatever traceback the interrupt produced. An `interrupt()` made
        meanwhile (from a signal handler, say) escalates the same way. Output
        that trickles in is read in batches, at most `COALESCE` late.
        """
        deadline = time.monotonic() + timeout if timeout else None
        resume = 0.0  # until then, output waits in the capture pipes (see below)
        streams = {self.worker.stdout.fd, self.worker.stderr.fd}
        first = soon
        while True:
            now = time.monotonic()
            if deadline is not None and self._kill_at is None and now >= deadline:
                self._timeout = timeout
                self.interrupt()
            if self.kill_at is not None and now >= self.kill_at:
                yield from self.escalate()
                return
            kill_at = self.kill_at
            wake = kill_at if kill_at is not None else deadline
            if now < resume:
                wake = resume if wake is None else min(wake, resume)
            wait = None if wake is None else max(0.0, wake - now)
            if self.worker.exit_fd < 0:
                wait = 0.05 if wait is None else min(wait, 0.05)
            fds = self.fds()
            if now < resume:
                fds = [fd for fd in fds if fd not in streams]
            fds.append(self._wake_r)
            ready = []
            if first:
                from pyrelune import spin

                ready = spin.poll(fds)
                first = False
            if not ready:
                ready = select.select(fds, [], [], wait)[0]
            if self._wake_r in ready:
                _drain_wakeups(self._wake_r)
            output = 0
            for event in self.read(ready):
                if isinstance(event, Done):
                    yield self._conclude(event)
                    return
                if isinstance(event, Stream):
                    output += len(event.text)
                yield event
            if self.trickle(output):
                resume = time.monotonic() + COALESCE

    def trickle(self, output: int) -> bool:
        """Whether `output` characters just read are a trickle, to leave unread for `COALESCE`.

        A trickle (a loop of prints, a line each) gathers in the pipes for a
        moment instead of waking the reader for every line; an event still
        wakes it at once, and drains them.
        """
        return 0 < output < _COALESCE_BELOW and not self.finished

    def _conclude(self, done: Done) -> Done:
        if self._timeout is not None:
            return Done(_timed_out(self._timeout, done.error))
        return done

    @property
    def kill_at(self) -> float | None:
        """When (`time.monotonic`) an unanswered interrupt calls for `escalate()`, if one is due.

        `run()` checks it in its loop; an event-loop driver arms a timer for it
        and checks again when it fires: it moves later once the cell raises
        its KeyboardInterrupt.
        """
        interrupts = self.worker.interrupts
        if self._patient_until is not None and interrupts is not None and interrupts.heard():
            return self._patient_until
        return self._kill_at

    def escalate(self) -> Iterator[Event]:
        """The cell outlived its interrupt: kill it and everything it started; ends with Done."""
        if self._timeout is not None:
            yield from self._kill(_timed_out(self._timeout, None))
        else:
            yield from self._kill(CellError(
                "interrupted", "KeyboardInterrupt",
                "Execution interrupted: the cell did not stop, so its worker was killed",
            ))

    def _kill(self, error: CellError) -> Iterator[Event]:
        """Kill the worker and all it started; what they wrote, then Done with `error`."""
        self.worker.signal_group(_signal.SIGKILL)
        self.worker.reap(block=True)
        yield from self.drain()
        self.finished = True
        yield Done(error)

    def close(self) -> None:
        """End the worker with everything it started; release the descriptors.

        Marked closed first: an `interrupt()` from a signal handler, which may
        run between any two lines here, must not signal a reaped process
        group or write to a descriptor number that a new pipe may reuse.
        """
        self._closed = True
        self.worker.close()
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)

    def linger(self) -> Iterator[Stream]:
        """Output still in flight after the cell ended, for at most `LINGER` seconds."""
        end = time.monotonic() + LINGER
        w = self.worker
        while not (w.stdout.closed and w.stderr.closed):
            left = end - time.monotonic()
            fds = [s.fd for s in (w.stdout, w.stderr) if not s.closed]
            if left <= 0 or not select.select(fds, [], [], left)[0]:
                return
            yield from self.drain()


def _message(line: bytes) -> dict[str, Any]:
    """One message off the event pipe: a JSON object the protocols can encode again."""
    text = line.decode()
    try:
        message = fastjson.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if not isinstance(message, dict):
        raise ValueError(f"not an object: {text[:80]}")
    if not fastjson.shallow(text, message):
        raise ValueError(f"JSON nested over {fastjson.MAX_DEPTH} deep")
    return message


def _drain_wakeups(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _timed_out(timeout: float, error: CellError | None) -> CellError:
    seconds = f"{timeout:g}"
    where = error if error is not None and error.code == "interrupted" else None
    return CellError(
        "timeout", "", f"Cell timed out after {seconds} s",
        where.traceback if where else "", where.line if where else None,
    )
