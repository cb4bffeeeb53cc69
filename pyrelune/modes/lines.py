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
from pyrelune.supervisor.kernel import Kernel
from pyrelune.supervisor.limits import OutputBudget
from pyrelune.transports import stdio
from pyrelune.wire.events import Done

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: A cell's output kept in one response (head and tail), unless
#: $PYRELUNE_MAX_OUTPUT says otherwise: a line of many megabytes freezes a
#: notebook's frontend long before it is useful.
DEFAULT_MAX_OUTPUT = 8 * 1024 * 1024


class Terminated(Exception):
    """SIGTERM arrived: stop, clean up, exit 0."""


class LinesServer:
    """The request loop's state: the kernel, whether a cell runs, cell names."""

    def __init__(self, max_output: int) -> None:
        self.max_output = max_output
        self.kernel = Kernel()
        self.busy = False
        # One traceback name per distinct source, so that a function defined
        # in one cell quotes the right lines when it fails in a later one,
        # and rerunning a cell does not grow the worker's source cache.
        self._filenames: dict[str, str] = {}

    def on_sigint(self, signum: int, frame: Any) -> None:
        if self.busy:
            self.kernel.interrupt()

    def handle(self, line: bytes) -> bytes:
        """The response line to one request line."""
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
        # Busy before the worker gets the cell: it may start, and the host
        # send SIGINT, before this process runs another line.
        self.busy = True
        try:
            self.kernel.execute(request.code, filename)
            for event in self.kernel.events():
                if isinstance(event, Done):
                    error = event.error
                else:
                    output.add(event)  # type: ignore[arg-type]
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
        state = LinesServer(max_output())
        _signal.signal(_signal.SIGINT, state.on_sigint)
        for line in stdio.LineReader(0):
            if line.strip():
                stdio.write_all(state.handle(line))
    except (Terminated, BrokenPipeError):
        pass  # asked to stop, or the host stopped reading: either way, nothing left to do
    finally:
        _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        if state is not None:
            state.kernel.close()
    return 0
