"""Oneshot mode: one vix-note-extension-1 request on stdin, one response on stdout.

This is the hot path of every Vix Note cell, so it imports only what a
well-formed request needs; `jsonschema` and `typer` stay out of it.
"""

from __future__ import annotations

import _signal
import os
import sys

from pyrelune import MAX_REQUEST
from pyrelune.protocols import vixnote
from pyrelune.protocols.vixnote_folders import cell_folders
from pyrelune.shaping import VIX_NOTE_MAX_OUTPUT
from pyrelune.supervisor.process import WorkerProcess
from pyrelune.transports import stdio
from pyrelune.wire.events import (
    INTERRUPTED,
    INVALID_CONFIGURATION,
    CellError,
    Clear,
    Display,
    Done,
    Stream,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

    from pyrelune.shaping import OutputBudget
    from pyrelune.wire import WorkerFds

    #: What starts a cell's worker: (source, filename, sys.path folders, output cap,
    #: the MIME types the host shows).
    StartWorker = Callable[[str, str, tuple[str, ...], int, tuple[str, ...]], WorkerProcess]

#: Vix Note kills the runtime at 10 s and then shows nothing. Past the
#: deadline the cell is interrupted, and killed with its process group GRACE
#: later; what it wrote is sent. Measured with two busy processes on two
#: cores, the answer comes before 9.5 s (see README, Limits).
DEFAULT_TIMEOUT = 8.5
GRACE = 0.25

USAGE = """\
pyrelune reads one vix-note-extension-1 request (a JSON object) on stdin
and writes one JSON response on stdout. Try:

    echo '{"source": "print(2 + 3)"}' | pyrelune

`pyrelune --help` lists the kernel modes and the other commands.
"""


#: What `settings` reads from the environment.
_SETTINGS = ("PYRELUNE_TIMEOUT", "PYRELUNE_MAX_OUTPUT", "PYRELUNE_MIME_ORDER",
             "PYRELUNE_SHELL")


def settings(timeout: float | None) -> tuple[float, int, tuple[str, ...]]:
    """The deadline (`--timeout`, else the environment), output budget and MIME order.

    With none of them set, as Vix Note runs it, the defaults, without
    loading their parser.
    """
    if timeout is None and not any(os.environ.get(name) for name in _SETTINGS):
        return DEFAULT_TIMEOUT, VIX_NOTE_MAX_OUTPUT, vixnote.MIME_ORDER
    from pyrelune import settings as rules

    try:
        rules.shell(rules.PLAIN)  # the worker reads it (`worker.oneshot`); checked here
        deadline = rules.timeout(DEFAULT_TIMEOUT) if timeout is None else timeout
        return (deadline, rules.max_output(VIX_NOTE_MAX_OUTPUT),
                rules.mime_order(vixnote.MIME_ORDER))
    except rules.SettingError as exc:
        raise vixnote.Rejected(INVALID_CONFIGURATION, str(exc)) from None


def main(timeout: float | None = None, raw: bytes | None = None,
         started: float | None = None, refusal: str | None = None) -> int:
    """Run the request on stdin (or `raw`, read already); the status is 0 once answered.

    Streams the host left closed, or a stdout that cannot take the response
    (`/dev/full`), get one line on stderr and status 1; stdin is read to its
    end first whenever it can be (see `stdio.read_all`). `started`, `refusal`:
    see `handle`.
    """
    if raw is None:
        if stdio.closed(0):
            return _cannot("stdin is closed: the request is read from it")
        if os.isatty(0):
            sys.stderr.write(USAGE)
            return 2
        raw = stdio.read_all(0, MAX_REQUEST)
    if stdio.closed(1):
        return _cannot("stdout is closed: the response is written to it")
    try:
        stdio.write_all(handle(raw, timeout, started, refusal=refusal))
    except OSError as exc:
        return _cannot(f"cannot write the response to stdout: {exc.strerror or exc}")
    return 0


def _cannot(reason: str) -> int:
    """Say on stderr why there is no response; the exit status."""
    stdio.say(reason)
    return 1


def handle(raw: bytes, timeout: float | None, started: float | None = None,
           start_worker: StartWorker | None = None, refusal: str | None = None,
           order: tuple[str, ...] | None = None) -> bytes:
    """The response bytes for one request's bytes.

    `started`: when the deadline's clock started (`time.monotonic()`), when
    that was before this call: a cell that went through a warm process
    first is answered within the same deadline. `start_worker`: how the
    worker starts (a warm runtime's was forked ahead); else forked now.
    `refusal`: why the launcher's own settings refuse the cell (a warm-start
    variable breaks its rule: see `pyrelune.warm.gate`), answered as any bad
    setting is. `order`: the MIME types shown, in place of the setting's (a terminal's: text).
    """
    signals = _Signals()
    request_id = None
    try:
        request = vixnote.parse_request(raw)
        request_id = request.request_id
        if refusal is not None:
            raise vixnote.Rejected(INVALID_CONFIGURATION, refusal)
        deadline, max_output, setting = settings(timeout)
        order = order or setting
        folders = cell_folders(request)
    except vixnote.Rejected as error:
        return vixnote.reject(error, request_id)
    worker = (start_worker or _fork_worker)(request.source, request.filename, folders, max_output,
                                            vixnote.shown(order))
    signals.watch(worker)
    budget, failure = _collect(worker, deadline, max_output, order, started)
    if signals.received:
        failure = _signalled(signals.received, failure)
    return vixnote.respond(budget, failure, request_id)


#: The signals that would end the runtime unanswered and that it can catch (not
#: SIGKILL), and what the response says of each.
_STOPPING = {
    _signal.SIGINT: "Cell interrupted: the runtime received SIGINT",
    **{getattr(_signal, name): f"Cell stopped: the runtime received {name}"
       for name in ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")},
}


class _Signals:
    """A signal sent to the runtime itself (by the cell, usually: `os.kill(os.getppid(), ...)`).

    By default each of `_STOPPING` would end this process unanswered. Instead
    SIGINT interrupts the cell, as a terminal's Ctrl-C would (the deadline
    still stops one that ignores it), any other kills it, and the response
    says which signal came. The first one is what happened; repeats change
    nothing.
    """

    def __init__(self) -> None:
        self.received = 0
        self._worker: WorkerProcess | None = None
        for signum in _STOPPING:
            _signal.signal(signum, self._receive)

    def _receive(self, signum: int, frame: object) -> None:
        if not self.received:
            self.received = signum
            self._stop()

    def watch(self, worker: WorkerProcess) -> None:
        """A signal stops `worker`'s cell from now on; one that came before, now."""
        # Blocked meanwhile: a handler run between the two steps would stop it twice.
        _signal.pthread_sigmask(_signal.SIG_BLOCK, _STOPPING)
        try:
            self._worker = worker
            self._stop()
        finally:
            _signal.pthread_sigmask(_signal.SIG_UNBLOCK, _STOPPING)

    def _stop(self) -> None:
        if self.received and self._worker is not None:
            interrupt = self.received == _signal.SIGINT
            self._worker.signal_group(_signal.SIGINT if interrupt else _signal.SIGKILL)


def _signalled(signum: int, error: CellError | None) -> CellError:
    """How the cell ended once the runtime received `signum`, whatever the cell made of it.

    The cell's own error, if any, still says where it was (traceback, line).
    """
    return CellError(INTERRUPTED, "", _STOPPING[signum], error.traceback if error else "",
                     error.line if error else None)


def _fork_worker(source: str, filename: str, folders: tuple[str, ...], cap: int,
                 shown: tuple[str, ...]) -> WorkerProcess:
    return WorkerProcess(_cell_runner(source, filename, folders, cap, shown))


def _cell_runner(
    source: str, filename: str, folders: tuple[str, ...], cap: int, shown: tuple[str, ...]
) -> Callable[[WorkerFds], NoReturn]:
    def work(fds: WorkerFds) -> NoReturn:
        # Imported in the worker only: the worker side is no
        # business of this process.
        from pyrelune.worker.oneshot import run_oneshot
        from pyrelune.worker.runtime import Cell

        run_oneshot(Cell(source, filename), fds, folders, cap, shown)

    return work


def _collect(
    worker: WorkerProcess, deadline: float, max_output: int, order: tuple[str, ...],
    started: float | None,
) -> tuple[OutputBudget, CellError | None]:
    """The cell's output, shaped for Vix Note and within budget, and how it ended."""
    # Imported after the fork, so that on two cores they load while the
    # worker already compiles and runs the cell.
    from pyrelune.protocols.vixnote_outputs import Shown
    from pyrelune.supervisor.blocking import supervise

    shown = Shown(max_output, order)
    failure = None
    for event in supervise(worker, deadline or None, GRACE, max_output, started):
        if isinstance(event, Done):
            failure = event.error
        elif isinstance(event, (Stream, Display, Clear)):
            shown.add(event)
    return shown.close(), failure
