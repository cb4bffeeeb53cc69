"""pyrelune's matplotlib backend: figures become display outputs, drawn as SVG.

The worker sets `MPLBACKEND=module://pyrelune.worker.mplbackend` unless the
user chose a backend, so matplotlib picks this module only when a cell
imports it; a cell that never does pays nothing. Drawing is Agg's (so
`savefig` to any format behaves as in a script). `plt.show()` and
`fig.show()` display figures; `show_open_figures`, run at the end of each
cell, displays what is still open (as Jupyter's inline backend does) unless
it was displayed already, and closes it. Empty figures are never shown.
"""

from __future__ import annotations

import io
import weakref

from matplotlib._pylab_helpers import Gcf
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

from pyrelune.worker.display import display

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection
    from typing import Any

    from matplotlib.figure import Figure

#: Formats a figure is drawn in when the display asks for none in particular.
DEFAULT_FORMATS = ("image/svg+xml",)
_FORMATS = {"image/svg+xml": "svg", "image/png": "png", "image/jpeg": "jpeg"}

#: Figures already displayed, and so not shown again at the end of the cell.
_shown: weakref.WeakSet[Figure] = weakref.WeakSet()


class FigureManager(FigureManagerBase):
    def show(self) -> None:
        """`fig.show()`: display the figure now."""
        display(self.canvas.figure)


class FigureCanvas(FigureCanvasAgg):
    manager_class = FigureManager


def show(*args: Any, **kwargs: Any) -> None:
    """`plt.show()`: display every open figure, then close them (`block` is moot)."""
    _show_and_close(shown_again=True)


def show_open_figures() -> None:
    """End of a cell: display the figures it left open, unless already displayed; close them."""
    _show_and_close(shown_again=False)


def _show_and_close(shown_again: bool) -> None:
    managers = [m for m in Gcf.get_all_fig_managers() if isinstance(m.canvas, FigureCanvas)]
    try:
        for manager in managers:
            figure = manager.canvas.figure
            if not is_empty(figure) and (shown_again or figure not in _shown):
                display(figure)
    finally:
        for manager in managers:
            Gcf.destroy(manager)


def is_empty(figure: Figure) -> bool:
    """Nothing drawn on it: IPython's inline backend skips such figures too."""
    return not (figure.axes or figure.lines or figure.patches or figure.texts
                or figure.images or figure.artists or figure.legends)


def figure_bundle(
    figure: Figure, include: Collection[str] | None, exclude: Collection[str] | None
) -> dict[str, str]:
    """The display formatter for `Figure`: SVG unless other formats are asked for.

    An empty figure has no image (its `repr` says it has 0 Axes).
    """
    if is_empty(figure):
        return {}
    wanted = [m for m in (include or DEFAULT_FORMATS) if m in _FORMATS]
    data: dict[str, Any] = {}
    for mime in wanted:
        if exclude is None or mime not in exclude:
            buffer = io.BytesIO()
            figure.savefig(buffer, format=_FORMATS[mime], bbox_inches="tight")
            image = buffer.getvalue()
            data[mime] = image.decode("utf-8") if mime == "image/svg+xml" else image
    if data:
        _shown.add(figure)
    return data
