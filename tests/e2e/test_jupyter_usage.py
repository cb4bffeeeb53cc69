"""JupyterLab's Kernel Usage panel: `usage_request` on control, answered while a cell runs.

The figures are every kernel process's (the supervisor, its worker, what
cells start), measured by the supervisor, so the answer never waits for a
busy cell: that is when a user looks at them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from support import jupyter_host
from support.jupyter_host import TIMEOUT, Kernel, until_idle

pytest.importorskip("psutil")  # the figures beyond the host's name are psutil's, as ipykernel's

MIB = 1 << 20


kernel, client = jupyter_host.module_kernel()


def usage(client: BlockingKernelClient) -> tuple[dict[str, Any], list[str]]:
    """A usage_request on control: its reply's content, and the IOPub statuses under it."""
    request = client.session.msg("usage_request", {})
    client.control_channel.send(request)
    msg_id = request["header"]["msg_id"]
    while True:
        reply = client.control_channel.get_msg(timeout=TIMEOUT)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    assert reply["msg_type"] == "usage_reply"
    statuses = [m["content"]["execution_state"] for m in until_idle(client, msg_id)]
    return reply["content"], statuses


def test_usage_counts_the_workers_memory_while_its_cell_runs(kernel: Kernel,
                                                              tmp_path: Path) -> None:
    client = kernel[1]
    jupyter_host.drain_iopub(client)
    go = tmp_path / "go"
    cell = client.execute(
        "import os, time\n"
        f"held = bytearray({256 * MIB})\n"
        "held[::4096] = b'x' * len(held[::4096])  # touched: resident, not only promised\n"
        "print('holding', flush=True)\n"
        f"while not os.path.exists({str(go)!r}):\n"
        "    time.sleep(0.02)\n")
    while True:  # the cell holds its memory and waits
        message = client.get_iopub_msg(timeout=TIMEOUT)
        if (message["parent_header"].get("msg_id") == cell and message["msg_type"] == "stream"
                and "holding" in message["content"]["text"]):
            break
    figures, statuses = usage(client)
    go.touch()
    assert client.get_shell_msg(timeout=TIMEOUT)["content"]["status"] == "ok"
    assert statuses == ["busy", "idle"]
    assert figures["hostname"] and figures["pid"] != os.getpid()
    assert figures["kernel_memory"] >= 256 * MIB  # the worker's, not only the supervisor's
    assert figures["kernel_cpu"] >= 0 and figures["cpu_count"] >= 1
    memory = figures["host_virtual_memory"]
    assert memory["total"] >= memory["available"] > 0


def test_usage_is_answered_before_any_cell(tmp_path: Path) -> None:
    """The first message a front end sends may be this one: the worker starts, and it counts."""
    with jupyter_host.started(tmp_path) as (_, client):
        jupyter_host.drain_iopub(client)
        first, _ = usage(client)
        second, _ = usage(client)
    assert first["pid"] == second["pid"] and first["kernel_memory"] > 0
