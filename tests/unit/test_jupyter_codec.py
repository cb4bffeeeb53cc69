"""The Jupyter wire format and the kernel's state machine, on plain values."""

from __future__ import annotations

from typing import Any

import pytest
from jupyter_client.session import Session

from pyrelune.cli.jupyterargs import read
from pyrelune.protocols import jupytermessages
from pyrelune.protocols.colourtb import coloured
from pyrelune.protocols.jupyter import JupyterCodec, history
from pyrelune.protocols.jupytermessages import (
    BadMessage,
    Builder,
    Message,
    Signer,
    parse,
    serialize,
)
from pyrelune.protocols.outcome import Outcome
from pyrelune.shaping import JUPYTER_MAX_DISPLAYS
from pyrelune.wire.commands import (
    SUBSHELL,
    SUBSHELL_PROMPT,
    AskInSubshell,
    EndSubshell,
    Execute,
    InputReply,
    Interrupt,
    InterruptSubshells,
    MakeSubshell,
    Query,
    RefuseInput,
    RunInSubshell,
    Shutdown,
    SubshellInput,
)
from pyrelune.wire.events import (
    TRACEBACK_PARTS,
    WORKER_DIED,
    CellError,
    Clear,
    Display,
    Done,
    InputRequest,
    Payload,
    Reply,
    Stream,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pyrelune.protocols.jupyter import Sent

KEY = b"secret-key"


def client(key: bytes = KEY) -> Session:
    return Session(key=key, signature_scheme="hmac-sha256", username="tester")


def frames(msg_type: str, content: dict[str, Any], key: bytes = KEY,
           identity: bytes = b"front") -> tuple[list[bytes], str]:
    """What jupyter_client sends for a request: the frames and the request's msg_id."""
    session = client(key)
    message = session.msg(msg_type, content)
    return [identity, *session.serialize(message)], message["header"]["msg_id"]


# -- the wire format ----------------------------------------------------------------------


def test_a_jupyter_client_message_parses_with_its_identities() -> None:
    raw, msg_id = frames("execute_request", {"code": "1"})
    message = parse(raw, Signer(KEY))
    assert (message.msg_type, message.msg_id) == ("execute_request", msg_id)
    assert message.identities == [b"front"]
    assert message.content == {"code": "1"}


def test_what_the_kernel_sends_jupyter_client_reads_and_trusts() -> None:
    builder = Builder("kernel-session", "me")
    request = parse(frames("kernel_info_request", {})[0], Signer(KEY))
    reply = builder.reply(request, {"status": "ok"})
    raw = serialize(reply, Signer(KEY))
    assert raw[0] == b"front"  # routed back to the sender
    _identities, rest = client().feed_identities(raw)
    read = client().deserialize(rest)
    assert read["msg_type"] == "kernel_info_reply"
    assert read["parent_header"]["msg_id"] == request.msg_id
    header = read["header"]
    assert header["session"] == "kernel-session" and header["username"] == "me"
    assert header["version"] == jupytermessages.PROTOCOL_VERSION and header["msg_id"]
    assert str(header["date"]).startswith("20")


@pytest.mark.parametrize("damage", ["wrong key", "tampered", "no delimiter", "short",
                                    "not json"])
def test_a_message_that_is_not_signed_right_or_not_whole_is_refused(damage: str) -> None:
    raw, _ = frames("execute_request", {"code": "1"},
                    key=b"other" if damage == "wrong key" else KEY)
    at = raw.index(jupytermessages.DELIMITER)
    if damage == "tampered":
        raw[at + 5] = b'{"code": "import os; os.system(\'x\')"}'
    elif damage == "no delimiter":
        del raw[at]
    elif damage == "short":
        raw = raw[:at + 3]
    elif damage == "not json":
        raw[at + 5] = b"{nope"
        raw[at + 1] = Signer(KEY).sign(raw[at + 2:at + 6])
    with pytest.raises(BadMessage):
        parse(raw, Signer(KEY))


def test_a_replayed_message_is_refused_the_second_time() -> None:
    raw, _ = frames("execute_request", {"code": "1"})
    signer = Signer(KEY)
    parse(raw, signer)
    with pytest.raises(BadMessage, match="duplicate"):
        parse(raw, signer)


def test_an_empty_key_signs_nothing_and_accepts_all() -> None:
    raw, _ = frames("execute_request", {"code": "1"}, key=b"")
    assert parse(raw, Signer(b"")).content == {"code": "1"}
    assert Signer(b"").sign([b"x"]) == b""


def test_only_hmac_schemes_are_accepted() -> None:
    with pytest.raises(ValueError, match="signature_scheme"):
        Signer(KEY, "md5")
    assert Signer(KEY, "hmac-sha512").sign([b"x"])


def test_non_finite_numbers_are_sent_as_null() -> None:
    assert jupytermessages.encode({"x": float("nan"), "y": [float("inf"), 1.5]}) == (
        b'{"x": null, "y": [null, 1.5]}')


# -- the state machine --------------------------------------------------------------------


def codec() -> JupyterCodec:
    return JupyterCodec(Builder("k", "me"), Signer(KEY))


def sent(outcome: Outcome[Sent]) -> list[tuple[str, str]]:
    """(channel, msg_type) of each message, a status as `status:<state>`."""
    return [(channel, f"status:{m.content['execution_state']}" if m.msg_type == "status"
             else m.msg_type) for channel, m in outcome.messages]


def execute(kernel: JupyterCodec, code: str, **options: Any) -> tuple[Outcome[Sent], str]:
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
               "allow_stdin": True, "stop_on_error": True, **options}
    raw, msg_id = frames("execute_request", content)
    return kernel.receive("shell", raw), msg_id


