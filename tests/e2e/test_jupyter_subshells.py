"""Kernel subshells (JEP 91) through jupyter_client: made, listed and deleted on control; a
cell sent to a subshell runs beside the main shell's running cell, in the one namespace,
its output and reply under its own request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from support import jupyter_host
from support.jupyter_host import TIMEOUT, Run, collect, until_idle

kernel, client = jupyter_host.module_kernel()


def on_control(client: BlockingKernelClient, msg_type: str, **content: Any) -> Run:
    """A request on control and what it produced (the spec's schemas have none for these)."""
    request = client.session.msg(msg_type, content)
    client.control_channel.send(request)
    msg_id = request["header"]["msg_id"]
    while (reply := client.control_channel.get_msg(timeout=TIMEOUT))[
            "parent_header"].get("msg_id") != msg_id:
        pass
    return Run(reply, until_idle(client, msg_id))


def ask(client: BlockingKernelClient, subshell: str | None, msg_type: str,
        **content: Any) -> str:
    """A shell request naming `subshell` in its header (JEP 91's way); its msg_id."""
    request = client.session.msg(msg_type, content)
    if subshell is not None:
        request["header"]["subshell_id"] = subshell
    client.shell_channel.send(request)
    return request["header"]["msg_id"]  # type: ignore[no-any-return]


def send_to(client: BlockingKernelClient, subshell: str | None, code: str,
            **options: Any) -> str:
    """`code` sent as an execute_request naming `subshell`; its msg_id."""
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
               "allow_stdin": False, "stop_on_error": True, **options}
    return ask(client, subshell, "execute_request", **content)


def waiting(client: BlockingKernelClient, go: Path, code: str = "") -> str:
    """A main shell's cell that runs `code`, then waits until `go` exists; its msg_id, once
    it has begun."""
    main = send_to(client, None, f"import os, time\n{code}\nprint('main starts', flush=True)\n"
                   f"while not os.path.exists({str(go)!r}):\n    time.sleep(0.02)\n"
                   "print('main ends')")
    while True:
        message = client.get_iopub_msg(timeout=TIMEOUT)
        if message["parent_header"].get("msg_id") == main and message["msg_type"] == "stream":
            return main


def printed(client: BlockingKernelClient, msg_id: str) -> None:
    """Once the request `msg_id` has printed (its cell has begun)."""
    while True:
        message = client.get_iopub_msg(timeout=TIMEOUT)
        if message["parent_header"].get("msg_id") == msg_id and message["msg_type"] == "stream":
            return


def made(client: BlockingKernelClient) -> str:
    run = on_control(client, "create_subshell_request")
    assert run.reply["msg_type"] == "create_subshell_reply"
    assert run.content["status"] == "ok" and run.kinds == ["status:busy", "status:idle"]
    return run.content["subshell_id"]  # type: ignore[no-any-return]


def test_a_subshell_runs_a_cell_while_the_main_shell_runs_one(client: BlockingKernelClient,
                                                               tmp_path: Path) -> None:
    """The common use: a second client, or a widget, looks at a variable while a cell runs."""
    subshell = made(client)
    assert on_control(client, "list_subshell_request").content == {
        "status": "ok", "subshell_id": [subshell]}
    go = tmp_path / "go"
    main = waiting(client, go, "x = 42")
    sub = collect(client, send_to(client, subshell, "print('seen', x)\nx + 1"))
    assert not go.exists()  # answered while the main shell's cell still runs
    go.touch()
    assert sub.content["status"] == "ok"
    assert sub.stdout() == "seen 42\n"
    assert sub.of("execute_result")[0]["data"]["text/plain"] == "43"
    assert all(m["parent_header"]["subshell_id"] == subshell for m in sub.iopub)
    ended = collect(client, main)
    assert ended.content["status"] == "ok" and ended.stdout() == "main ends\n"  # its start: read
    assert ended.content["execution_count"] < sub.content["execution_count"]


