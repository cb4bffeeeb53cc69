"""Output shaping, and every cap on the output a cell sends to its host.

Every mode's output passes through this package between the worker and its
codec: `terminal` applies `\\r`, `\\b` and takes ANSI sequences out,
`streaming` coalesces live text, `textform` (with `htmltext`) gives a rich
output's text, `notes` words what was left out (loaded only when something
was). This module holds the caps every mode needs (so they are the package
itself rather than one more module to import on the oneshot path) and the
map of every bound; the caps a kernel applies live, as output goes out,
are `livecaps`'s.

Every output bound in pyrelune, by where it applies:

- In the worker, before an event leaves it: `worker/bounds.py` cuts a
  display or an error to the mode's cap (`wire.events.message_limit`), and
  `worker/introspect.py`'s `MAX_TEXT` bounds an answer's text. They stay on
  the worker's side of the process boundary.
- A cell's whole output, answered once (Vix Note's response, the lines
  kernel's result line; rpc's output that a later event may replace):
  `OutputBudget`, head and tail within the cap, the rest counted
  (`Omitted`); its tail is a `TailWindow`. Defaults: `VIX_NOTE_MAX_OUTPUT`,
  `LINES_MAX_OUTPUT` (also the cap a kernel's events are cut to unless its
  mode says otherwise). Vix Note's error fields have their own bounds
  (`protocols/vixnote.py`: `MAX_MESSAGE`, `MAX_CONTEXT`, `MAX_ECHO`).
- Live stream text (rpc, Jupyter): `livecaps.StreamCap`, the first bytes
  sent as they come, then a `TailWindow` over the rest. Default:
  `STREAM_MAX_OUTPUT`.
- Jupyter's displays: `livecaps.DisplayBudget`, at most
  `JUPYTER_MAX_DISPLAYS` a cell; the largest one shown whole is
  `JUPYTER_MAX_DISPLAY`.
- rpc's output held for a client not yet connected: `livecaps.HeldOutput`,
  within the cell's stream cap.
- `PYRELUNE_MAX_OUTPUT` (`settings.max_output`) replaces a mode's default.

Sizes are UTF-8 bytes, the unit a host's limit is written in. A head kept
within a budget and what is dropped past it counted is one idea,
`livecaps.HeadBudget` (Jupyter's displays by count, rpc's held output by
bytes); a window over the most recent bytes is the other, `TailWindow`.

`OutputBudget`: everything a cell produces (stream text and displays) is one
sequence. The first half of the budget keeps its beginning, the second half
is a window over its end; what falls between is counted, per stream, and
said in a marker. For a host that cannot update an output it was sent, the
cell's output is kept as a list that display updates and `clear_output`
change (`apply`): the host gets only the last state.
"""

from __future__ import annotations

from pyrelune.wire.events import Clear, Display, Stream

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TypeAlias

    Item: TypeAlias = Stream | Display

#: A Vix Note cell's output in its one response: the page keeps every output twice
#: in each response, so a capped cell costs the page twice this on every click.
VIX_NOTE_MAX_OUTPUT = 128 * 1024
#: A lines-kernel cell's output kept in its one result line (head and tail): a line
#: of many megabytes freezes a notebook's frontend long before it is useful. Also
#: the cap a kernel's events are cut to, unless its mode says otherwise.
LINES_MAX_OUTPUT = 8 << 20
#: Bytes of stream text an rpc or Jupyter cell sends before only the most recent are kept.
STREAM_MAX_OUTPUT = 1 << 20
#: The largest display a Jupyter cell may show whole (a big table's HTML, a plotly
#: page, an image): a Jupyter page shows what ipykernel sends.
JUPYTER_MAX_DISPLAY = 16 << 20
#: Displays a Jupyter cell may show (display_data): past them, the rest are counted.
JUPYTER_MAX_DISPLAYS = 2000


