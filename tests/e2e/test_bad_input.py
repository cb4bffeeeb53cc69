"""Bad input: every request that cannot run gets exit 0 and a specific, clear error."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.launch import SCRIPT
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
        (b"{}", "invalid_request", 'Invalid request: the request has no "source" field\n'
         'A valid request: {"source": "print(2 + 3)"}'),
        (b'{"source": 42}', "invalid_request", '"source" must be a string, not 42'),
        (b'{"source": null}', "invalid_request", '"source" must be a string, not null'),
        (b'{"source": "1", "executionCount": "3"}', "invalid_request",
         '"executionCount" must be an integer, not "3"'),
        (b'{"source": "1", "executionCount": -1}', "invalid_request",
         '"executionCount" must be at least 0, not -1'),
        (b'{"source": "1", "workingDirectory": 5}', "invalid_request",
         '"workingDirectory" must be a string, not 5'),
        (b'{"source": "1", "cellId": []}', "invalid_request", '"cellId" must be a string, not []'),
        (b'{"source": "1", "protocol": 1}', "invalid_request",
         '"protocol" must be "vix-note-extension-1", not 1'),
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


@pytest.mark.parametrize(
    ("piped", "summary"),
    [
        (b"print(1)\n", "it looks like Python code, not a JSON request"),
        (b"x = = 1\n", "pyrelune reads one JSON object with the code in it"),
    ],
)
def test_plain_code_piped_in_is_told_how_to_send_it(host: VixHost, piped: bytes,
                                                     summary: str) -> None:
    """`echo 'print(1)' | pyrelune`: the answer shows the request to send, and the command."""
    result = host.run(piped)
    assert result.error["code"] == "invalid_json"
    request = json.dumps({"source": piped.decode().strip()})
    assert str(result.failure).splitlines() == [
        f"Request is not valid JSON: {summary}",
        f'Give the code as the request\'s "source": {request}',
        f"For example: echo '{request}' | pyrelune",
        "To run a file of code, or a notebook: pyrelune run FILE.py (or FILE.ipynb)",
    ]
    assert result.error["details"] == ("Request is not valid JSON: Expecting value: "
                                       "line 1 column 1 (char 0)")


def test_the_command_shown_for_piped_code_runs_it(host: VixHost) -> None:
    """The advice's command line, run by a POSIX shell, runs the code: quotes and escapes kept."""
    code = "import os\nprint('it''s', \"a\\tb\")"
    advice = str(host.run(code.encode()).failure)
    command = advice.splitlines()[2].removeprefix("For example: ")
    assert command.startswith("printf '%s\\n' ")  # a backslash: echo may not keep it
    path = f"{Path(SCRIPT).parent}{os.pathsep}{os.environ['PATH']}"
    done = subprocess.run(["sh", "-c", command], capture_output=True, timeout=120, check=True,
                          env={**os.environ, "PATH": path})
    assert json.loads(done.stdout)["stdout"] == "its a\tb\n"


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
