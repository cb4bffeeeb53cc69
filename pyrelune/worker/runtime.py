"""The worker process: the only place user code runs.

Forked from the session (no second interpreter start). Before any cell runs,
fd 0 becomes /dev/null and fds 1 and 2 become the capture pipes, so nothing a
cell, a subprocess or C code writes can reach the host's protocol stream.
Events go to the session on a pipe of their own (see `channel`). Here: the
worker's std fds, its signals and `input()`, and one cell run and reported.
"""

from __future__ import annotations

import _signal
import builtins
import io
import os
import sys

from pyrelune.wire.events import INTERRUPTED, CellError, Done
from pyrelune.worker import libraries
from pyrelune.worker.cell import exception_error, run_cell
from pyrelune.worker.channel import Channel
from pyrelune.worker.display import connect, show_result

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

    from pyrelune.wire.interrupts import Interrupts


class Cell:
    """What the worker needs to run one cell; a kernel's are numbered (see `interrupts`)."""

    __slots__ = ("filename", "number", "source")

    def __init__(self, source: str, filename: str, number: int = 0) -> None:
        self.source = source
        self.filename = filename
        self.number = number


class _Interruptible:
    """SIGINT raises KeyboardInterrupt only while a cell runs.

    In a kernel, only in the cell the session meant, even when its signal
    comes before that cell starts or after it ended (see `interrupts`).
    """

    running = False
    cell = 0  # the number of a kernel's cell, given with its command
    interrupts: Interrupts | None = None

    def __call__(self, signum: int, frame: Any) -> None:
        interrupts = self.interrupts
        if interrupts is not None and not interrupts.meant_for(self.cell):
            return
        if self.running:
            self._raise()

    def start(self, cell: int) -> None:
        """A cell begins: interruptible from now on, and at once if it was interrupted already."""
        self.cell = cell
        self.running = True
        interrupts = self.interrupts
        if interrupts is not None:
            interrupts.begin(cell)
            if interrupts.aimed_at(cell):
                self._raise()

    def _raise(self) -> NoReturn:
        if self.interrupts is not None:
            self.interrupts.hear()  # the cell may clean up for longer (see `Session.interrupted`)
        raise KeyboardInterrupt("Execution interrupted")


interrupt_guard = _Interruptible()


#: Why `input()` fails in a oneshot cell, in words for a note's user, and what to do instead.
ONESHOT_NO_INPUT = ("input() cannot be answered here: Vix Note cells cannot ask for input while "
                    "they run. Set the value in the cell instead (name = \"Ada\"), or read it "
                    "from a file beside the note")


class NoInput:
    """`input()` where the host cannot answer: the prompt is shown, then EOFError."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __call__(self, prompt: object = "") -> str:
        sys.stdout.write(str(prompt))
        raise EOFError(self.message)


class StdFds:
    """Private copies of the capture pipes, to put back what a cell broke.

    A kernel cell may close or redirect fd 0, 1 or 2, make them non-blocking,
    or replace or reconfigure sys.stdout; the next cell must still be
    captured, whole and in UTF-8, so each cell starts from these.
    """

    def __init__(self, out_fd: int, err_fd: int) -> None:
        self.null = os.open(os.devnull, os.O_RDONLY)  # os.open/dup: not inheritable
        self.out = os.dup(out_fd)
        self.err = os.dup(err_fd)
        self._identity = [_identity(fd) for fd in (self.null, self.out, self.err)]
        self._streams: list[Any] = []
        self._settings: list[tuple[Any, ...]] = []  # of each of _streams, as made
        self._make_stream: Callable[[int], io.TextIOWrapper] = text_stream

    def renew(self) -> None:
        """The private copies are fresh pipes now (a woken snapshot's): fds 0, 1, 2 follow."""
        self._identity = [_identity(fd) for fd in (self.null, self.out, self.err)]
        self.restore()

    def use(self, make_stream: Callable[[int], io.TextIOWrapper]) -> None:
        """sys.stdout and sys.stderr come from `make_stream(fd)`, from now on: what a
        subshell's thread prints before the first cell is the kernel's too."""
        self._make_stream = make_stream
        self._streams, self._settings = [], []
        self.restore()

    def restore(self) -> None:
        """Point fds 0, 1, 2 and sys.stdin/out/err back at the runtime's own."""
        for target, (fd, identity) in enumerate(zip((self.null, self.out, self.err),
                                                    self._identity, strict=True)):
            if _identity(target) != identity:
                os.dup2(fd, target)
        for fd in (1, 2):
            if not os.get_blocking(fd):  # asyncio's pipes, for one, leave them so
                os.set_blocking(fd, True)
        streams = self._streams
        if [sys.stdin, sys.stdout, sys.stderr] != streams or any(
            s.closed or _settings(s) != made
            for s, made in zip(streams, self._settings, strict=True)
        ):
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
            sys.stdout = self._make_stream(1)
            sys.stderr = self._make_stream(2)
            self._streams = [sys.stdin, sys.stdout, sys.stderr]
            self._settings = [_settings(s) for s in self._streams]
            # The originals, as a script sees them: what `sys.stdout = sys.__stdout__`
            # restores, and what `channel.flush_output` flushes while a cell replaced sys.stdout.
            sys.__stdin__, sys.__stdout__, sys.__stderr__ = self._streams  # type: ignore[misc]


def _settings(stream: io.TextIOWrapper) -> tuple[Any, ...]:
    """What `reconfigure()` changes."""
    return stream.encoding, stream.errors, stream.line_buffering, stream.write_through


def _identity(fd: int) -> tuple[int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def become_worker(out_fd: int, err_fd: int, no_input: str) -> StdFds:
    """Rewire this freshly forked process so that user code can run in it.

    `no_input`: what `input()` says, for a host that cannot answer it."""
    os.setpgid(0, 0)  # one process group: interrupts and kills reach the cell's children
    _reset_signal_handlers()
    _signal.signal(_signal.SIGINT, interrupt_guard)
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGINT})  # blocked across the fork
    global _worker_pid
    _worker_pid = os.getpid()
    std = StdFds(out_fd, err_fd)
    os.close(out_fd)
    os.close(err_fd)
    std.restore()
    builtins.input = NoInput(no_input)
    return std


