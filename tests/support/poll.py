"""The suite's one way to wait for something another process does: poll with a deadline.

Generous deadlines (a busy 2-core machine); the answer, never a timing, is asserted.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Long enough for a start on a machine with two busy processes competing for its cores.
GENEROUS = 120.0


def wait_until(condition: Callable[[], object], within: float = GENEROUS,
               interval: float = 0.05) -> bool:
    """Poll `condition` until it holds or `within` seconds pass; whether it held."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return bool(condition())
