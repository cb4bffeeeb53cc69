"""Free TCP ports on loopback, one for each channel of a Jupyter connection file."""

from __future__ import annotations

import socket

CHANNELS = ("shell", "iopub", "stdin", "control", "hb")


def free_ports() -> dict[str, int]:
    """A port per channel, each free a moment ago (held together, so all differ)."""
    held = [socket.socket() for _ in CHANNELS]
    try:
        for probe in held:
            probe.bind(("127.0.0.1", 0))
        return {channel: probe.getsockname()[1]
                for channel, probe in zip(CHANNELS, held, strict=True)}
    finally:
        for probe in held:
            probe.close()
