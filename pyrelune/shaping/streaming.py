"""Live stream output for a host that renders as the cell runs: coalesced and capped.

A cell printing in a tight loop must not become one event per line: text is
held for at most `INTERVAL` seconds, so each stream gets about one event per
interval, and is let out at once before anything that must come after it
(a display, an input prompt, the end of the cell), or once `MAX_HELD`
characters wait (a flood: the transport, not this, is where it waits for a
slow client). Runs of stdout and stderr
stay in the order they were read; so do runs of different cells (a thread
of an earlier cell's: `Stream.origin`), which are never joined.

A cell printing 100 MB must not become 100 MB of events, nor 100 MB of
memory: past `limit` bytes per cell only a window over the most recent text
is kept; at the next flush it follows a marker saying how much was dropped.
Sans-I/O: the caller passes the clock in and arms the timer `flush_at` asks for.
"""

from __future__ import annotations

from pyrelune.shaping import TailWindow, split_stream, utf8_size
from pyrelune.wire.events import Stream

#: The longest a piece of text waits before it is sent.
INTERVAL = 0.05
#: Characters held at most: more is let out before its time.
MAX_HELD = 1 << 18
#: Bytes of stream text sent per cell before only the most recent are kept.
DEFAULT_LIMIT = 1 << 20


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


class Cap:
    """Lets the first `limit` bytes of a cell's streams through, then keeps only a tail."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._tail_limit = max(limit // 4, 1)
        self.begin()

    def begin(self) -> None:
        """A new cell: a full budget."""
        self._left = self.limit - self._tail_limit
        self._window = TailWindow(self._tail_limit)

    def add(self, stream: Stream) -> Stream | None:
        """The part of `stream` to send now; the rest is kept in the tail window."""
        size = utf8_size(stream.text)
        if size <= self._left:
            self._left -= size
            return stream
        sent = None
        if self._left > 0:
            sent, stream = split_stream(stream, self._left)
            self._left = 0
        self._window.add(stream)
        return sent

    def release(self) -> list[Stream]:
        """What the window holds, after a marker for what was dropped (at a flush point)."""
        window = self._window
        if not window.items and not window.omitted:
            return []  # the usual case: the cap was never reached
        out = [Stream(name, note) for name in ("stdout", "stderr")
               if (note := window.omitted.text(name))]
        out.extend(item for item in window.items if isinstance(item, Stream))
        self._window = TailWindow(self._tail_limit)
        return out
