"""The rpc-kernel codec and state machine on plain values: every transition, every error
code, and every message it produces checked against the schemas."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from support.profiles import examples
from support.rpc_fuzz import lines, requests
from support.rpc_host import check

from pyrelune.protocols import Rejected, rpc, validation
from pyrelune.protocols import rpcmessages as msg
from pyrelune.protocols.outcome import Outcome
from pyrelune.wire.commands import Admit, Disconnect, Execute, InputReply, Interrupt, Reset
from pyrelune.wire.events import (
    ITEM_MIME,
    JSONML_MIME,
    CellError,
    Clear,
    Display,
    Done,
    InputRequest,
    Stream,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pyrelune.protocols.rpcmessages import Message


def line(method: str, params: dict[str, Any] | None = None, request_id: str = "1") -> str:
    message: dict[str, Any] = {"kind": "request", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def sent(outcome: Outcome[Message], methods: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The outcome's messages as the host receives them, schema-checked."""
    out = []
    for message in outcome.messages:
        decoded = json.loads(msg.encode(message))
        check(decoded, (methods or {}).get(decoded.get("id")))
        out.append(decoded)
    return out


def start(kernel: rpc.RpcCodec, cell_id: str = "c") -> Execute:
    outcome = kernel.receive(line("execute.cell", {"cell_id": cell_id, "source": "x"}))
    assert sent(outcome, {"1": "execute.cell"})[0]["result"] == {"status": "started"}
    (command,) = outcome.commands
    assert isinstance(command, Execute)
    return command


@pytest.mark.parametrize(
    ("raw", "code", "request_id"),
    [
        (b"{", msg.PARSE_ERROR, None),
        (b"\xff\xfe", msg.PARSE_ERROR, None),
        (b"[" * 100000, msg.PARSE_ERROR, None),
        (b"42", msg.INVALID_REQUEST, None),
        (b'{"kind": "request", "id": "7", "method": "kernel.info", "params": {"n": -Infinity}}',
         msg.PARSE_ERROR, None),
        (b'{"kind": "response", "id": "7", "method": "kernel.info"}', msg.INVALID_REQUEST, "7"),
        (b'{"kind": "request", "id": true, "method": "kernel.info"}', msg.INVALID_REQUEST, None),
        (b'{"kind": "request", "id": 7.5, "method": "kernel.info"}', msg.INVALID_REQUEST, None),
        (b'{"kind": "request", "id": 7.0, "method": "kernel.nope"}', msg.METHOD_NOT_FOUND, 7),
        (b'{"kind": "request", "id": "7", "method": "kernel.nope"}', msg.METHOD_NOT_FOUND, "7"),
        (b'{"kind": "request", "id": "7", "method": "kernel.auth", "params": {}}',
         msg.INVALID_REQUEST, "7"),
        (b'{"kind": "request", "id": 7, "method": "execute.cell", "params": {"source": "1",'
         b' "inputs": {"not valid": 1}}}', msg.INVALID_REQUEST, 7),
    ],
)
def test_parse_errors(raw: bytes, code: int, request_id: Any) -> None:
    with pytest.raises(Rejected) as error:
        msg.parse(raw)
    assert msg.reject(error.value)["error"]["code"] == code
    assert error.value.request_id == request_id
    reply = sent(rpc.RpcCodec().receive(raw))
    assert reply == [{"kind": "response", "id": request_id,
                      "error": {"code": code, "message": error.value.message}}]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"id": 1}', f'Invalid request: the request has no "kind" field\n{msg.EXAMPLE}'),
        (b'{"kind": "request", "id": 1.5, "method": "kernel.info"}',
         f'Invalid request: "id" must be a string or an integer, not 1.5\n{msg.EXAMPLE}'),
        (b'{"kind": "request", "id": 1, "method": "execute.cell", "params": {"code": "1"}}',
         f'Invalid execute.cell request: "params" has no "source" field\n{msg.EXAMPLE}'),
        (b'{"kind": "request", "id": 1, "method": "kernel.auth", "params": {"token": 5}}',
         'Invalid kernel.auth request: "params.token" must be a string, not 5'),
    ],
)
def test_invalid_requests_name_the_field_in_words(raw: bytes, message: str) -> None:
    """As the oneshot and lines codecs word them, with a request to copy where one helps."""
    with pytest.raises(Rejected) as error:
        msg.parse(raw)
    assert error.value.message == message


