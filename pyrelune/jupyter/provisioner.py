"""A jupyter_client kernel provisioner whose launch returns once the kernel listens.

It runs in the front end (JupyterLab's server, nbclient, jupyter console), never in
pyrelune: jupyter_client loads it through the `jupyter_client.kernel_provisioners`
entry point when a kernelspec's `metadata.kernel_provisioner` names it.

Why: the front end connects the moment the kernel's process exists, a few
milliseconds before any Python process can listen; each refused connection is
retried only 100 to 200 ms later (ZeroMQ's reconnect interval), so the first
reply comes a retry late however fast the kernel is. The kernel listens on its
ports first thing (`transports.prebound`), and this launch waits for that, so
the front end's first connections succeed. Likewise at the end: once a
shutdown was asked for, a look at whether the kernel is still running waits
for it to end, for as long as the front end would wait before looking again
(jupyter_client looks every 100 ms), so a restart goes on as soon as the old
kernel is gone. Everything else is jupyter_client's own local provisioner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning.local_provisioner import LocalProvisioner
from traitlets import Float

from pyrelune.transports.addresses import accepts

#: Seconds between looks at the ports.
INTERVAL = 0.002
#: How long jupyter_client waits between looks at a kernel that is shutting down (its
#: KernelManager's `pollinterval`): a look waits at most that long for the kernel to end.
SHUTDOWN_LOOK = 0.1

_PORTS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")


class ListeningProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, but launched means listening."""

    patience = Float(10.0, config=True, help=(
        "Seconds a launch waits for the kernel to listen before it leaves the rest to the "
        "front end's retries, as without this provisioner (a slow or busy machine). The "
        "kernelspec's metadata.kernel_provisioner.config sets it."))

    _ending = False  # a shutdown was asked for

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        self._ending = False
        info = await super().launch_kernel(cmd, **kwargs)
        if self.process is not None:
            await until_listening(info, self.process.poll, self.patience)
        return info

    async def shutdown_requested(self, restart: bool = False) -> None:
        self._ending = True
        await super().shutdown_requested(restart)

    async def poll(self) -> int | None:
        """The kernel's exit status, None while it runs; once a shutdown was asked for,
        after waiting up to `SHUTDOWN_LOOK` for it to end."""
        status: int | None = await super().poll()
        deadline = time.monotonic() + SHUTDOWN_LOOK
        while status is None and self._ending and time.monotonic() < deadline:
            await asyncio.sleep(INTERVAL)
            status = await super().poll()
        return status


def tcp_ports(info: Mapping[str, Any]) -> tuple[str, list[int]] | None:
    """The address and ports to wait for, or None where there is nothing to connect to."""
    if info.get("transport", "tcp") != "tcp":
        return None  # ipc: ZeroMQ finds the socket file itself, without a retry interval
    ports = [info.get(name) for name in _PORTS]
    chosen = [port for port in ports
              if isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536]
    if len(chosen) < len(ports):
        return None  # port 0: ZeroMQ picks one, which only the kernel knows
    ip = str(info.get("ip") or "127.0.0.1")
    return ("127.0.0.1" if ip in ("0.0.0.0", "*") else ip), chosen


async def until_listening(info: Mapping[str, Any], exited: Callable[[], int | None],
                          patience: float) -> bool:
    """Wait until every port accepts a connection; False when the kernel exited or time ran out.

    A port is probed by connecting and closing at once: the kernel's ZeroMQ socket
    (or, before it binds, the listener it will take over) drops such a peer.
    """
    target = tcp_ports(info)
    if target is None:
        return False
    ip, waiting = target
    deadline = time.monotonic() + patience
    while True:
        waiting = [port for port in waiting if not accepts(ip, port)]
        if not waiting:
            return True
        if exited() is not None or time.monotonic() > deadline:
            return False
        await asyncio.sleep(INTERVAL)

