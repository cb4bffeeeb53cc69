"""Kernel subshells (JEP 91) through jupyter_client: made, listed and deleted on control;
a shell request names one in its header.

pyrelune serves a subshell's requests in turn with the main shell's (one
worker thread runs cells), so kernel_info does not offer "kernel subshells":
a front end that would run a cell beside a running one does not rely on it.
"""

from __future__ import annotations

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


def in_subshell(client: BlockingKernelClient, subshell: str, code: str) -> Run:
    """`code` run as a request naming `subshell` in its header (JEP 91's way)."""
    request = client.session.msg("execute_request", {
        "code": code, "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": True})
    request["header"]["subshell_id"] = subshell
    client.shell_channel.send(request)
    return collect(client, request["header"]["msg_id"])


def test_a_subshell_is_made_listed_used_and_deleted(client: BlockingKernelClient) -> None:
    made = on_control(client, "create_subshell_request")
    assert made.reply["msg_type"] == "create_subshell_reply"
    assert made.content["status"] == "ok" and made.kinds == ["status:busy", "status:idle"]
    subshell = made.content["subshell_id"]
    listed = on_control(client, "list_subshell_request").content
    assert listed == {"status": "ok", "subshell_id": [subshell]}
    jupyter_host.execute(client, "shared = 41")
    ran = in_subshell(client, subshell, "print(shared + 1)")
    assert ran.content["status"] == "ok"
    assert ran.stdout() == "42\n"  # the one namespace, its output under its own request
    assert all(m["parent_header"]["subshell_id"] == subshell for m in ran.iopub)
    deleted = on_control(client, "delete_subshell_request", subshell_id=subshell)
    assert deleted.content == {"status": "ok"}
    assert on_control(client, "list_subshell_request").content["subshell_id"] == []
    gone = in_subshell(client, subshell, "print('not run')")
    assert gone.content["status"] == "error" and gone.content["ename"] == "UnknownSubshellError"
    assert gone.stdout() == "" and gone.kinds == ["status:busy", "status:idle"]


def test_deleting_an_unknown_subshell_is_an_error(client: BlockingKernelClient) -> None:
    deleted = on_control(client, "delete_subshell_request", subshell_id="never-made")
    assert deleted.reply["msg_type"] == "delete_subshell_reply"
    assert deleted.content["status"] == "error"
    assert deleted.content["evalue"] == "Unknown subshell_id 'never-made'"


def test_kernel_info_does_not_offer_concurrent_subshells(client: BlockingKernelClient) -> None:
    info = client.kernel_info(reply=True, timeout=TIMEOUT)["content"]
    assert "kernel subshells" not in info["supported_features"]