class Omitted:
    """The marker standing where output was dropped: bytes per stream, displays."""

    __slots__ = ("bytes", "displays")

    def __init__(self) -> None:
        self.bytes: dict[str, int] = {}
        self.displays = 0

    def __bool__(self) -> bool:
        return bool(self.displays or any(self.bytes.values()))

    def text(self, stream: str) -> str | None:
        """The line to put into `stream` where its bytes were dropped, if any were."""
        count = self.bytes.get(stream, 0)
        if not count:
            return None
        from pyrelune.shaping import notes

        return notes.stream_bytes(count, stream)

    def displays_text(self) -> str | None:
        """The line to put where displays were dropped, if any were."""
        if not self.displays:
            return None
        from pyrelune.shaping import notes

        return notes.displays(self.displays)


def display_size(display: Display) -> int:
    """What a display costs against the budget: the size of its largest value."""
    return max((utf8_size(str(v)) for v in display.data.values()), default=0)


class TailWindow:
    """The most recent `limit` bytes of a sequence of items, and what fell out of it.

    The tail half of a response's budget, and the window a live stream keeps
    once its cap is reached.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: list[Item] = []  # short: a few chunks
        self.size = 0
        self.omitted = Omitted()

    def add(self, item: Item) -> None:
        self.items.append(item)
        self.size += _size(item)
        while self.size > self.limit and self.items:
            first = self.items[0]
            excess = self.size - self.limit
            size = _size(first)
            if isinstance(first, Stream) and size > excess:
                self.items[0] = Stream(first.name, _drop_front(first.text, excess))
                cut = size - _size(self.items[0])
            else:
                del self.items[0]
                cut = size
            self._count(first, cut)
            self.size -= cut

    def drop_all(self) -> None:
        """Count everything held as left out: what comes next does not follow it."""
        for item in self.items:
            self._count(item, _size(item))
        self.items.clear()
        self.size = 0

    def _count(self, item: Item, cut: int) -> None:
        """`cut` bytes of `item` left out (a display only ever leaves whole)."""
        if isinstance(item, Stream):
            self.omitted.bytes[item.name] = self.omitted.bytes.get(item.name, 0) + cut
        elif isinstance(item, Display):
            self.omitted.displays += 1


def split_stream(stream: Stream, room: int) -> tuple[Stream, Stream]:
    """`stream` as the part that fits in `room` bytes and the rest, both of its cell."""
    first, rest = _split(stream.text, room)
    return Stream(stream.name, first, stream.origin), Stream(stream.name, rest, stream.origin)


class OutputBudget:
    """Head and tail of a cell's output, within `limit` bytes in all."""

    def __init__(self, limit: int) -> None:
        self._reset(limit)

    def _reset(self, limit: int) -> None:
        self.limit = limit
        self._clear_next = False  # clear_output(wait=True): clear when the next output comes
        self.head: list[Item] = []
        self._head_left = limit // 2
        self._tail = TailWindow(limit - limit // 2)
        self._head_closed = False  # once something went to the tail, the head takes no more

    @property
    def omitted(self) -> Omitted:
        return self._tail.omitted

    def add(self, item: Item) -> None:
        size = _size(item)
        if not self._head_closed and size <= self._head_left:
            self.head.append(item)
            self._head_left -= size
            return
        if not self._head_closed and isinstance(item, Stream) and self._head_left > 0:
            first, item = split_stream(item, self._head_left)
            self.head.append(first)
            self._head_left -= _size(first)  # what a split character leaves is unused
        self._head_closed = True
        self._tail.add(item)

    def apply(self, item: Item | Clear) -> None:
        """Add `item` as the cell showed it: an update replaces, a clear clears.

        An update of an id no kept output has (one an earlier cell showed, or
        one that fell out of the tail) is shown as a new output.
        """
        if isinstance(item, Clear):
            if item.wait:
                self._clear_next = True
            else:
                self._reset(self.limit)
            return
        if isinstance(item, Display) and item.update and self._replace(item):
            return
        if self._clear_next:
            self._reset(self.limit)
        self.add(item)

    def _replace(self, display: Display) -> bool:
        """Every kept output shown under `display`'s id becomes `display`; False if none is."""
        found = False
        for items in (self.head, self._tail.items):
            for index, item in enumerate(items):
                if isinstance(item, Display) and item.display_id == display.display_id:
                    change = display_size(display) - display_size(item)
                    if items is self.head:
                        self._head_left -= change
                    else:
                        self._tail.size += change
                    items[index] = display
                    found = True
        return found

    @property
    def kept(self) -> int:
        """Bytes of output held right now, head and tail together."""
        return self.limit // 2 - self._head_left + self._tail.size

    def room(self) -> int:
        """The size of the largest item `add` would keep right now."""
        tail = self._tail.limit
        return tail if self._head_closed else max(self._head_left, tail)

    def shrink(self, limit: int) -> None:
        """Cut what is kept down to `limit` bytes (when encoding made it bigger)."""
        head, tail, before = self.head, self._tail.items, self.omitted
        self._reset(limit)
        for item in head:
            self.add(item)
        if before:
            # What of the old head spilled into the new tail is followed by the old
            # gap: kept, it would run on into the old tail as if nothing lay between.
            self._tail.drop_all()
        # The tail follows a gap (or at least the end of the head): it must not
        # be pulled into the head, or the head would stop being a prefix.
        self._head_closed = self._head_closed or bool(tail)
        for item in tail:
            self.add(item)
        for name, count in before.bytes.items():
            self.omitted.bytes[name] = self.omitted.bytes.get(name, 0) + count
        self.omitted.displays += before.displays

    def items(self) -> Iterator[Item | Omitted]:
        """What was kept, in order, with the marker between head and tail."""
        yield from self.head
        if self.omitted:
            yield self.omitted
        yield from self._tail.items


def clip(text: str, nbytes: int, sep: str = "\n") -> str:
    """`text` within about `nbytes` UTF-8 bytes: head and tail kept, a marker between.

    `sep` surrounds the marker: a space keeps a one-line message one line.
    """
    size = utf8_size(text)
    if size <= nbytes:
        return text
    head, _ = _split(text, nbytes // 2)
    tail = _drop_front(text, size - nbytes // 2)
    from pyrelune.shaping import notes

    return f"{head}{notes.clipped(size - utf8_size(head) - utf8_size(tail), sep)}{tail}"


def keep_tail(text: str, nbytes: int) -> str:
    """The end of `text` within `nbytes` UTF-8 bytes, never cut inside a character."""
    size = utf8_size(text)
    return text if size <= nbytes else _drop_front(text, size - nbytes)


def utf8_size(text: str) -> int:
    """Bytes of `text` in UTF-8; a lone surrogate counts as the 3 bytes it will become."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _size(item: Item) -> int:
    return utf8_size(item.text) if isinstance(item, Stream) else display_size(item)


def _split(text: str, nbytes: int) -> tuple[str, str]:
    """`text` cut after at most `nbytes` UTF-8 bytes, never inside a character."""
    data = text.encode("utf-8", "surrogatepass")
    cut = _boundary(data, nbytes, step=-1)
    head = data[:cut].decode("utf-8", "surrogatepass")
    return head, text[len(head) :]


def _drop_front(text: str, nbytes: int) -> str:
    """`text` without its first `nbytes` UTF-8 bytes (and the rest of a cut character)."""
    data = text.encode("utf-8", "surrogatepass")
    return data[_boundary(data, nbytes, step=1) :].decode("utf-8", "surrogatepass")


def _boundary(data: bytes, index: int, step: int) -> int:
    """The nearest character start at or beyond `index`, moving by `step`."""
    index = max(0, min(index, len(data)))
    while 0 < index < len(data) and 0x80 <= data[index] < 0xC0:
        index += step
    return index
