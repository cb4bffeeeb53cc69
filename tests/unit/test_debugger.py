"""The Jupyter debugger's DAP codec and session, on plain bytes and dicts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pyrelune.protocols import dap
from pyrelune.protocols.debugger import WAIT, DebugSession, Moves, shown
from pyrelune.wire.cellnames import HASH_SEED, cell_file, folder, murmur2


def framed(message: dict[str, Any]) -> bytes:
    return dap.frame(message)


def test_a_message_is_read_whatever_its_chunks() -> None:
    data = framed({"seq": 1, "type": "event", "event": "é"}) + framed({"seq": 2, "type": "x"})
    for size in (1, 3, 7, len(data)):
        reader = dap.Reader()
        messages = []
        for at in range(0, len(data), size):
            messages += reader.feed(data[at:at + size])
        assert [m["seq"] for m in messages] == [1, 2]
        assert messages[0]["event"] == "é"


def test_the_header_counts_bytes_and_may_carry_other_fields() -> None:
    body = '{"seq": 3, "text": "ü"}'.encode()
    data = b"Content-Type: x\r\ncontent-length: %d\r\n\r\n" % len(body) + body
    assert dap.Reader().feed(data) == [{"seq": 3, "text": "ü"}]


@pytest.mark.parametrize("data", [
    b"Content-Length: x\r\n\r\n{}", b"Other: 2\r\n\r\n{}", b"Content-Length: 2\r\n\r\n[]",
    b"Content-Length: 2\r\n\r\n{]", b"x" * (dap.MAX_HEADER + 1)])
def test_what_is_not_dap_is_an_error(data: bytes) -> None:
    with pytest.raises(dap.DapError):
        dap.Reader().feed(data)


def test_numbering_pairs_a_response_with_its_purpose() -> None:
    numbering = dap.Numbering()
    first, second = object(), object()
    (one,) = dap.Reader().feed(numbering.request("initialize", {"a": 1}, first))
    (two,) = dap.Reader().feed(numbering.request("threads", None, second))
    assert (one["seq"], one["command"], one["arguments"]) == (1, "initialize", {"a": 1})
    assert two["seq"] == 2 and "arguments" not in two
    assert numbering.answered({"request_seq": 2}) == (True, second)
    assert numbering.answered({"request_seq": 2}) == (False, None)  # once
    assert numbering.forget(first) and not numbering.forget(first)
    assert numbering.waiting() == []


def test_murmur2_matches_ipykernels_names() -> None:
    from ipykernel.compiler import murmur2_x86

    for text in ("", "a", "ab", "abc", "abcd", "print('héllo')\n", "x = 1\ny = 2\n"):
        assert murmur2(text.encode()) == murmur2_x86(text, HASH_SEED)  # type: ignore[no-untyped-call]
    assert cell_file(42, "a") == os.path.join(folder(42), f"{murmur2(b'a')}.py")


# -- the session ------------------------------------------------------------------------

def request(command: str, seq: int, **arguments: Any) -> dict[str, Any]:
    return {"type": "request", "seq": seq, "command": command, "arguments": arguments}


def sent(moves: Moves) -> list[dict[str, Any]]:
    reader = dap.Reader()
    return [m for data in moves.to_adapter for m in reader.feed(data)]


def answer(session: DebugSession, to: dict[str, Any], success: bool = True,
           **body: Any) -> Moves:
    return session.received(framed({"seq": 100, "type": "response", "request_seq": to["seq"],
                                    "success": success, "command": to["command"],
                                    "body": body}))


def event(session: DebugSession, name: str, **body: Any) -> Moves:
    return session.received(framed({"seq": 101, "type": "event", "event": name, "body": body}))


def attached(session: DebugSession) -> None:
    """initialize and attach, as JupyterLab sends them, through a worker that starts debugpy."""
    moves = session.request("init-token", request("initialize", 1, clientID="x"), True)
    assert moves.start and not moves.ask and not moves.replies
    assert session.holding  # cells wait for debugpy
    moves = session.answered(None, {"address": ["127.0.0.1", 5678]})
    assert moves.connect == ("127.0.0.1", 5678)
    (initialize,) = sent(moves)
    reply = answer(session, initialize, supportsSetVariable=True).replies
    assert reply == [("init-token", {"seq": 1, "type": "response", "request_seq": 1,
                                      "success": True, "command": "initialize",
                                      "body": {"supportsSetVariable": True}})]
    (attach,) = sent(session.request("attach-token", request("attach", 2), True))
    assert attach["arguments"]["connect"] == {"host": "127.0.0.1", "port": 5678}
    assert {"module": "pyrelune", "include": False} in attach["arguments"]["rules"]
    moves = event(session, "initialized")  # the kernel configures debugpy itself
    assert [m["command"] for m in sent(moves)] == ["configurationDone"]
    assert moves.events[0]["event"] == "initialized"
    assert answer(session, sent(moves)[0]).replies == []
    assert [token for token, _ in answer(session, attach).replies] == ["attach-token"]
    assert session.started and session.attached


def test_initialize_starts_debugpy_in_the_worker_and_attach_configures_it() -> None:
    attached(DebugSession())


def test_initialize_starts_debugpy_while_a_cell_runs_and_fails_if_it_does_not_start() -> None:
    session = DebugSession()
    ((_, reply),) = session.request("t", {"seq": 1}, True).replies
    assert not reply["success"]
    moves = session.request("t", request("initialize", 1), False)  # a cell runs
    assert moves.start and not moves.replies
    assert session.flush_at == 0.0 and session.tick(50.0).replies == []
    assert session.flush_at == 50.0 + WAIT
    ((token, reply),) = session.tick(50.0 + WAIT).replies  # its cell is in C code
    assert token == "t" and not reply["success"] and "in time" in reply["message"]
    assert not session.holding


def test_debug_info_is_ipykernels(tmp_path: Path) -> None:
    session = DebugSession()
    ((_, reply),) = session.request("t", request("debugInfo", 7), True).replies
    body = reply["body"]
    assert (reply["request_seq"], reply["success"]) == (7, True)
    assert body["hashMethod"] == "Murmur2" and body["hashSeed"] == HASH_SEED
    assert body["tmpFilePrefix"] == folder(os.getpid()) + os.sep
    assert body["tmpFileSuffix"] == ".py" and not body["isStarted"]
    assert set(body) >= {"breakpoints", "stoppedThreads", "richRendering", "exceptionPaths"}


def test_dump_cell_writes_the_cell_where_its_name_says() -> None:
    code = f"x = {os.urandom(4).hex()!r}\n"
    ((_, reply),) = DebugSession().request("t", request("dumpCell", 3, code=code), True).replies
    path = reply["body"]["sourcePath"]
    assert path == cell_file(os.getpid(), code)
    assert Path(path).read_text(encoding="utf-8") == code
    ((_, source),) = DebugSession().request("t", request(
        "source", 4, source={"path": path}), True).replies
    assert source["body"]["content"] == code
    Path(path).unlink()


def test_breakpoints_are_those_debugpy_set_and_stopped_threads_are_kept() -> None:
    session = DebugSession()
    attached(session)
    (forwarded,) = sent(session.request("b", request(
        "setBreakpoints", 9, source={"path": "/c.py"}, breakpoints=[{"line": 2}]), True))
    assert forwarded["seq"] != 9  # renumbered: the kernel's own requests share the numbers
    ((token, reply),) = answer(session, forwarded, breakpoints=[{"line": 3, "verified": True}]
                               ).replies
    assert (token, reply["request_seq"], reply["seq"]) == ("b", 9, 9)
    event(session, "stopped", threadId=1, allThreadsStopped=True)
    info = session.info()
    assert info["breakpoints"] == [{"source": "/c.py", "breakpoints": [{"line": 3}]}]
    assert info["stoppedThreads"] == [1]
    (resume,) = sent(session.request("n", request("next", 10, threadId=1), False))
    answer(session, resume)
    assert session.info()["stoppedThreads"] == []


def test_variables_leave_ipythons_names_out() -> None:
    assert shown("x") and shown("_private") and not shown("_i3") and not shown("_12")
    assert not shown("In") and not shown("get_ipython")
    session = DebugSession()
    attached(session)
    event(session, "stopped", threadId=1)
    (forwarded,) = sent(session.request("v", request("variables", 5, variablesReference=4),
                                        False))
    ((_, reply),) = answer(session, forwarded, variables=[
        {"name": "Out"}, {"name": "x"}]).replies
    assert reply["body"]["variables"] == [{"name": "x"}]


def test_namespace_requests_ask_the_idle_worker_and_are_answered_while_a_cell_runs() -> None:
    session = DebugSession()
    inspect = request("inspectVariables", 2)
    ((token, args),) = session.request("i", inspect, True).ask
    assert args["action"] == "variables"
    ((_, reply),) = session.answered(token, {"request": inspect, "variables": [
        {"name": "x", "value": "1"}, {"name": "_i1", "value": ""}]}).replies
    assert reply["body"]["variables"] == [{"name": "x", "value": "1"}]
    ((_, busy),) = session.request("i", request("inspectVariables", 3), False).replies
    assert busy["body"]["variables"] == [{"name": "x", "value": "1"}]  # as last seen
    ((_, rich),) = session.request("r", request("richInspectVariables", 4,
                                                variableName="x"), False).replies
    assert not rich["success"]
    ((_, dead),) = session.answered("r", None).replies
    assert not dead["success"]


def test_variables_between_cells_open_a_namespace_variable_in_the_worker() -> None:
    session = DebugSession()
    opened = request("variables", 3, variablesReference=77)
    ((token, args),) = session.request("v", opened, True).ask
    assert (args["action"], args["reference"]) == ("children", 77)
    ((_, reply),) = session.answered(token, {"request": opened, "variables": [
        {"name": "'a'", "value": "1", "variablesReference": 0}, {"name": "_i2"}]}).replies
    assert reply["body"]["variables"] == [{"name": "'a'", "value": "1", "variablesReference": 0}]
    ((_, busy),) = session.request("v", request("variables", 4, variablesReference=77),
                                   False).replies
    assert busy["success"] and busy["body"]["variables"] == []  # a cell runs


def test_rich_views_and_copies_in_a_stopped_frame_go_to_debugpy() -> None:
    session = DebugSession()
    attached(session)
    event(session, "stopped", threadId=1)
    (evaluate,) = sent(session.request("r", request("richInspectVariables", 6, variableName="df",
                                                    frameId=2), False))
    assert evaluate["command"] == "evaluate" and "format(df)" in evaluate["arguments"]["expression"]
    ((_, rich),) = answer(session, evaluate, result=repr(
        ({"text/plain": "1"}, {"text/plain": {}, "other": 1}))).replies
    assert rich["body"] == {"data": {"text/plain": "1"}, "metadata": {"text/plain": {}}}
    (copy,) = sent(session.request("c", request("copyToGlobals", 7, dstVariableName="g",
                                                srcVariableName="x", srcFrameId=2), False))
    assert copy["command"] == "setExpression" and copy["arguments"]["value"] == "x"
    ((_, bad),) = session.request("c", request("copyToGlobals", 8, dstVariableName="1",
                                               srcVariableName="x", srcFrameId=2), False).replies
    assert not bad["success"]


def test_an_unanswered_request_fails_after_the_wait() -> None:
    session = DebugSession()
    attached(session)
    sent(session.request("s", request("stackTrace", 4, threadId=1), False))
    assert session.flush_at == 0.0  # to be timed
    assert session.tick(100.0).replies == []
    assert session.flush_at == 100.0 + WAIT
    ((token, reply),) = session.tick(100.0 + WAIT).replies
    assert token == "s" and not reply["success"] and "C code" in reply["message"]


def lost_after_terminated() -> Moves:
    """debugpy says `terminated` itself: the connection's end adds nothing."""
    session = DebugSession()
    attached(session)
    event(session, "stopped", threadId=1)
    assert [e["event"] for e in event(session, "terminated").events] == [
        "continued", "terminated"]
    return session.lost()


