"""The libraries a worker adapts to a notebook host, each when a cell imports it.

Each adapter waits for the module whose import triggers it (`ADAPTERS`), so
a cell that never imports matplotlib, pandas, numpy or rich pays for none
of them. An adapter names what to run once that module is imported
(`after`), what must be in place while it is imported (`before`, then
undone by `after`), and which of its classes get a formatter of pyrelune's
(`display.register_formatter`). Each is a `module:function` name, imported
only when it is due: `display` knows no library, and no adapter's module is
loaded before its library is.

matplotlib draws with pyrelune's backend (`MATPLOTLIB_BACKEND`, see
`mplbackend`) unless the user chose one; pandas and rich learn they print
into a notebook (see `notebooklibs`); pandas and numpy values offer the rpc
kernel a table of their own (see `show`).
"""

from __future__ import annotations

import os
import sys

from pyrelune.worker import display, importhooks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

#: What `MPLBACKEND` is set to unless the user chose a backend.
MATPLOTLIB_BACKEND = "module://pyrelune.worker.mplbackend"
_TABLE = "pyrelune.worker.show:table_bundle"


class Adapter:
    """What pyrelune does for one library, as `module:function` names (see the module)."""

    __slots__ = ("after", "before", "formatters")

    def __init__(self, after: str = "", before: str = "",
                 formatters: tuple[tuple[str, str], ...] = ()) -> None:
        self.after = after  # called with the module once it is imported
        self.before = before  # called with it before its code runs
        self.formatters = formatters  # (a class of the module, its formatter)

    def imported(self, module: ModuleType) -> None:
        """The module is imported: its classes get their formatters, then `after` runs."""
        for name, formatter in self.formatters:
            cls = getattr(module, name, None)
            if isinstance(cls, type):
                display.register_formatter(cls, formatter)
        if self.after:
            _named(self.after)(module)

    def importing(self, module: ModuleType) -> None:
        """The module's code is about to run: `before` puts in place what it must find."""
        _named(self.before)(module)


#: The adapters, by the module whose import triggers each.
ADAPTERS = {
    "matplotlib.figure": Adapter(formatters=(("Figure", "pyrelune.worker.mplbackend:"
                                                       "figure_bundle"),)),
    "matplotlib.pyplot": Adapter(after="pyrelune.worker.mplbackend:adopt"),
    "numpy": Adapter(formatters=(("ndarray", _TABLE),)),
    "pandas": Adapter(formatters=(("DataFrame", _TABLE), ("Series", _TABLE))),
    "pandas.core.config_init": Adapter(before="pyrelune.worker.notebooklibs:pandas_asks",
                                       after="pyrelune.worker.notebooklibs:pandas_asked"),
    "rich.console": Adapter(after="pyrelune.worker.notebooklibs:rich_asks"),
}


_hooked = False


def hook() -> None:
    """matplotlib's backend is pyrelune's unless one was chosen; every adapter waits.

    Run before each cell (a cell may have unset MPLBACKEND); the adapters are
    set waiting once per worker, and a library imported already (a warm
    process's preload) is adapted at once.
    """
    global _hooked
    if not os.environ.get("MPLBACKEND"):
        os.environ["MPLBACKEND"] = MATPLOTLIB_BACKEND
    if _hooked:
        return
    _hooked = True
    watch_imports()
    for name, adapter in ADAPTERS.items():
        if not adapter.before:
            importhooks.after_import(name, adapter.imported)


def watch_imports() -> None:
    """What must be in place while a library is imported, not only after: pandas' question.

    `hook` does it; so does a warm process before it preloads pandas
    (`pyrelune.warm.server`), as a cold worker would have before the cell's import.
    """
    for name, adapter in ADAPTERS.items():
        if adapter.before:
            importhooks.before_import(name, adapter.importing)
            importhooks.after_import(name, adapter.imported)


def _named(name: str) -> Callable[[ModuleType], None]:
    """The function `module:function` names, importing its module."""
    module, _, function = name.partition(":")
    __import__(module)
    found: Callable[[ModuleType], None] = getattr(sys.modules[module], function)
    return found