def test_an_execute_request_is_busy_input_then_a_cell_to_run() -> None:
    kernel = codec()
    outcome, msg_id = execute(kernel, "print(1)")
    assert sent(outcome) == [("iopub", "status:busy"), ("iopub", "execute_input")]
    assert all(m.parent_header["msg_id"] == msg_id for _, m in outcome.messages)
    (command,) = outcome.commands
    assert isinstance(command, Execute) and command.source == "print(1)"
    assert command.filename == "<In[1]>"
    streamed = kernel.output(Stream("stdout", "1\n"), 0.0)
    done = kernel.output(Done(), 1.0)
    assert sent(streamed) == [("iopub", "stream")]
    assert sent(done)[-2:] == [("shell", "execute_reply"), ("iopub", "status:idle")]
    reply = done.messages[-2][1]
    assert reply.content == {"status": "ok", "execution_count": 1, "user_expressions": {},
                             "payload": []}
    assert not kernel.busy


def test_a_new_subscriber_is_welcomed_then_told_the_kernels_state() -> None:
    kernel = codec()
    welcomed = kernel.welcome(b"kernel.")
    assert sent(welcomed) == [("iopub", "iopub_welcome"), ("iopub", "status:idle")]
    assert welcomed.messages[0][1].identities == [b"kernel."]
    assert welcomed.messages[1][1].parent_header == {}
    execute(kernel, "1")
    assert sent(kernel.welcome(b"")) == [("iopub", "iopub_welcome"), ("iopub", "status:busy")]
    assert kernel.welcome(b"\xff").messages == []  # not UTF-8: no welcome, as from ipykernel


def test_the_result_is_an_execute_result_with_the_count() -> None:
    kernel = codec()
    execute(kernel, "1")
    outcome = kernel.output(Display({"text/plain": "1"}, {}, is_result=True), 0.0)
    ((_, message),) = outcome.messages
    assert message.msg_type == "execute_result"
    assert message.content == {"data": {"text/plain": "1"}, "metadata": {},
                               "execution_count": 1}


def test_displays_updates_and_clears_keep_their_own_message_types() -> None:
    kernel = codec()
    execute(kernel, "x")
    first = kernel.output(Display({"text/plain": "a"}, {}, display_id="d"), 0.0)
    again = kernel.output(Display({"text/plain": "b"}, {}, display_id="d", update=True), 0.0)
    cleared = kernel.output(Clear(wait=True), 0.0)
    assert again.messages == []  # held: only its last state goes out, at the next flush
    assert [m.msg_type for _, m in first.messages + cleared.messages] == [
        "display_data", "update_display_data", "clear_output"]
    assert cleared.messages[0][1].content["transient"] == {"display_id": "d"}


def test_updates_of_a_display_are_coalesced_to_its_last_state() -> None:
    kernel = codec()
    execute(kernel, "progress()")
    kernel.output(Display({"text/plain": "bar"}, {}, display_id="bar"), 0.0)
    for n in range(100):
        assert kernel.output(Display({"text/plain": f"{n}%"}, {}, display_id="bar",
                                     update=True), n / 1000).messages == []
    assert kernel.flush_at is not None
    ticked = kernel.tick(kernel.flush_at)
    assert [(m.msg_type, m.content["data"]) for _, m in ticked.messages] == [
        ("update_display_data", {"text/plain": "99%"})]
    assert kernel.flush_at is None


def test_a_cell_shows_at_most_so_many_displays_and_says_how_many_it_left_out() -> None:
    kernel = codec()
    execute(kernel, "flood()")
    shown = 0
    for n in range(JUPYTER_MAX_DISPLAYS + 25):
        shown += len(kernel.output(Display({"text/plain": str(n)}, {}), 0.0).messages)
    assert shown == JUPYTER_MAX_DISPLAYS
    result = kernel.output(Display({"text/plain": "r"}, {}, is_result=True), 0.0)
    assert [m.msg_type for _, m in result.messages] == ["execute_result"]  # always shown
    done = kernel.output(Done(), 0.0)
    note = done.messages[0][1]
    assert note.msg_type == "stream" and note.content["name"] == "stderr"
    assert "25 more displays were not shown" in note.content["text"]
    execute(kernel, "again()")  # a new cell has its full budget
    assert kernel.output(Display({"text/plain": "x"}, {}), 0.0).messages


