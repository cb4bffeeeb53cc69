"""Lines kernel mode: `pyrelune --mode lines`, a persistent kernel on stdin/stdout.

Requests are answered one at a time, in order; those that arrive while a cell
runs wait in the reader's buffer. User code never runs in this process (it
runs in the kernel's worker), so stdout carries nothing but response lines.

Signals, as a desktop host sends them: SIGINT while a cell runs interrupts it
(escalating to a kill of the worker, see `Session.interrupted`); SIGINT while
idle is the host's race with the end of a cell and does nothing. SIGTERM and
EOF on stdin end the kernel cleanly, with the worker and everything it
started.
"""

from __future__ import annotations

import _signal

from pyrelune import settings
from pyrelune.protocols import lines
from pyrelune.supervisor.kernel import DEFAULT_CAP, Kernel
from pyrelune.supervisor.limits import OutputBudget
from pyrelune.transports import stdio
from pyrelune.wire.events import Clear, Display, Done, Stream

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: A cell's output kept in one response (head and tail), unless
#: $PYRELUNE_MAX_OUTPUT says otherwise: a line of many megabytes freezes a
#: notebook's frontend long before it is useful.
DEFAULT_MAX_OUTPUT = DEFAULT_CAP


class Terminated(Exception):
    """SIGTERM arrived: stop, clean up, exit 0."""


class LinesServer:
    """The request loop's state: the kernel, whether a cell runs, cell names."""

    def __init__(self, max_output: int, reader: stdio.LineReader) -> None:
        self.max_output = max_output
        self.kernel = Kernel(cap=max_output)
        self.reader = reader
        self.busy = False
        # A SIGINT while no cell runs but a request is on its way (in the
        # pipe, read, or being handled) is for that request's cell: a host
        # that writes a cell and interrupts it at once. With nothing on its
        # way it is a late second click for the cell that ended: ignored.
        self._interrupt_next = False
        # One traceback name per distinct source, so that a function defined
        # in one cell quotes the right lines when it fails in a later one,
        # and rerunning a cell does not grow the worker's source cache.
        self._filenames: dict[str, str] = {}

    def forget_interrupt(self) -> None:
        self._interrupt_next = False

    def on_sigint(self, signum: int, frame: Any) -> None:
        if self.busy:
            self.kernel.interrupt()
        elif self.reader.waiting():
            self._interrupt_next = True

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
            self.kernel.reset()
            return lines.response(request.id)
        return lines.pong(request.id)

    def execute(self, request: lines.Request) -> bytes:
        filename = self._filenames.get(request.code)
        if filename is None:
            filename = self._filenames[request.code] = f"<cell {len(self._filenames) + 1}>"
        output = OutputBudget(self.max_output)
        error = None
        try:
            self.kernel.execute(request.code, filename)
            # Busy once the cell is sent, so that an interrupt is aimed at it;
            # one that came on its way is honoured now (see `on_sigint`).
            self.busy = True
            if self._interrupt_next:
                self.kernel.interrupt()
            for event in self.kernel.events():
                if isinstance(event, Done):
                    error = event.error
                elif isinstance(event, Display):
                    output.apply(lines.shown(event))
                elif isinstance(event, (Stream, Clear)):
                    output.apply(event)  # the host cannot update an output: the last state
        finally:
            self.busy = False
        return lines.cell_response(request.id, output, error)


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated


def max_output() -> int:
    """$PYRELUNE_MAX_OUTPUT, else the default, saying why on stderr.

    A bad value cannot be refused: the host would only see a kernel that
    never answered its ping.
    """
    try:
        return settings.max_output(DEFAULT_MAX_OUTPUT)
    except settings.SettingError as exc:
        warning = f"pyrelune: {exc}; using {DEFAULT_MAX_OUTPUT}\n"
        stdio.write_all(warning.encode(errors="replace"), 2)
        return DEFAULT_MAX_OUTPUT


def main() -> int:
    """Serve requests from stdin until EOF or SIGTERM; 0 when it ended that way."""
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # until there is a cell to interrupt
    _signal.signal(_signal.SIGTERM, _terminate)
    state = None
    try:
        reader = stdio.LineReader(0)
        state = LinesServer(max_output(), reader)
        _signal.signal(_signal.SIGINT, state.on_sigint)
        for line in reader:
            answer = state.handle(line) if line.strip() else b""
            reader.done_with()
            state.forget_interrupt()  # until now, meant for this request; now, a late click
            stdio.write_all(answer)
    except (Terminated, BrokenPipeError):
        pass  # asked to stop, or the host stopped reading: either way, nothing left to do
    finally:
        _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        if state is not None:
            state.kernel.close()
    return 0
