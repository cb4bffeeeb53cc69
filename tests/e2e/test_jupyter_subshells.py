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


def send_to(client: BlockingKernelClient, subshell: str | None, code: str) -> str:
    """`code` sent as a request naming `subshell` in its header (JEP 91's way); its msg_id."""
    request = client.session.msg("execute_request", {
        "code": code, "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": True})
    if subshell is not None:
        request["header"]["subshell_id"] = subshell
    client.shell_channel.send(request)
    return request["header"]["msg_id"]  # type: ignore[no-any-return]


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


def test_a_subshells_error_and_the_cells_it_aborts(client: BlockingKernelClient) -> None:
    subshell = made(client)
    failed = collect(client, send_to(client, subshell, "import time; time.sleep(0.3); 1/0"))
    assert failed.content["status"] == "error"
    assert failed.content["ename"] == "ZeroDivisionError"
    assert any("1/0" in line for line in failed.of("error")[0]["traceback"])
    after = collect(client, send_to(client, subshell, "'still here'"))
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