def test_shell_requests_wait_while_a_cell_runs_and_are_served_in_order() -> None:
    kernel = codec()
    execute(kernel, "slow()")
    queued = kernel.receive("shell", frames("kernel_info_request", {})[0])
    assert queued.messages == [] and queued.commands == []
    done = kernel.output(Done(), 0.0)
    assert sent(done) == [("shell", "execute_reply"), ("iopub", "status:idle"),
                          ("iopub", "status:busy"), ("shell", "kernel_info_reply"),
                          ("iopub", "status:idle")]


def test_control_is_answered_at_once_even_while_a_cell_runs() -> None:
    kernel = codec()
    execute(kernel, "slow()")
    outcome = kernel.receive("control", frames("interrupt_request", {})[0])
    assert sent(outcome) == [("iopub", "status:busy"), ("control", "interrupt_reply"),
                             ("iopub", "status:idle")]
    assert [type(c) for c in outcome.commands] == [Interrupt]
    idle = codec().receive("control", frames("interrupt_request", {})[0])
    assert idle.commands == []  # nothing to interrupt


def test_an_interrupt_that_overtook_its_cell_stops_it_as_it_starts() -> None:
    """Sent after the execute_request, read before it (another connection): the cell gets
    its interrupt; a cell sent after the interrupt does not, nor one after the next."""
    session = client()
    early, interrupt, second, late, earlier = (session.msg(kind, content) for kind, content in (
        ("execute_request", {"code": "slow()"}), ("interrupt_request", {}),
        ("interrupt_request", {}), ("execute_request", {"code": "fine()"}),
        ("execute_request", {"code": "again()"})))
    earlier["header"]["date"] = early["header"]["date"]  # sent before both interrupts

    def commands(channel: str, message: dict[str, Any]) -> list[type]:
        return [type(c) for c in kernel.receive(channel, session.serialize(message)).commands]

    kernel = codec()
    assert commands("control", interrupt) == []  # nothing runs
    assert commands("shell", early) == [Execute, Interrupt]  # in that order
    kernel.output(Done(), 0.0)
    assert commands("control", second) == []
    assert commands("shell", late) == [Execute]
    kernel.output(Done(), 0.0)
    assert commands("shell", earlier) == [Execute]  # the interrupt was used up


def test_a_sigint_that_overtook_its_cell_stops_it_as_it_starts() -> None:
    session = client()
    cell = session.msg("execute_request", {"code": "slow()"})
    kernel = codec()
    kernel.interrupted_idle(cell["header"]["date"])  # the signal came as it was sent
    started = kernel.receive("shell", session.serialize(cell))
    assert [type(c) for c in started.commands] == [Execute, Interrupt]


def test_a_failed_cell_aborts_the_queued_executes_but_not_other_requests() -> None:
    kernel = codec()
    execute(kernel, "1/0")
    _, second = execute(kernel, "never()")
    kernel.receive("shell", frames("kernel_info_request", {})[0])
    error = CellError("python_runtime_error", "ZeroDivisionError", "division by zero",
                      "Traceback (most recent call last):\nZeroDivisionError: division by zero\n")
    done = kernel.output(Done(error), 0.0)
    assert sent(done) == [
        ("iopub", "error"), ("shell", "execute_reply"), ("iopub", "status:idle"),
        ("iopub", "status:busy"), ("shell", "execute_reply"), ("iopub", "status:idle"),
        ("iopub", "status:busy"), ("shell", "kernel_info_reply"), ("iopub", "status:idle")]
    aborted = done.messages[4][1]
    assert aborted.parent_header["msg_id"] == second
    assert aborted.content["status"] == "aborted"
    assert done.commands == []  # the aborted cell never runs


def test_without_stop_on_error_the_queued_cell_runs() -> None:
    kernel = codec()
    execute(kernel, "1/0", stop_on_error=False)
    execute(kernel, "next()")
    done = kernel.output(Done(CellError("python_runtime_error", "E", "e")), 0.0)
    assert [type(c) for c in done.commands] == [Execute]
    assert kernel.busy


def test_a_dead_worker_is_an_error_named_worker_died() -> None:
    kernel = codec()
    execute(kernel, "crash()")
    done = kernel.output(Done(CellError(WORKER_DIED, "", "worker killed by SIGSEGV")), 0.0)
    reply = next(m for c, m in done.messages if c == "shell")
    assert (reply.content["ename"], reply.content["evalue"]) == ("WorkerDied",
                                                                 "worker killed by SIGSEGV")


def test_input_goes_to_stdin_or_is_refused_without_allow_stdin() -> None:
    kernel = codec()
    _, msg_id = execute(kernel, "input()")
    asked = kernel.output(InputRequest("Name? "), 0.0)
    (channel, request), = asked.messages
    assert (channel, request.msg_type) == ("stdin", "input_request")
    assert request.identities == [b"front"] and request.parent_header["msg_id"] == msg_id
    assert request.content == {"prompt": "Name? ", "password": False}
    answered = kernel.receive("stdin", frames("input_reply", {"value": "Ada"})[0])
    assert [(type(c), c.value) for c in answered.commands  # type: ignore[union-attr]
            ] == [(InputReply, "Ada")]
    stray = kernel.receive("stdin", frames("input_reply", {"value": "late"})[0])
    assert stray.commands == [] and stray.problems
    refusing = codec()
    execute(refusing, "input()", allow_stdin=False)
    assert [type(c) for c in refusing.output(InputRequest(""), 0.0).commands] == [RefuseInput]


