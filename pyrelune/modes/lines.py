"""Lines kernel mode: `pyrelune --mode lines`, a persistent kernel on stdin/stdout.

Requests are answered one at a time, in order; those that arrive while a cell
runs wait in the reader's buffer. User code never runs in this process (it
runs in the kernel's worker), so stdout carries nothing but response lines.

Signals, as a desktop host sends them: SIGINT while a cell runs interrupts it
(escalating to a kill of the worker, see `Session.interrupted`), except within
`LATE_CLICK` seconds after the end of a cell that an interrupt ended: a signal
carries no cell, and one that comes that soon is a late second click on stop
for that cell (the host may already have sent the next one, which it spares).
SIGINT while idle is likewise the host's race with the end of a cell and does
nothing, unless a request is already on its way and the window has passed.
When a signal arrived is told by `signal.set_wakeup_fd`, whose byte is written
the moment it arrives, whenever the Python handler runs. SIGTERM and EOF on
stdin end the kernel cleanly, with the worker and everything it started; so
does a host that is gone (its end of stdout closed) while a cell runs.
"""

from __future__ import annotations

import _signal
import os
import select
import time

from pyrelune import settings
from pyrelune.protocols import lines
from pyrelune.settings import PLAIN
from pyrelune.shaping import LINES_MAX_OUTPUT, OutputBudget
from pyrelune.supervisor.blocking import drain
from pyrelune.supervisor.kernel import Kernel
from pyrelune.transports import stdio
from pyrelune.wire.commands import Execute, Reset
from pyrelune.wire.events import Clear, Display, Done, Stream
from pyrelune.wire.recent import Recent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    Value = TypeVar("Value", int, str)

#: Seconds after a cell ended in which a SIGINT is still that cell's (a person's
#: double click on stop is 0.1-0.3 s apart), never the next cell's.
LATE_CLICK = 0.3


class Terminated(Exception):
    """SIGTERM arrived: stop, clean up, exit 0."""


class HostGone(Exception):
    """The host closed its end of stdout while a cell ran: no one is left to answer."""


class LinesServer:
    """The request loop's state: the kernel, whether a cell runs, cell names."""

    def __init__(self, max_output: int, reader: stdio.LineReader, shell: str = PLAIN,
                 snapshot_max: int = 0) -> None:
        self.max_output = max_output
        self.kernel = Kernel(lines.profile(max_output, shell, snapshot_max))
        self.reader = reader
        self.busy = False
        # A SIGINT while no cell runs but a request is on its way (in the
        # pipe, read, or being handled) is for that request's cell: a host
        # that writes a cell and interrupts it at once. With nothing on its
        # way it is a late second click for the cell that ended: ignored.
        self._interrupt_next = False
        # Whether the running cell was interrupted; when the last interrupted
        # cell ended; whether a SIGINT arrived before a cell ended whose
        # handler has not run yet (it is the ended cell's, see `ended`).
        self._interrupting = False
        self._ended = -LATE_CLICK
        self._stale = False
        self._wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._wake_w = wake_w
        # One traceback name per distinct source, so that a function defined
        # in one cell quotes the right lines when it fails in a later one,
        # and rerunning a cell does not grow the worker's source cache; the
        # sources used last, within a budget (the worker keeps the same).
        self._filenames = Recent()
        self._cells = 0

    def listen(self) -> None:
        """Take SIGINT: from now on its arrival is written to the wakeup pipe."""
        _signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        _signal.signal(_signal.SIGINT, self.on_sigint)

    def forget_interrupt(self) -> None:
        self._interrupt_next = False

    def on_sigint(self, signum: int, frame: Any) -> None:
        drain(self._wake_r)  # the signals this run of the handler stands for
        if self._stale:
            self._stale = False  # it arrived while the cell that has since ended ran
            return
        if time.monotonic() - self._ended < LATE_CLICK:
            return  # a second click for the cell an interrupt just ended, whatever runs now
        if self.busy:
            self._interrupt()
        elif self.reader.waiting():
            self._interrupt_next = True

    def _interrupt(self) -> None:
        self.kernel.interrupt()
        self._interrupting = True

    def ended(self) -> None:
        """A cell is over: a SIGINT that arrived until now was for it, and so is one in
        the next `LATE_CLICK` seconds if an interrupt ended it."""
        if drain(self._wake_r):
            self._stale = True  # arrived before now; its handler runs after this
        self._ended = time.monotonic() if self._interrupting else -LATE_CLICK
        self._interrupting = False

    def host_gone(self) -> None:
        """Raise HostGone if the host closed its end of stdout (checked while a cell runs)."""
        watch = select.poll()
        watch.register(1, 0)  # error and hang-up are always reported
        if watch.poll(0):
            raise HostGone

    def handle(self, line: bytes) -> bytes:
        """The response line to one request line.

        An interrupt that came on its way is for this request at most: by
        the time the answer is written, it is forgotten.
        """
        try:
            request = lines.parse_request(line)
        except lines.Rejected as rejected:
            return lines.reject(rejected)
        if request.type == "execute":
            return self.execute(request)
        if request.type == "restart":
            self.kernel.apply(Reset())
            for _ in self.kernel.events():
                pass  # its Done: a fresh namespace
            self._filenames.clear()  # the worker forgets its sources with its namespace
            return lines.response(request.id)
        return lines.pong(request.id)

    def execute(self, request: lines.Request) -> bytes:
        filename = self._filenames.use(request.code)
        if filename is None:
            self._cells += 1
            filename = f"<cell {self._cells}>"
            self._filenames.put(request.code, filename)
        output = OutputBudget(self.max_output)
        error = None
        try:
            self.kernel.apply(Execute(request.code, filename))
            # Busy once the cell is sent, so that an interrupt is aimed at it;
            # one that came on its way is honoured now (see `on_sigint`).
            self.busy = True
            if self._interrupt_next:
                self._interrupt()
            for event in self.kernel.events(self.host_gone):
                if isinstance(event, Done):
                    error = event.error
                elif isinstance(event, Display):
                    output.apply(lines.shown(event))
                elif isinstance(event, (Stream, Clear)):
                    output.apply(event)  # the host cannot update an output: the last state
        finally:
            self.busy = False
            self.ended()
        return lines.cell_response(request.id, output, error)


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated


