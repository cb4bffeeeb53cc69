"""Shell messages sent on the control channel, through jupyter_client: answered on control.

The messaging spec lets a front end send any shell message on control;
ipykernel answers them. Those that need no worker are answered at once,
even while a cell runs; those that do take their turn behind it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from support import jupyter_host
from support.jupyter_host import TIMEOUT, collect, execute

kernel, client = jupyter_host.module_kernel("message")


def on_control(client: BlockingKernelClient, msg_type: str, content: dict[str, Any]) -> str:
    message = client.session.msg(msg_type, content)
    client.control_channel.send(message)
    return str(message["header"]["msg_id"])


@pytest.mark.parametrize(("msg_type", "content", "expected"), [
    ("execute_request", {"code": "print('on control')\n6 * 7", "silent": False,
                         "store_history": True, "user_expressions": {}, "allow_stdin": False,
                         "stop_on_error": True}, {"status": "ok"}),
    ("complete_request", {"code": "impor", "cursor_pos": 5}, {"status": "ok"}),
    ("inspect_request", {"code": "len", "cursor_pos": 3, "detail_level": 0},
     {"status": "ok", "found": True}),
    ("is_complete_request", {"code": "for x in y:"}, {"status": "incomplete"}),
    ("history_request", {"hist_access_type": "tail", "n": 5, "output": False, "raw": True},
     {"status": "ok"}),
    ("comm_info_request", {}, {"status": "ok"}),
    ("kernel_info_request", {}, {"status": "ok"}),
])
def test_a_shell_message_on_control_is_answered_on_control(
        client: BlockingKernelClient, msg_type: str, content: dict[str, Any],
        expected: dict[str, Any]) -> None:
    run = collect(client, on_control(client, msg_type, content), reply_channel="control")
    assert run.reply["msg_type"] == msg_type.replace("_request", "_reply")
    assert {key: run.content.get(key) for key in expected} == expected
    assert run.kinds[0] == "status:busy" and run.kinds[-1] == "status:idle"
    if msg_type == "execute_request":
        assert run.stdout() == "on control\n"
        assert run.of("execute_result")[0]["data"]["text/plain"] == "42"


def test_a_control_execute_waits_for_the_running_cell_and_the_rest_is_answered_at_once(
        client: BlockingKernelClient, tmp_path: Path) -> None:
    go = tmp_path / "go"
    running = client.execute("import os, time\n"
                             f"while not os.path.exists({str(go)!r}):\n    time.sleep(0.02)\n"
                             "print('first')")
    while (message := client.get_iopub_msg(timeout=TIMEOUT))["msg_type"] != "execute_input":
        pass  # it runs (control would overtake a shell request still on its way)
    assert message["parent_header"]["msg_id"] == running
    queued = on_control(client, "execute_request", {"code": "print('second')"})
    info = on_control(client, "kernel_info_request", {})
    reply = client.control_channel.get_msg(timeout=TIMEOUT)  # while the cell still runs
    assert reply["parent_header"]["msg_id"] == info
    go.touch()
    order: list[str] = []
    printed = {running: "", queued: ""}
    while len(order) < 2:  # both idles, in the order the cells ran
        message = client.get_iopub_msg(timeout=TIMEOUT)
        parent = message["parent_header"].get("msg_id")
        if message["msg_type"] == "stream" and parent in printed:
            printed[parent] += message["content"]["text"]
        elif message["msg_type"] == "status" and parent in printed and message["content"][
                "execution_state"] == "idle":
            order.append(parent)
    assert order == [running, queued]
    assert printed == {running: "first\n", queued: "second\n"}
    assert client.get_shell_msg(timeout=TIMEOUT)["parent_header"]["msg_id"] == running
    reply = client.control_channel.get_msg(timeout=TIMEOUT)
    assert (reply["parent_header"]["msg_id"], reply["content"]["status"]) == (queued, "ok")
    assert execute(client, "'after'").of("execute_result")  # the shell queue moves on