def test_a_question_for_the_worker_is_answered_by_its_reply() -> None:
    kernel = codec()
    outcome = kernel.receive("shell", frames("complete_request", {"code": "pri",
                                                                  "cursor_pos": 3})[0])
    (command,) = outcome.commands
    assert isinstance(command, Query) and command.kind == "complete"
    assert command.args == {"code": "pri", "cursor_pos": 3}
    replied = kernel.output(Reply({"matches": ["print"], "cursor_start": 0, "cursor_end": 3,
                                   "metadata": {}}, "complete"), 0.0)
    assert replied.messages[0][1].content["status"] == "ok"
    assert sent(kernel.output(Done(), 0.0)) == [("iopub", "status:idle")]


def test_user_expressions_are_asked_for_after_the_cell() -> None:
    kernel = codec()
    execute(kernel, "x = 1", user_expressions={"v": "x"})
    done = kernel.output(Done(), 0.0)
    assert done.messages == []
    (command,) = done.commands
    assert isinstance(command, Query) and command.args == {"expressions": {"v": "x"}}
    kernel.output(Reply({"v": {"status": "ok", "data": {"text/plain": "1"}, "metadata": {}}},
                        "expressions"), 0.0)
    finished = kernel.output(Done(), 0.0)
    reply = finished.messages[0][1]
    assert reply.content["user_expressions"]["v"]["data"] == {"text/plain": "1"}


def test_shutdown_replies_on_its_channel_and_on_iopub() -> None:
    outcome = codec().receive("control", frames("shutdown_request", {"restart": True})[0])
    assert sent(outcome) == [("iopub", "status:busy"), ("control", "shutdown_reply"),
                             ("iopub", "shutdown_reply"), ("iopub", "status:idle")]
    (command,) = outcome.commands
    assert isinstance(command, Shutdown) and command.restart


def test_a_bad_or_unknown_message_is_dropped_and_said() -> None:
    kernel = codec()
    forged = kernel.receive("shell", frames("execute_request", {"code": "x"}, key=b"bad")[0])
    assert forged.messages == [] and forged.commands == []
    assert "invalid signature" in forged.problems[0]
    unknown = kernel.receive("shell", frames("frobnicate_request", {})[0])
    assert sent(unknown) == [("iopub", "status:busy"), ("iopub", "status:idle")]
    assert "frobnicate_request" in unknown.problems[0]


def test_output_between_cells_goes_under_the_last_cell() -> None:
    kernel = codec()
    _, msg_id = execute(kernel, "start_thread()")
    kernel.output(Done(), 0.0)
    late = kernel.output(Stream("stdout", "late\n"), 5.0)
    late.messages += kernel.tick(10.0).messages
    assert [m.parent_header["msg_id"] for _, m in late.messages] == [msg_id]


def test_output_of_another_cell_goes_under_that_cells_request() -> None:
    """A thread's or a task's of a cell that is not the running one: the worker names its
    cell with the origin it was given (`Execute.origin`), and it goes under that request."""
    kernel = JupyterCodec(Builder("k", "me"), Signer(KEY), limit=100)
    outcome, first = execute(kernel, "start_thread()")
    (run,) = outcome.commands
    assert isinstance(run, Execute) and run.origin is not None
    kernel.output(Done(), 0.0)
    _, second = execute(kernel, "print(2)")
    messages = []
    for event in (Stream("stdout", "late\n" * 100, run.origin), Stream("stdout", "own\n"),
                  Display({"text/plain": "d"}, {}, origin=run.origin),
                  Clear(True, run.origin), Stream("stderr", "?\n", "not a cell's")):
        messages += kernel.output(event, 5.0).messages
    messages += kernel.output(Done(), 6.0).messages
    under = [(m.msg_type, m.parent_header["msg_id"], m.content.get("text"))
             for _, m in messages if m.msg_type not in ("status", "execute_reply")]
    assert under == [("stream", first, "late\n" * 100),  # not in the running cell's cap
                     ("stream", second, "own\n"), ("display_data", first, None),
                     ("clear_output", first, None), ("stream", second, "?\n")]
    assert messages[-1][1].parent_header == messages[-2][1].parent_header  # its reply, idle


def test_a_flood_is_capped_with_what_was_omitted_said() -> None:
    kernel = JupyterCodec(Builder("k", "me"), Signer(KEY), limit=1000)
    execute(kernel, "flood()")
    messages = []
    for n in range(200):
        messages += kernel.output(Stream("stdout", f"{n:05d}" + "x" * 45 + "\n"), n).messages
    messages += kernel.output(Done(), 999.0).messages
    text = "".join(m.content["text"] for _, m in messages if m.msg_type == "stream")
    assert len(text) < 2000
    assert text.startswith("00000") and text.rstrip().endswith("x")
    assert "00199" in text and "omitted" in text


