"""What Vix Note can show: one output of an accepted type per displayed object.

The engine builds a full MIME bundle; this picks, by a preference order
suited to today's host, the one representation it renders well and that
fits the remaining budget, reshaping it where the host is strict (SVG must
start with `<svg`, JSON must be strict, PNG/JPEG only as SVG-wrapped images).
"""

from __future__ import annotations

from pyrelune import fastjson
from pyrelune.protocols.vixnote import MIME_ORDER as MIME_ORDER  # the codec's, shown here
from pyrelune.shaping import utf8_size
from pyrelune.wire.events import Display

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from pyrelune.shaping import OutputBudget
    from pyrelune.wire.events import Clear, Stream

_SVG_NS = "http://www.w3.org/2000/svg"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Shown:
    """What the page shows of a cell's events: text raw (no colour codes; `\r` and `\b`
    applied, as a terminal would), one output of an accepted type per display, and only the
    last state of one that is updated (the page cannot update an output), within the budget.
    """

    def __init__(self, max_output: int, order: tuple[str, ...]) -> None:
        from pyrelune.shaping import OutputBudget
        from pyrelune.shaping.terminal import Presenter

        self.budget = OutputBudget(max_output)
        self._order = order
        self._screen = Presenter(self._keep, plain=True)

    def add(self, item: Stream | Display | Clear) -> None:
        self._screen.add(item)

    def close(self) -> OutputBudget:
        """The end of the cell: what was held back of a line goes in too."""
        self._screen.close()
        return self.budget

    def _keep(self, item: Stream | Display | Clear) -> None:
        if isinstance(item, Display) and item.data:  # one output Vix Note shows, that fits
            item = select_output(item, self._order, self.budget.room())
        self.budget.apply(item)


def select_output(display: Display, order: tuple[str, ...], room: int) -> Display:
    """The one output Vix Note gets for a displayed object's MIME bundle.

    The first representation, by `order`, that the host can show and that
    fits in `room` bytes. A smaller one stands in for one that does not fit
    (a text stand-in says so); when none fits, a one-line note says what was
    omitted and its size.
    """
    from pyrelune.shaping.terminal import strip_ansi  # loaded after the fork

    too_big: tuple[str, int] | None = None
    for mime, data in _candidates(display, order):
        if mime == "text/plain":  # shown raw: no colour codes
            data = strip_ansi(data)
            if too_big is not None:
                data = f"{data}\n{_omitted(*too_big)}"
        size = utf8_size(data)
        if size <= room:
            return _only(display, mime, data)
        too_big = too_big or (mime, size)
    if too_big is not None:
        note = _omitted(*too_big)
    else:
        from pyrelune.shaping import notes

        note = notes.not_shown(display.data)
    return _only(display, "text/plain", note)


def _only(display: Display, mime: str, data: str) -> Display:
    """`display` with one output: the one the host gets (its id kept, for updates)."""
    return Display({mime: data}, {}, display.is_result, display.display_id, display.update)


def _omitted(mime: str, size: int) -> str:
    from pyrelune.shaping import notes

    return notes.over_budget(mime, size)


