"""Vix Note's reading of a runtime's result, on plain values."""

from __future__ import annotations

import json

import pytest

from pyrelune.vix.host import Exchange, interpret, request


def ok(stdout: bytes, stderr: bytes = b"") -> Exchange:
    return Exchange(0, stdout, stderr)


def test_request_is_compact_sorted_and_not_ascii_escaped() -> None:
    raw = request("print('é')", "o/n", "1.0")
    text = raw.decode()
    assert "é" in text and ", " not in text
    assert list(json.loads(text)) == sorted(json.loads(text))


def test_success_outputs_in_host_order() -> None:
    response = {"protocol": "vix-note-extension-1", "ok": True, "stdout": "a\n", "stderr": "b\n",
                "outputs": [{"mime": "text/plain", "data": "c"},
                            {"mime": "image/svg+xml", "data": "<svg/>"},
                            {"mime": "image/png", "data": "x"}]}
    outcome = interpret(ok(json.dumps(response).encode(), b"warn\n"))
    assert outcome.ok
    assert outcome.outputs == [("stdout", "a\n"), ("stderr", "b\n"), ("stdout", "c"),
                               ("image/svg+xml", "<svg/>"),
                               ("error", "unsupported output MIME: image/png"),
                               ("stderr", "warn\n")]


def test_failure_shows_only_error_message() -> None:
    response = {"ok": False, "error": {"message": "NameError: x"}, "stdout": "lost"}
    outcome = interpret(ok(json.dumps(response).encode()))
    assert (outcome.ok, outcome.message) == (False, "NameError: x")


@pytest.mark.parametrize(("exchange", "message"), [
    (Exchange(1, b'{"ok": true}', b"boom"), "extension process failed"),
    (ok(b"hi\n{\"ok\": true}"), "extension returned invalid JSON"),
    (ok(b'{"ok": true, "stdout": NaN}'), "extension returned invalid JSON"),
    (ok(b'{"ok": true, "stdout": "\\ud800"}'), "extension returned invalid JSON"),
    (ok(b'{"ok": true, "stdout": "\xff"}'), "extension returned invalid JSON"),
    (ok(b'{"ok": "yes"}'), "extension response missing boolean ok"),
    (ok(b'{"ok": true, "protocol": "other"}'), "extension returned invalid protocol"),
    (ok(b'{"ok": false, "error": "boom"}'), "crash: `error` is str, not an object"),
    (ok(b'[1]'), "crash: the response is list, not an object"),
    (ok(b'{"ok": true, "outputs": ["x"]}'), "crash: an `outputs` item is not an object"),
    (ok(b'{"ok": true, "outputs": [{"mime": 1}]}'), "crash: `mime` is int, not a string"),
    (ok(b'{"ok": true, "protocol": 1}'), "crash: `protocol` is int, not a string"),
    (Exchange(None, failure="extension execution timed out"), "extension execution timed out"),
])
def test_failures_as_the_host_words_them(exchange: Exchange, message: str) -> None:
    outcome = interpret(exchange)
    assert not outcome.ok
    assert outcome.message.startswith(message)


def test_bom_is_skipped_and_valid_surrogate_pairs_pass() -> None:
    outcome = interpret(ok(b'\xef\xbb\xbf{"ok": true, "stdout": "\\ud83d\\ude00"}'))
    assert outcome.ok and outcome.text() == "\U0001f600"


@pytest.mark.parametrize("svg", ['<?xml version="1.0"?><svg/>',
                                 "<svg><a href='javascript:x'/></svg>"])
def test_an_svg_note_js_would_not_render_is_an_error(svg: str) -> None:
    response = {"ok": True, "outputs": [{"mime": "image/svg+xml", "data": svg}]}
    assert interpret(ok(json.dumps(response).encode())).outputs == [("error", "Invalid SVG output")]