def test_history_tail_range_and_search_over_the_sessions_cells() -> None:
    cells = [(1, "a = 1"), (2, "b = 2"), (3, "a = 1"), (4, "print(a)")]
    assert history(cells, {"hist_access_type": "tail", "n": 2}) == [
        [1, 3, "a = 1"], [1, 4, "print(a)"]]
    assert history(cells, {"hist_access_type": "range", "session": 0, "start": 2,
                           "stop": 4}) == [[1, 2, "b = 2"], [1, 3, "a = 1"]]
    assert history(cells, {"hist_access_type": "range", "session": 7}) == []
    assert history(cells, {"hist_access_type": "search", "pattern": "a*"}) == [
        [1, 1, "a = 1"], [1, 3, "a = 1"]]
    assert history(cells, {"hist_access_type": "search", "pattern": "a*", "unique": True}
                   ) == [[1, 3, "a = 1"]]
    assert history(cells, {"hist_access_type": "tail", "n": 1, "output": True}) == [
        [1, 4, ["print(a)", None]]]


def test_a_traceback_is_coloured_line_by_line() -> None:
    lines = coloured('Traceback (most recent call last):\n  File "<In[1]>", line 2, in f\n'
                     "    1/0\nZeroDivisionError: division by zero\n", "ZeroDivisionError", "")
    assert len(lines) == 4
    assert lines[1] == ('  File "\x1b[32m<In[1]>\x1b[0m", line \x1b[32m2\x1b[0m, in '
                        "\x1b[36mf\x1b[0m")
    assert lines[2] == "    1/0"
    assert lines[3].startswith("\x1b[31m\x1b[1mZeroDivisionError\x1b[0m:")
    assert coloured("", "WorkerDied", "gone") == ["\x1b[31m\x1b[1mWorkerDied\x1b[0m: gone"]


def test_a_traceback_ipython_formatted_is_sent_as_its_parts() -> None:
    parts = ["\x1b[31m-----\x1b[39m", "Cell In[1], line 1\n----> 1 1/0\n", "ZeroDivisionError"]
    assert coloured("".join(TRACEBACK_PARTS + part for part in parts), "", "") == parts
    assert coloured(TRACEBACK_PARTS + "only", "E", "v") == ["only"]
    assert coloured(TRACEBACK_PARTS, "UsageError", "no such magic") == []


def test_a_cell_is_numbered_for_the_shell_unless_kept_out_of_the_history() -> None:
    kernel = codec()
    (stored,) = execute(kernel, "1")[0].commands
    assert isinstance(stored, Execute)
    assert (stored.count, stored.history, stored.silent) == (1, True, False)
    kernel.output(Done(), 0.0)
    (unstored,) = execute(kernel, "2", store_history=False)[0].commands
    assert isinstance(unstored, Execute)
    assert (unstored.count, unstored.history, unstored.silent) == (1, False, False)
    kernel.output(Done(), 0.0)
    (silent,) = execute(kernel, "3", silent=True)[0].commands
    assert isinstance(silent, Execute)
    assert (silent.count, silent.history, silent.silent) == (1, False, True)


def test_payloads_go_in_the_cells_reply_in_order() -> None:
    kernel = codec()
    execute(kernel, "exit")
    page = {"source": "page", "data": {"text/plain": "help"}, "start": 0}
    leave = {"source": "ask_exit", "keepkernel": False}
    assert kernel.output(Payload(page), 0.0).messages == []  # nothing on IOPub
    kernel.output(Payload(leave), 0.0)
    done = kernel.output(Done(), 0.0)
    reply = next(m for channel, m in done.messages if channel == "shell")
    assert reply.content["payload"] == [page, leave]
    # One that comes between cells (a thread's) has no reply to go in: it is dropped.
    assert kernel.output(Payload(page), 0.0).messages == []


@pytest.mark.parametrize(("args", "expected"), [
    (["--mode", "jupyter", "-f", "k.json"], "k.json"),
    (["-f", "k.json", "--mode=jupyter"], "k.json"),
    (["--mode", "jupyter", "--connection-file=k.json"], "k.json"),
    (["--mode", "jupyter"], None),
    (["--mode", "rpc", "-f", "k.json"], None),
    (["--mode", "jupyter", "-f", "a", "-f", "b"], None),
    (["--mode", "jupyter", "-f"], None),
    (["jupyter", "install"], None),
    (["--mode", "jupyter", "-f", "k.json", "--shell", "plain"], "k.json"),
    (["--shell=ipython", "--mode", "jupyter", "-f", "k.json"], "k.json"),
    (["--mode", "jupyter", "-f", "k.json", "--shell", "plain", "--shell", "plain"], None),
])
def test_the_kernels_command_line(args: list[str], expected: str | None) -> None:
    kernel = read(args)
    assert (None if kernel is None else kernel[0]) == expected


def test_the_kernels_command_line_names_its_shell() -> None:
    assert read(["--mode", "jupyter", "-f", "k.json"]) == ("k.json", None)
    assert read(["--mode", "jupyter", "-f", "k.json", "--shell", "plain"]) == ("k.json", "plain")


def test_messages_built_carry_every_header_field() -> None:
    message = Builder("s", "u").publish("status", {"execution_state": "idle"}, None)
    assert isinstance(message, Message)
    assert set(jupytermessages.HEADER_FIELDS) <= set(message.header)
    assert message.identities == [b"kernel.s.status"] and message.parent_header == {}


