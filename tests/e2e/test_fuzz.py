"""Fuzzing the real processes: oneshot requests and lines-kernel request lines.

Each test has a budget of examples (support.profiles) and no deadline per example, so it
ends in seconds on a busy machine and never fails for being slow: the rules
are the protocol's, not the clock's.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support import warmhost
from support.launch import SCRIPT
from support.lines_host import RESPONSE_SCHEMA, Host, strict_json
from support.profiles import examples
from support.strategies import any_text, encode, json_values, request_bytes, warm_socket_messages
from support.vixhost import ROOMY, VixHost

from pyrelune.warm import frames

#: Each oneshot example is a process (tens of milliseconds): a modest number.
ONESHOT = settings(max_examples=examples(0.6))
#: One kernel answers every example's lines; a batch of up to 8 lines each.
LINES = settings(max_examples=examples(1.5),
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@ONESHOT
@given(request_bytes)
def test_oneshot_answers_any_request(raw: bytes) -> None:
    """Exit 0, one response the host parses and the schema accepts, within its size.

    A generated source may be valid Python: the runtime's deadline keeps any cell
    short. The host's 10 s, which a busy machine's start-up can reach, is
    test_limits' to test.
    """
    VixHost(env={**os.environ, "PYRELUNE_TIMEOUT": "2"}, wall_clock=ROOMY).run(raw)


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


# --- the warm process's socket ----------------------------------------------------------------

#: Each example is a connection, most a spare taking it (a fork): a modest number.
WARM = settings(max_examples=examples(0.6),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


class WarmSocket:
    """A warm process of the module's own, and what a real launcher would send it."""

    def __init__(self, runtime: Path) -> None:
        self.runtime = runtime
        self.pid = warmhost.start()["pid"]
        (self.path,) = (runtime / "pyrelune").glob("*.sock")
        self.marker = runtime / "ran"
        source = f"_ = open({str(self.marker)!r}, 'a').write('x')"
        self.real = (SCRIPT.encode(), b"18", frames.environ_bytes(dict(os.environb)),
                     b"\0".join(p.encode() for p in sys.path),
                     encode({"source": source}))

    def ran(self) -> int:
        return len(self.marker.read_text()) if self.marker.exists() else 0


@pytest.fixture(scope="module")
def warm_socket() -> Iterator[WarmSocket]:
    with warmhost.own_runtime() as runtime, warmhost.environment(
            XDG_RUNTIME_DIR=str(runtime), PYRELUNE_WARM="colorsys"):
        yield WarmSocket(runtime)


def _read(conn: socket.socket, enough: Callable[[bytes], bool]) -> bytes:
    data = b""
    try:
        while not enough(data) and (chunk := conn.recv(4096)):
            data += chunk
    except OSError:
        pass
    return data


def accepted(data: bytes) -> bool:
    return data[:1] == frames.ACCEPT and len(data) >= 9


@WARM
@given(st.data())
def test_the_warm_socket_never_answers_wrongly(warm_socket: WarmSocket, data: st.DataObject
                                               ) -> None:
    """Whatever a client of the same user sends: a refusal, an accept that runs nothing
    until a proper GO, or the cell's own answer; and the warm process lives on."""
    sent, go = data.draw(warm_socket_messages(warm_socket.real))
    passed = data.draw(st.sampled_from([4, 4, 4, 0, 1, 3]))  # descriptors sent with the GO
    before = warm_socket.ran()
    committed = False
    out_r, out_w = os.pipe()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(60)
        conn.connect(str(warm_socket.path))
        try:
            conn.sendall(sent)
        except OSError:
            pass  # refused before it was all read
        if go is None:
            conn.shutdown(socket.SHUT_WR)
        else:
            conn.settimeout(1.0)  # a cut request waits for more: give up, as a client does
        answer = _read(conn, accepted)
        conn.settimeout(60)
        if not accepted(answer) and go is not None:
            conn.shutdown(socket.SHUT_WR)
            answer += _read(conn, lambda got: False)
        elif accepted(answer) and go:
            here = os.open(warm_socket.runtime, os.O_RDONLY)
            try:
                socket.send_fds(conn, [go], [out_w, out_w, out_w, here][:passed])
            finally:
                os.close(here)
            committed = go == frames.GO and passed == frames.FDS
            answer += _read(conn, lambda got: False)  # no half-close: it ends a cell's runtime
    os.close(out_w)
    with os.fdopen(out_r, "rb") as out:
        written = out.read()
    event("committed" if committed else "accepted" if accepted(answer)
          else "refused" if answer[:1] == frames.COLD else "dropped" if not answer else "other")
    if sent.startswith(frames.STATUS):
        assert answer == b"" or json.loads(answer)["pid"] == warm_socket.pid, answer
    elif committed:
        assert answer[9:] == b"\0", (sent, answer)  # its exit status: 0, answered
        assert b'"ok":' in written or b'"ok": ' in written, written
    elif accepted(answer):
        assert len(answer) == 9, answer  # and nothing more: no GO, no cell
        assert written == b""
    else:
        assert answer == b"" or answer[:1] == frames.COLD, answer
        answer[1:].decode("utf-8")
        assert written == b""
    assert warm_socket.ran() - before <= committed  # a cell runs once, and only committed
    os.kill(warm_socket.pid, 0)  # alive


def test_the_fuzzed_warm_process_still_serves_and_holds_no_host(warm_socket: WarmSocket
                                                                 ) -> None:
    """Runs after the fuzz test (file order). Connections that stall (silent, or a request
    cut short) hang no host: a cell beside them is answered, and served warm once they go."""
    stalled = []
    try:
        for sent in (b"", frames.RUN[:2], frames.RUN + frames.pack(b"x")[:5]):
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(str(warm_socket.path))
            conn.sendall(sent)
            stalled.append(conn)
        beside = VixHost().run_cell("import sys\nprint('colorsys' in sys.modules)")
        assert beside.text() in ("True\n", "False\n")  # answered, warm or cold
    finally:
        for conn in stalled:
            conn.close()
    result = VixHost().run_cell("import sys\nprint('colorsys' in sys.modules)")
    assert result.text() == "True\n"
    os.kill(warm_socket.pid, 0)