def test_a_deleted_or_unknown_subshell_is_an_error(client: BlockingKernelClient) -> None:
    subshell = made(client)
    assert on_control(client, "delete_subshell_request", subshell_id=subshell).content == {
        "status": "ok"}
    assert subshell not in on_control(client, "list_subshell_request").content["subshell_id"]
    gone = collect(client, send_to(client, subshell, "print('not run')"))
    assert gone.content["status"] == "error" and gone.content["ename"] == "UnknownSubshellError"
    assert gone.stdout() == "" and gone.kinds == ["status:busy", "status:idle"]
    deleted = on_control(client, "delete_subshell_request", subshell_id="never-made")
    assert deleted.reply["msg_type"] == "delete_subshell_reply"
    assert deleted.content["status"] == "error"
    assert deleted.content["evalue"] == "Unknown subshell_id 'never-made'"


def test_a_subshells_error_and_the_cells_it_aborts(client: BlockingKernelClient,
                                                  tmp_path: Path) -> None:
    """The cells queued behind a failed one are aborted; one sent after its reply runs."""
    subshell = made(client)
    go = tmp_path / "go"
    failing = send_to(client, subshell, f"import os, time\nwhile not os.path.exists({str(go)!r}):"
                      "\n    time.sleep(0.02)\n1/0")
    queued = [send_to(client, subshell, "'not run'") for _ in range(2)]
    # The worker reads its commands in order: once the main shell runs this, both are queued.
    send_to(client, None, f"open({str(go)!r}, 'w').close()")
    failed = collect(client, failing)
    assert failed.content["status"] == "error"
    assert failed.content["ename"] == "ZeroDivisionError"
    assert any("1/0" in line for line in failed.of("error")[0]["traceback"])
    for msg_id in queued:
        aborted = collect(client, msg_id)
        assert aborted.content["status"] == "aborted" and "execute_result" not in aborted.kinds
    after = collect(client, send_to(client, subshell, "'still here'"))
    assert after.content["status"] == "ok", after.content
    assert after.of("execute_result")[0]["data"]["text/plain"] == "'still here'"


def test_a_crash_fails_the_subshells_running_cell_and_the_kernel_goes_on(
        client: BlockingKernelClient, tmp_path: Path) -> None:
    subshell = made(client)
    sleeping = send_to(client, subshell, "import time; time.sleep(60)")
    crashing = send_to(client, None, "import os; os._exit(1)")
    lost = collect(client, sleeping)  # told first: the subshells go as the worker goes
    assert lost.content["status"] == "error" and lost.content["ename"] == "WorkerDied"
    assert collect(client, crashing).content["ename"] == "WorkerDied"
    assert subshell in on_control(client, "list_subshell_request").content["subshell_id"]
    # The fresh worker's subshell runs beside its main shell's cell, as before.
    go = tmp_path / "go"
    main = waiting(client, go)
    again = collect(client, send_to(client, subshell, "6 * 7"))
    assert not go.exists()
    go.touch()
    assert again.of("execute_result")[0]["data"]["text/plain"] == "42"
    assert collect(client, main).content["status"] == "ok"


def test_kernel_info_offers_subshells(client: BlockingKernelClient) -> None:
    info = client.kernel_info(reply=True, timeout=TIMEOUT)["content"]
    assert "kernel subshells" in info["supported_features"]


def test_a_subshell_answers_every_question_while_the_main_shell_runs(
        client: BlockingKernelClient, tmp_path: Path) -> None:
    """As ipykernel 7's subshell threads: completion, inspection, is_complete, history,
    comm_info and kernel_info, each answered beside the running cell."""
    subshell = made(client)
    go = tmp_path / "go"
    main = waiting(client, go, "count_of_things = 42")
    asked: dict[str, dict[str, Any]] = {
        "complete_request": {"code": "count_of_th", "cursor_pos": 11},
        "inspect_request": {"code": "count_of_things", "cursor_pos": 15, "detail_level": 0},
        "is_complete_request": {"code": "for i in range(3):"},
        "history_request": {"hist_access_type": "tail", "n": 5, "output": False, "raw": True},
        "comm_info_request": {},
        "kernel_info_request": {}}
    runs = {msg_type: collect(client, ask(client, subshell, msg_type, **content))
            for msg_type, content in asked.items()}
    assert not go.exists()  # each answered while the main shell's cell still runs
    go.touch()
    assert all(run.content["status"] == "ok" for kind, run in runs.items()
               if kind != "is_complete_request"), {k: r.content for k, r in runs.items()}
    assert all(run.kinds == ["status:busy", "status:idle"] for run in runs.values())
    assert "count_of_things" in runs["complete_request"].content["matches"]
    assert runs["inspect_request"].content["found"]
    assert "42" in runs["inspect_request"].content["data"]["text/plain"]
    assert runs["is_complete_request"].content["status"] == "incomplete"
    assert collect(client, main).content["status"] == "ok"