def test_an_integral_float_id_is_echoed_as_the_integer() -> None:
    reply = sent(rpc.RpcCodec().receive(b'{"kind": "request", "id": 3.0, "method": "kernel.info"}'))
    assert reply[0]["id"] == 3 and "result" in reply[0]


def test_every_method_the_parser_lets_in_has_a_handler() -> None:
    assert set(rpc._HANDLERS) == set(msg.METHODS)


def test_cell_lifecycle_idle_running_waiting_input_idle() -> None:
    kernel = rpc.RpcCodec()
    ready = sent(kernel.connect())
    assert ready[0]["data"] == {"version": 1, "state": "idle", "cell_id": None,
                                "auth_required": False}
    command = start(kernel, "cell-1")
    assert (command.origin, command.filename, command.source, command.inputs) == (
        "cell-1", "<cell cell-1>", "x", {})
    assert command.filename == "<cell cell-1>"
    assert kernel.state == rpc.RUNNING
    asked = sent(kernel.output(InputRequest("name? "), 0.0))
    assert asked[-1]["data"] == {"cell_id": "cell-1", "prompt": "name? "}
    assert kernel.state == rpc.WAITING_INPUT
    outcome = kernel.receive(line("execute.input_reply", {"value": "Ada"}, "2"))
    assert sent(outcome, {"2": "execute.input_reply"})[0]["result"] == {"ok": True}
    assert [type(c) for c in outcome.commands] == [InputReply]
    assert kernel.state == rpc.RUNNING
    done = sent(kernel.output(Done(), 0.1))
    assert done == [{"kind": "event", "event": "execute.done",
                     "data": {"cell_id": "cell-1", "status": "ok"}}]
    assert kernel.state == rpc.IDLE


def test_busy_and_misplaced_requests() -> None:
    kernel = rpc.RpcCodec()
    start(kernel)
    busy = sent(kernel.receive(line("execute.cell", {"source": "y"}, "2")))
    assert busy[0]["error"]["code"] == msg.KERNEL_BUSY
    not_waiting = sent(kernel.receive(line("execute.input_reply", {"value": "v"}, "3")))
    assert not_waiting[0]["error"]["code"] == msg.INVALID_REQUEST
    kernel.output(InputRequest(""), 0.0)
    assert sent(kernel.receive(line("execute.cell", {"source": "y"}, "4")))[0]["error"][
        "code"] == msg.KERNEL_BUSY
    info = sent(kernel.receive(line("kernel.info", {}, "5")), {"5": "kernel.info"})
    assert info[0]["result"]["state"] == "waiting_input"


def test_interrupt_only_commands_when_a_cell_runs() -> None:
    kernel = rpc.RpcCodec()
    idle = kernel.receive(line("execute.interrupt"))
    assert sent(idle, {"1": "execute.interrupt"})[0]["result"] == {"ok": True,
                                                                    "interrupted": False}
    assert idle.commands == []
    start(kernel)
    kernel.output(InputRequest("?"), 0.0)
    waiting = kernel.receive(line("execute.interrupt", {}, "2"))
    assert sent(waiting, {"2": "execute.interrupt"})[0]["result"]["interrupted"] is True
    assert [type(c) for c in waiting.commands] == [Interrupt]


def test_reset_while_running_is_answered_after_the_cell_and_the_reset() -> None:
    kernel = rpc.RpcCodec()
    start(kernel)
    waiting = kernel.receive(line("kernel.reset", {}, "r1"))
    assert waiting.messages == [] and waiting.commands == []
    after = kernel.output(Done(CellError("interrupted", "KeyboardInterrupt", "stop")), 0.0)
    assert [m["event"] for m in sent(after)] == ["execute.done"]
    assert [type(c) for c in after.commands] == [Reset]
    assert kernel.busy
    assert sent(kernel.receive(line("execute.cell", {"source": "1"}, "2")))[0]["error"][
        "code"] == msg.KERNEL_BUSY
    second = kernel.receive(line("kernel.reset", {}, "r2"))
    assert second.messages == [] and second.commands == []
    answered = sent(kernel.output(Done(), 0.1), {"r1": "kernel.reset", "r2": "kernel.reset"})
    assert [(m["id"], m["result"]) for m in answered] == [("r1", {"ok": True}),
                                                          ("r2", {"ok": True})]
    assert not kernel.busy


def test_reset_while_idle_commands_at_once() -> None:
    kernel = rpc.RpcCodec()
    outcome = kernel.receive(line("kernel.reset", {}))
    assert [type(c) for c in outcome.commands] == [Reset]
    assert sent(kernel.output(Done(), 0.0), {"1": "kernel.reset"})[0]["result"] == {"ok": True}


