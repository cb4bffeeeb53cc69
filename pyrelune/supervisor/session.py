"""The session: what the supervisor decides about one worker, on plain values.

No I/O here, as in the codecs. A driver feeds it what happened (bytes off
the event pipe, how much output it just read, an interrupt it sent) and the
time, and it answers what to do (a line for the control pipe, SIGINT to the
cell, a kill with the error to report) and when to look again. Two drivers
do the waiting: `blocking` with select (oneshot, lines) and `evented` on
the kernel's event loop (rpc, Jupyter: `transports.reactor`, but asyncio's
for rpc over WebSocket); `link` is the I/O they share.

Its state is two machines in one table, `TRANSITIONS` ((state, event) ->
next state), consulted for every change: the current cell's (a worker not
given one yet, running, interrupted, timed out, finished) and the event
pipe's (open until the worker closes it or writes what it cannot have sent).
An event a state does not allow raises `NotAllowed`: a driver's mistake.

Timing rules: past the deadline the cell is interrupted, and killed with its
whole process group `GRACE` later (or the grace its driver gives `begin`); a
kernel's cell that did raise its KeyboardInterrupt may clean up until
`PATIENCE`. A trickle of output (less than `_COALESCE_BELOW` characters at
once) is left in the capture pipes for `COALESCE`, so a loop of prints does
not wake the supervisor for every line.
"""

from __future__ import annotations

