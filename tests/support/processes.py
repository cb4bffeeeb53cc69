"""Whether a process a cell started is still around."""

from __future__ import annotations

from pathlib import Path

from support.poll import wait_until


def running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def gone_soon(pid: int, within: float = 10.0) -> bool:
    """Wait (generously: a noisy machine) for `pid` to end; True when it did."""
    return wait_until(lambda: not running(pid), within)