def test_auth_gate() -> None:
    kernel = rpc.RpcCodec(token="tok")
    assert sent(kernel.connect())[0]["data"]["auth_required"] is True
    guest = rpc.Guest()
    for method in msg.METHODS:
        if method != "kernel.auth":
            reply = sent(kernel.knock(guest, line(method, {"source": "1", "value": "v"})))
            assert reply[0]["error"]["code"] == msg.AUTH_REQUIRED
    for attempt in range(rpc.MAX_AUTH_FAILURES):
        outcome = kernel.knock(guest, line("kernel.auth", {"token": "nope"}))
        assert sent(outcome)[0]["error"]["code"] == msg.AUTH_FAILED
        last = attempt == rpc.MAX_AUTH_FAILURES - 1
        assert [type(c) for c in outcome.commands] == ([Disconnect] if last else [])
    ok = kernel.knock(rpc.Guest(), line("kernel.auth", {"token": "tok"}))  # a new one starts over
    assert sent(ok, {"1": "kernel.auth"})[0]["result"] == {"ok": True, "state": "idle",
                                                           "cell_id": None}
    assert [type(c) for c in ok.commands] == [Admit]
    assert "result" in sent(kernel.receive(line("kernel.info")), {"1": "kernel.info"})[0]
    wrong = sent(kernel.receive(line("kernel.auth", {"token": "nope"})))  # the client stays in
    assert wrong[0]["error"]["code"] == msg.AUTH_FAILED
    assert "result" in sent(kernel.receive(line("kernel.info")), {"1": "kernel.info"})[0]


@pytest.mark.parametrize("raw", [
    '{"kind": "request", "id": "9", "method": "nope"}',
    '{"kind": "request", "id": "9", "method": "execute.cell", "params": {}}',
    '{"kind": "request", "id": "9"}',
    "[1]",
])
def test_before_auth_every_request_but_auth_is_refused_alike(raw: str) -> None:
    kernel, guest = rpc.RpcCodec(token="tok"), rpc.Guest()
    kernel.connect()
    (reply,) = sent(kernel.knock(guest, raw))
    assert reply["error"]["code"] == msg.AUTH_REQUIRED
    assert reply["id"] == ("9" if raw != "[1]" else None)
    # bad JSON is still bad JSON, and a malformed kernel.auth is still malformed
    assert sent(kernel.knock(guest, "{"))[0]["error"]["code"] == msg.PARSE_ERROR
    bad_auth = kernel.knock(guest, line("kernel.auth", {"token": 7}))
    assert sent(bad_auth)[0]["error"]["code"] == msg.INVALID_REQUEST


@pytest.mark.parametrize(("raw", "count"), [
    (line("kernel.info"), rpc.GUEST_MESSAGES),
    (line("kernel.info", request_id="x" * 30_000), 2),
    ("\u20ac" * 30_000, 0),  # 90,000 bytes of UTF-8: characters are not what is counted
])
def test_a_guest_that_sends_too_much_before_auth_is_dropped_unanswered(raw: str,
                                                                        count: int) -> None:
    kernel, guest = rpc.RpcCodec(token="tok"), rpc.Guest()
    for _ in range(count):
        assert sent(kernel.knock(guest, raw))[0]["error"]["code"] == msg.AUTH_REQUIRED
    over = kernel.knock(guest, raw)
    assert over.messages == []
    (command,) = over.commands
    assert isinstance(command, Disconnect) and "before kernel.auth" in command.reason


def authed_kernel(token: str = "tok", limit: int | None = None) -> rpc.RpcCodec:
    kernel = rpc.RpcCodec(token=token, limit=limit)
    kernel.connect()
    kernel.knock(rpc.Guest(), line("kernel.auth", {"token": token}))
    return kernel


