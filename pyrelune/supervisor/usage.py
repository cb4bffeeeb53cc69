"""The kernel's use of the machine: CPU and memory of all its processes, and the host's.

What JupyterLab's Kernel Usage panel shows (`usage_request`, answered as
ipykernel answers it). Measured here, in the supervisor, which never runs a
cell: the answer comes while a cell runs, which is when a user looks. Every
process of the kernel counts: the supervisor, its worker and whatever a cell
started. With psutil (which ipykernel needs, so every JupyterLab has it)
the figures are ipykernel's; without it, what the standard library knows.
"""

from __future__ import annotations

import os
import socket

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Usage:
    """Measures on demand; keeps each process it saw, as CPU shares are taken between looks."""

    def __init__(self) -> None:
        self._processes: dict[int, Any] = {}  # psutil.Process by pid

    def measure(self) -> dict[str, Any]:
        """A `usage_reply`'s content."""
        figures: dict[str, Any] = {"hostname": socket.gethostname(), "pid": os.getpid()}
        try:
            import psutil
        except ImportError:
            figures["cpu_count"] = os.cpu_count()
            return figures
        me = psutil.Process()
        alive = [me, *me.children(recursive=True)]
        # The same Process objects as last time: their CPU share is since then.
        self._processes = {p.pid: self._processes.get(p.pid, p) for p in alive}
        cpu = 0.0
        memory = 0
        for process in self._processes.values():
            try:
                cpu += process.cpu_percent(None)
                info = process.memory_full_info()
                memory += getattr(info, "pss", info.rss)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue  # it ended while measured
        figures["kernel_cpu"] = cpu
        figures["kernel_memory"] = memory
        host_cpu = psutil.cpu_percent()
        if host_cpu:  # the first look has nothing to compare with: 0.0, which says nothing
            figures["host_cpu_percent"] = host_cpu
        figures["cpu_count"] = psutil.cpu_count(logical=True)
        figures["host_virtual_memory"] = dict(psutil.virtual_memory()._asdict())
        return figures
