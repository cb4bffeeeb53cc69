"""The Jupyter kernel at the machine's limits, driven through jupyter_client: descriptors
taken by a peer, a front end that stops reading IOPub, signals a cell sends its parent.
Loopback only; every wait bounded."""

from __future__ import annotations

import os
import resource
import socket
import sys
from pathlib import Path

import pytest
from support import jupyter_host
from support.jupyter_host import TIMEOUT, execute
from support.poll import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads and limits the kernel through /proc and prlimit")


def _descriptors(pid: int) -> list[int]:
    return [int(name) for name in os.listdir(f"/proc/{pid}/fd")]


def test_descriptors_taken_by_a_peer_fail_the_crashed_cell_not_the_kernel(
        tmp_path: Path) -> None:
    """A peer without the key fills the kernel's descriptor table with TCP connections (as
    1,100 connections fill the common 1,024 limit; here the limit is lowered to what the
    kernel holds), then a cell crashes: its worker cannot be replaced. The cell fails
    saying why, the kernel lives, and once the peer lets go the next cell runs."""
    with jupyter_host.started(tmp_path) as (manager, client):
        assert execute(client, "x = 1").content["status"] == "ok"
        pid = jupyter_host.pid(manager)
        held = _descriptors(pid)
        original = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        limit = max(held) + 1  # no free number left but the holes, which the peer fills
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, original[1]))
        peers = []
        try:
            for _ in range(limit - len(held) + 20):
                peers.append(socket.create_connection(("127.0.0.1", manager.shell_port)))
            assert wait_until(lambda: len(_descriptors(pid)) >= limit, within=60)
            crashed = execute(client, "import os; os._exit(1)")
            assert crashed.content["status"] == "error"
            assert "no fresh worker could start" in crashed.content["evalue"]
            assert "Too many open files" in crashed.content["evalue"]
            again = execute(client, "print(1)")  # still none: said again, not fatal
            assert again.content["status"] == "error"
        finally:
            for peer in peers:
                peer.close()
            resource.prlimit(pid, resource.RLIMIT_NOFILE, original)
        assert wait_until(lambda: len(_descriptors(pid)) <= len(held), within=60)
        recovered = execute(client, "print(2 + 2)")
        assert recovered.content["status"] == "ok" and recovered.stdout() == "4\n"
        assert len(_descriptors(pid)) == len(held)  # nothing the failed starts opened is left


def test_signals_a_cell_sends_its_parent_are_ignored_or_end_the_kernel_cleanly(
        tmp_path: Path) -> None:
    """SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGALRM would each kill the kernel: ignored
    (the cells keep their default actions). SIGTERM ends it, after the cell that sent it
    has its reply."""
    with jupyter_host.started(tmp_path) as (manager, client):
        pid = jupyter_host.pid(manager)
        run = execute(client, "import os, signal\n"
                              "for name in ('SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', "
                              "'SIGALRM'):\n"
                              "    os.kill(os.getppid(), getattr(signal, name))\n"
                              "print(signal.getsignal(signal.SIGHUP) is signal.SIG_DFL)")
        assert run.content["status"] == "ok" and run.stdout() == "True\n"
        assert execute(client, "print('alive')").stdout() == "alive\n"
        ended = execute(client, "import os, signal, time\n"
                                "os.kill(os.getppid(), signal.SIGTERM)\n"
                                "time.sleep(60)")
        assert ended.content["status"] == "error"
        assert ended.content["ename"] == "KeyboardInterrupt"
        process = manager.provisioner.process  # type: ignore[union-attr]
        assert process.wait(timeout=TIMEOUT) == 0
    log = (tmp_path / "kernel-stderr-1").read_text(encoding="utf-8")
    assert "pyrelune: SIGUSR1 ignored" in log
    assert not os.path.exists(f"/proc/{pid}")
