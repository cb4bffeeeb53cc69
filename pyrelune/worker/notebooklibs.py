"""Libraries that ask whether they run in a notebook get the true answer: a notebook, no terminal.

pandas decides when it is imported how many columns a frame's text shows:
in a terminal (which it assumes unless `get_ipython()` returns a kernel's
shell) it fits them to the terminal's width, 80 columns without one, and
hides the others behind `...`; in a notebook it shows up to 20, wrapping
wide frames over blocks of lines, as Jupyter users see them. A cell's
output goes to a notebook host, never a terminal: pandas' own question
(`pandas.core.config_init.is_terminal`) is given a `get_ipython` of its
module's own while that module runs, answering as a kernel would. Nothing
else sees it: no library is told it runs in IPython, which would send them
looking for IPython's machinery.

rich asks when each `Console` is made (`rich.console._is_jupyter`: does
`get_ipython()` return a `ZMQInteractiveShell`?). In a notebook its output
is an HTML display with the text as `text/plain`, 115 columns wide
(`JUPYTER_DEFAULT_COLUMNS`), sent through `IPython.display.display`, which
is pyrelune's: so rich is told "a notebook" where IPython can be imported,
by a `get_ipython` in `rich.console`'s namespace alone. A live display
(`Progress`, `track`, `Live`, `status`) draws in Jupyter into an ipywidgets
`Output`, which no pyrelune host can show: its `refresh` here shows each
state as an update of one display instead, the last state when it stops, and
nothing once a transient one stops, as the widget would. A console that
wrote nothing (as a `Live` stops) shows no empty output.

tqdm.auto needs no word: it picks its notebook bar only under ipykernel
(`ipykernel.zmqshell` imported) and with ipywidgets, which draws a widget;
elsewhere it takes the text bar, whose last state pyrelune's `\\r` handling
shows, which is the honest choice for hosts without widgets.
"""

from __future__ import annotations

import importlib.util

from pyrelune.worker import importhooks
from pyrelune.worker.display import display, update_display

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

#: Where a live display keeps the id of the output that shows it.
_LIVE_ID = "_pyrelune_display_id"


class _Kernel:
    """What `get_ipython()` returns to pandas' question: a shell with a kernel, so no terminal."""

    kernel = None


def pandas_asks(module: ModuleType) -> None:
    """Before pandas' options are registered: its `get_ipython()` says "a kernel"."""
    module.get_ipython = _Kernel  # type: ignore[attr-defined]


def pandas_asked(module: ModuleType) -> None:
    """After: the answer is taken back, so that nothing else finds it."""
    if vars(module).get("get_ipython") is _Kernel:
        del module.get_ipython


class ZMQInteractiveShell:
    """What `get_ipython()` returns to rich's question: the shell of a notebook's kernel."""


def rich_asks(console: ModuleType) -> None:
    """rich's consoles print into a notebook, where IPython's `display` can be imported."""
    if importlib.util.find_spec("IPython") is None:
        return  # rich would print nothing: `rich.jupyter.display` needs IPython
    console.get_ipython = ZMQInteractiveShell  # type: ignore[attr-defined]
    importhooks.after_import("rich.jupyter", _no_empty_outputs)
    importhooks.after_import("rich.live", _live_without_widgets)


def _no_empty_outputs(jupyter: ModuleType) -> None:
    """A console that wrote nothing shows no output (a Live's stop, an empty capture)."""
    shows = jupyter.display

    def display_unless_empty(segments: Any, text: str) -> None:
        if text:
            shows(segments, text)

    display_unless_empty.__doc__ = shows.__doc__
    jupyter.display = display_unless_empty  # type: ignore[attr-defined]


def _live_without_widgets(live: ModuleType) -> None:
    """A notebook console's `Live` shows its states as updates of one display."""
    cls = live.Live
    cls.refresh = _refresh(cls.refresh)
    cls.stop = _stop(cls.stop)


def _refresh(terminal: Callable[[Any], None]) -> Callable[[Any], None]:
    def refresh(self: Any) -> None:
        if not self.console.is_jupyter or self._nested:
            terminal(self)  # a nested Live refreshes the outer one, which shows both
            return
        with self._lock:
            self._live_render.set_renderable(self.renderable)
            _show(self)

    refresh.__doc__ = terminal.__doc__
    return refresh


def _stop(terminal: Callable[[Any], None]) -> Callable[[Any], None]:
    def stop(self: Any) -> None:
        shows = self.console.is_jupyter and self._started and not self._nested
        if shows:  # rich's notebook path skips the last refresh: the terminal's keeps it
            with self._lock:
                self.vertical_overflow = "visible"
                self.refresh()
        terminal(self)
        shown = vars(self).get(_LIVE_ID)
        if shows and self.transient and shown is not None:
            update_display({}, display_id=shown, raw=True)

    stop.__doc__ = terminal.__doc__
    return stop


def _show(live: Any) -> None:
    """Display the live's state as its console prints in a notebook, replacing the last one.

    The bundle is the one `rich.jupyter.display` makes of what a print renders.
    """
    from rich.jupyter import _render_segments

    console = live.console
    segments = list(console.render(live._live_render.renderable, console.options))
    text, page = console._render_buffer(segments), _render_segments(segments)
    bundle = {"text/plain": text, "text/html": page}
    shown = vars(live).get(_LIVE_ID)
    if shown is None:
        setattr(live, _LIVE_ID, display(bundle, raw=True, display_id=True).display_id)
    else:
        update_display(bundle, display_id=shown, raw=True)
