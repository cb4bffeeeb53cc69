"""Where a kernel listens: whether an address stays on this machine.

Both network kernels refuse to run code for anyone who can reach their port
without a secret (the rpc kernel's token, the Jupyter kernel's key) unless
they listen on a loopback address; this is the one rule for which addresses
those are.
"""

from __future__ import annotations


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an IPv4 or IPv6 address) is reachable from this machine only."""
    if host == "localhost":
        return True
    import ipaddress  # here: only a kernel that listens needs it, and it delays the start

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def accepts(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether a TCP connection to `host:port` is accepted (and closed at once: a ZeroMQ
    socket, or the listener it will take over, drops such a peer)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        try:
            probe.connect((host, port))
        except OSError:
            return False
    return True
