"""pyrelune's `InteractiveShell`, and a cell run through it (a kernel's, or a oneshot script).

The shell is made once per worker, before the first cell (IPython's import
is paid ahead), as `InteractiveShell.instance()`, so that `get_ipython()`
and `IPython.get_ipython()` answer it. Its cells run in the worker's
`__main__` module, as pyrelune's own do (pickling, multiprocessing).
"""

from __future__ import annotations

import os
import re
import sys

from IPython.core import page
from IPython.core.autocall import ExitAutocall
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.payload import PayloadManager
from traitlets import Any as AnyTrait
from traitlets import Bool, Instance, Type, default
from traitlets.config import Config

from pyrelune.wire.commands import Execute
from pyrelune.wire.events import (
    INTERRUPTED,
    PYTHON_EXIT,
    PYTHON_RUNTIME_ERROR,
    PYTHON_SYNTAX_ERROR,
    TRACEBACK_PARTS,
    CellError,
    Payload,
)
from pyrelune.worker import importhooks
from pyrelune.worker.bounds import clip
from pyrelune.worker.introspect import MAX_TEXT
from pyrelune.worker.ipyshell.cellfiles import CellCompiler
from pyrelune.worker.ipyshell.kernel import Kernel, header, stand_in_for_ipykernel
from pyrelune.worker.ipyshell.publish import EventDisplayHook, EventPublisher
from pyrelune.worker.mainmodule import fresh_namespace
from pyrelune.worker.runtime import Cell, end_script, interrupt_guard, report

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any

    from IPython.core.interactiveshell import ExecutionResult

    from pyrelune.worker.channel import Channel


class _Exit(ExitAutocall):
    """`exit` and `quit`: the front end is asked to end (ipykernel's `ask_exit` payload);
    `exit(keep_kernel=True)` leaves the kernel running."""

    def __call__(self, keep_kernel: bool = False) -> None:
        shell = self._ip
        assert shell is not None  # made by the shell, for itself
        shell.keepkernel_on_exit = keep_kernel
        shell.ask_exit()


#: The GUI names of matplotlib's backends that draw in the page, as ipykernel runs them with
#: no event loop.
_IN_THE_PAGE = (None, "inline", "widget", "ipympl", "nbagg", "webagg", "notebook")


class ZMQInteractiveShell(InteractiveShell):
    """IPython's shell, as a Jupyter kernel's worker runs it.

    Named as ipykernel's: rich, tqdm, plotly and others tell a notebook from
    a terminal by this class name. What a cell shows becomes the worker's
    events (`publish`); pages, the next input and exit become the reply's
    payloads; tracebacks are IPython's own, kept for the cell's error.
    """

    compiler_class = Type(CellCompiler)
    displayhook_class = Type(EventDisplayHook)
    display_pub_class = Type(EventPublisher)
    kernel = AnyTrait()
    readline_use = Bool(False)
    autoindent = Bool(False)  # no meaning without a terminal
    exiter = Instance(_Exit)
    keepkernel_on_exit: bool | None = None
    #: The channel to the session (set once made; see `make_shell`).
    channel: Channel
    #: The last traceback shown: (ename, evalue, IPython's formatted parts).
    shown: tuple[str, str, list[str]] | None = None
    #: Whether a cell's traceback goes as IPython's parts (see `make_shell`).
    as_parts = True

    @default("exiter")
    def _default_exiter(self) -> _Exit:
        return _Exit(self)

    @property
    def _payloads(self) -> PayloadManager:
        payloads: PayloadManager | None = self.payload_manager
        assert payloads is not None  # made as the shell is
        return payloads

    def init_environment(self) -> None:
        """What a kernel's subprocesses see: colours on, pagers off (no terminal to page)."""
        env = os.environ
        env["TERM"] = "xterm-color"
        env["CLICOLOR"] = env["CLICOLOR_FORCE"] = env["FORCE_COLOR"] = "1"
        env["PAGER"] = env["GIT_PAGER"] = "cat"

    def init_hooks(self) -> None:
        super().init_hooks()
        self.set_hook("show_in_pager", page.as_hook(self._page), 99)

    def _page(self, text: Any, start: int = 0, screen_lines: int = 0,
              pager_cmd: object = None) -> None:
        """`obj?` and `%pdoc`: for the front end's pager, in the execute_reply."""
        data = text if isinstance(text, dict) else {"text/plain": text}
        data = {mime: clip(value, MAX_TEXT) if isinstance(value, str) else value
                for mime, value in data.items()}
        self._payloads.write_payload({"source": "page", "data": data, "start": max(0, start)})

    def ask_exit(self) -> None:
        self.exit_now = not self.keepkernel_on_exit
        self._payloads.write_payload({"source": "ask_exit",
                                      "keepkernel": bool(self.keepkernel_on_exit)})

    def set_next_input(self, text: str, replace: bool = False) -> None:
        self._payloads.write_payload({"source": "set_next_input",
                                      "text": clip(str(text), MAX_TEXT), "replace": bool(replace)})

    def enable_gui(self, gui: str | None = None) -> None:
        """Only figures shown in the page (matplotlib's inline, widget and notebook
        backends need no event loop): a kernel's worker runs no GUI event loop."""
        if gui not in _IN_THE_PAGE:
            raise UsageError(f"the {gui!r} event loop cannot run in pyrelune's kernel: it has "
                             "no display (use %matplotlib inline, or widget with ipympl)")
        self.active_eventloop = gui

    def fresh_namespace(self) -> None:
        """Every name the cells made goes, as in a new kernel (the rpc kernel's reset)."""
        self.reset(new_session=False)

    def get_parent(self) -> dict[str, Any]:
        """The request being served (ipywidgets' `Output` asks the shell first)."""
        parent: dict[str, Any] = self.kernel.get_parent()
        return parent

    def set_parent(self, parent: dict[str, Any]) -> None:
        self.kernel.set_parent(None, parent)

    @property
    def parent_header(self) -> dict[str, Any]:
        return self.get_parent()

    def run_command(self, command: Execute) -> CellError | None:
        """Run one cell; its payloads are sent, and its error (None if it succeeded) is
        for the caller to report (see `runtime.report`)."""
        self.kernel.serve(header(command.origin))
        if command.count is not None:
            if command.history:
                self._stand_in_for_lost_inputs(command.count)
            self.execution_count = command.count
        self.shown = None
        error: CellError | None
        try:
            interrupt_guard.start(command.cell)
            try:
                result = self.run_cell(command.source, store_history=command.history,
                                       silent=command.silent)
            finally:
                interrupt_guard.running = False
            error = cell_error(result, self.shown, _cell_files(self, result.execution_count),
                               self.as_parts)
        except KeyboardInterrupt:  # outside the cell's code: a second interrupt, a hook's
            error = CellError(INTERRUPTED, "KeyboardInterrupt", "Execution interrupted")
        for payload in self._payloads.read_payload():
            self.channel.send(Payload(payload))
        self._payloads.clear_payload()
        return error

    def _stand_in_for_lost_inputs(self, count: int) -> None:
        """Cells up to `count` that this shell never saw (a lost worker ran them after the
        snapshot this one resumed from) get empty inputs, so `In[n]` stays cell n's."""
        history = self.history_manager
        if history is None:
            return
        missing = count - len(history.input_hist_parsed)
        history.input_hist_parsed.extend([""] * missing)  # nothing when none is missing
        history.input_hist_raw.extend([""] * missing)

    def _showtraceback(self, etype: type[BaseException], evalue: BaseException,
                       stb: Any) -> None:
        """Kept for the cell's error (the Done's), not printed: IPython's parts, as ipykernel
        sends them."""
        self.shown = (etype.__name__, _text(evalue), list(stb))