def max_output() -> int:
    """$PYRELUNE_MAX_OUTPUT, else the default, saying why on stderr.

    A bad value cannot be refused: the host would only see a kernel that
    never answered its ping.
    """
    return _setting(settings.max_output, LINES_MAX_OUTPUT)


def shell(given: str | None = None) -> str:
    """`--shell` (`given`), else $PYRELUNE_SHELL, else pyrelune's plain shell; a bad one is
    said on stderr and the plain shell runs (as `max_output`)."""
    return _setting(lambda default: settings.shell(default, given), PLAIN)


def snapshot_max() -> int:
    """$PYRELUNE_SNAPSHOTS and $PYRELUNE_SNAPSHOT_MAX (see `settings.snapshot_max`); a bad
    one is said on stderr and the default budget holds (as `max_output`)."""
    return _setting(lambda _: settings.snapshot_max(), settings.default_snapshot_max())


def _setting(read: Callable[[Value], Value], default: Value) -> Value:
    try:
        return read(default)
    except settings.SettingError as exc:
        warning = f"pyrelune: {exc}; using {default}\n"
        stdio.write_all(warning.encode(errors="replace"), 2)
        return default


def main(shell_given: str | None = None) -> int:
    """Serve requests from stdin until EOF or SIGTERM; 0 when it ended that way.

    `shell_given`: the command line's `--shell` (see `shell`).

    2 when stdin or stdout is closed from the start (the kernel would read
    its own worker's pipe as requests, or answer into it), 1 when an answer
    cannot be written (a full disk, `/dev/full`): each said on stderr.
    """
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # until there is a cell to interrupt
    _signal.signal(_signal.SIGTERM, _terminate)
    stdio.hold_stderr()
    for fd, name, use in ((0, "stdin", "reads its requests"), (1, "stdout", "writes its answers")):
        if stdio.closed(fd):
            stdio.say(f"{name} is closed, and the lines kernel {use} there")
            return 2
    state = None
    status = 0
    try:
        reader = stdio.LineReader(0)
        state = LinesServer(max_output(), reader, shell(shell_given), snapshot_max())
        state.listen()
        for line in reader:
            answer = state.handle(line) if line.strip() else b""
            reader.done_with()
            state.forget_interrupt()  # until now, meant for this request; now, a late click
            try:
                stdio.write_all(answer)
            except BrokenPipeError:
                break  # the host stopped reading
            except OSError as exc:
                stdio.say(f"cannot write an answer to stdout: {exc.strerror or exc}")
                status = 1
                break
    except (Terminated, HostGone):
        pass  # asked to stop, or the host is gone: either way, nothing left to do
    finally:
        _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        if state is not None:
            state.kernel.close()
    return status
