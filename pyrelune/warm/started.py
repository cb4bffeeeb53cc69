"""When a process started, on this process's `time.monotonic()` clock.

A oneshot cell's deadline guards the host's own limit (Vix Note kills the
runtime 10 s after it started it), so a cell that went through the warm
process first, or tried it and fell back to cold, counts its deadline from
the launcher's start, not from the moment its worker began. Read from
/proc (Linux); imported by the launcher, so it imports nothing.
"""

from __future__ import annotations

import os
import time


def started(pid: int | str = "self") -> float | None:
    """The `time.monotonic()` value at which process `pid` started; None if unknown.

    /proc/PID/stat gives the start in clock ticks since boot (the boot-time
    clock); its age on that clock, taken from monotonic now, is the start
    on this one. Rounded to a tick (10 ms): a start a little early, never late.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        ticks = int(fields[19])  # field 22 of the whole line: starttime
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return time.monotonic() - max(age, 0.0)