def test_a_connection_sees_no_cell_until_it_authenticates() -> None:
    kernel = authed_kernel()
    start(kernel, "secret")
    kernel.leave()  # the client changes mid-cell
    (ready,) = sent(kernel.connect())
    assert ready["data"]["state"] == "running"
    assert ready["data"]["cell_id"] is None
    assert sent(kernel.output(Stream("stdout", "API_KEY=1\n"), 10.0)) == []
    assert sent(kernel.output(Display({"text/plain": "'pw'"}, {}), 10.1)) == []
    assert sent(kernel.output(Done(), 10.2)) == []
    assert kernel.tick(11.0).messages == []
    guest = rpc.Guest()
    assert sent(kernel.knock(guest, line("kernel.auth", {"token": "guess"})))[0]["error"][
        "code"] == msg.AUTH_FAILED
    authed = sent(kernel.knock(guest, line("kernel.auth", {"token": "tok"})),
                  {"1": "kernel.auth"})
    assert [m.get("event") for m in authed] == [None, "stream", "display_data", "execute.done"]
    assert authed[1]["data"]["text"] == "API_KEY=1\n"
    assert authed[3]["data"] == {"cell_id": "secret", "status": "ok"}


def test_held_output_is_bounded_but_the_cells_end_is_kept() -> None:
    kernel = authed_kernel(limit=4096)
    start(kernel, "loud")
    kernel.leave()  # held with no client at all, as with one that has no token yet
    for n in range(100):
        kernel.output(Display({"text/plain": f"{n:0100d}"}, {}), 10.0 + n)
    kernel.output(Done(), 200.0)
    authed = sent(kernel.knock(rpc.Guest(), line("kernel.auth", {"token": "tok"})),
                  {"1": "kernel.auth"})
    kinds = [m.get("event") for m in authed]
    assert kinds[-2:] == ["stream", "execute.done"]
    kept = kinds.count("display_data")
    assert 10 < kept < 100
    note = authed[-2]["data"]
    assert note["name"] == "stderr"
    assert f"{100 - kept} output messages were dropped" in note["text"]


def test_pending_prompt_is_repeated_to_a_client_that_reconnects() -> None:
    kernel = authed_kernel()
    start(kernel, "held")
    kernel.output(InputRequest("again? "), 0.0)
    kernel.leave()
    greeting = sent(kernel.connect())
    assert [m["event"] for m in greeting] == ["kernel.ready"]  # nothing before auth
    assert greeting[0]["data"]["state"] == "waiting_input"
    authed = sent(kernel.knock(rpc.Guest(), line("kernel.auth", {"token": "tok"})),
                  {"1": "kernel.auth"})
    assert authed[1]["data"] == {"cell_id": "held", "prompt": "again? "}


def test_streams_are_coalesced_and_flushed_before_displays() -> None:
    kernel = rpc.RpcCodec()
    start(kernel)
    first = sent(kernel.output(Stream("stdout", "a\n"), 10.0))
    assert [m["data"]["text"] for m in first] == ["a\n"]  # the first text goes out at once
    assert sent(kernel.output(Stream("stdout", "b\n"), 10.01)) == []
    assert sent(kernel.output(Stream("stderr", "c\n"), 10.02)) == []
    assert sent(kernel.output(Stream("stdout", "d\n"), 10.03)) == []
    assert kernel.flush_at == pytest.approx(10.05)
    assert sent(kernel.tick(10.04)) == []
    due = sent(kernel.tick(10.05))
    assert [(m["data"]["name"], m["data"]["text"]) for m in due] == [
        ("stdout", "b\n"), ("stderr", "c\n"), ("stdout", "d\n")]
    kernel.output(Stream("stdout", "e"), 10.06)  # a line not yet ended: held back
    shown = sent(kernel.output(Display({"text/plain": "'x'"}, {}), 10.07))
    assert [m["event"] for m in shown] == ["stream", "display_data"]
    assert shown[0]["data"]["text"] == "e"


def test_a_progress_bar_arrives_collapsed_and_the_streams_in_a_terminals_order() -> None:
    """The codec applies a terminal's rules to stream text (`shaping.terminal.Presenter`)."""
    kernel = rpc.RpcCodec()
    start(kernel)
    assert sent(kernel.output(Stream("stderr", "10%\r50%\r"), 10.0)) == []
    bar = sent(kernel.output(Stream("stderr", "100%\n"), 10.01)) + sent(kernel.tick(10.1))
    assert "".join(m["data"]["text"] for m in bar) == "100%\n"
    assert sent(kernel.output(Stream("stderr", "working"), 10.2)) == []  # may be rewritten
    late = sent(kernel.output(Stream("stdout", "said\n"), 10.3)) + sent(kernel.tick(10.4))
    assert [(m["data"]["name"], m["data"]["text"]) for m in late] == [
        ("stderr", "working"), ("stdout", "said\n")]  # the other stream passes the line on


