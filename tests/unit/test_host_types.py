"""What each host shows, and that the worker builds no other MIME type, on plain values.

Each protocol names the types its rendering reads (`SHOWN`); the worker
builds only those (`display.host_shows`). A host must lose nothing by it:
its rendering of a bundle cut to what it says it shows is its rendering of
the whole bundle.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from pyrelune.protocols import jupyter, lines, rpcmessages, vixnote, vixnote_outputs
from pyrelune.wire.events import ITEM_MIME, JSONML_MIME, TEXT_FORMS, Display
from pyrelune.worker import display
from pyrelune.worker.display import mime_bundle, shown

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x02\0\0\0\x03" + b"\0" * 8).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff\xc0\x00\x11\x08\x00\x03\x00\x02" + b"\0" * 8).decode()
DEFAULT_REPR = "<Thing object at 0x7f00>"


def test_a_host_is_sent_what_it_names_plain_text_always_and_any_but_pyrelunes_own() -> None:
    assert shown(None, "image/png") and shown(None, JSONML_MIME)  # no host said: everything
    assert shown(("text/html",), "text/html") and not shown(("text/html",), "image/png")
    assert shown((), "text/plain") and shown(("image/svg+xml",), "text/plain")
    anything = ("*/*",)
    assert shown(anything, "image/png") and shown(anything, "application/x-custom")
    assert not shown(anything, JSONML_MIME) and not shown(anything, ITEM_MIME)
    assert shown(("*/*", JSONML_MIME), JSONML_MIME)


def test_what_a_display_asks_for_and_what_the_host_shows_both_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(display, "_host", None)
    display.host_shows(("text/html",))
    assert display.wanted("text/html") and not display.wanted("image/png")
    assert not display.wanted("text/html", include=["text/plain"])
    assert not display.wanted("text/html", exclude=["text/html"])
    assert display.wanted("text/plain") and not display.wanted("text/plain", exclude=["text/plain"])


class Everything:
    """An object with every `_repr_*_` type, and a bundle of types of its own."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.bundle_include: Any = "not asked"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        self.bundle_include = include
        return {"application/vnd.custom+json": {"a": 1}, "text/plain": "Everything()"}

    def __getattr__(self, name: str) -> Any:
        formats = {"_repr_html_": "<b>html</b>", "_repr_markdown_": "**md**",
                   "_repr_svg_": "<svg></svg>", "_repr_png_": base64.b64decode(PNG),
                   "_repr_jpeg_": b"\xff\xd8", "_repr_latex_": "$x$", "_repr_json_": {"j": 1},
                   "_repr_pdf_": b"%PDF", "_repr_javascript_": "1"}
        if name not in formats:
            raise AttributeError(name)

        def method() -> Any:
            self.asked.append(name)
            return formats[name]

        return method


def test_a_text_host_gets_a_bundle_of_text_and_no_image_is_made(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(display, "_host", None)
    display.host_shows(lines.SHOWN)
    thing = Everything()
    data, _ = mime_bundle(thing)
    assert set(data) == {"text/plain", "text/html", "text/markdown", "text/latex",
                         "application/json"}
    assert "_repr_png_" not in thing.asked and "_repr_svg_" not in thing.asked
    assert sorted(thing.bundle_include) == sorted(TEXT_FORMS)  # as IPython asks for what it shows


def test_jupyter_gets_every_type(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(display, "_host", None)
    thing = Everything()
    everything = set(mime_bundle(thing)[0])  # no host said: every type
    assert len(everything) == 11
    display.host_shows(jupyter.SHOWN)
    thing = Everything()
    assert set(mime_bundle(thing)[0]) == everything and thing.bundle_include is None


#: A bundle of every type some host reads, and types none does.
FULL = {"text/plain": DEFAULT_REPR, "text/html": "<p>html <b>text</b></p>",
        "text/markdown": "**md**", "text/latex": "$x$", "application/json": {"j": [1, 2]},
        "image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg'></svg>", "image/png": PNG,
        "image/jpeg": JPEG, "application/pdf": "JVBE", "application/javascript": "1",
        ITEM_MIME: {"kind": "html", "content": "item"}, JSONML_MIME: ["table", {}],
        "application/vnd.custom+json": {"c": 1}}


def _subsets() -> list[dict[str, Any]]:
    """FULL, and each of its types alone beside text/plain (a telling repr, and a default one)."""
    bundles = [FULL]
    for mime, value in FULL.items():
        for plain in ("Thing(1)", DEFAULT_REPR):
            bundles.append({"text/plain": plain, mime: value} if mime != "text/plain"
                           else {mime: plain})
    return bundles


def _cut(data: dict[str, Any], types: tuple[str, ...]) -> dict[str, Any]:
    return {mime: value for mime, value in data.items() if shown(types, mime)}


@pytest.mark.parametrize("data", _subsets())
def test_each_host_loses_nothing_by_being_sent_only_what_it_shows(data: dict[str, Any]) -> None:
    cut = _cut(data, lines.SHOWN)
    assert lines.shown(Display(cut, {})).data == lines.shown(Display(data, {})).data
    assert rpcmessages.display_item(_cut(data, rpcmessages.SHOWN)) == rpcmessages.display_item(data)
    for order in (vixnote.MIME_ORDER, ("text/html", "text/plain"), ("text/plain",)):
        whole = vixnote_outputs.select_output(Display(data, {}), order, 1 << 20).data
        shown_types = vixnote.shown(order)
        assert vixnote_outputs.select_output(Display(_cut(data, shown_types), {}), order,
                                             1 << 20).data == whole
    assert jupyter._theirs(_cut(data, jupyter.SHOWN)) == jupyter._theirs(data)


def test_vix_note_is_sent_its_types_in_its_order_and_what_they_are_made_from() -> None:
    assert vixnote.shown(vixnote.MIME_ORDER)[:2] == ("image/svg+xml", "image/png")
    assert set(vixnote.shown(vixnote.MIME_ORDER)) == {
        *vixnote.MIME_ORDER, "image/png", "image/jpeg", *TEXT_FORMS}
    assert vixnote.shown(("text/html",)) == ("text/html",)