def test_a_subshells_comm_message_is_handled_while_the_main_shell_runs(
        client: BlockingKernelClient, tmp_path: Path) -> None:
    setup = ("from comm import get_comm_manager\nheard = []\n"
             "def target(comm, message):\n"
             "    comm.on_msg(lambda m: heard.append(m['content']['data']))\n"
             "get_comm_manager().register_target('ear', target)")
    assert collect(client, send_to(client, None, setup)).content["status"] == "ok"
    subshell = made(client)
    go = tmp_path / "go"
    main = waiting(client, go)
    for msg_type, content in (
            ("comm_open", {"comm_id": "ear-1", "target_name": "ear", "data": {}}),
            ("comm_msg", {"comm_id": "ear-1", "data": {"said": 1}})):
        sent = ask(client, subshell, msg_type, **content)
        assert [m["msg_type"] for m in until_idle(client, sent)] == ["status", "status"]
    heard = collect(client, send_to(client, subshell, "heard"))
    assert not go.exists()
    go.touch()
    assert heard.of("execute_result")[0]["data"]["text/plain"] == "[{'said': 1}]"
    assert collect(client, main).content["status"] == "ok"


def test_a_subshells_comm_handler_replies_under_the_subshells_request(
        client: BlockingKernelClient, tmp_path: Path) -> None:
    """What a comm handler sends (and prints) while it handles a subshell's comm_msg goes
    under that request, as ipykernel 7's parent of the subshell's thread; the main cell's
    output keeps its own parent."""
    setup = ("from comm import get_comm_manager\n"
             "def echo(comm, message):\n"
             "    def heard(m):\n"
             "        print('heard', flush=True)\n"
             "        comm.send({'echo': m['content']['data']})\n"
             "    comm.on_msg(heard)\n"
             "get_comm_manager().register_target('echo', echo)")
    assert collect(client, send_to(client, None, setup)).content["status"] == "ok"
    subshell = made(client)
    go = tmp_path / "go"
    main = waiting(client, go)
    opened = ask(client, subshell, "comm_open", comm_id="echo-1", target_name="echo", data={})
    assert [m["msg_type"] for m in until_idle(client, opened)] == ["status", "status"]
    said = ask(client, subshell, "comm_msg", comm_id="echo-1", data={"said": 1})
    seen: list[dict[str, Any]] = []  # all IOPub, any parent, to its idle
    while not (seen and seen[-1]["parent_header"].get("msg_id") == said
               and seen[-1]["msg_type"] == "status"
               and seen[-1]["content"]["execution_state"] == "idle"):
        seen.append(client.get_iopub_msg(timeout=TIMEOUT))
    assert not go.exists()  # handled while the main shell's cell still runs
    go.touch()
    echoes = [m for m in seen if m["msg_type"] == "comm_msg"]
    assert [m["content"]["data"] for m in echoes] == [{"echo": {"said": 1}}]
    assert echoes[0]["parent_header"]["msg_id"] == said
    assert echoes[0]["parent_header"]["subshell_id"] == subshell
    assert [m["msg_type"] for m in seen if m["parent_header"].get("msg_id") == said] == [
        "status", "stream", "comm_msg", "status"]  # what it prints too
    ended = collect(client, main)
    assert ended.content["status"] == "ok" and ended.stdout() == "main ends\n"
    assert "comm_msg" not in ended.kinds