def make_shell(channel: Channel, as_parts: bool = True) -> ZMQInteractiveShell:
    """The worker's shell, answering `get_ipython()` from now on.

    `as_parts`: tracebacks go as IPython's coloured parts, for a Jupyter front end;
    else as plain text, for the hosts that show text (lines, rpc, Vix Note)."""
    config, startup = profile()
    if "hist_file" not in config.HistoryManager:
        # The history of this session's cells, in memory: no database, no thread saving it.
        config.HistoryManager.hist_file = ":memory:"
    # Older tqdm (and user code) tell a kernel by this section of the shell's configuration,
    # which ipykernel's application makes.
    config.IPKernelApp.pyrelune = True
    # Figures inline, as ipykernel shows them, unless the user chose a backend.
    if not os.environ.get("MPLBACKEND"):
        os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    # plotly's renderer under ipykernel: it recognises ipykernel's shell by its module only,
    # and would otherwise send its whole library (megabytes of HTML) with the first figure.
    os.environ.setdefault("PLOTLY_RENDERER", "plotly_mimetype")
    fresh_namespace()
    shell: ZMQInteractiveShell = ZMQInteractiveShell.instance(
        config=config, user_module=sys.modules["__main__"])
    shell.channel = channel
    shell.as_parts = as_parts
    shell.kernel = Kernel(shell, channel)
    importhooks.after_import("ipykernel.comm",
                             lambda module: stand_in_for_ipykernel(shell.kernel))
    importhooks.before_import("tqdm.autonotebook", _load_ipykernels_shell)
    shell.loop_runner = _on_cells_loop
    _start_up(shell, config, startup)
    return shell


#: The profile's configuration files, as ipykernel reads them (the base one, then its own).
_CONFIG_FILES = ("ipython_config", "ipython_kernel_config")


def profile() -> tuple[Config, list[str]]:
    """The configuration of the user's IPython profile (`default`, under $IPYTHONDIR or
    ~/.ipython) and its startup files, as ipykernel reads them; none where there is none."""
    from IPython.core.profiledir import ProfileDir, ProfileDirError
    from IPython.paths import get_ipython_dir
    from traitlets.config.loader import JSONFileConfigLoader, PyFileConfigLoader

    config = Config()
    try:
        folder = ProfileDir.find_profile_dir_by_name(get_ipython_dir(), "default")
    except (ProfileDirError, OSError):
        return config, []
    for name in _CONFIG_FILES:
        for loader in (PyFileConfigLoader, JSONFileConfigLoader):
            suffix = ".py" if loader is PyFileConfigLoader else ".json"
            if os.path.isfile(os.path.join(folder.location, name + suffix)):
                try:
                    config.merge(loader(name + suffix, path=folder.location).load_config())
                except Exception as exc:  # the user's file: said, and the kernel goes on
                    sys.stderr.write(f"pyrelune: IPython's {name + suffix} failed: {exc}\n")
    startup = sorted(os.path.join(folder.startup_dir, name)
                     for name in os.listdir(folder.startup_dir)
                     if name.endswith((".py", ".ipy"))) if os.path.isdir(
        folder.startup_dir) else []
    return config, startup


