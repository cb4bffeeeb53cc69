"""The vix-note-extension-1 codec on plain values."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from support.vixhost import RESPONSE_SCHEMA, strict_loads

from pyrelune.protocols import vixnote
from pyrelune.shaping import OutputBudget
from pyrelune.wire.events import CellError, Display, Stream


def check(data: bytes) -> dict[str, Any]:
    """Decode a response strictly and check it against the response schema."""
    response = strict_loads(data)
    jsonschema.validate(response, RESPONSE_SCHEMA, cls=jsonschema.Draft202012Validator)
    assert isinstance(response, dict)
    return response


def test_parse_request_reads_the_fields_it_acts_on() -> None:
    raw = json.dumps({"source": "1", "cellId": "c", "requestId": "r",
                      "workingDirectory": "w", "other": 1}).encode()
    request = vixnote.parse_request(raw)
    assert (request.source, request.cell_id, request.request_id, request.working_directory) == (
        "1", "c", "r", "w")
    assert request.filename == "<cell c>"
    bare = vixnote.parse_request(b'{"source": ""}')
    assert (bare.cell_id, bare.request_id, bare.working_directory) == (None, None, "")
    assert bare.filename == "<cell>"


def test_a_nul_in_the_cell_id_becomes_an_escape_in_the_filename() -> None:
    request = vixnote.parse_request(b'{"source": "1", "cellId": "a\\u0000b"}')
    assert request.filename == "<cell a\\x00b>"
    compile("1", request.filename, "eval")


@pytest.mark.parametrize(
    ("raw", "code", "message"),
    [
        (b"", "invalid_request", "Empty request: expected one JSON object on stdin"),
        (b"\xef\xbb\xbf", "invalid_request", "Empty request: expected one JSON object on stdin"),
        (b'{"a": "\xc3"}', "invalid_json", "Request is not valid UTF-8: byte 0xc3 at offset 7"),
        (b"{", "invalid_json",
         "Request is not valid JSON: Expecting property name enclosed in double quotes: "
         "line 1 column 2 (char 1)"),
        (b"[" * 100_000, "invalid_json", "Request is not usable JSON: nested too deeply"),
        (b'{"source": "x", "timeout": Infinity}', "invalid_json",
         "Request is not valid JSON: Infinity is not a JSON value (numbers must be finite)"),
        (b"1.5", "invalid_request", "Request must be a JSON object, got a number"),
        (b'{"source": "x", "protocol": "v2"}', "unsupported_protocol",
         "Unsupported protocol 'v2': this runtime speaks vix-note-extension-1"),
        (b'{"source": ["x"]}', "invalid_request",
         'Invalid request: "source" must be a string, not ["x"]\n'
         'A valid request: {"source": "print(2 + 3)"}'),
        (b'{"source": "x", "documentPath": 1}', "invalid_request",
         'Invalid request: "documentPath" must be a string or null, not 1\n'
         'A valid request: {"source": "print(2 + 3)"}'),
        (b"print(1)", "invalid_json",
         "Request is not valid JSON: it looks like Python code, not a JSON request\n"
         'Give the code as the request\'s "source": {"source": "print(1)"}\n'
         """For example: echo '{"source": "print(1)"}' | pyrelune\n"""
         "To run a file of code, or a notebook: pyrelune run FILE.py (or FILE.ipynb)"),
        (b'{"source": "\\u0000"}', "invalid_request",
         "Invalid request: source contains a NUL character (line 1, column 1)"),
    ],
)
def test_parse_request_rejects(raw: bytes, code: str, message: str) -> None:
    with pytest.raises(vixnote.Rejected) as caught:
        vixnote.parse_request(raw)
    assert (caught.value.code, caught.value.message) == (code, message)
    response = check(vixnote.reject(caught.value, "r1"))
    assert response["ok"] is False and response["requestId"] == "r1"
    assert response["error"] == {"code": code, "message": message,
                                 "details": caught.value.details}


def test_respond_success_shape() -> None:
    budget = OutputBudget(10_000)
    budget.add(Stream("stdout", "a\n"))
    budget.add(Stream("stderr", "warn\n"))
    response = check(vixnote.respond(budget, None, "r"))
    assert response == {"protocol": "vix-note-extension-1", "ok": True, "requestId": "r",
                        "stdout": "a\n", "stderr": "warn\n", "outputs": []}


def test_stdout_after_a_display_follows_it_in_outputs() -> None:
    budget = OutputBudget(10_000)
    for item in (Stream("stdout", "before\n"), Display({"text/plain": "1"}, {}),
                 Stream("stdout", "after "), Stream("stderr", "e"), Stream("stdout", "more\n")):
        budget.add(item)
    response = check(vixnote.respond(budget, None, None))
    assert "requestId" not in response
    assert response["stdout"] == "before\n" and response["stderr"] == "e"
    assert response["outputs"] == [{"mime": "text/plain", "data": "1"},
                                   {"mime": "text/plain", "data": "after more\n"}]


def test_respond_failure_shape() -> None:
    budget = OutputBudget(10_000)
    budget.add(Stream("stdout", "x\n"))
    error = CellError("python_runtime_error", "NameError", "name 'v' is not defined",
                      "Traceback ...\n", 3)
    response = check(vixnote.respond(budget, error, None))
    assert response["ok"] is False and response["stdout"] == "x\n"
    # The host shows nothing but the message: the output and the traceback go below its
    # summary; details and diagnostics stay as they were for the hosts that read them.
    assert response["error"] == {"code": "python_runtime_error",
                                 "message": "NameError: name 'v' is not defined (line 3)\n\n"
                                            "x\n\nTraceback ...",
                                 "details": "Traceback ...\n"}
    assert response["diagnostics"] == [{"severity": "error", "line": 3, "column": None,
                                        "message": "NameError: name 'v' is not defined (line 3)"}]


def test_a_failures_message_keeps_the_tail_of_the_output_and_says_what_it_cut() -> None:
    budget = OutputBudget(32_000)  # a sixteenth of it: 2,000 bytes of output
    budget.add(Stream("stdout", "a" * 5000 + "\n"))
    budget.add(Display({"image/svg+xml": "<svg/>"}, {}))
    budget.add(Stream("stderr", "warned\n"))
    error = CellError("timeout", "", "Cell timed out after 8.5 s")
    message = check(vixnote.respond(budget, error, None))["error"]["message"]
    head, advice, body = message.split("\n\n")
    assert head == "Cell timed out after 8.5 s"
    assert advice == vixnote.TIMEOUT_ADVICE
    assert body.startswith("[... 3,031 bytes of earlier output omitted ...]\naaa")
    assert body.endswith("a\n[image/svg+xml output]\nwarned")
    assert len(body.encode()) < 2000 + 100


def test_a_syntax_errors_message_gives_its_column() -> None:
    traceback = '  File "<cell>", line 1\n    def f(:\n          ^\nSyntaxError: invalid syntax\n'
    error = CellError("python_syntax_error", "SyntaxError", "invalid syntax", traceback, 1, 7)
    response = check(vixnote.respond(OutputBudget(10_000), error, None))
    assert response["error"]["message"] == (
        "SyntaxError: invalid syntax (line 1, column 7)\n\n"
        '  File "<cell>", line 1\n    def f(:\n          ^\nSyntaxError: invalid syntax')
    assert response["diagnostics"][0]["message"] == "SyntaxError: invalid syntax (line 1)"


def test_lone_surrogates_become_replacement_characters() -> None:
    data = vixnote.encode({"stdout": "a\ud800b", "nested": ["\udfff"]})
    assert strict_loads(data) == {"stdout": "a\ufffd\ufffd\ufffdb", "nested": ["\ufffd" * 3]}


def test_nan_is_refused() -> None:
    with pytest.raises(ValueError):
        vixnote.encode({"x": float("nan")})


@pytest.mark.parametrize("limit", [4096, 20_000, 64 * 1024, 900 * 1024])
def test_budget_shrinks_until_the_encoded_response_fits(limit: int) -> None:
    budget = OutputBudget(limit)
    budget.add(Stream("stdout", "\x01" * 100_000))  # six bytes each once escaped
    budget.add(Stream("stderr", '"' * 100_000))
    error = CellError("python_runtime_error", "ValueError", "\x02" * 100_000, "\x03" * 100_000, 1)
    data = vixnote.respond(budget, error, None)
    assert len(data) <= limit
    response = check(data)
    assert "bytes of stdout omitted" in response["stdout"]
    assert response["error"]["message"].startswith("ValueError: ")


def test_escapes_shrink_what_is_kept_not_everything() -> None:
    # 200 KiB of control characters are 1.2 MB as JSON escapes: a sixth of the
    # limit's worth of them still fits, head and tail.
    limit = 900 * 1024
    budget = OutputBudget(limit)
    budget.add(Stream("stdout", "start:" + "\x01" * (200 << 10) + ":end\n"))
    data = vixnote.respond(budget, None, None)
    assert len(data) <= limit
    stdout = check(data)["stdout"]
    assert isinstance(stdout, str)
    head, marker, tail = stdout.partition("\n[... ")
    assert head.startswith("start:\x01") and tail.endswith("\x01:end\n")
    assert marker and len(head) + len(tail) > 0.9 * limit / 6
