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
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

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