def test_pyrelunes_own_mime_types_stay_out_of_a_notebook() -> None:
    kernel = codec()
    execute(kernel, "df")
    bundle = {"text/plain": "t", "text/html": "<table/>",
              "application/vnd.pyrelune.jsonml+json": ["table"]}
    outcome = kernel.output(Display(bundle, {}, is_result=True), 0.0)
    assert outcome.messages[0][1].content["data"] == {"text/plain": "t", "text/html": "<table/>"}


def test_usage_is_the_engines_to_answer_even_while_a_cell_runs() -> None:
    """JupyterLab's Kernel Usage panel asks on control every few seconds, busy or not."""
    kernel = codec()
    execute(kernel, "while True: pass")
    asked = kernel.receive("control", frames("usage_request", {})[0])
    (command,) = asked.commands
    assert isinstance(command, Query) and command.kind == "usage"
    assert sent(asked) == [("iopub", "status:busy")]
    figures = {"hostname": "h", "pid": 1, "kernel_memory": 5}
    answered = kernel.output(Reply(figures, "usage"), 0.0)
    assert sent(answered) == [("control", "usage_reply"), ("iopub", "status:idle")]
    assert answered.messages[0][1].content == figures
    assert kernel.busy  # the cell runs on: its own reply is still to come


# -- subshells (JEP 91) -------------------------------------------------------------------


def ask(kernel: JupyterCodec, msg_type: str, content: dict[str, Any],
        channel: str = "control", header: dict[str, Any] | None = None) -> Outcome[Sent]:
    session = client()
    message = session.msg(msg_type, content, header={**session.msg_header(msg_type),
                                                       **(header or {})})
    return kernel.receive(channel, [b"front", *session.serialize(message)])


def test_subshells_are_created_listed_and_deleted_on_control() -> None:
    kernel = codec()
    made = [ask(kernel, "create_subshell_request", {}) for _ in range(2)]
    assert sent(made[0]) == [("iopub", "status:busy"), ("control", "create_subshell_reply"),
                             ("iopub", "status:idle")]
    first, second = (m.messages[1][1].content["subshell_id"] for m in made)
    assert first != second and all(m.messages[1][1].content["status"] == "ok" for m in made)
    listed = ask(kernel, "list_subshell_request", {}).messages[1][1].content
    assert listed == {"status": "ok", "subshell_id": [first, second]}
    deleted = ask(kernel, "delete_subshell_request", {"subshell_id": first})
    assert deleted.messages[1][1].content == {"status": "ok"}
    listed = ask(kernel, "list_subshell_request", {}).messages[1][1].content
    assert listed["subshell_id"] == [second]


@pytest.mark.parametrize("subshell", ["never-made", None, 7])
def test_deleting_a_subshell_there_is_not_is_an_error(subshell: object) -> None:
    kernel = codec()
    reply = ask(kernel, "delete_subshell_request", {"subshell_id": subshell}).messages[1][1]
    assert reply.msg_type == "delete_subshell_reply"
    assert reply.content["status"] == "error"
    assert reply.content["ename"] == "UnknownSubshellError"
    assert repr(subshell) in reply.content["evalue"]


def test_subshell_requests_are_answered_at_once_while_a_cell_runs() -> None:
    kernel = codec()
    execute(kernel, "while True: pass")
    made = ask(kernel, "create_subshell_request", {})
    assert sent(made)[1] == ("control", "create_subshell_reply")
    assert kernel.busy  # the cell runs on


def test_a_shell_request_naming_an_unknown_subshell_is_refused_unrun() -> None:
    kernel = codec()
    execute(kernel, "while True: pass")  # even while a cell runs: it does not wait
    refused = ask(kernel, "execute_request", {"code": "x"}, "shell", {"subshell_id": "gone"})
    assert not refused.commands
    assert sent(refused) == [("iopub", "status:busy"), ("shell", "execute_reply"),
                             ("iopub", "status:idle")]
    assert refused.messages[1][1].content == {
        "status": "error", "ename": "UnknownSubshellError",
        "evalue": "Unknown subshell_id 'gone'", "traceback": []}
    # A comm message has no reply: busy and idle tell its client it is over.
    comm = ask(kernel, "comm_msg", {"comm_id": "c", "data": {}}, "shell", {"subshell_id": "gone"})
    assert sent(comm) == [("iopub", "status:busy"), ("iopub", "status:idle")]


def subshell_of(kernel: JupyterCodec) -> str:
    made = ask(kernel, "create_subshell_request", {})
    command = made.commands[0]
    assert isinstance(command, MakeSubshell)  # its thread, made before a cell runs
    subshell: str = made.messages[1][1].content["subshell_id"]
    assert command.subshell == subshell
    return subshell


