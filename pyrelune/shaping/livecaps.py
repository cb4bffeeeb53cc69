"""The caps a kernel applies to a cell's output live, as it goes out (rpc, Jupyter).

They are in the map of every output bound (`shaping`'s docstring) with the
rest; they live in a module of their own because a oneshot run, which
answers once, never needs them: its start-up does without them.
"""

from __future__ import annotations

from pyrelune.shaping import (
    JUPYTER_MAX_DISPLAYS,
    STREAM_MAX_OUTPUT,
    TailWindow,
    split_stream,
    utf8_size,
)
from pyrelune.wire.events import Stream

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from pyrelune.wire.events import Display


class HeadBudget:
    """The first `limit` units of a sequence kept, the rest counted.

    Once one item did not fit, none after it is kept, even a small one: what
    is kept stays a head, and the gap is in one place, where a note says how
    many `dropped`.
    """

    __slots__ = ("dropped", "limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.dropped = 0

    def admit(self, cost: int) -> bool:
        """Whether an item of `cost` is kept (else it is counted as dropped)."""
        if not self.dropped and self.used + cost <= self.limit:
            self.used += cost
            return True
        self.dropped += 1
        return False


class StreamCap:
    """A cell's live stream text (rpc, Jupyter): the first `limit` bytes go out as they
    come, then only a tail is kept, let out after a marker at the next flush point."""

    def __init__(self, limit: int = STREAM_MAX_OUTPUT) -> None:
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


class DisplayBudget:
    """A Jupyter cell's displays, bounded: `limit` are shown, updates are coalesced.

    A loop that displays a million values must not become a million messages
    (a front end that falls behind loses IOPub messages, its `idle` among
    them): past the budget, displays are counted and the cell ends with a
    note saying how many were not shown. Updates of a display (a progress
    bar's `update_display`) only change it in place: each display's last
    state is sent, at most once per `interval` (the codec's stream interval).
    """

    def __init__(self, interval: float, limit: int = JUPYTER_MAX_DISPLAYS) -> None:
        self.interval = interval
        self.limit = limit
        self.flush_at: float | None = None  # when held updates are due
        self._held: dict[str, Display] = {}
        self.begin()

    def begin(self) -> None:
        """A new cell: a full budget."""
        self._shown = HeadBudget(self.limit)

    def admit(self) -> bool:
        """Whether a display_data may be sent (else it is counted as omitted)."""
        return self._shown.admit(1)

    def hold(self, update: Display, now: float) -> None:
        assert update.display_id is not None
        self._held.pop(update.display_id, None)  # moves to the end: updates keep their order
        self._held[update.display_id] = update
        if self.flush_at is None:
            self.flush_at = now + self.interval

    def due(self, now: float) -> bool:
        return self.flush_at is not None and now >= self.flush_at

    def take(self) -> list[Display]:
        """The held updates, each display's last, in the order they were last changed."""
        held = list(self._held.values())
        self._held = {}
        self.flush_at = None
        return held

    def omitted(self) -> str:
        """The note for the cell's end, if displays were left out."""
        if not self._shown.dropped:
            return ""
        from pyrelune.shaping import notes

        return notes.displays_past_limit(self._shown.dropped, self.limit)


class HeldOutput:
    """An rpc cell's messages kept while no client is served, for the next one.

    Its output is kept up to `limit` bytes (the cell's stream cap); past that
    it is dropped, and a note stands where the first dropped message stood,
    saying how many were. Everything else (`execute.done`, reset responses)
    is small and always kept.
    """

    def __init__(self, limit: int) -> None:
        self._head = HeadBudget(limit)
        self._messages: list[Any] = []
        self._gap: tuple[int, Any] | None = None  # where the first dropped one stood, and it

    def keep(self, message: Any) -> None:
        self._messages.append(message)

    def offer(self, message: Any, size: int) -> None:
        """Keep `message`, output of `size` bytes, if it fits in what is left."""
        if self._head.admit(size):
            self._messages.append(message)
        elif self._gap is None:
            self._gap = (len(self._messages), message)

    def release(self, note: Callable[[Any, str], Any]) -> list[Any]:
        """What was held, in order; `note(first dropped, text)` builds the note's message."""
        if self._gap is not None:
            from pyrelune.shaping import notes

            where, first = self._gap
            self._messages.insert(where, note(first, notes.messages_dropped(self._head.dropped)))
        return self._messages