def test_a_dead_worker_ends_the_session_and_the_next_request_attaches_anew() -> None:
    session = DebugSession()
    attached(session)
    session.request("b", request("setBreakpoints", 5, source={"path": "/c.py"},
                                 breakpoints=[{"line": 2}]), True)
    event(session, "stopped", threadId=1)
    sent(session.request("s", request("stackTrace", 6, threadId=1), False))
    moves = session.lost()
    assert [token for token, _ in moves.replies] == ["b", "s"]
    assert [e["event"] for e in moves.events] == ["continued", "exited", "terminated"]
    assert lost_after_terminated().events == []
    assert not session.attached and session.info()["stoppedThreads"] == []
    assert session.restore_due and session.holding  # the next cell waits for the set-up
    assert session.lost().events == []  # the worker's death, told twice: no news
    moves = session.request("b2", request("setBreakpoints", 7, source={"path": "/d.py"},
                                          breakpoints=[{"line": 1}]), True)
    assert not moves.start  # held for the set-up, which the driver begins between cells
    assert session.restore().start and not session.restore_due and session.holding
    moves = session.answered(None, {"address": ["127.0.0.1", 6000]})
    assert [m["command"] for m in sent(moves)] == ["initialize", "attach"]
    own_attach = sent(moves)[1]
    replayed = sent(event(session, "initialized"))
    assert [m["command"] for m in replayed] == ["setBreakpoints", "setBreakpoints",
                                                "configurationDone"]
    assert session.holding
    moves = answer(session, own_attach)
    assert not session.holding and session.attached
    (held,) = sent(moves)  # the front end's, once attached
    assert held["command"] == "setBreakpoints" and held["arguments"]["source"]["path"] == "/d.py"