def test_a_subshells_cell_runs_at_once_beside_the_main_shells() -> None:
    kernel = codec()
    subshell = subshell_of(kernel)
    execute(kernel, "while True: pass")
    ran = ask(kernel, "execute_request", {"code": "x", "silent": False}, "shell",
              {"subshell_id": subshell})
    (command,) = ran.commands
    assert isinstance(command, RunInSubshell) and command.source == "x"
    assert command.subshell == subshell and '"subshell_id"' in command.origin
    assert sent(ran) == [("iopub", "status:busy"), ("iopub", "execute_input")]
    assert ran.messages[1][1].content["execution_count"] == 2  # one count for all shells
    result = {"data": {"text/plain": "42"}, "metadata": {}}
    done = kernel.output(Reply({"origin": command.origin, "status": "ok", "result": result},
                               SUBSHELL), 0.0)
    assert sent(done) == [("iopub", "execute_result"), ("shell", "execute_reply"),
                          ("iopub", "status:idle")]
    assert all(m.parent_header["subshell_id"] == subshell for _, m in done.messages)
    assert done.messages[0][1].content == {**result, "execution_count": 2}
    assert done.messages[1][1].content["status"] == "ok"
    assert kernel.busy  # the main shell's cell runs on


def test_a_subshells_failed_cell_is_an_error_reply_and_an_error_on_iopub() -> None:
    kernel = codec()
    subshell = subshell_of(kernel)
    (command,) = ask(kernel, "execute_request", {"code": "1/0"}, "shell",
                     {"subshell_id": subshell}).commands
    assert isinstance(command, RunInSubshell)
    done = kernel.output(Reply({"origin": command.origin, "status": "error",
                                "ename": "ZeroDivisionError", "evalue": "division by zero",
                                "traceback": "Traceback ...\nZeroDivisionError\n"},
                               SUBSHELL), 0.0)
    assert sent(done) == [("iopub", "error"), ("shell", "execute_reply"), ("iopub", "status:idle")]
    assert done.messages[1][1].content["ename"] == "ZeroDivisionError"
    again = kernel.output(Reply({"origin": command.origin, "status": "ok"}, SUBSHELL), 0.0)
    assert again.messages == []  # answered once: a second word on it is not one of ours


def test_a_lost_worker_fails_every_running_subshell_cell_and_keeps_the_subshells() -> None:
    kernel = codec()
    subshells = [subshell_of(kernel) for _ in range(2)]
    for subshell in subshells:
        ask(kernel, "execute_request", {"code": "import time; time.sleep(9)"}, "shell",
            {"subshell_id": subshell})
    lost = kernel.worker_lost("the worker ended")
    replies = [m for channel, m in lost.messages if channel == "shell"]
    assert [m.content["ename"] for m in replies] == ["WorkerDied", "WorkerDied"]
    assert {m.parent_header["subshell_id"] for m in replies} == set(subshells)
    again = kernel.worker_lost("again")
    assert again.messages == []
    assert [c.subshell for c in again.commands if isinstance(c, MakeSubshell)] == subshells
    listed = ask(kernel, "list_subshell_request", {}).messages[1][1].content
    assert listed["subshell_id"] == subshells


def test_deleting_a_subshell_ends_its_thread_in_the_worker() -> None:
    kernel = codec()
    subshell = subshell_of(kernel)
    (command,) = ask(kernel, "delete_subshell_request", {"subshell_id": subshell}).commands
    assert isinstance(command, EndSubshell) and command.subshell == subshell


def test_kernel_info_offers_subshells() -> None:
    from pyrelune.protocols.jupyter import kernel_info

    assert "kernel subshells" in kernel_info()["supported_features"]


def test_a_failed_cell_aborts_the_main_shells_queued_cells_not_a_subshells() -> None:
    """As ipykernel: the main shell's "run all" stops at its error; a subshell's cell, sent
    to its own thread at once, runs (its thread aborts its own queue after its failures)."""
    kernel = codec()
    subshell = subshell_of(kernel)
    execute(kernel, "1/0")
    ask(kernel, "execute_request", {"code": "main()"}, "shell")
    sub = ask(kernel, "execute_request", {"code": "sub()"}, "shell", {"subshell_id": subshell})
    assert [type(c) for c in sub.commands] == [RunInSubshell]
    done = kernel.output(Done(CellError("python_runtime_error", "E", "e")), 0.0)
    aborted = [m for _, m in done.messages if m.content.get("status") == "aborted"]
    assert [m.parent_header.get("subshell_id") for m in aborted] == [None]


def test_a_subshells_cell_is_capped_as_a_cell_its_tail_said_under_it() -> None:
    kernel = JupyterCodec(Builder("k", "me"), Signer(KEY), 1000)
    subshell = subshell_of(kernel)
    (command,) = ask(kernel, "execute_request", {"code": "flood()"}, "shell",
                     {"subshell_id": subshell}).commands
    assert isinstance(command, RunInSubshell)
    outcomes = [kernel.output(Stream("stdout", f"{n:04}" + "x" * 95 + "\n", command.origin),
                              0.0) for n in range(100)]
    outcomes.append(kernel.tick(1e9))
    outcomes.append(kernel.output(Reply({"origin": command.origin, "status": "ok"}, SUBSHELL),
                                  1e9))
    texts = "".join(m.content.get("text", "") for o in outcomes for _, m in o.messages
                    if m.msg_type == "stream")
    assert 1000 <= len(texts) < 2000  # the cap, the marker and the tail; not 10,000
    assert "0000" in texts and "0099" in texts  # head and tail kept
    streams = [m for o in outcomes for _, m in o.messages if m.msg_type == "stream"]
    assert all(m.parent_header["subshell_id"] == subshell for m in streams)


