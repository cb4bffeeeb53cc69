"""Oneshot mode: one vix-note-extension-1 request on stdin, one response on stdout.

This is the hot path of every Vix Note cell, so it imports only what a
well-formed request needs; `jsonschema` and `typer` stay out of it.
"""

from __future__ import annotations

import os
import sys

from pyrelune.protocols import vixnote, vixnote_outputs
from pyrelune.supervisor.limits import max_output_setting
from pyrelune.supervisor.process import WorkerProcess
from pyrelune.transports import stdio
from pyrelune.wire.events import (
    INVALID_CONFIGURATION,
    INVALID_WORKING_DIRECTORY,
    Display,
    Done,
    Stream,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

    from pyrelune.supervisor.limits import OutputBudget
    from pyrelune.supervisor.process import WorkerFds
    from pyrelune.wire.events import CellError

#: Vix Note kills the runtime at 10 s and then shows nothing. Past the
#: deadline the cell is interrupted, and killed with its process group GRACE
#: later; what it wrote is sent. Measured with two busy processes on two
#: cores, the answer comes before 9.5 s (see README, Limits).
DEFAULT_TIMEOUT = 8.5
GRACE = 0.25
#: Vix Note keeps every output twice in each response of the page, so a
#: capped cell costs the page twice this on every click (see README, Limits).
DEFAULT_MAX_OUTPUT = 128 * 1024

USAGE = """\
pyrelune reads one vix-note-extension-1 request (a JSON object) on stdin
and writes one JSON response on stdout. Try:

    echo '{"source": "print(2 + 3)"}' | pyrelune

`pyrelune --help` lists the kernel modes and the other commands.
"""


def settings(timeout: float | None) -> tuple[float, int]:
    """The deadline and output budget: `--timeout`, else the environment, else defaults."""
    try:
        max_output = max_output_setting(DEFAULT_MAX_OUTPUT)
    except ValueError as exc:
        raise vixnote.Rejected(INVALID_CONFIGURATION, str(exc)) from None
    if timeout is None:
        setting = os.environ.get("PYRELUNE_TIMEOUT") or ""
        try:
            timeout = float(setting) if setting else DEFAULT_TIMEOUT
            if not timeout >= 0:  # negative, or NaN
                raise ValueError(setting)
        except ValueError:
            raise vixnote.Rejected(INVALID_CONFIGURATION, "PYRELUNE_TIMEOUT must be seconds, "
                                   f"at least 0 (0: no deadline), not {setting!r}") from None
    return timeout, max_output


def main(timeout: float | None = None) -> int:
    """Run the request on stdin; the exit status is 0 whenever a response was written."""
    if os.isatty(0):
        sys.stderr.write(USAGE)
        return 2
    raw = stdio.read_all(0)
    stdio.write_all(handle(raw, timeout))
    return 0


def handle(raw: bytes, timeout: float | None) -> bytes:
    """The response bytes for one request's bytes."""
    request_id = None
    try:
        request = vixnote.parse_request(raw)
        request_id = request.request_id
        deadline, max_output = settings(timeout)
        order = vixnote_outputs.mime_order(os.environ.get("PYRELUNE_MIME_ORDER", ""))
        note = note_folder(request.document_path)  # before enter(): relative to our own cwd
        folder = enter(request.working_directory)
    except vixnote.Rejected as error:
        return vixnote.reject(error, request_id)
    folders = (note, folder) if note is not None and note != folder else (folder,)
    worker = WorkerProcess(_cell_runner(request.source, request.filename, folders, max_output))
    budget, failure = _collect(worker, deadline, max_output, order)
    return vixnote.respond(budget, failure, request_id)


def _cell_runner(
    source: str, filename: str, folders: tuple[str, ...], cap: int
) -> Callable[[WorkerFds], NoReturn]:
    def work(fds: WorkerFds) -> NoReturn:
        # Imported in the worker only: the worker side is no
        # business of this process.
        from pyrelune.worker.runtime import Cell, run_oneshot

        run_oneshot(Cell(source, filename), fds, folders, cap)

    return work


def _collect(
    worker: WorkerProcess, deadline: float, max_output: int, order: tuple[str, ...]
) -> tuple[OutputBudget, CellError | None]:
    """The cell's output, shaped for Vix Note and within budget, and how it ended."""
    # Imported after the fork, so that on two cores they load while the
    # worker already compiles and runs the cell.
    from pyrelune.supervisor.blocking import supervise
    from pyrelune.supervisor.limits import OutputBudget
    from pyrelune.supervisor.presentation import Presenter

    budget = OutputBudget(max_output)

    def keep(item: Stream | Display) -> None:
        if isinstance(item, Display):  # one output of a type Vix Note shows, that fits
            item = vixnote_outputs.select_output(item, order, budget.room())
        budget.add(item)

    screen = Presenter(keep, plain=True)  # Vix Note shows text raw: no colour codes
    failure = None
    for event in supervise(worker, deadline or None, GRACE, max_output):
        if isinstance(event, Done):
            failure = event.error
        elif isinstance(event, (Stream, Display)):
            screen.add(event)
    screen.close()
    return budget, failure


def note_folder(document_path: str) -> str | None:
    """The folder of the note `documentPath` names, if it names a file.

    Vix Note sends the path as typed where `vix note` was started, so a
    relative one is relative to this process's current directory (which it
    inherited), not to `workingDirectory`: read it before `enter`. Anything
    that is not a file (empty, a folder, a NUL, a lone surrogate) changes
    nothing: the path is a hint, and the cell still runs.
    """
    if not document_path:
        return None
    try:
        path = os.path.abspath(document_path)
        return os.path.dirname(path) if os.path.isfile(path) else None
    except (OSError, ValueError):  # the current directory is gone; an unencodable name
        return None


def enter(directory: str) -> str:
    """chdir into the request's working directory; the folder the cell imports from.

    Only the worker puts that folder on sys.path: this process imports
    modules of its own after this (`select`, say), and a file of the same
    name in a user's folder must not stand in for them.

    Whatever the path holds (a NUL, a lone surrogate, a folder deleted under
    the runtime) is the request's problem, said in the response.
    """
    try:
        if directory:
            os.chdir(os.path.abspath(directory))
        return os.getcwd()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    except UnicodeEncodeError as exc:  # a lone surrogate: no file name can hold it
        reason = f"{exc.object[exc.start:exc.end]!r} cannot be part of a file name"
    except ValueError:  # embedded null byte
        reason = "a NUL character cannot be part of a file name"
    where = f"workingDirectory {directory!r}" if directory else "the current directory"
    raise vixnote.Rejected(INVALID_WORKING_DIRECTORY, f"Cannot use {where}: {reason}")
