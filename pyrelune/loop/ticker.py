"""The timer a sans-I/O codec's coalesced output needs: one, at the earliest time it asks.

A codec that holds stream text says when it wants `tick()` (its
`flush_at`); the driver arms this with that time after each of its turns.
One timer is kept, moved earlier when the codec asks for an earlier time,
never later: a later request waits for the earlier firing, which asks again.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from pyrelune.loop.reactor import Loop, TimerHandle


class Ticker:
    """Calls `tick()` on `loop` at the earliest time `arm` was given since it last did."""

    def __init__(self, loop: Loop, tick: Callable[[], None]) -> None:
        self._loop = loop
        self._tick = tick
        self._timer: TimerHandle | None = None

    def arm(self, due: float | None) -> None:
        """Tick at `due` (time.monotonic), unless a tick as early is armed; None: not needed."""
        if due is None or (self._timer is not None and self._timer.when() <= due):
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_at(due, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._tick()