def test_a_subshells_questions_go_to_its_thread_at_once_and_are_answered() -> None:
    kernel = codec()
    subshell = subshell_of(kernel)
    execute(kernel, "while True: pass")
    asked = ask(kernel, "complete_request", {"code": "pri", "cursor_pos": 3}, "shell",
                {"subshell_id": subshell})
    (command,) = asked.commands
    assert isinstance(command, AskInSubshell) and command.kind == "complete"
    assert command.args == {"code": "pri", "cursor_pos": 3} and command.subshell == subshell
    assert sent(asked) == [("iopub", "status:busy")]
    answer = {"matches": ["print"], "cursor_start": 0, "cursor_end": 3, "metadata": {}}
    done = kernel.output(Reply({"origin": command.origin, "status": "ok", "answer": answer},
                               SUBSHELL), 0.0)
    assert sent(done) == [("shell", "complete_reply"), ("iopub", "status:idle")]
    assert done.messages[0][1].content == {"status": "ok", **answer}
    # What the codec answers itself, at once; a comm message to the thread, idle when handled.
    history = ask(kernel, "history_request", {"hist_access_type": "tail", "n": 1}, "shell",
                  {"subshell_id": subshell})
    assert sent(history) == [("iopub", "status:busy"), ("shell", "history_reply"),
                             ("iopub", "status:idle")]
    comm = ask(kernel, "comm_msg", {"comm_id": "c", "data": {}}, "shell",
               {"subshell_id": subshell})
    (to_comm,) = comm.commands
    assert isinstance(to_comm, AskInSubshell) and to_comm.kind == "comm"
    handled = kernel.output(Reply({"origin": to_comm.origin, "status": "ok"}, SUBSHELL), 0.0)
    assert sent(handled) == [("iopub", "status:idle")]
    assert kernel.busy  # the main shell's cell runs on


def test_a_subshells_cell_asks_for_input_under_its_own_request() -> None:
    kernel = codec()
    subshell = subshell_of(kernel)
    (command,) = ask(kernel, "execute_request", {"code": "input()", "allow_stdin": True,
                                                 "user_expressions": {"a": "1"}},
                     "shell", {"subshell_id": subshell}).commands
    assert isinstance(command, RunInSubshell) and command.expressions == {"a": "1"}
    prompted = kernel.output(Reply({"origin": command.origin, "prompt": "? ",
                                    "password": False}, SUBSHELL_PROMPT), 0.0)
    ((channel, request),) = prompted.messages
    assert (channel, request.msg_type) == ("stdin", "input_request")
    assert request.parent_header["subshell_id"] == subshell
    session = client()
    reply = session.msg("input_reply", {"value": "Ada"})  # a front end that names no parent
    (answer,) = kernel.receive("stdin", [b"front", *session.serialize(reply)]).commands
    assert isinstance(answer, SubshellInput)
    assert (answer.origin, answer.value) == (command.origin, "Ada")
    values = {"a": {"status": "ok", "data": {"text/plain": "1"}, "metadata": {}}}
    done = kernel.output(Reply({"origin": command.origin, "status": "ok",
                                "user_expressions": values}, SUBSHELL), 0.0)
    assert done.messages[0][1].content["user_expressions"] == values


def test_a_subshells_input_without_stdin_is_refused() -> None:
    kernel = codec()
    subshell = subshell_of(kernel)
    (command,) = ask(kernel, "execute_request", {"code": "input()", "allow_stdin": False},
                     "shell", {"subshell_id": subshell}).commands
    assert isinstance(command, RunInSubshell)
    refused = kernel.output(Reply({"origin": command.origin, "prompt": "", "password": False},
                                  SUBSHELL_PROMPT), 0.0)
    (answer,) = refused.commands
    assert isinstance(answer, SubshellInput) and answer.value is None
    assert refused.messages == []


def test_an_interrupt_ends_the_main_cell_if_one_runs_else_the_subshells() -> None:
    kernel = codec()
    subshell = subshell_of(kernel)
    (endless,) = ask(kernel, "execute_request", {"code": "while True: pass"}, "shell",
                     {"subshell_id": subshell}).commands
    assert isinstance(endless, RunInSubshell)
    execute(kernel, "while True: pass")
    main_first = ask(kernel, "interrupt_request", {})
    assert [type(c) for c in main_first.commands] == [Interrupt]  # as ipykernel's SIGINT
    kernel.output(Done(CellError("python_runtime_error", "KeyboardInterrupt", "")), 0.0)
    assert kernel.busy_aside and not kernel.busy
    ask(kernel, "execute_request", {"code": "queued()"}, "shell", {"subshell_id": subshell})
    then = ask(kernel, "interrupt_request", {})
    (command,) = then.commands
    assert isinstance(command, InterruptSubshells)
    assert command.origins == [endless.origin]  # the one running: not the one queued
    assert then.messages[1][1].content == {"status": "ok"}
