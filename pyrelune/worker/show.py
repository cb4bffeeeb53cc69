"""`show(obj)` and `plot(...)`: the display helpers of the "runnable sheets" kernel.

Cells written for the rpc kernel's predecessor call these two builtins; the
items they make keep that kernel's shapes (HOSTS.md): tables as JSONML, a
matplotlib figure as a PNG image, HTML, plots as numeric series, anything
else as its text. An item travels inside an ordinary MIME bundle under
`ITEM_MIME` (with `text/plain` beside it for hosts that do not know it),
through `display()`, so it keeps its place among prints.

Runs in the worker. numpy, pandas and matplotlib are only looked at when the
cell imported them already.
"""

from __future__ import annotations

import builtins
import math
import sys

from pyrelune import fastjson
from pyrelune.wire.events import ITEM_MIME, JSONML_MIME
from pyrelune.worker.display import display, wanted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection
    from typing import Any

#: Table rows (and columns) shown: half from the start, half from the end.
MAX_ROWS = 200
MAX_COLUMNS = 100
_ELLIPSIS = "…"



def install() -> None:
    """Make `show`, `plot` and `HtmlOutput` builtins of this worker."""
    builtins.show = show  # type: ignore[attr-defined]
    builtins.plot = plot  # type: ignore[attr-defined]
    builtins.HtmlOutput = HtmlOutput  # type: ignore[attr-defined]


def _send(item: Any, text: str) -> None:
    """Display the item through the engine's one display path (`display(raw=True)`)."""
    # As JSON text: display() reads a str under a +json type as JSON, and an item may be a str.
    display({ITEM_MIME: fastjson.dumps(item), "text/plain": text}, raw=True)


class HtmlOutput:
    """HTML to show as such: `show(HtmlOutput("<b>hi</b>"))`."""

    def __init__(self, html: str) -> None:
        self.html = str(html)

    def __show__(self) -> dict[str, str]:
        return {"kind": "html", "content": self.html}


def show(obj: Any) -> None:
    """Show `obj` in the cell's output, in order with what the cell prints."""
    item = to_item(obj)
    _send(item, item if isinstance(item, str) else _text(obj))


def to_item(obj: Any) -> Any:
    """`obj` as a display item: `__show__()`, figure, table, HTML, else `str(obj)`."""
    method = None if isinstance(obj, type) else getattr(obj, "__show__", None)
    if callable(method):
        item = method()
        return item if fastjson.encodable(item, allow_nan=False) else str(item)
    figure = sys.modules.get("matplotlib.figure")
    if figure is not None and isinstance(obj, figure.Figure):
        return figure_item(obj)
    jsonml = table(obj)
    if jsonml is not None:
        return jsonml
    html = None if isinstance(obj, type) else getattr(obj, "_repr_html_", None)
    if callable(html):
        content = html()
        if isinstance(content, str):
            return {"kind": "html", "content": content}
    return str(obj)


def figure_item(figure: Any) -> dict[str, str]:
    """A matplotlib figure drawn as PNG, base64-encoded."""
    import base64
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return {"kind": "image", "format": "png",
            "data": base64.b64encode(buffer.getvalue()).decode("ascii")}


def table(obj: Any) -> list[Any] | None:
    """A pandas DataFrame or Series, or a numpy array, as a JSONML table; else None."""
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(obj, pandas.DataFrame):
        header = ["tr", {}, ["th", {}, "index"], *_cells("th", _strs(obj.columns))]
        rows = [["tr", {}, ["td", {}, str(index)], *_cells("td", _strs(values))]
                for part in _parts(len(obj))
                for index, values in _pairs(part, lambda s: zip(
                    obj.index[s], obj.iloc[s].itertuples(index=False), strict=True))]
        return ["table", {}, header, *rows]
    if pandas is not None and isinstance(obj, pandas.Series):
        name = "value" if obj.name is None else str(obj.name)
        header = ["tr", {}, ["th", {}, "index"], ["th", {}, name]]
        rows = [["tr", {}, ["td", {}, str(index)], ["td", {}, str(value)]]
                for part in _parts(len(obj))
                for index, value in _pairs(part, lambda s: obj.iloc[s].items())]
        return ["table", {}, header, *rows]
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(obj, numpy.ndarray):
        return _array(obj)
    return None


def table_bundle(
    obj: Any, include: Collection[str] | None = None, exclude: Collection[str] | None = None
) -> dict[str, Any]:
    """The display formatter of pandas and numpy values: their JSONML table.

    Registered by `libraries`, so `display(df)` and a final `df` offer it
    beside pandas' own HTML, to a host that shows it (the rpc kernel's).
    """
    if not wanted(JSONML_MIME, include, exclude):
        return {}
    jsonml = table(obj)
    return {} if jsonml is None else {JSONML_MIME: jsonml}