def test_a_subshells_user_expressions_and_input(client: BlockingKernelClient,
                                                tmp_path: Path) -> None:
    subshell = made(client)
    go = tmp_path / "go"
    main = waiting(client, go)
    expressions = collect(client, send_to(
        client, subshell, "y = 6", user_expressions={"twice": "y * 2", "bad": "1/0"}))
    values = expressions.content["user_expressions"]
    assert values["twice"]["status"] == "ok" and values["twice"]["data"]["text/plain"] == "12"
    assert values["bad"]["status"] == "error" and values["bad"]["ename"] == "ZeroDivisionError"
    asking = send_to(client, subshell, "name = input('Who? ')\nprint('hi', name)",
                     allow_stdin=True)
    request = client.get_stdin_msg(timeout=TIMEOUT)
    assert request["msg_type"] == "input_request"
    assert request["parent_header"]["msg_id"] == asking
    assert request["content"] == {"prompt": "Who? ", "password": False}
    client.input("Ada")
    answered = collect(client, asking)
    refused = collect(client, send_to(client, subshell, "input('no stdin: ')"))
    assert not go.exists()  # asked and answered while the main shell's cell still runs
    go.touch()  # (then no other reply is collected first: it would skip the main shell's)
    assert answered.content["status"] == "ok" and answered.stdout() == "hi Ada\n"
    assert refused.content["ename"] == "StdinNotImplementedError"
    assert collect(client, main).content["status"] == "ok"


def test_an_interrupt_ends_a_subshells_endless_cell(client: BlockingKernelClient) -> None:
    """The main shell idle, an interrupt reaches the subshells' running cells (with the main
    shell's cell running, it reaches that one alone, as ipykernel's SIGINT does)."""
    subshell = made(client)
    assert collect(client, send_to(client, None, "kept = 'still here'")).content[
        "status"] == "ok"
    endless = send_to(client, subshell, "print('spinning', flush=True)\nwhile True:\n    pass")
    printed(client, endless)
    assert on_control(client, "interrupt_request").content["status"] == "ok"
    ended = collect(client, endless)
    assert ended.content["status"] == "error"
    assert ended.content["ename"] == "KeyboardInterrupt"
    after = collect(client, send_to(client, subshell, "kept"))
    assert after.content["status"] == "ok", after.content
    assert after.of("execute_result")[0]["data"]["text/plain"] == "'still here'"


def test_an_interrupt_that_cannot_end_a_subshells_cell_kills_the_worker(
        client: BlockingKernelClient) -> None:
    """A cell in C code (a long sleep) does not see a KeyboardInterrupt: its worker is
    killed, and the kernel goes on."""
    subshell = made(client)
    sleeping = send_to(client, subshell, "import time\nprint('asleep', flush=True)\n"
                       "time.sleep(600)")
    printed(client, sleeping)
    on_control(client, "interrupt_request")
    ended = collect(client, sleeping)
    assert ended.content["status"] == "error" and ended.content["ename"] == "WorkerDied"
    again = collect(client, send_to(client, subshell, "6 * 7"))
    assert again.of("execute_result")[0]["data"]["text/plain"] == "42"


def test_a_subshell_made_while_the_main_shell_runs_runs_its_first_cell_at_once(
        tmp_path: Path) -> None:
    """A kernel of its own: its worker has had no subshell before."""
    with jupyter_host.started(tmp_path / "jupyter") as (_, client):
        go = tmp_path / "go"
        main = waiting(client, go)
        subshell = made(client)
        first = collect(client, send_to(client, subshell, "'first'"))
        assert not go.exists()
        go.touch()
        assert first.of("execute_result")[0]["data"]["text/plain"] == "'first'"
        assert collect(client, main).content["status"] == "ok"


def test_a_subshells_cell_prints_before_any_main_shell_cell(tmp_path: Path) -> None:
    """A kernel of its own, whose main shell has run nothing: what the subshell's cell prints
    is shown under it (it was once lost, the worker's streams not yet made)."""
    with jupyter_host.started(tmp_path / "jupyter") as (_, client):
        subshell = made(client)
        run = collect(client, send_to(client, subshell, "import sys\nprint('out')\n"
                                      "print('err', file=sys.stderr)\n'done'"))
        assert (run.stdout(), run.stdout("stderr")) == ("out\n", "err\n")
        assert run.of("execute_result")[0]["data"]["text/plain"] == "'done'"
