"""The lines kernel codec and line reader, on plain values."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import jsonschema
import pytest

from pyrelune.protocols import lines
from pyrelune.protocols.validation import authoritative_errors, quick_valid, schema
from pyrelune.shaping import OutputBudget
from pyrelune.transports.stdio import LineReader
from pyrelune.wire.events import CellError, Display, Stream

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
RESPONSE = json.loads((SCHEMAS / "lines-kernel.response.json").read_text())
REQUEST = json.loads((SCHEMAS / "lines-kernel.request.json").read_text())


def decode(line: bytes) -> dict[str, object]:
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    message = json.loads(line.decode("utf-8"))
    jsonschema.validate(message, RESPONSE)
    return message  # type: ignore[no-any-return]


def test_schemas_are_valid_draft_2020_12() -> None:
    for spec in (REQUEST, RESPONSE):
        jsonschema.Draft202012Validator.check_schema(spec)


@pytest.mark.parametrize(("line", "kind", "code", "request_id"), [
    (b'{"id": "a", "type": "execute", "code": "1"}', "execute", "1", "a"),
    (b'{"id": "a", "type": "execute"}', "execute", "", "a"),
    (b'{"type": "ping"}', "ping", "", ""),
    (b' {"id": "r", "type": "restart", "code": "ignored", "more": 1} ', "restart", "ignored", "r"),
])
def test_parse_request(line: bytes, kind: str, code: str, request_id: str) -> None:
    request = lines.parse_request(line)
    assert (request.type, request.code, request.id) == (kind, code, request_id)


@pytest.mark.parametrize(("line", "request_id", "error"), [
    (b"{nope", "", "Invalid JSON: Expecting property name enclosed in double quotes"),
    (b"{", "", "Invalid JSON: "),
    (b"[" * 100_000, "", "Invalid JSON: "),
    (b"\xc3\x28", "", "Invalid JSON: not UTF-8 (byte 0xc3 at offset 0)"),
    (b'{"id": "x", "type": "execute", "n": NaN}', "",
     "Invalid JSON: NaN is not a JSON value (numbers must be finite)"),
    (b"null", "", "Invalid request: expected a JSON object, got null"),
    (b"42", "", "Invalid request: expected a JSON object, got a number"),
    (b'"s"', "", "Invalid request: expected a JSON object, got a string"),
    (b'{"id": "x", "type": "example"}', "x", "Unknown request type: example"),
    (b'{"id": "x", "type": ""}', "x", "Unknown request type: "),
    (b'{"id": "x"}', "x", 'Invalid request: the request has no "type" field\n'
     'A valid request: {"id": "1", "type": "execute", "code": "print(2 + 3)"}'),
    (b'{"id": "x", "type": 1}', "x", 'Invalid request: "type" must be a string, not 1\n'),
    (b'{"id": "x", "type": "execute", "code": null}', "x",
     'Invalid request: "code" must be a string, not null\n'),
    (b'{"id": 7, "type": "ping"}', "", 'Invalid request: "id" must be a string, not 7\n'),
    (b'{"id": "x", "type": "execute", "source": "1"}', "x",
     'Invalid request: "source" given without "code"'),
])
def test_rejected_requests(line: bytes, request_id: str, error: str) -> None:
    with pytest.raises(lines.Rejected) as caught:
        lines.parse_request(line)
    response = decode(lines.reject(caught.value))
    assert response["id"] == request_id
    assert str(response["error"]).startswith(error)
    assert (response["stdout"], response["stderr"]) == ("", "")


def test_pong() -> None:
    assert decode(lines.pong("p")) == {"id": "p", "type": "result", "stdout": "pong",
                                       "stderr": "", "error": None, "output_type": "text"}


def test_cell_response_keeps_order_and_puts_displays_in_stdout() -> None:
    output = OutputBudget(1 << 20)
    for item in (Stream("stdout", "a\n"), Stream("stderr", "e"),
                 Display({"text/plain": "<shown>", "text/html": "<b>"}, {}),
                 Stream("stdout", "b\n"), Display({"text/plain": "42"}, {}, is_result=True)):
        output.add(item)
    response = decode(lines.cell_response("c", output, None))
    assert (response["stdout"], response["stderr"], response["error"]) == (
        "a\n<shown>\nb\n42\n", "e", None)


def test_cell_response_says_what_was_omitted() -> None:
    output = OutputBudget(2048)
    for i in range(100):
        output.add(Stream("stdout", f"{i:05d}\n" * 10))
    stdout = str(decode(lines.cell_response("c", output, None))["stdout"])
    assert stdout.startswith("00000\n") and stdout.endswith("00099\n")
    assert "bytes of stdout omitted" in stdout


@pytest.mark.parametrize(("error", "text"), [
    (None, None),
    (CellError("interrupted", "KeyboardInterrupt", "Execution interrupted", "Traceback...", 3),
     "KeyboardInterrupt: Execution interrupted"),
    (CellError("python_runtime_error", "ZeroDivisionError", "division by zero",
               "Traceback (most recent call last):\nZeroDivisionError: division by zero\n", 1),
     "Traceback (most recent call last):\nZeroDivisionError: division by zero\n"),
    (CellError("worker_died", "", "worker killed by SIGSEGV (segmentation fault)"),
     "worker killed by SIGSEGV (segmentation fault)"),
])
def test_error_text(error: CellError | None, text: str | None) -> None:
    assert lines.error_text(error) == text


def test_responses_are_strict_utf8_on_one_line() -> None:
    line = lines.response("i", stdout="a\ud800\nb\u00e9", stderr="\x00", error="\udfff")
    message = decode(line)
    assert message["stdout"] == "a\ufffd\ufffd\ufffd\nb\u00e9"
    assert "\ud800" not in line.decode()


@pytest.mark.parametrize("message", [
    {"id": "a", "type": "execute", "code": "x"},
    {"type": "ping"},
    {"id": "a", "type": "other", "extra": [1, 2]},
    {"id": 1, "type": "ping"},
    {"id": "a"},
    {"type": "execute", "code": 3},
    [],
    None,
])
def test_quick_validator_agrees_with_jsonschema(message: object) -> None:
    spec = schema(lines.REQUEST_SCHEMA)
    valid = jsonschema.Draft202012Validator(REQUEST).is_valid(message)
    assert (not authoritative_errors(message, spec)) == valid
    if quick_valid(message, spec):
        assert valid


def read_lines(*chunks: bytes) -> list[bytes]:
    r, w = os.pipe()

    def write() -> None:
        for chunk in chunks:
            os.write(w, chunk)
        os.close(w)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        return list(LineReader(r))
    finally:
        writer.join()
        os.close(r)


@pytest.mark.parametrize(("chunks", "expected"), [
    ([b"a\nb\n"], [b"a", b"b"]),
    ([b"a", b"b\nc", b"\n"], [b"ab", b"c"]),
    ([b"a\n\nb"], [b"a", b"", b"b"]),
    ([b""], []),
    ([b"x" * 200_000 + b"\ny\n"], [b"x" * 200_000, b"y"]),
])
def test_line_reader(chunks: list[bytes], expected: list[bytes]) -> None:
    assert read_lines(*chunks) == expected