def _candidates(display: Display, order: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    """Every `(mime, data)` the host could show, best first.

    A `repr` that only names the type (`<IPython.core.display.HTML object>`)
    comes last, after even HTML: the HTML's text says more.
    """
    for mime in order:
        for data in _renditions(mime, display):
            yield mime, data
    from pyrelune.shaping.textform import default_repr

    plain = display.data.get("text/plain")
    if isinstance(plain, str) and default_repr(plain):
        yield "text/plain", plain


def _renditions(mime: str, display: Display) -> Iterator[str]:
    """What the bundle offers as `mime` in a form the host accepts, best first."""
    data = display.data
    if mime == "image/svg+xml":
        svg = data.get(mime)
        if isinstance(svg, str) and (clean := svg_for_host(svg)) is not None:
            yield clean
        for raster in ("image/png", "image/jpeg"):
            encoded = data.get(raster)
            if isinstance(encoded, str):
                wrapped = raster_svg(raster, encoded, display.metadata.get(raster))
                if wrapped is not None:
                    yield wrapped
    elif mime == "application/json":
        if mime in data:
            try:  # strict JSON: the host's parser refuses NaN and Infinity
                yield fastjson.dumps(data[mime], ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError):
                pass
    elif mime == "text/plain":
        from pyrelune.shaping import textform  # loaded for displays only

        yield from textform.texts(data)
    elif isinstance(data.get(mime), str):
        yield data[mime]


def svg_for_host(svg: str) -> str | None:
    """`svg` as Vix Note renders it, or None when it cannot be made so.

    The host shows SVG only if the trimmed text starts with `<svg` and has no
    `javascript:`; matplotlib and most tools start with an XML prolog, a
    DOCTYPE and comments, which are dropped. A root without the SVG
    namespace gets it, since an SVG loaded as an image needs it.
    """
    text = svg.lstrip("\ufeff \t\r\n")
    while not text.startswith("<svg"):
        end = _prolog_end(text)
        if end < 0:
            return None
        text = text[end:].lstrip()
    if text[4:5] not in (" ", "\t", "\r", "\n", ">", "/") or "javascript:" in text.lower():
        return None
    if "xmlns=" not in text[: text.find(">")]:
        text = f'<svg xmlns="{_SVG_NS}"{text[4:]}'
    return text.rstrip()


def _prolog_end(text: str) -> int:
    """The end of the XML declaration, DOCTYPE or comment `text` starts with, else -1."""
    if text.startswith("<?"):
        close = text.find("?>")
        return close + 2 if close >= 0 else -1
    if text.startswith("<!--"):
        close = text.find("-->", 4)
        return close + 3 if close >= 0 else -1
    if text[:9].upper() == "<!DOCTYPE":
        close = text.find(">")
        subset = text.find("[", 0, close if close >= 0 else len(text))
        if subset >= 0:  # an internal subset may hold '>' of its own
            end = text.find("]", subset)
            close = text.find(">", end) if end >= 0 else -1
        return close + 1 if close >= 0 else -1
    return -1


def raster_svg(mime: str, encoded: str, metadata: Any) -> str | None:
    """A PNG or JPEG (base64) as a minimal SVG holding it as a data URL.

    Its size comes from the image's header; `width`/`height` metadata (as
    IPython's `Image` sets) choose the displayed size. None if the data is
    not a readable image.
    """
    import binascii

    encoded = "".join(encoded.split())
    if not encoded.isascii() or not encoded.replace("+", "").replace("/", "").rstrip("=").isalnum():
        return None
    try:
        raw = binascii.a2b_base64(encoded[:64] if mime == "image/png" else encoded)
    except binascii.Error:
        return None
    size = _png_size(raw) if mime == "image/png" else _jpeg_size(raw)
    if size is None:
        return None
    width, height = size
    shown_width, shown_height = float(width), float(height)
    if isinstance(metadata, dict):
        w, h = metadata.get("width"), metadata.get("height")
        w = w if isinstance(w, (int, float)) and w > 0 else None
        h = h if isinstance(h, (int, float)) and h > 0 else None
        if w is not None:
            shown_width, shown_height = w, h if h is not None else height * w / width
        elif h is not None:
            shown_width, shown_height = width * h / height, h
    return (
        f'<svg xmlns="{_SVG_NS}" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'width="{shown_width:g}" height="{shown_height:g}" viewBox="0 0 {width} {height}">'
        f'<image width="{width}" height="{height}" xlink:href="data:{mime};base64,{encoded}"/>'
        "</svg>"
    )


def _png_size(data: bytes) -> tuple[int, int] | None:
    if not data.startswith(_PNG_SIGNATURE) or data[12:16] != b"IHDR" or len(data) < 24:
        return None
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return (width, height) if width and height else None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the first start-of-frame segment."""
    if not data.startswith(b"\xff\xd8"):
        return None
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
        elif 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height = int.from_bytes(data[at + 5 : at + 7], "big")
            width = int.from_bytes(data[at + 7 : at + 9], "big")
            return (width, height) if width and height else None
        elif 0xD0 <= marker <= 0xD9 or marker == 0x01:  # markers without a length
            at += 2
        else:
            at += 2 + int.from_bytes(data[at + 2 : at + 4], "big")
    return None
