"""Vix Note output selection: one accepted type per display, by preference, within budget."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from PIL import Image

from pyrelune.protocols import vixnote
from pyrelune.protocols.vixnote_outputs import (
    MIME_ORDER,
    Shown,
    raster_svg,
    select_output,
    svg_for_host,
)
from pyrelune.wire.events import Display, Stream
from pyrelune.worker.display import mime_bundle

ROOM = 1 << 20
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4"/></svg>'


def renders(svg: str) -> bool:
    """Vix Note's check before it shows SVG as an image (note.js)."""
    text = svg.strip()
    return text.startswith("<svg") and "javascript:" not in text


def image_b64(fmt: str, size: tuple[int, int]) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", size, "teal").save(buffer, fmt)
    return base64.b64encode(buffer.getvalue()).decode()


def chosen(data: dict[str, Any], order: tuple[str, ...] = MIME_ORDER, room: int = ROOM,
           metadata: dict[str, Any] | None = None) -> tuple[str, str]:
    display = select_output(Display(data, metadata or {}), order, room)
    ((mime, text),) = display.data.items()
    return mime, text


def test_preference_svg_then_json_then_text_then_html() -> None:
    bundle = {"text/plain": "p", "text/html": "<b>h</b>", "application/json": {"j": 1},
              "image/svg+xml": SVG}
    assert chosen(bundle) == ("image/svg+xml", SVG)
    del bundle["image/svg+xml"]
    assert chosen(bundle) == ("application/json", '{"j": 1}')
    del bundle["application/json"]
    assert chosen(bundle) == ("text/plain", "p")
    del bundle["text/plain"]
    assert chosen(bundle) == ("text/plain", "h")  # the HTML's text: the host escapes HTML
    assert chosen(bundle, ("text/html", "text/plain")) == ("text/html", "<b>h</b>")


def test_html_text_beats_a_repr_that_only_names_the_type() -> None:
    bundle = {"text/plain": "<IPython.core.display.HTML object>",
              "text/html": "<table><tr><td>a</td><td>1</td></tr><tr><td>bb</td><td>2</td></tr>"}
    assert chosen(bundle) == ("text/plain", "a   1\nbb  2")
    assert chosen({**bundle, "text/plain": "Table(2 rows)"}) == ("text/plain", "Table(2 rows)")
    assert chosen({**bundle, "text/html": "<script>x()</script>"}) == (
        "text/html", "<script>x()</script>")


def test_text_outputs_lose_their_colours() -> None:
    assert chosen({"text/plain": "\x1b[31mred\x1b[0m"}) == ("text/plain", "red")


def test_markdown_and_latex_fall_back_to_their_text() -> None:
    assert chosen({"text/plain": "<Md object>", "text/markdown": "# T"}) == ("text/plain", "# T")
    assert chosen({"text/plain": "<x.Latex object at 0x1>", "text/latex": "$x$"}) == (
        "text/plain", "$x$")
    assert chosen({"text/plain": "x**2", "text/latex": "$x^2$"}) == ("text/plain", "x**2")


def test_json_must_be_strict_for_the_host() -> None:
    bundle = {"text/plain": "nan!", "application/json": {"x": float("nan")}}
    assert chosen(bundle) == ("text/plain", "nan!")
    mime, text = chosen({"text/plain": "t", "application/json": {"é": [1.5, None]}})
    assert mime == "application/json" and json.loads(text) == {"é": [1.5, None]}


@pytest.mark.parametrize(
    "svg",
    [
        '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n'
        '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN"\n'
        '  "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n' + SVG,
        "\ufeff  <!-- made by hand -->\n" + SVG + "\n",
        '<!DOCTYPE svg [<!ENTITY a "<b>">]><!--x-->' + SVG,
    ],
)
def test_svg_prolog_doctype_and_comments_are_dropped(svg: str) -> None:
    assert svg_for_host(svg) == SVG


@pytest.mark.parametrize(
    "svg",
    [
        '<svg><a href="javascript:alert(1)"/></svg>',
        '<svg><a href="JavaScript:alert(1)"/></svg>',
        "<svgx/>",
        "<html><svg/></html>",
        "<?xml never closed",
        "<!-- never closed <svg/>",
        "",
    ],
)
def test_svg_the_host_would_refuse_is_not_sent_as_svg(svg: str) -> None:
    assert svg_for_host(svg) is None
    assert chosen({"text/plain": "fallback", "image/svg+xml": svg}) == ("text/plain", "fallback")


