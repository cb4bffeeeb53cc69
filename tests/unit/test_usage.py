"""The kernel's use of the machine, as ipykernel reports it for the Kernel Usage panel."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pyrelune.supervisor.usage import Usage


def test_without_psutil_only_what_the_standard_library_knows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil raises ImportError
    figures = Usage().measure()
    assert figures == {"hostname": figures["hostname"], "pid": os.getpid(),
                       "cpu_count": os.cpu_count()}


def test_every_process_of_the_kernel_counts() -> None:
    """Children too (the worker, what cells start), and the CPU share is taken between looks."""
    pytest.importorskip("psutil")
    usage = Usage()
    alone = usage.measure()["kernel_memory"]
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys; held = bytearray(64 << 20); held[::4096] = "
                              "b'x' * len(held[::4096]); print(1, flush=True); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"1\n"
        figures = usage.measure()
    finally:
        child.communicate(b"", timeout=60)
    assert figures["kernel_memory"] >= alone + (64 << 20) * 3 // 4
    assert figures["kernel_cpu"] >= 0.0 and figures["cpu_count"] >= 1
    assert {"total", "available", "percent", "used"} <= set(figures["host_virtual_memory"])
