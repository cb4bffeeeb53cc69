"""Comm messages on plain values: their wire form between worker and session, and how the
Jupyter codec routes them (to the worker in turn, to IOPub, into comm_info)."""

from __future__ import annotations

from typing import Any

import pytest
from test_jupyter_codec import ask, codec, execute, frames, sent, subshell_of

from pyrelune import fastjson
from pyrelune.wire.commands import SUBSHELL, AskInSubshell, Query
from pyrelune.wire.events import (
    WORKER_DIED,
    CellError,
    Comm,
    Done,
    Reply,
    Stream,
    from_wire,
    to_wire,
)


def test_a_comm_event_travels_whole_with_its_buffers() -> None:
    event = Comm("comm_msg", {"comm_id": "c1", "data": {"method": "update"}}, {"v": 1},
                 [b"\x00\xff", b""])
    back = from_wire(to_wire(event))
    assert isinstance(back, Comm)
    assert (back.msg_type, back.content, back.metadata, back.buffers) == (
        "comm_msg", event.content, {"v": 1}, [b"\x00\xff", b""])
    assert back.origin is None and "o" not in to_wire(event)  # the running request's: unnamed
    event.origin = '{"msg_id": "sub"}'
    named = from_wire(to_wire(event))
    assert isinstance(named, Comm) and named.origin == '{"msg_id": "sub"}'


@pytest.mark.parametrize("message", [
    {"t": "comm", "type": "comm_frob", "content": {"comm_id": "c"}, "metadata": {},
     "buffers": []},
    {"t": "comm", "type": "comm_msg", "content": {"data": {}}, "metadata": {}, "buffers": []},
    {"t": "comm", "type": "comm_msg", "content": {"comm_id": "c"}, "metadata": [],
     "buffers": []},
    {"t": "comm", "type": "comm_msg", "content": {"comm_id": "c"}, "metadata": {},
     "buffers": ["not base64!"]},
    {"t": "comm", "type": "comm_msg", "content": {"comm_id": "c"}, "metadata": {},
     "buffers": [1]},
    {"t": "comm", "type": "comm_msg", "content": {"comm_id": "c"}, "metadata": {},
     "buffers": [], "o": 7},
])
def test_a_comm_event_the_worker_cannot_have_sent_is_refused(message: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not an event"):
        from_wire(message)


def test_front_end_comm_messages_go_to_the_worker_in_turn_without_reply() -> None:
    kernel = codec()
    raw, msg_id = frames("comm_open", {"comm_id": "w1", "target_name": "jupyter.widget",
                                       "data": {"state": {}}})
    outcome = kernel.receive("shell", raw)
    assert sent(outcome) == [("iopub", "status:busy")]
    (command,) = outcome.commands
    assert isinstance(command, Query) and command.kind == "comm"
    assert command.args["msg_type"] == "comm_open"
    assert command.args["content"]["comm_id"] == "w1" and command.args["buffers"] == []
    assert kernel.comms == {"w1": {"target_name": "jupyter.widget"}}
    # What the handler printed goes under the comm message; no reply, only idle.
    printed = kernel.output(Stream("stdout", "opened\n"), 0.0)
    done = kernel.output(Done(), 0.0)
    messages = printed.messages + done.messages
    assert [kind for _, kind in sent(printed)] + [kind for _, kind in sent(done)] == [
        "stream", "status:idle"]
    assert {m.parent_header["msg_id"] for _, m in messages} == {msg_id}
    assert not kernel.busy


def test_the_kernels_comms_are_published_and_listed() -> None:
    kernel = codec()
    _, msg_id = execute(kernel, "slider")
    opened = kernel.output(Comm("comm_open", {"comm_id": "k1", "target_name": "jupyter.widget",
                                              "data": {}}, {"version": "2.1.0"}, [b"raw"]), 0.0)
    (_, message), = opened.messages
    assert message.msg_type == "comm_open" and message.parent_header["msg_id"] == msg_id
    assert message.metadata == {"version": "2.1.0"} and message.buffers == [b"raw"]
    assert kernel.comms == {"k1": {"target_name": "jupyter.widget"}}
    kernel.output(Comm("comm_close", {"comm_id": "k1", "data": {}}, {}, []), 0.0)
    assert kernel.comms == {}


def test_a_comm_message_a_subshells_handler_sends_goes_under_that_request() -> None:
    """As ipykernel 7's parent, one per subshell thread: the handler's `comm.send` answers
    the subshell's comm_msg; the main shell's running cell keeps its own."""
    kernel = codec()
    subshell = subshell_of(kernel)
    _, main = execute(kernel, "while True: pass")
    (handled,) = ask(kernel, "comm_msg", {"comm_id": "c", "data": {}}, "shell",
                     {"subshell_id": subshell}).commands
    assert isinstance(handled, AskInSubshell)
    echo = kernel.output(Comm("comm_msg", {"comm_id": "c", "data": {"echo": 1}}, {}, [],
                              handled.origin), 0.0)
    own = kernel.output(Comm("comm_msg", {"comm_id": "c", "data": {}}, {}, []), 0.0)
    ((_, sent_back),) = echo.messages
    assert sent_back.parent_header == fastjson.loads(handled.origin)
    assert sent_back.parent_header["subshell_id"] == subshell
    assert own.messages[0][1].parent_header["msg_id"] == main
    done = kernel.output(Reply({"origin": handled.origin, "status": "ok"}, SUBSHELL), 0.0)
    assert done.messages[0][1].parent_header == sent_back.parent_header  # its idle


def test_a_comm_message_waits_while_a_cell_runs() -> None:
    kernel = codec()
    execute(kernel, "busy()")
    queued = kernel.receive("shell", frames("comm_msg", {"comm_id": "w", "data": {}})[0])
    assert queued.messages == [] and queued.commands == []
    done = kernel.output(Done(), 0.0)
    assert [c.kind for c in done.commands if isinstance(c, Query)] == ["comm"]


def test_a_comm_message_without_id_is_dropped_and_said() -> None:
    outcome = codec().receive("shell", frames("comm_msg", {"data": {}})[0])
    assert outcome.commands == [] and "without comm_id" in outcome.problems[0]
    assert sent(outcome) == [("iopub", "status:busy"), ("iopub", "status:idle")]


def test_comms_die_with_the_worker() -> None:
    kernel = codec()
    execute(kernel, "w = Widget()")
    kernel.output(Comm("comm_open", {"comm_id": "k1", "target_name": "t", "data": {}}, {}, []),
                  0.0)
    kernel.output(Done(CellError(WORKER_DIED, "", "", "the worker died")), 0.0)
    assert kernel.comms == {}
