"""Bad input: every request that cannot run gets exit 0 and a specific, clear error."""

from __future__ import annotations

import pytest
from support.vixhost import VixHost, encode_request


@pytest.mark.parametrize(
    ("raw", "code", "says"),
    [
        (b"", "invalid_request", "Empty request"),
        (b" \n\t", "invalid_request", "Empty request"),
        (b'{"source": "print(1)"', "invalid_json", "not valid JSON"),
        (b'{"source": "print(1)"} trailing', "invalid_json", "Extra data"),
        (b"{'source': 'print(1)'}", "invalid_json", "not valid JSON"),
        (b'{"source": "\xff"}', "invalid_json", "not valid UTF-8: byte 0xff at offset 12"),
        (b"[]", "invalid_request", "must be a JSON object, got an array"),
        (b"42", "invalid_request", "must be a JSON object, got a number"),
        (b'"text"', "invalid_request", "must be a JSON object, got a string"),
        (b"null", "invalid_request", "must be a JSON object, got null"),
        (b"true", "invalid_request", "must be a JSON object, got a boolean"),
        (b"{}", "invalid_request", "'source' is a required property"),
        (b'{"source": 42}', "invalid_request", "source: 42 is not of type 'string'"),
        (b'{"source": null}', "invalid_request", "source: None is not of type 'string'"),
        (b'{"source": "1", "executionCount": "3"}', "invalid_request", "executionCount: '3'"),
        (b'{"source": "1", "executionCount": -1}', "invalid_request", "executionCount: -1"),
        (b'{"source": "1", "workingDirectory": 5}', "invalid_request", "workingDirectory: 5"),
        (b'{"source": "1", "cellId": []}', "invalid_request", "cellId: [] is not"),
        (b'{"source": "1", "protocol": 1}', "invalid_request", "protocol: "),
        (b'{"source": "1", "protocol": "vix-note-extension-2"}', "unsupported_protocol",
         "Unsupported protocol 'vix-note-extension-2'"),
        (b'{"source": "a = 1\\nb = \\u0000"}', "invalid_request",
         "source contains a NUL character (line 2, column 5)"),
    ],
)
def test_rejected(host: VixHost, raw: bytes, code: str, says: str) -> None:
    # Roomy: the wording is tested, not the time; loading jsonschema on a busy machine is slow.
    result = host.run(raw)
    assert result.error["code"] == code
    assert says in result.error["message"], result.error
    assert result.failure == result.error["message"]


@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_nesting_100000_deep(host: VixHost, opening: str) -> None:
    closing = "]" if opening == "[" else "}"
    raw = ('{"source": "1", "x": ' + opening * 100_000 + "1" + closing * 100_000 + "}").encode()
    result = host.run(raw)
    assert result.error["code"] == "invalid_json"
    assert "nested too deeply" in result.error["message"]


@pytest.mark.parametrize(
    "raw",
    [
        b"x" * 300_000,
        b'{"source": 1, "pad": "' + b"y" * 300_000 + b'"}',
        b'{"source": "\xff' + b"z" * 300_000 + b'"}',
        b'{"protocol": "other", "pad": "' + b"y" * 300_000 + b'"}',
        b'{"source": "x", "workingDirectory": "/nonexistent/' + b"d" * 300_000 + b'"}',
    ],
)
def test_large_bad_requests_are_read_before_failing(host: VixHost, raw: bytes) -> None:
    result = host.run(raw)  # the host dies of SIGPIPE if the runtime exits first
    assert not result.sigpipe
    assert result.response["ok"] is False


def test_protocol_may_be_absent(host: VixHost) -> None:
    result = host.run(b'{"source":"print(1)"}')
    assert result.shown == [("stdout", "1\n")]


def test_unknown_fields_are_ignored(host: VixHost) -> None:
    raw = encode_request({"source": "print(2)", "future": {"x": [1, None]}, "documentPath": None})
    assert host.run(raw).shown == [("stdout", "2\n")]


def test_a_leading_bom_is_skipped(host: VixHost) -> None:
    assert host.run(b'\xef\xbb\xbf{"source":"print(3)"}').shown == [("stdout", "3\n")]


def test_a_2_mb_source_runs(host: VixHost) -> None:
    """Just under the request cap (2 MiB, see test_request_size): a big literal, many lines."""
    source = "s = '" + "a" * 2_000_000 + "'\n" + "# comment\n" * 1000 + "print(len(s))"
    result = host.run(encode_request({"source": source}))
    assert result.shown == [("stdout", "2000000\n")]
