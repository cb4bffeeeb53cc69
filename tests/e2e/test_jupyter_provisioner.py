"""pyrelune's kernel provisioner as a front end loads it: through jupyter_client's entry point,
named by the kernelspec that `pyrelune jupyter install --sys-prefix` writes.

Its one promise: `start_kernel()` returns once the kernel listens on all its ports,
so the front end's first connections are taken at once instead of a ZeroMQ
reconnect interval later. Everything else is jupyter_client's local provisioner,
checked here through the requests that use it (interrupt, restart, shutdown).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager
from jupyter_client.provisioning.factory import KernelProvisionerFactory
from support import jupyter_host
from support.jupyter_host import execute

from pyrelune.jupyter import kernelspec
from pyrelune.jupyter.provisioner import ListeningProvisioner


def listening(info: dict[str, Any]) -> bool:
    """Whether all five of the kernel's ports take a connection now."""
    ports = (info["shell_port"], info["iopub_port"], info["stdin_port"],
             info["control_port"], info["hb_port"])
    return all(accepts(int(port)) for port in ports)


def accepts(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.connect(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_the_entry_point_is_registered_where_pyrelune_is_installed() -> None:
    factory = KernelProvisionerFactory.instance()
    assert kernelspec.PROVISIONER in factory.get_provisioner_entries()


def test_start_returns_listening_and_the_kernel_works_through_restart(tmp_path: Path) -> None:
    with jupyter_host.started(tmp_path, interrupt_mode="message", provisioned=True) as (
            manager, client):
        assert isinstance(manager.provisioner, ListeningProvisioner)
        assert execute(client, "1 + 1").of("execute_result")[0]["data"]["text/plain"] == "2"
        manager.restart_kernel(now=False)
        # Checked before any client speaks: the new kernel listens when restart returns.
        assert listening(dict(manager.get_connection_info()))
        client.wait_for_ready(timeout=jupyter_host.TIMEOUT)
        assert execute(client, "x = 41\nx + 1").of("execute_result")[0]["data"] == {
            "text/plain": "42"}


def test_a_start_with_the_provisioner_listens_before_it_returns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = jupyter_host.kernelspec(tmp_path, provisioned=True)
    spec = json.loads((folder / "kernel.json").read_text())
    spec["metadata"]["kernel_provisioner"]["config"] = {"patience": 600.0}  # a busy machine
    (folder / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    manager = KernelManager(kernel_name=jupyter_host.KERNEL_NAME)
    assert manager.provisioner is None
    try:
        manager.start_kernel()
        assert isinstance(manager.provisioner, ListeningProvisioner)
        assert listening(dict(manager.get_connection_info()))
        client = manager.blocking_client()
        client.start_channels()
        try:
            # The reply only: IOPub's status messages for a first request may go out
            # before the client's subscription arrives (ZeroMQ's slow joiner).
            msg_id = client.kernel_info()
            reply = client.get_shell_msg(timeout=jupyter_host.TIMEOUT)
            assert reply["parent_header"]["msg_id"] == msg_id
            assert reply["content"]["implementation"] == "pyrelune"
        finally:
            client.stop_channels()
    finally:
        manager.shutdown_kernel(now=True)


def test_an_interrupt_as_soon_as_the_kernel_listens_is_not_its_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A front end may interrupt once start returns, which the provisioner makes the moment
    the ports listen: before the kernel's loop takes SIGINT. The kernel ignores it then."""
    jupyter_host.kernelspec(tmp_path, interrupt_mode="signal", provisioned=True)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    manager = KernelManager(kernel_name=jupyter_host.KERNEL_NAME)
    try:
        manager.start_kernel()
        manager.interrupt_kernel()  # SIGINT to the kernel's process group
        client = manager.blocking_client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=jupyter_host.TIMEOUT)
            assert execute(client, "6 * 7").of("execute_result")[0]["data"] == {
                "text/plain": "42"}
            assert manager.is_alive()
        finally:
            client.stop_channels()
    finally:
        manager.shutdown_kernel(now=True)