def _reset_signal_handlers() -> None:
    """Signals as a script gets them, not as the supervisor handles them.

    The worker is forked from the supervisor, whose Python-level handlers (a
    kernel's SIGTERM, say) belong to it: run in the worker they would act on
    a copy of the supervisor's state. Ignored signals stay ignored (SIGPIPE,
    as Python sets it up). The supervisor's wakeup fd (its loop's, or the
    lines kernel's clock of interrupts) is its own too: a cell's signals
    must not be written there.
    """
    _signal.set_wakeup_fd(-1)
    for signum in range(1, _signal.NSIG):
        try:
            if callable(_signal.getsignal(signum)):
                _signal.signal(signum, _signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # not a signal this platform lets us set


def text_stream(fd: int) -> io.TextIOWrapper:
    # Line-buffered: each printed line is one write, so lines keep their order
    # with what os.write, subprocesses and C code put on the same descriptor,
    # and what was printed before a crash is not lost.
    # Lone surrogates are written as escapes instead of failing the print.
    return io.TextIOWrapper(binary(fd), line_buffering=True, **TEXT_OPTIONS)


def binary(fd: int) -> io.BufferedWriter:
    return io.BufferedWriter(io.FileIO(fd, "w", closefd=False))


TEXT_OPTIONS: dict[str, Any] = {"encoding": "utf-8", "errors": "backslashreplace"}


_worker_pid = 0  # set by become_worker


def moved() -> None:
    """This process took the worker's place (a kernel's snapshot, woken: see `snapshot`)."""
    global _worker_pid
    _worker_pid = os.getpid()


def _show_figures() -> None:
    """Figures a cell left open are shown, if it used pyplot at all."""
    if "matplotlib.pyplot" in sys.modules:
        from pyrelune.worker.mplbackend import show_open_figures

        show_open_figures()


def run(cell: Cell, namespace: dict[str, Any], channel: Channel, script: bool = False) -> None:
    """Run one cell and report its end, unless this is a child the cell forked.

    A `script` (oneshot) ends as a script does: after its threads (see `_join_threads`).
    """
    connect(channel.publish, channel.send)
    libraries.hook()
    try:
        try:
            interrupt_guard.start(cell.number)
            error = run_cell(cell.source, cell.filename, namespace, show_result, _show_figures)
            if script:
                error = end_script(error)
        finally:
            interrupt_guard.running = False
    except KeyboardInterrupt as exc:  # a second interrupt, while the first was being reported
        error = exception_error(exc, cell.filename)
    report(channel, error)


def report(channel: Channel, error: CellError | None) -> None:
    """The cell is over: its Done, unless this is a child the cell forked, which ends here
    quietly (it returned into the runtime)."""
    if os.getpid() != _worker_pid:
        os._exit(0)
    channel.send(Done(error))


def end_script(error: CellError | None) -> CellError | None:
    """A oneshot cell ends as a script does: its asyncio loop closed, its threads waited for
    (see `_join_threads`); the cell's error, or the wait's."""
    _close_event_loop()
    return _join_threads(error)


def _close_event_loop() -> None:
    """A script's `asyncio.run()` ends its loop: so does a oneshot cell that awaited."""
    eventloop = sys.modules.get("pyrelune.worker.eventloop")
    if eventloop is not None:
        eventloop.close()


def _join_threads(error: CellError | None) -> CellError | None:
    """Wait for the cell's non-daemon threads, as a script's interpreter does before it exits.

    Their late output is the cell's, so the Done comes after it. First go the
    callbacks that shutdown runs before it waits (`threading._register_atexit`):
    they let an idle `ThreadPoolExecutor`'s workers end. The wait is part of
    the cell: an interrupt (the deadline's) stops it, and the error names the
    threads still running.
    """
    threading = sys.modules.get("threading")
    if threading is None:
        return error  # no thread a script waits for can exist
    for call in reversed(getattr(threading, "_threading_atexits", [])):
        call()
    me = threading.current_thread()
    alive: list[Any] = []
    try:
        while alive := [t for t in threading.enumerate() if t is not me and not t.daemon]:
            alive[0].join()
    except KeyboardInterrupt:
        # Not `is_alive()`: an interrupted join can mark its thread stopped (3.10, 3.11).
        said = (f"Execution interrupted while waiting for the cell's threads: "
                f"{', '.join(t.name for t in alive)} still running")
        before = f"{error.traceback}\n" if error is not None and error.traceback else ""
        details = f"{before}KeyboardInterrupt: {said}\n"
        return CellError(INTERRUPTED, "KeyboardInterrupt", said, details)
    return error