def _start_up(shell: ZMQInteractiveShell, config: Config, startup: list[str]) -> None:
    """What ipykernel runs before the first cell: the profile's startup files, then
    `InteractiveShellApp.extensions`, `exec_lines` and `exec_files`."""
    app = config.InteractiveShellApp
    for path in startup:
        if path.endswith(".ipy"):
            shell.safe_execfile_ipy(path)
        else:
            shell.safe_execfile(path, shell.user_ns)
    extensions = shell.extension_manager
    assert extensions is not None  # made as the shell is
    for extension in app.get("extensions", []):
        try:
            extensions.load_extension(extension)
        except Exception as exc:
            sys.stderr.write(f"pyrelune: the extension {extension!r} failed to load: {exc}\n")
    for line in app.get("exec_lines", []):
        shell.run_cell(line, store_history=False)
    for path in app.get("exec_files", []):
        shell.safe_execfile(os.path.expanduser(path), shell.user_ns)


def run_script(cell: Cell, channel: Channel) -> None:
    """A oneshot cell through IPython's shell (`PYRELUNE_SHELL=ipython`): run, ended as a
    script ends (after its threads, see `runtime.end_script`), and reported. Its figures
    are PNG, as inline; Vix Note's page gets them as SVG, as the plain shell's PNGs."""
    shell = make_shell(channel, as_parts=False)
    error = shell.run_command(Execute(cell.source, cell.filename, cell.number))
    interrupt_guard.running = True  # the wait for its threads is the cell's: interruptible
    try:
        error = end_script(error)
    finally:
        interrupt_guard.running = False
    report(channel, error)


def _load_ipykernels_shell(module: object) -> None:
    """tqdm.auto takes its notebook bar (a widget) only where ipykernel's shell module is
    loaded: where ipykernel is installed, it is, as tqdm is imported (it costs no cell else)."""
    from importlib.util import find_spec

    if find_spec("ipykernel") is not None:
        import ipykernel.zmqshell  # noqa: F401


def _on_cells_loop(coroutine: Any) -> Any:
    """Top-level `await` runs on the cells' one loop, as pyrelune's own cells' does
    (see `eventloop`): their tasks go on between cells."""
    from pyrelune.worker import eventloop

    return eventloop.run(coroutine)


def cell_error(result: ExecutionResult, shown: tuple[str, str, list[str]] | None,
               files: frozenset[str], as_parts: bool = True) -> CellError | None:
    """What the cell's error says to the session, None if it succeeded.

    `shown` is the traceback IPython showed for it (ename, evalue, parts);
    `files` the names the cell's code was compiled under, for its line;
    `as_parts`: the traceback keeps IPython's parts and colours (`TRACEBACK_PARTS`),
    else it is their plain text.
    """
    exc: object = result.error_before_exec or result.error_in_exec
    if not isinstance(exc, BaseException):
        return None
    ename, evalue, parts = shown or (type(exc).__name__, _text(exc), [])
    if isinstance(exc, KeyboardInterrupt):
        code = INTERRUPTED
    elif isinstance(exc, SystemExit):
        code = PYTHON_EXIT
    elif isinstance(exc, SyntaxError):
        code = PYTHON_SYNTAX_ERROR
    else:
        code = PYTHON_RUNTIME_ERROR
    if as_parts:  # none, where IPython said it its own way (a UsageError, on stderr)
        traceback = "".join(TRACEBACK_PARTS + part for part in parts) or TRACEBACK_PARTS
    else:
        traceback = _COLOUR.sub("", "\n".join(parts)).strip("\n")
    line = exc.lineno if isinstance(exc, SyntaxError) else _last_line(exc.__traceback__, files)
    return CellError(code, ename, evalue, traceback, _position(line, 1),
                     _position(getattr(exc, "offset", None), 0)
                     if isinstance(exc, SyntaxError) else None)


#: An ANSI colour, as IPython's traceback has them.
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def _cell_files(shell: ZMQInteractiveShell, count: int | None) -> frozenset[str]:
    """The file names IPython compiled this cell's code under."""
    names: dict[str, int] = getattr(shell.compile, "_filename_map", {})
    return frozenset(name for name, number in names.items() if number == count)


def _last_line(tb: TracebackType | None, files: frozenset[str]) -> int | None:
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename in files:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _position(value: object, least: int) -> int | None:
    """A line or column as the events carry one (user code may set anything there)."""
    return value if type(value) is int and least <= value < (1 << 53) else None


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return "<exception str() failed>"
