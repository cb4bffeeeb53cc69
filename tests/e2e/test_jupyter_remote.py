"""pyrelune's remote launcher as the remote provisioners start it (`python -m
pyrelune.jupyter.launcher` with a kernel id, a response address, a public key, a port range):
the connection information it sends back, decrypted as the provisioner does, lets a
jupyter_client connect and run cells; its comm port interrupts, ends and kills the kernel;
nothing is left behind. Then the same through gateway_provisioners' DistributedProvisioner,
whose launch on a local host runs the command without SSH. Loopback only.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cryptography")
from jupyter_client.blocking.client import BlockingKernelClient
from support import provisioner_side
from support.jupyter_host import execute
from support.processes import gone_soon, running

from pyrelune.modes.jupyter import PARENT_POLL

#: A cell that keeps the kernel busy until it is interrupted.
BUSY = "while True:\n    pass\n"
#: A cell whose child would outlive the kernel but for its launcher.
LEFTOVER = "import subprocess\nprint(subprocess.Popen(['sleep', '300']).pid)"


class Started:
    """A launcher, its kernel's connection information, and a client connected to it."""

    def __init__(self, *more: str) -> None:
        self.keys = provisioner_side.KeyPair()
        response = provisioner_side.ResponseAddress()
        try:
            # not started over SSH, even when the tests are (SSH_CONNECTION: its bind address)
            env = {k: v for k, v in os.environ.items()
                   if k not in ("JPY_PARENT_PID", "SSH_CONNECTION")}
            self.launcher = subprocess.Popen(provisioner_side.launcher_argv(
                "kernel-1", response.address, self.keys.public, "0..0", *more),
                env=env, start_new_session=True, stderr=subprocess.PIPE)
            self.info = provisioner_side.decrypt(self.keys, response.receive(self.launcher))
        finally:
            response.close()
        self.client = BlockingKernelClient()
        self.client.load_connection_info(self.info)  # type: ignore[arg-type]
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def request(self, **request: Any) -> bool:
        return provisioner_side.send_request(self.info["comm_port"], request)

    def pid(self, code: str = "import os\nprint(os.getpid())") -> int:
        return int(execute(self.client, code).stdout())

    def close(self) -> None:
        self.client.stop_channels()
        if self.launcher.poll() is None:
            os.killpg(self.launcher.pid, signal.SIGKILL)
        self.launcher.wait(30)
        assert self.launcher.stderr is not None
        self.launcher.stderr.close()


@pytest.fixture
def started() -> Iterator[Started]:
    kernel = Started()
    yield kernel
    kernel.close()


def test_the_provisioner_gets_what_it_needs_and_the_kernel_runs_cells(
        started: Started) -> None:
    info = started.info
    assert info["kernel_id"] == "kernel-1" and info["pid"] == started.launcher.pid
    assert info["ip"] == "127.0.0.1" and info["key"] and info["transport"] == "tcp"
    assert "curve_publickey" not in info  # not asked for
    assert execute(started.client, "print(6 * 7)").stdout() == "42\n"
    assert started.pid() != started.launcher.pid  # the kernel is the launcher's child
    assert started.request(signum=0)  # alive


def test_an_interrupt_through_the_comm_port_ends_a_busy_cell(started: Started) -> None:
    msg_id = started.client.execute(BUSY)
    started.client.get_iopub_msg(timeout=30)  # busy
    assert started.request(signum=signal.SIGINT)
    reply = started.client.get_shell_msg(timeout=60)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert execute(started.client, "print('next')").stdout() == "next\n"


def test_a_shutdown_ends_kernel_and_launcher_and_leaves_no_process(started: Started) -> None:
    kernel = started.pid()
    leftover = int(execute(started.client, LEFTOVER).stdout())
    started.client.shutdown()  # as jupyter_client ends a kernel: the message, then the listener
    assert started.request(shutdown=1)
    assert started.launcher.wait(60) == 0
    assert gone_soon(kernel) and gone_soon(leftover)
    assert not started.request(signum=0)  # the provisioner's poll: it has ended


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_sigterm_and_sigkill_through_the_comm_port_end_a_busy_kernel(
        started: Started, signum: int) -> None:
    kernel = started.pid()
    started.client.execute(BUSY)
    assert started.request(signum=signum)
    started.launcher.wait(60)
    assert gone_soon(kernel)
    assert not started.request(signum=0)


