"""The Jupyter kernel's TCP ports, listened on before ZeroMQ is imported.

A front end connects the moment it has started the kernel. A connection
refused then is retried only 100 to 200 ms later (ZeroMQ's reconnect
interval, which is the front end's to set), and importing pyzmq alone takes
longer than the front end takes to connect: a kernel that binds after that
first attempt answers kernel_info a retry late. So the kernel's first step
is to listen on the ports its connection file names, with the C socket
module only. The front end's connections wait in the listen backlog, and
each ZeroMQ socket takes its port's listener over when it binds
(ZMQ_USE_FD, see `transports.zmqsockets`).

Only what is plainly safe and possible is listened on early: TCP on IPv4,
an address written as one (a name would be looked up), ports the file names
(port 0 is chosen by ZeroMQ), and never a network address without a key
(`modes.jupyter.check` refuses that). Anything else, a port that cannot be
bound included, is left to ZeroMQ, with its errors.
"""

from __future__ import annotations

import _socket

#: The channels a connection file names a port for (`<channel>_port`).
CHANNELS = ("shell", "iopub", "stdin", "control", "hb")
#: What ZeroMQ's own listeners use (ZMQ_BACKLOG's default).
BACKLOG = 100

#: The listening descriptors, by (ip, port), waiting for their ZeroMQ socket.
_listening: dict[tuple[str, int], int] = {}


def listen(path: str) -> None:
    """Listen on the TCP ports the connection file at `path` names, where it is safe."""
    from pyrelune import fastjson

    try:
        with open(path, "rb") as file:
            info = fastjson.loads(file.read().decode())
    except (OSError, ValueError, RecursionError):
        return  # the kernel's own reading of the file says what is wrong
    if not isinstance(info, dict) or info.get("transport", "tcp") != "tcp":
        return
    ip = info.get("ip", "127.0.0.1")
    try:
        packed = _socket.inet_pton(_socket.AF_INET, ip)  # a name would be looked up: ZeroMQ's
    except (OSError, TypeError):
        return
    if not info.get("key") and packed[0] != 127:  # 127.0.0.0/8: this machine only
        return
    for channel in CHANNELS:
        port = info.get(f"{channel}_port")
        if (isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536
                and (ip, port) not in _listening):
            _listen(ip, port)


def _listen(ip: str, port: int) -> None:
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)  # as ZeroMQ's listeners
        sock.setblocking(False)
        sock.bind((ip, port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        return
    _listening[ip, port] = sock.detach()


def take(ip: str, port: int) -> int | None:
    """The descriptor listening on `ip:port`, now the caller's to close, if there is one."""
    return _listening.pop((ip, port), None)


def close() -> None:
    """Stop listening on the ports no ZeroMQ socket took."""
    import os

    while _listening:
        os.close(_listening.popitem()[1])