from pyrelune import fastjson, transition
from pyrelune.wire import LineBuffer
from pyrelune.wire.events import (
    CONTINUE,
    INTERRUPTED,
    SYNC,
    TIMEOUT,
    WORKER_DIED,
    CellError,
    Clear,
    Comm,
    Display,
    Done,
    from_wire,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from pyrelune.wire.commands import Interrupt
    from pyrelune.wire.events import Event

#: Between the interrupt and the kill: a cell may clean up, but not for long.
GRACE = 0.4
#: A kernel's cell that did raise its KeyboardInterrupt (its `finally` and
#: `except` blocks are running) may take this long from the interrupt: well
#: within the 2 s after which the lines host kills the whole kernel.
PATIENCE = 1.2
#: After the cell is over, how long stragglers may still deliver output.
LINGER = 0.05
#: How long a trickle of output may gather in the capture pipes unread.
COALESCE = 0.002
_COALESCE_BELOW = 1 << 15


class Send:
    """Write `line` to the worker's control pipe."""

    __slots__ = ("line",)

    def __init__(self, line: bytes) -> None:
        self.line = line

    def __repr__(self) -> str:
        return f"Send({self.line!r})"


class Kill:
    """SIGKILL to the worker's process group; then `Session.end(error)` ends the cell."""

    __slots__ = ("error",)

    def __init__(self, error: CellError) -> None:
        self.error = error

    def __repr__(self) -> str:
        return f"Kill({self.error!r})"


_SEND_CONTINUE = Send(CONTINUE)

# The current cell's states.
STARTING = "starting"  # a new worker, no cell begun: if it dies now, that ends cell 0
RUNNING = "running"
INTERRUPTING = "interrupting"  # SIGINT sent for the host: the kill is armed
TIMED_OUT = "timed_out"  # SIGINT sent for the deadline: the kill is armed
FINISHED = "finished"  # its Done has been produced
# The event pipe's.
EVENTS_OPEN = "events_open"
EVENTS_CLOSED = "events_closed"

# What moves them.
BEGIN = "begin"  # a cell (or reset, or query) is sent
INTERRUPT_SENT = "interrupt"  # SIGINT for the host (or a driver's own)
DEADLINE = "deadline"  # the cell's time is up
END = "end"  # its Done: the worker's, or its death's, or the kill's
EOF = "eof"  # the worker closed the event pipe
FOREIGN = "foreign"  # a line the worker cannot have sent

#: Every transition: (state, event) -> next state; a pair not here is not allowed.
TRANSITIONS: dict[tuple[str, str], str] = {
    (STARTING, BEGIN): RUNNING,
    (STARTING, INTERRUPT_SENT): STARTING,  # no cell to stop: nothing armed
    (STARTING, END): FINISHED,  # the worker died before its first cell
    (RUNNING, INTERRUPT_SENT): INTERRUPTING,
    (RUNNING, DEADLINE): TIMED_OUT,
    (RUNNING, END): FINISHED,
    (INTERRUPTING, INTERRUPT_SENT): INTERRUPTING,  # the first one's clock runs on
    (INTERRUPTING, END): FINISHED,
    (TIMED_OUT, INTERRUPT_SENT): TIMED_OUT,  # likewise; its Done says timeout
    (TIMED_OUT, END): FINISHED,
    (FINISHED, BEGIN): RUNNING,
    (FINISHED, INTERRUPT_SENT): FINISHED,  # late: the cell it was for is over
    (EVENTS_OPEN, EOF): EVENTS_CLOSED,
    (EVENTS_OPEN, FOREIGN): EVENTS_CLOSED,
}


def step(state: str, event: str) -> str:
    """The state `event` moves `state` to; raises `NotAllowed` if it may not happen there."""
    return transition(TRANSITIONS, state, event)

if TYPE_CHECKING:
    Step: TypeAlias = Event | Send | Kill


class Session:
    """The state of one worker's current cell: its end, deadline, interrupt and pauses."""

    def __init__(self, limit: int, key: str) -> None:
        self.limit = limit  # the most bytes an event line may take (`events.message_limit`)
        self._key = key  # what every line of the worker's carries (`WorkerProcess.key`)
        self.cell = 0  # the number of the current cell (or reset), counted from 1
        self.state = STARTING
        self.events = EVENTS_OPEN
        self._timeout: float | None = None
        self._grace = GRACE  # the deadline's interrupt to kill
        self._deadline: float | None = None
        self._kill_at: float | None = None  # when an unanswered interrupt turns into SIGKILL
        self._patient_until: float | None = None  # the same, once the cell raised it
        self._resume = 0.0  # until then, output waits in the capture pipes
        self._lines = LineBuffer()  # the event pipe, cut into messages

    def begin(self, now: float, timeout: float | None = None, grace: float = GRACE) -> None:
        """A new cell (or reset) starts now, with `timeout` seconds if given.

        `grace`: past the deadline, from the interrupt to the kill (oneshot
        answers within its host's hard limit, and so gives a shorter one).
        """
        self.state = step(self.state, BEGIN)
        self.cell += 1
        self._timeout = timeout or None
        self._grace = grace
        self._deadline = now + timeout if timeout else None
        self._kill_at = self._patient_until = None
        self._resume = 0.0

    @property
    def finished(self) -> bool:
        """The current cell's Done has been produced."""
        return self.state == FINISHED

    @property
    def stopped(self) -> bool:
        """The host (or the deadline) interrupted the cell: however it ends, it is not run
        again, not even when its worker ends before it began it (see `Kernel.settle`)."""
        return self._kill_at is not None

    @property
    def events_open(self) -> bool:
        """The event pipe is still to be read."""
        return self.events == EVENTS_OPEN

    def allows(self, event: str) -> bool:
        """Whether `event` may happen to the current cell now."""
        return (self.state, event) in TRANSITIONS

    def events_ended(self) -> None:
        """The worker closed the event pipe (it read end of file)."""
        self.events = step(self.events, EOF)

    # -- what arrived ----------------------------------------------------------

    def feed(self, data: bytes) -> list[Step]:
        """Bytes off the event pipe, read after the output written before them.

        Gives the events and the answers the worker waits for, in order. A
        line the worker cannot have sent (a cell wrote into the pipe) ends
        the conversation: the worker may be waiting for an answer to a
        message it did send, so it is killed, as if it had died.
        """
        steps: list[Step] = []
        lines = self._lines
        lines.feed(data)
        while (line := lines.pop()) is not None:
            try:
                if len(line) >= self.limit:
                    raise ValueError(f"{len(line):,} bytes, more than any of its messages")
                message = _message(line)
                if message.pop("k", None) != self._key:
                    raise ValueError("not signed with the worker's key")
                event = None if message.get("t") == SYNC else from_wire(message)
            except ValueError as problem:
                return [*steps, self._foreign(str(problem))]
            if event is None:  # a switch between stdout and stderr: what came before is read
                steps.append(_SEND_CONTINUE)
                continue
            if isinstance(event, Done):
                if not self.allows(END):
                    return [*steps, self._foreign("a done with no cell running")]
                event = self.end(event.error)
            steps.append(event)
            if (isinstance(event, (Clear, Comm)) or (isinstance(event, Display)
                                                     and not event.is_result)
                    ) and message.get("wait", True):
                steps.append(_SEND_CONTINUE)  # the worker waits for it (Channel.ask)
        if lines.held >= self.limit:  # a line that does not end, or not before it is too long
            return [*steps, self._foreign(f"{lines.held:,} bytes without a newline")]
        return steps

    def _foreign(self, problem: str) -> Kill:
        """The event pipe carried what the worker cannot have sent: the worker is to be killed."""
        self.events = step(self.events, FOREIGN)
        self._lines = LineBuffer()  # let go of what it held
        return Kill(CellError(WORKER_DIED, "", "worker stopped: its event pipe carried a line "
                              f"that is not one of its messages ({problem[:120]})"))

    def took(self, chars: int, now: float) -> None:
        """`chars` characters of stream output were just read: a trickle pauses reading."""
        if 0 < chars < _COALESCE_BELOW and self.state != FINISHED:
            self._resume = now + COALESCE

    def interrupted(self, now: float, grace: float = GRACE,
                    patience: float | None = None) -> None:
        """SIGINT was just sent; kill `grace` later, or `patience` once the cell raised it.

        A second interrupt before the kill changes nothing: the first one's
        clock runs on; nor does one with no cell running.
        """
        before, self.state = self.state, step(self.state, INTERRUPT_SENT)
        if before == RUNNING:
            self._arm(now, grace, patience)

    def _arm(self, now: float, grace: float, patience: float | None = None) -> None:
        self._kill_at = now + grace
        if patience is not None:
            self._patient_until = now + max(grace, patience)

    def end(self, error: CellError | None) -> Done:
        """The cell's Done: `error`, or the timeout it ran into."""
        before, self.state = self.state, step(self.state, END)
        if before == TIMED_OUT:
            return Done(self._timed_out(error))
        return Done(error)

    def _timed_out(self, error: CellError | None) -> CellError:
        """The timeout's error, where the cell was when its interrupt stopped it (`error`)."""
        where = error if error is not None and error.code == INTERRUPTED else None
        return CellError(
            TIMEOUT, "", f"Cell timed out after {self._timeout:g} s",
            where.traceback if where else "", where.line if where else None,
        )

    # -- what the clock says -----------------------------------------------------

    def due(self, now: float, heard: bool) -> Interrupt | Kill | None:
        """What is due at `now`: the deadline's interrupt, or the kill of an unanswered one.

        `heard`: the cell raised its KeyboardInterrupt (a kernel's worker says so).
        """
        if self._deadline is not None and now >= self._deadline and self.allows(DEADLINE):
            self.state = step(self.state, DEADLINE)
            self._arm(now, self._grace)
            # Imported when a deadline passes: a oneshot cell's start does without the module.
            from pyrelune.wire.commands import INTERRUPT

            return INTERRUPT
        kill_at = self.kill_at(heard)
        if kill_at is not None and now >= kill_at:
            if self.state == TIMED_OUT:
                return Kill(self._timed_out(None))
            return Kill(CellError(
                INTERRUPTED, "KeyboardInterrupt",
                "Execution interrupted: the cell did not stop, so its worker was killed"))
        return None

    def kill_at(self, heard: bool) -> float | None:
        """When an unanswered interrupt calls for a kill, if one is pending."""
        if self._patient_until is not None and heard:
            return self._patient_until
        return self._kill_at

    def timed(self, now: float) -> bool:
        """Whether the clock matters now: a deadline, a pending kill or a pause."""
        return self._deadline is not None or self._kill_at is not None or now < self._resume

    def paused(self, now: float) -> bool:
        """Whether the capture pipes are left to fill for a moment (see `took`)."""
        return now < self._resume

    def wake_at(self, now: float, heard: bool) -> float | None:
        """When to look again with nothing arriving: a kill, the deadline, or a pause's end."""
        wake = self.kill_at(heard)
        if wake is None:
            wake = self._deadline
        if now < self._resume:
            wake = self._resume if wake is None else min(wake, self._resume)
        return wake


def _message(line: bytes) -> dict[str, Any]:
    """One message off the event pipe: a JSON object the protocols can encode again."""
    try:
        text = line.decode()
        message = fastjson.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if not isinstance(message, dict):
        raise ValueError(f"not an object: {text[:80]}")
    if not fastjson.shallow(text, message):
        raise ValueError(f"JSON nested over {fastjson.MAX_DEPTH} deep")
    return message
