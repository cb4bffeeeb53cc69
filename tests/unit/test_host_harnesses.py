"""The kernel hosts' own failures: a hung kernel fails the test with what it wrote on stderr."""

from __future__ import annotations

import sys

import pytest
import rpc_host
from lines_host import Host, KernelBroken, wait_for

#: A kernel that says something on stderr, without a newline, then never answers.
HUNG = [sys.executable, "-c",
        "import sys, time\nsys.stderr.write('stuck in cell 7')\nsys.stderr.flush()\n"
        "time.sleep(600)"]


def test_a_hung_lines_kernel_fails_with_its_stderr() -> None:
    host = Host(command=HUNG)
    try:
        wait_for(lambda: b"stuck" in host.stderr, "the kernel's stderr")
        host.send("ping")
        with pytest.raises(KernelBroken, match=r"no response in 0\.5 s; .*stuck in cell 7"):
            host.read_line(timeout=0.5)  # the kernel never answers: no race with it
    finally:
        host.kill()


def test_a_hung_rpc_kernel_fails_with_its_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rpc_host, "kernel_command", lambda *args: HUNG)
    host = rpc_host.PipeHost()
    try:
        wait_for(lambda: b"stuck" in host.stderr, "the kernel's stderr")
        host.request("kernel.info")
        with pytest.raises(AssertionError, match=r"in 0\.5 s; .*stuck in cell 7"):
            host.receive(timeout=0.5)
    finally:
        host.process.kill()
        host.process.wait()