def test_svg_without_a_namespace_gets_one() -> None:
    fixed = svg_for_host("<svg width='1'><g/></svg>")
    assert fixed == "<svg xmlns=\"http://www.w3.org/2000/svg\" width='1'><g/></svg>"


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_raster_images_are_wrapped_in_svg_at_their_size(fmt: str) -> None:
    encoded = image_b64(fmt, (31, 17))
    mime, svg = chosen({"text/plain": "<PIL.Image.Image image>", f"image/{fmt.lower()}": encoded})
    assert mime == "image/svg+xml" and renders(svg)
    assert 'width="31" height="17" viewBox="0 0 31 17"' in svg
    assert f"data:image/{fmt.lower()};base64,{encoded}" in svg


def test_raster_display_size_comes_from_metadata() -> None:
    svg = raster_svg("image/png", image_b64("PNG", (40, 20)), {"width": 80})
    assert svg is not None and 'width="80" height="40" viewBox="0 0 40 20"' in svg


@pytest.mark.parametrize(
    ("mime", "encoded"),
    [
        ("image/png", base64.b64encode(b"not a png at all, really not").decode()),
        ("image/jpeg", base64.b64encode(b"\xff\xd8\xff\xd9").decode()),
        ("image/png", 'iVBOR"/><script>'),
    ],
)
def test_unreadable_images_are_not_wrapped(mime: str, encoded: str) -> None:
    assert raster_svg(mime, encoded, None) is None
    assert chosen({"text/plain": "t", mime: encoded}) == ("text/plain", "t")


def test_a_native_svg_beats_a_raster_image() -> None:
    assert chosen({"text/plain": "t", "image/png": image_b64("PNG", (2, 2)), "image/svg+xml": SVG})[
        0:2] == ("image/svg+xml", SVG)


def test_too_big_falls_back_to_a_smaller_type_and_says_so() -> None:
    big = SVG.replace("<rect", "<rect " + "x" * 5000 + " ")
    mime, text = chosen({"text/plain": "<Figure size 640x480 with 1 Axes>", "image/svg+xml": big},
                        room=1000)
    assert mime == "text/plain"
    assert text.startswith("<Figure size 640x480 with 1 Axes>\n")
    assert f"image/svg+xml output of {len(big):,} bytes omitted" in text


def test_nothing_fits_gives_a_one_line_note() -> None:
    mime, text = chosen({"text/plain": "p" * 5000}, room=200)
    assert mime == "text/plain" and "\n" not in text
    assert text == "[... text/plain output of 5,000 bytes omitted: over the output budget ...]"


def test_nothing_the_host_shows_gives_a_note() -> None:
    mime, text = chosen({"image/gif": "R0lG"})
    assert mime == "text/plain" and "image/gif" in text


def test_the_result_flag_is_kept() -> None:
    assert select_output(Display({"text/plain": "1"}, {}, True), MIME_ORDER, ROOM).is_result


def test_html_first_when_asked() -> None:
    bundle = {"text/plain": "p", "text/html": "<b>h</b>"}
    assert chosen(bundle, ("text/html", "text/plain")) == ("text/html", "<b>h</b>")


def test_a_dataframe_is_a_readable_table() -> None:
    import pandas

    data, metadata = mime_bundle(pandas.DataFrame({"name": ["a", "b"], "n": [1, 2]}))
    assert "text/html" in data
    mime, text = chosen(data, metadata=metadata)
    assert mime == "text/plain"
    assert text.splitlines() == ["  name  n", "0    a  1", "1    b  2"]


def test_select_output_is_what_the_response_holds() -> None:
    from pyrelune.shaping import OutputBudget

    budget = OutputBudget(ROOM)
    budget.add(select_output(Display({"text/plain": "t", "image/svg+xml": SVG}, {}), MIME_ORDER,
                             budget.room()))
    response = json.loads(vixnote.respond(budget, None, None))
    assert response["outputs"] == [{"mime": "image/svg+xml", "data": SVG}]


def test_what_the_page_shows_of_a_cells_events() -> None:
    """Text raw and settled as a terminal shows it, one output per display, the last state of
    an updated one: `Shown`, which the oneshot mode hands every event of a cell."""
    shown = Shown(10_000, vixnote.MIME_ORDER)
    shown.add(Stream("stderr", "\x1b[31m10%\r50%\r100%\x1b[0m\n"))
    shown.add(Display({"text/plain": "1", "text/html": "<b>1</b>"}, {}, display_id="d"))
    shown.add(Display({"text/plain": "2"}, {}, display_id="d", update=True))
    shown.add(Stream("stdout", "unfinished"))
    items = list(shown.close().items())
    assert [(type(i).__name__, getattr(i, "text", None) or getattr(i, "data", None))
            for i in items] == [("Stream", "100%\n"), ("Display", {"text/plain": "2"}),
                                ("Stream", "unfinished")]