def test_a_launcher_killed_outright_does_not_leave_its_kernel(started: Started) -> None:
    kernel = started.pid()
    started.launcher.kill()
    started.launcher.wait(30)
    assert gone_soon(kernel, within=30 + PARENT_POLL)  # it watches its parent: JPY_PARENT_PID


def test_curve_keys_when_the_provisioner_asks_for_encryption() -> None:
    zmq = pytest.importorskip("zmq")
    if not zmq.has("curve"):
        pytest.skip("this ZeroMQ has no CurveZMQ")
    kernel = Started("--transport-encryption", "required")
    try:
        assert len(kernel.info["curve_publickey"]) == 40
        assert execute(kernel.client, "print(1 + 1)").stdout() == "2\n"
    finally:
        kernel.close()


def test_a_kernel_started_without_jpy_parent_pid_outlives_the_shell_that_started_it(
        tmp_path: Path) -> None:
    from jupyter_client.connect import write_connection_file

    path, info = write_connection_file(str(tmp_path / "kernel.json"), ip="127.0.0.1")
    env = {k: v for k, v in os.environ.items() if k != "JPY_PARENT_PID"}
    shell = subprocess.run(  # as over SSH: the shell ends at once, the kernel is re-parented
        ["sh", "-c", f"{sys.executable} -m pyrelune --mode jupyter -f {path} "
         ">/dev/null 2>&1 </dev/null & echo $!"], env=env, capture_output=True, text=True,
        timeout=60, check=True)
    kernel = int(shell.stdout)
    client = BlockingKernelClient()
    client.load_connection_info(info)
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        time.sleep(3 * PARENT_POLL)  # what a parent watch would have taken to end it
        assert running(kernel)
        assert execute(client, "print('still here')").stdout() == "still here\n"
        client.shutdown()
        assert gone_soon(kernel, within=60)
    finally:
        client.stop_channels()
        if running(kernel):
            os.kill(kernel, signal.SIGKILL)


def test_through_gateway_provisioners_distributed_provisioner(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """The provisioner runs the kernelspec's command itself for a local host (over SSH for
    any other): start, a cell, an interrupt, a restart, a shutdown, no launcher left."""
    pytest.importorskip("gateway_provisioners")
    from gateway_provisioners import response_manager

    from pyrelune.jupyter import kernelspec

    kernel = kernelspec.distributed(kernelspec.spec(sys.executable), "localhost",
                                    sys.executable)
    # The provisioner refuses root unless told; this machine's tests may run as root.
    kernel["metadata"]["kernel_provisioner"]["config"]["unauthorized_users"] = []
    folder = tmp_path / "kernels" / "pyrelune-distributed"
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text(json.dumps(kernel))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.delenv("SSH_CONNECTION", raising=False)  # a local launch: a loopback kernel
    monkeypatch.setattr(response_manager, "response_ip", "127.0.0.1")  # loopback only
    asyncio.run(_distributed())


async def _distributed() -> None:
    from jupyter_client.manager import AsyncKernelManager

    manager = AsyncKernelManager(kernel_name="pyrelune-distributed")
    await asyncio.wait_for(manager.start_kernel(), 60)
    launchers = []
    try:
        for turn in ("first", "after restart"):
            assert manager.provisioner is not None
            launchers.append(manager.provisioner.pid)  # type: ignore[attr-defined]
            client = manager.client()
            client.start_channels()
            try:
                await client.wait_for_ready(timeout=60)
                reply = await client.execute_interactive(f"print({turn!r})", timeout=60)
                assert reply["content"]["status"] == "ok"
                client.execute(BUSY)
                await asyncio.sleep(0.5)
                await asyncio.wait_for(manager.interrupt_kernel(), 30)
                reply = await client.get_shell_msg(timeout=60)
                assert reply["content"]["ename"] == "KeyboardInterrupt"
            finally:
                client.stop_channels()
            if turn == "first":
                await asyncio.wait_for(manager.restart_kernel(), 60)
        await asyncio.wait_for(manager.shutdown_kernel(), 60)
        assert not await manager.is_alive()
    finally:
        if await manager.is_alive():
            await manager.shutdown_kernel(now=True)
    assert launchers[0] != launchers[1]
    assert all(gone_soon(pid) for pid in launchers)
