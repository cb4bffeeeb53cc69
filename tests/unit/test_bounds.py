"""The worker cuts an event to its mode's cap: text keeps head and tail, JSON is named."""

from __future__ import annotations

from pyrelune import fastjson
from pyrelune.wire.events import PYTHON_RUNTIME_ERROR, CellError, Display, Done, message_limit
from pyrelune.worker import bounds


def test_short_text_is_untouched() -> None:
    assert bounds.clip("abc", 10) == "abc"


def test_long_text_keeps_head_and_tail_and_says_how_much_was_cut() -> None:
    text = "H" * 500 + "m" * 10_000 + "T" * 500
    cut = bounds.clip(text, 1000)
    assert cut.startswith("H" * 500) and cut.endswith("T" * 500)
    assert "[... 10,000 characters cut: over the output cap ...]" in cut


def test_only_plain_text_is_cut_the_rest_is_left_out_whole() -> None:
    """A cut image, SVG or HTML page would be garbage: it goes, and text/plain says so."""
    display = Display({"text/plain": "p" * 5000, "image/png": "i" * 5000,
                       "image/svg+xml": "<svg>" + "s" * 5000}, {}, False)
    out = bounds.bounded(display, 1000)
    assert isinstance(out, Display) and set(out.data) == {"text/plain"}
    assert out.data["text/plain"].startswith("p" * 500)
    assert out.data["text/plain"].endswith(
        "[... image/png output of 5,000 characters left out: over the cap ...]\n"
        "[... image/svg+xml output of 5,005 characters left out: over the cap ...]")


def test_a_display_keeps_what_fits_and_names_what_does_not() -> None:
    big_json = {"rows": list(range(10_000))}
    display = Display({"text/plain": "p" * 5000, "text/html": "<b>ok</b>",
                       "application/json": big_json}, {"a": 1}, True)
    out = bounds.bounded(display, 1000)
    assert isinstance(out, Display) and out.is_result and out.metadata == {"a": 1}
    assert out.data["text/html"] == "<b>ok</b>"
    assert "application/json" not in out.data
    assert out.data["text/plain"].endswith("left out: over the cap ...]")
    assert "[... application/json output of " in out.data["text/plain"]
    assert len(out.data["text/plain"]) < 1200


def test_a_display_with_only_json_too_big_gets_a_plain_note() -> None:
    out = bounds.bounded(Display({"application/json": list(range(10_000))}, {}, False), 100)
    assert isinstance(out, Display)
    assert list(out.data) == ["text/plain"]
    assert out.data["text/plain"].startswith("[... application/json output of ")


def test_an_error_is_cut_in_its_message_and_traceback() -> None:
    error = CellError(PYTHON_RUNTIME_ERROR, "ValueError", "x" * 100_000, "tb" * 50_000, 3, 1)
    out = bounds.bounded(Done(error), 4000)
    assert isinstance(out, Done) and out.error is not None
    assert len(out.error.evalue) < 1100 and len(out.error.traceback) < 1100
    assert (out.error.code, out.error.ename, out.error.line) == (PYTHON_RUNTIME_ERROR,
                                                                 "ValueError", 3)


def test_the_last_resort_fits_the_limit_even_when_every_character_is_escaped() -> None:
    cap = 1 << 12
    display = Display({f"text/x-{n}": "\x01" * cap for n in range(20)}, {}, False)
    out = bounds.plain(bounds.bounded(display, cap), cap)
    assert isinstance(out, Display)
    assert len(fastjson.dumps({"data": out.data})) < message_limit(cap)
