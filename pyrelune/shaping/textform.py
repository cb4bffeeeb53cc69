"""A displayed object as text, for hosts (or host outputs) that show only text.

IPython's display objects say little in their `repr` (`<IPython.core.display.Markdown
object>`): what they hold is in their other types. Markdown is meant to be
read as it is; without a repr that says something, the text of the HTML (the
hosts show HTML as escaped markup, or not at all), then LaTeX, then JSON, are
read before a repr that names only the type. Vix Note's `text/plain` output,
the lines kernel's stdout and the rpc kernel's text item all use this order.
"""

from __future__ import annotations

from pyrelune import fastjson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any


def texts(data: dict[str, Any]) -> Iterator[str]:
    """Each text the bundle `data` offers, best first; never a repr naming only the type."""
    plain = data.get("text/plain")
    telling = isinstance(plain, str) and not default_repr(plain)
    for text in (data.get("text/markdown"), plain if telling else None):
        if isinstance(text, str):
            yield text
    html = data.get("text/html")
    if not telling and isinstance(html, str) and (text := _html_text(html)):
        yield text
    if isinstance(latex := data.get("text/latex"), str):
        yield latex
    if not telling and "application/json" in data:
        try:
            yield fastjson.dumps(data["application/json"], ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            pass


def best(data: dict[str, Any]) -> str:
    """The text to show for `data`: the first of `texts`, else its repr, however little it says."""
    plain = data.get("text/plain")
    return next(texts(data), plain if isinstance(plain, str) else "")


def default_repr(text: str) -> bool:
    """A repr that only names the type: `<module.Class object at 0x...>`, or IPython's
    `<module.Class at 0x...>` (the worker words default reprs as IPython does)."""
    return text.startswith("<") and text.endswith(">") and (
        " object" in text or (" at 0x" in text and " " not in text[:text.index(" at 0x")]))


def _html_text(html: str) -> str:
    from pyrelune.shaping.htmltext import html_text  # only for objects that have HTML alone

    return html_text(html)