def _array(array: Any) -> list[Any]:
    shape = "x".join(str(n) for n in array.shape)
    caption = f"{array.dtype} ({shape})"
    if array.ndim == 0:
        return ["table", {}, ["caption", {}, caption], ["tr", {}, ["td", {}, str(array.item())]]]
    if array.ndim == 1:
        values = [v for part in _parts(len(array))
                  for v in ([_ELLIPSIS] if part is None else array[part])]
        return ["table", {}, ["caption", {}, caption], ["tr", {}, *_cells("td", _strs(values))]]
    if array.ndim == 2:
        rows = [["tr", {}, *_cells("td", _strs(row))]
                for part in _parts(len(array))
                for row in ([[_ELLIPSIS]] if part is None else array[part])]
        return ["table", {}, ["caption", {}, caption], *rows]
    first = _array(array[(0,) * (array.ndim - 2)])
    return ["div", {}, ["div", {}, f"{caption}, first slice:"], first]


def _strs(values: Any) -> list[str]:
    return [str(v) for v in values]


def _parts(count: int) -> list[slice | None]:
    """The rows shown: all, or past `MAX_ROWS` the first and last halves around a gap (None)."""
    if count <= MAX_ROWS:
        return [slice(None)]
    half = MAX_ROWS // 2
    return [slice(0, half), None, slice(count - half, count)]


def _pairs(part: slice | None, rows: Callable[[slice], Any]) -> Any:
    """`rows(part)`, or for the gap one row of ellipses."""
    return [(_ELLIPSIS, [_ELLIPSIS])] if part is None else rows(part)


def _cells(tag: str, texts: list[str]) -> list[list[Any]]:
    if len(texts) > MAX_COLUMNS:
        half = MAX_COLUMNS // 2
        texts = [*texts[:half], _ELLIPSIS, *texts[-half:]]
    return [[tag, {}, text] for text in texts]


def plot(*series: Any, title: str = "", x_label: str = "x", y_label: str = "y") -> None:
    """Show numeric series as a plot.

    `plot(y)`, `plot(x, y)`, `plot(x, y1, y2, ...)` (shared x when the first
    two have the same length), `plot(y1, y2, ...)`, or explicit series
    `plot({"name": ..., "x": [...], "y": [...]}, ...)`. Every value must be a
    finite number.
    """
    item = {"kind": "plot", "title": str(title or "Plot"), "x_label": str(x_label),
            "y_label": str(y_label), "series": plot_series(series)}
    _send(item, f"<plot {item['title']!r}: {len(item['series'])} series>")


def plot_series(args: tuple[Any, ...]) -> list[dict[str, Any]]:
    """The `series` of a plot item, from `plot`'s positional arguments."""
    if not args:
        raise TypeError("plot() needs at least one series")
    if all(isinstance(a, dict) for a in args):
        return [_explicit(a, i) for i, a in enumerate(args)]
    columns = [_numbers(a, f"argument {i + 1}") for i, a in enumerate(args)]
    if len(columns) == 1:
        x, ys = None, columns
    elif len(columns) == 2 or len(columns[0]) == len(columns[1]):
        x, ys = columns[0], columns[1:]
    else:
        x, ys = None, columns
    out = []
    for i, y in enumerate(ys):
        xs = x if x is not None else [float(n) for n in range(len(y))]
        if len(xs) != len(y):
            raise ValueError(f"plot(): series {i} has {len(y)} values but x has {len(xs)}")
        out.append({"name": f"series{i}", "x": xs, "y": y})
    return out


def _explicit(spec: dict[str, Any], index: int) -> dict[str, Any]:
    if "y" not in spec:
        raise TypeError(f"plot(): series {index} needs a 'y' list")
    y = _numbers(spec["y"], f"series {index} y")
    x = _numbers(spec["x"], f"series {index} x") if "x" in spec else [
        float(n) for n in range(len(y))]
    if len(x) != len(y):
        raise ValueError(f"plot(): series {index} has {len(y)} y values but {len(x)} x values")
    return {"name": str(spec.get("name", f"series{index}")), "x": x, "y": y}


def _numbers(values: Any, what: str) -> list[float]:
    """`values` as finite floats, or a TypeError/ValueError naming the bad one."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise TypeError(f"plot(): {what} must be a sequence of numbers, "
                        f"not {type(values).__name__}")
    out = []
    for i, value in enumerate(values):
        if isinstance(value, (str, bytes, bool)) or value is None:
            raise TypeError(f"plot(): {what}[{i}] is not a number: {value!r}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"plot(): {what}[{i}] is not a number: {value!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"plot(): {what}[{i}] is not finite: {value!r}")
        out.append(number)
    return out


def _text(obj: Any) -> str:
    try:
        return repr(obj)
    except Exception:
        return object.__repr__(obj)
