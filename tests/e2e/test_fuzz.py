"""Fuzzing the real processes: oneshot requests and lines-kernel request lines.

Each test has a fixed budget of examples and no deadline per example, so it
ends in seconds on a busy machine and never fails for being slow: the rules
are the protocol's, not the clock's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lines_host import RESPONSE_SCHEMA, Host, strict_json
from strategies import any_text, encode, json_values, request_bytes
from vixhost import VixHost

#: Each oneshot example is a process (tens of milliseconds): a modest number.
ONESHOT = settings(max_examples=60, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow])
#: One kernel answers every example's lines; a batch of up to 8 lines each.
LINES = settings(max_examples=150, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@ONESHOT
@given(request_bytes)
def test_oneshot_answers_any_request(raw: bytes) -> None:
    """Exit 0, one response the host parses and the schema accepts, in time and size."""
    # A generated source may be valid Python: keep any cell short.
    VixHost(env={**os.environ, "PYRELUNE_TIMEOUT": "2"}).run(raw)  # checks it all


#: Cells that run quickly and end every way a cell can.
CELLS = ["print(1)", "1/0", "6 * 7", "import sys; sys.exit(3)", "def f(:", "raise SystemExit",
         "print('\\ud800')", "x = 1", ""]
_ids = st.none() | any_text | json_values
_types = st.sampled_from(["execute", "ping", "restart", "nope", ""]) | json_values


@st.composite
def request_lines(draw: st.DrawFn) -> bytes:
    """A request line: mostly request-shaped objects, some any JSON, some any bytes."""
    kind = draw(st.sampled_from(["request", "request", "request", "json", "bytes"]))
    if kind == "bytes":
        line = draw(st.binary(max_size=80))
    elif kind == "json":
        line = encode(draw(json_values))
    else:
        message: dict[str, Any] = {}
        if (request_id := draw(_ids)) is not None:
            message["id"] = request_id
        # restart forks a new worker: rare, to keep the budget for the rest
        message["type"] = draw(st.sampled_from(["execute"] * 6 + ["ping"] * 3 + ["restart"])
                               | _types)
        if draw(st.booleans()):
            message["code"] = draw(st.sampled_from(CELLS) | any_text | json_values)
        message.update(draw(st.dictionaries(any_text, json_values, max_size=2)))
        line = encode(message)
    return line.replace(b"\n", b" ")  # one line each (a request line never holds a newline)


def expected_id(line: bytes) -> str:
    """The id a response to `line` must carry: the request's string id (lone surrogates
    replaced, as strict UTF-8 requires), else the empty string."""
    try:
        message = json.loads(line.decode("utf-8"), parse_constant=_refuse)
    except (ValueError, RecursionError):
        return ""
    request_id = message.get("id") if isinstance(message, dict) else None
    if not isinstance(request_id, str):
        return ""
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in request_id)


def _refuse(name: str) -> Any:
    raise ValueError(name)


@pytest.fixture(scope="module")
def kernel() -> Iterator[Host]:
    tab = Host()
    tab.ping()
    yield tab
    tab.kill()


@LINES
@given(st.lists(request_lines(), min_size=1, max_size=8))
def test_lines_kernel_answers_every_line(kernel: Host, lines: list[bytes]) -> None:
    """Lines sent at once are answered one each, in order, well-formed, with the right id."""
    lines = [line for line in lines if line.strip()]  # a blank line is skipped, unanswered
    kernel.write(b"".join(line + b"\n" for line in lines))
    for line in lines:
        response = strict_json(kernel.read_line())
        jsonschema.validate(response, RESPONSE_SCHEMA)
        assert response["id"] == expected_id(line), (line, response)


def test_the_fuzzed_lines_kernel_is_alive_at_the_end(kernel: Host) -> None:
    """Runs after the fuzz test (file order): the same kernel still answers and ends cleanly."""
    assert kernel.execute("print(6 * 7)")["stdout"] == "42\n"
    assert kernel.close() == 0