def test_output_of_another_cell_goes_under_its_id_outside_the_running_cells_cap() -> None:
    """A thread's or a task's of an earlier cell (`origin`: that cell's id)."""
    kernel = rpc.RpcCodec(limit=100)
    start(kernel, "two")
    kernel.output(Clear(), 0.0)  # the running cell's output is held from now on
    shown = sent(kernel.output(Stream("stdout", "x" * 500, "one"), 10.0))
    shown += sent(kernel.output(Display({"text/plain": "'d'"}, {}, origin="one"), 10.01))
    assert sent(kernel.output(Clear(origin="one"), 10.02)) == []  # sent long ago: it stays
    shown += sent(kernel.output(Stream("stdout", "own", "two"), 10.03))  # its own, after all
    shown += sent(kernel.output(Done(), 10.04))
    assert [(m["event"], m["data"]["cell_id"], m["data"].get("text")) for m in shown] == [
        ("stream", "one", "x" * 500), ("display_data", "one", None),
        ("stream", "two", "own"), ("execute.done", "two", None)]


def test_cap_keeps_the_head_and_a_tail_with_a_marker() -> None:
    kernel = rpc.RpcCodec(limit=1000)
    start(kernel)
    out: list[dict[str, Any]] = []
    for i in range(500):
        out += sent(kernel.output(Stream("stdout", f"{i:04d}\n"), float(i)))
    out += sent(kernel.output(Done(), 1000.0))
    text = "".join(m["data"]["text"] for m in out if m["event"] == "stream")
    head, sep, tail = text.partition("\n[... ")
    assert sep and head.startswith("0000\n0001\n")
    assert len(head.encode()) <= 750
    omitted = int(tail.split(" bytes of stdout omitted")[0].replace(",", ""))
    kept_tail = tail.split("omitted ...]\n")[1]
    assert kept_tail.endswith("0498\n0499\n")
    assert len(head) + omitted + len(kept_tail) == 500 * 5
    # the next cell gets a whole budget again
    start(kernel)
    assert sent(kernel.output(Stream("stdout", "fresh\n"), 2000.0))[0]["data"]["text"] == "fresh\n"


def test_display_items_from_bundles() -> None:
    assert msg.display_item({ITEM_MIME: {"kind": "plot"}, "text/html": "<p>"}) == {"kind": "plot"}
    assert msg.display_item({JSONML_MIME: ["table", {}], "text/html": "<table>"}) == [
        "table", {}]
    assert msg.display_item({"text/html": "<b>", "image/png": "iVBO"}) == {
        "kind": "html", "content": "<b>"}
    assert msg.display_item({"image/png": "iVBO", "text/plain": "<Figure>"}) == {
        "kind": "image", "format": "png", "data": "iVBO"}
    assert msg.display_item({"image/svg+xml": "<svg/>"}) == {
        "kind": "image", "format": "svg", "data": "<svg/>"}
    assert msg.display_item({"text/plain": "42"}) == "42"
    assert msg.display_item({}) == ""


def test_errors_render_the_traceback() -> None:
    kernel = rpc.RpcCodec()
    start(kernel, "bad")
    failure = CellError("python_runtime_error", "ValueError", "nope",
                        "Traceback (most recent call last):\n  ...\nValueError: nope\n", 3)
    done = sent(kernel.output(Done(failure), 0.0))[0]
    assert done["data"] == {"cell_id": "bad", "status": "error", "error": failure.traceback,
                            "ename": "ValueError", "evalue": "nope", "line": 3}
    start(kernel, "dead")
    died = sent(kernel.output(Done(CellError("worker_died", "", "worker killed")), 0.0))[0]
    assert died["data"]["error"] == "worker killed\n"


def test_encode_never_writes_nan_or_lone_surrogates() -> None:
    message = msg.event("display_data", {"cell_id": "c", "item": {
        "kind": "x", "values": [float("nan"), 1.5], "text": "\ud800"}})
    decoded = json.loads(msg.encode(message))
    assert decoded["data"]["item"]["values"] == [None, 1.5]
    assert set(decoded["data"]["item"]["text"]) == {"\ufffd"}


@settings(max_examples=examples(3))
@given(requests())
def test_what_a_methods_schema_accepts_the_envelope_accepts(message: Any) -> None:
    # `msg.check` skips the envelope's schema for a request its method's schema accepts.
    envelope = jsonschema.Draft202012Validator(validation.schema("rpc-kernel.request"))
    for method in msg.METHODS:
        own = validation.schema(f"rpc-kernel.request.{method}")
        if jsonschema.Draft202012Validator(own).is_valid(message):
            assert envelope.is_valid(message)