def disconnected(session: DebugSession) -> None:
    """JupyterLab's debugger turned off: debugpy says `terminated`, then answers, in two
    reads (as the adapter's bytes may come)."""
    (bye,) = sent(session.request("d", request("disconnect", 9, restart=False,
                                               terminateDebuggee=True), True))
    assert bye["arguments"]["terminateDebuggee"] is False  # the worker is the kernel's
    assert [e["event"] for e in event(session, "terminated").events] == ["terminated"]
    assert not session.restore_due and not session.holding  # not the worker's death
    ((token, reply),) = answer(session, bye).replies
    assert token == "d" and reply["success"]
    assert not session.started and not session.attached and not session.holding
    assert session.lost().replies == []  # the adapter closes the connection: no news


def test_turning_the_debugger_off_leaves_the_worker_and_it_turns_on_again() -> None:
    session = DebugSession()
    attached(session)
    disconnected(session)
    attached(session)  # debugpy still listens in the worker: started, connected again
    disconnected(session)


def test_a_set_up_the_front_end_does_itself_holds_no_cell() -> None:
    """The worker died while attached; the front end's initialize comes while debugpy starts
    in the fresh worker: the front end sets it up, the kernel replays nothing."""
    session = DebugSession()
    attached(session)
    session.lost()
    assert session.restore().start and session.holding
    assert not session.request("i", request("initialize", 10, clientID="x"), True).start
    moves = session.answered(None, {"address": ["127.0.0.1", 6001]})
    assert [m["command"] for m in sent(moves)] == ["initialize"]  # the front end's
    assert not session.holding
