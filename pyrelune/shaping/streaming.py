"""Live stream output for a host that renders as the cell runs: coalesced.

A cell printing in a tight loop must not become one event per line: text is
held for at most `INTERVAL` seconds, so each stream gets about one event per
interval, and is let out at once before anything that must come after it
(a display, an input prompt, the end of the cell), or once `MAX_HELD`
characters wait (a flood: the transport, not this, is where it waits for a
slow client). Runs of stdout and stderr
stay in the order they were read; so do runs of different cells (a thread
of an earlier cell's: `Stream.origin`), which are never joined.

Its cap (a cell printing 100 MB must not become 100 MB of events) is
`shaping.livecaps.StreamCap`, with the other live caps. Sans-I/O: the caller passes the
clock in and arms the timer `flush_at` asks for.
"""

from __future__ import annotations

from pyrelune.wire.events import Stream

#: The longest a piece of text waits before it is sent.
INTERVAL = 0.05
#: Characters held at most: more is let out before its time.
MAX_HELD = 1 << 18


class Coalescer:
    """Holds stream text for up to `INTERVAL` seconds and lets it out in order."""

    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval
        self.flush_at: float | None = None  # when pending text is due; None when none is
        self._runs: list[tuple[str, str | None, list[str]]] = []  # stream, origin, pieces
        self._held = 0  # characters in _runs
        self._last = float("-inf")

    def add(self, stream: Stream, now: float) -> list[Stream]:
        """Hold `stream`; what is due by `now` comes back (the first text of a burst at once)."""
        runs = self._runs
        if runs and runs[-1][0] == stream.name and runs[-1][1] == stream.origin:
            runs[-1][2].append(stream.text)
        else:
            runs.append((stream.name, stream.origin, [stream.text]))
        self._held += len(stream.text)
        if self.flush_at is None:
            self.flush_at = max(now, self._last + self.interval)
        if self._held >= MAX_HELD:
            self._last = now
            return self.flush()
        return self.due(now)

    def due(self, now: float) -> list[Stream]:
        """Everything held, if its time has come."""
        if self.flush_at is None or now < self.flush_at:
            return []
        self._last = now
        return self.flush()

    def flush(self) -> list[Stream]:
        """Everything held, now: something that must follow it is about to be sent."""
        out = [Stream(name, "".join(parts), origin) for name, origin, parts in self._runs]
        self._runs = []
        self._held = 0
        self.flush_at = None
        return out