@pytest.mark.parametrize("method", msg.METHODS)
def test_each_methods_schema_holds_the_envelopes_constraints(method: str) -> None:
    envelope = validation.schema("rpc-kernel.request")
    own = validation.schema(f"rpc-kernel.request.{method}")
    assert own["type"] == envelope["type"]
    assert set(own["required"]) >= set(envelope["required"])
    for name in ("kind", "id"):
        assert own["properties"][name] == envelope["properties"][name]
    assert own["properties"]["method"] == {"const": method}
    assert own["properties"]["params"]["type"] == envelope["properties"]["params"]["type"]


@settings(max_examples=examples(3))
@given(lines)
def test_fuzzed_lines_never_raise_and_every_answer_is_schema_valid(raw: bytes) -> None:
    served, guarded = rpc.RpcCodec(), rpc.RpcCodec(token="tok")
    guarded.connect()
    for outcome in (served.receive(raw), served.receive(raw.decode("utf-8", "replace")),
                    guarded.knock(rpc.Guest(), raw)):
        sent(outcome)
    assert guarded.state == rpc.IDLE  # a guest never starts a cell


def test_output_that_may_be_taken_back_is_sent_in_its_last_state() -> None:
    kernel = rpc.RpcCodec()
    start(kernel)
    assert [m["data"]["text"] for m in sent(kernel.output(Stream("stdout", "live\n"), 1.0))] == [
        "live\n"]
    # From the first updatable display on, the cell's output waits for its last state.
    assert sent(kernel.output(Display({"text/plain": "'0'"}, {}, display_id="p"), 1.1)) == []
    for i in range(1, 4):
        update = Display({"text/plain": f"'{i}'"}, {}, display_id="p", update=True)
        assert sent(kernel.output(update, 1.2)) == []
    assert sent(kernel.output(Stream("stdout", "dropped\n"), 1.3)) == []
    assert sent(kernel.output(Clear(wait=True), 1.4)) == []
    assert sent(kernel.output(Stream("stdout", "last\n"), 1.5)) == []
    assert sent(kernel.output(Display({}, {}, display_id="empty"), 1.6)) == []  # a placeholder
    end = sent(kernel.output(Done(), 1.7))
    assert [(m["event"], m["data"].get("text", m["data"].get("item"))) for m in end] == [
        ("stream", "last\n"), ("execute.done", None)]
    late = sent(kernel.output(Display({"text/plain": "'late'"}, {}, display_id="q"), 5.0))
    assert [m["data"]["item"] for m in late] == ["'late'"]  # between cells: sent as it comes
    assert sent(kernel.output(Clear(), 5.1)) == []
    start(kernel)
    shown = sent(kernel.output(Display({"text/plain": "'x'"}, {}), 6.0))
    assert [m["event"] for m in shown] == ["display_data"]  # a new cell streams again


def test_displays_dropped_from_output_sent_in_its_last_state_are_counted() -> None:
    kernel = rpc.RpcCodec(limit=1024)
    start(kernel)
    big = Display({"text/plain": "'" + "x" * 198 + "'"}, {})  # 200 bytes: two fit in a half
    assert sent(kernel.output(Display(big.data, {}, display_id="p"), 1.0)) == []
    for _ in range(9):
        assert sent(kernel.output(big, 1.1)) == []
    kernel.output(Stream("stdout", "end\n"), 1.2)
    end = sent(kernel.output(Done(), 1.3))
    assert [(m["event"], m["data"].get("name"), m["data"].get("text")) for m in end] == [
        ("display_data", None, None), ("display_data", None, None),
        ("stream", "stderr", "[... 6 displayed outputs omitted ...]\n"),
        ("display_data", None, None), ("display_data", None, None),
        ("stream", "stdout", "end\n"), ("execute.done", None, None)]
    assert {m["data"]["cell_id"] for m in end} == {"c"}


def test_display_items_of_text_only_objects_are_their_source() -> None:
    assert msg.display_item({"text/plain": "<IPython.core.display.Latex object>",
                             "text/latex": "$x$"}) == "$x$"
    assert msg.display_item({"text/plain": "<IPython.core.display.Markdown object>",
                             "text/markdown": "# t"}) == "# t"
    assert msg.display_item({"text/plain": "<IPython.core.display.JSON object>",
                             "application/json": {"a": 1}}) == '{"a": 1}'
