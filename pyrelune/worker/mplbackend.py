"""pyrelune's matplotlib backend, and figures shown whatever non-interactive backend draws them.

A note has no windows. The worker sets `MPLBACKEND=module://pyrelune.worker.mplbackend`
unless the user chose a backend, so matplotlib picks this module only when
a cell imports it; a cell that never does pays nothing. Drawing is Agg's (so
`savefig` to any format behaves as in a script).

Scripts pasted into a note often call `matplotlib.use("Agg")`, and servers
often set `MPLBACKEND=Agg`: such figures would never be seen. So once pyplot
is imported (`adopt`), every backend that draws without a window (Agg, SVG,
PDF, ...) is treated as this one: `plt.show()` displays the open figures and
closes them, `fig.show()` displays its figure, and `show_open_figures`, run
at the end of each cell, displays what is still open unless it was
displayed already, and closes it. That is what ipykernel's inline backend
does: a saved figure is shown as well, one the cell closed is not, and an
empty figure is shown as its text (`<Figure size 640x480 with 0 Axes>`),
having no image. GUI backends keep their windows.
"""

from __future__ import annotations

import io
import os
import weakref

from matplotlib._pylab_helpers import Gcf
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from pyrelune.worker.display import display, wanted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection
    from types import ModuleType
    from typing import Any

#: Formats a figure is drawn in when the display asks for none in particular.
DEFAULT_FORMATS = ("image/svg+xml",)
_FORMATS = {"image/svg+xml": "svg", "image/png": "png", "image/jpeg": "jpeg"}
#: The names PYRELUNE_FIGURE_FORMATS takes (IPython's `InlineBackend.figure_formats`).
#: `retina` is PNG at twice the resolution, shown at the figure's size.
_NAMED = {"svg": "image/svg+xml", "png": "image/png", "jpeg": "image/jpeg",
          "jpg": "image/jpeg", "retina": "image/png"}


def _chosen_formats() -> tuple[tuple[str, ...], bool]:
    """The default formats, and whether PNG is retina: $PYRELUNE_FIGURE_FORMATS (a
    comma-separated list of `_NAMED`; the Jupyter mode sets `png`, as ipykernel draws, and
    `%config InlineBackend.figure_formats` sets it in a cell)."""
    names = [n.strip().lower() for n in os.environ.get("PYRELUNE_FIGURE_FORMATS", "").split(",")]
    mimes = tuple(dict.fromkeys(_NAMED[n] for n in names if n in _NAMED))
    return mimes or DEFAULT_FORMATS, "retina" in names

#: Figures already displayed, and so not shown again at the end of the cell.
_shown: weakref.WeakSet[Figure] = weakref.WeakSet()


class FigureCanvas(FigureCanvasAgg):
    manager_class = FigureManagerBase


FigureManager = FigureManagerBase


def show(*args: Any, **kwargs: Any) -> None:
    """`plt.show()` with this backend: display every open figure, then close them."""
    _show_and_close(shown_again=True)


def show_open_figures() -> None:
    """End of a cell: display the figures it left open, unless already displayed; close them."""
    _show_and_close(shown_again=False)


def adopt(pyplot: ModuleType) -> None:
    """pyplot was just imported: figures without a window are shown, whichever backend draws.

    Idempotent (a kernel's worker connects its display once per cell).
    """
    global _backend_show
    if pyplot.show is not _pyplot_show:
        _backend_show = pyplot.show
        pyplot.show = _pyplot_show  # type: ignore[attr-defined]
    FigureManagerBase.show = _display_figure  # type: ignore[method-assign,assignment]


_backend_show: Callable[..., Any] | None = None  # pyplot.show as matplotlib defines it


def _pyplot_show(*args: Any, **kwargs: Any) -> Any:
    """`plt.show()`: as with this backend for the figures without a window; GUI ones their way."""
    _show_and_close(shown_again=True)
    return _backend_show(*args, **kwargs) if _backend_show is not None else None


def _display_figure(manager: FigureManagerBase) -> None:
    """`fig.show()` of a figure without a window: display it now."""
    display(manager.canvas.figure)


def _show_and_close(shown_again: bool) -> None:
    managers = [m for m in Gcf.get_all_fig_managers()
                if type(m.canvas).required_interactive_framework is None]
    try:
        for manager in managers:
            figure = manager.canvas.figure
            if shown_again or figure not in _shown:
                display(figure)
    finally:
        for manager in managers:
            Gcf.destroy(manager)


def is_empty(figure: Figure) -> bool:
    """Nothing drawn on it: no image to make (IPython's inline backend makes none either)."""
    return not (figure.axes or figure.lines or figure.patches or figure.texts
                or figure.images or figure.artists or figure.legends)


def figure_bundle(
    figure: Figure, include: Collection[str] | None, exclude: Collection[str] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The display formatter for `Figure`: SVG (or the chosen formats) unless others are
    asked for, of those the host shows; a PNG's metadata gives the size to show it at, as
    IPython's inline backend.

    An empty figure has no image: its `repr` says it has 0 Axes; nor has one
    for a host that shows no image (a lines kernel's). Shown in any case, so
    that it is not shown again at the end of the cell.
    """
    _shown.add(figure)
    if is_empty(figure):
        return {}, {}
    defaults, retina = _chosen_formats()  # read each time: `%config` may change them
    formats = [m for m in (include or defaults) if m in _FORMATS and wanted(m, None, exclude)]
    data: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for mime in formats:
        buffer = io.BytesIO()
        scale = 2 if retina and mime == "image/png" else 1
        figure.savefig(buffer, format=_FORMATS[mime], bbox_inches="tight",
                       dpi=figure.dpi * scale)
        image = buffer.getvalue()
        data[mime] = image.decode("utf-8") if mime == "image/svg+xml" else image
        if mime == "image/png" and image[12:16] == b"IHDR":
            width, height = (int.from_bytes(image[at:at + 4], "big") for at in (16, 20))
            metadata[mime] = {"width": width // scale, "height": height // scale}
    return data, metadata
