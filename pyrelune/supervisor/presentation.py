"""Stream text as a terminal would show it: `\\r` and `\\b` applied.

A progress bar (tqdm, pip, curl) rewrites its line with `\\r` thousands of
times; a host that shows stream text verbatim would show every version, and
the output cap would spend its bytes on them. Applied here, on the way from
the worker to any protocol and before the cap, the line ends as its last
version.

Streaming, in bounded memory: finished lines pass on at once; only the
current line is held back, since it may still be rewritten. A line longer
than `MAX_LINE` is passed on as a terminal wraps it, after which `\\r`
returns to the start of its last row. A display (or `flush`) passes the
held-back lines on first, so text and displays keep their order.
"""

from __future__ import annotations

from pyrelune.wire.events import Display, Stream

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: The widest row held back: a terminal this wide wraps longer lines.
MAX_LINE = 1 << 16


class Presenter:
    """Applies `\\r` and `\\b` to each stream, then hands items on to `sink`."""

    def __init__(self, sink: Callable[[Stream | Display], None], interleave: bool = False) -> None:
        """`interleave`: for a host that shows both streams in one place, as a
        terminal does; a line held back on one stream is passed on when text
        arrives on the other, so the two keep their order (a progress bar
        interrupted by a print then goes on in a new line, as in a terminal).
        """
        self._sink = sink
        self._lines: dict[str, Line] = {}
        self._interleave = interleave

    def add(self, item: Stream | Display) -> None:
        if isinstance(item, Stream):
            if self._interleave:
                self._flush_others(item.name)
            line = self._lines.setdefault(item.name, Line())
            for text in line.feed(item.text):
                if text:
                    self._sink(Stream(item.name, text))
        else:
            self.flush()
            self._sink(item)

    def flush(self) -> None:
        """Pass on the lines held back (the end of the cell, or a display)."""
        self._flush_others("")

    def _flush_others(self, stream: str) -> None:
        for name, line in self._lines.items():
            if name != stream and (text := line.take()):
                self._sink(Stream(name, text))


class Line:
    """One stream's current line and the cursor in it."""

    __slots__ = ("col", "parts", "size")

    def __init__(self) -> None:
        self.parts: list[str] = []  # appending is the common case: join only to overwrite
        self.size = 0
        self.col = 0

    def feed(self, text: str) -> list[str]:
        """Apply `text`; return what is settled (finished lines, wrapped rows), in order.

        Pieces rather than one string: a flood of plain lines is passed on
        with at most one copy of each chunk.
        """
        done: list[str] = []
        if "\r" not in text and "\b" not in text:  # the fast path: plain lines
            last = text.rfind("\n")
            if last < 0:
                self._write(text, done)
                return done
            first = text.find("\n")
            if self.parts:  # the line held back ends at the first newline
                self._write(text[:first], done)
                done.append(self.take())
            else:
                first = 0
            done.append(text if (first, last) == (0, len(text) - 1) else text[first : last + 1])
            self._write(text[last + 1 :], done)
            return done
        for index, piece in enumerate(text.split("\n")):
            if index:
                done.append(self.take() + "\n")
            for start, row in enumerate(piece.split("\r")):
                if start:
                    self.col = 0
                for back, run in enumerate(row.split("\b")):
                    if back:
                        self.col = max(0, self.col - 1)
                    self._write(run, done)
        return done

    def take(self) -> str:
        """The line as it stands; the next text starts a new one."""
        text = "".join(self.parts)
        self.parts, self.size, self.col = [], 0, 0
        return text

    def _write(self, text: str, done: list[str]) -> None:
        """Put `text` (no control characters) at the cursor, overwriting what is there."""
        if not text:
            return
        if self.col == self.size:
            self.parts.append(text)
            self.size += len(text)
            self.col = self.size
            if self.size >= MAX_LINE:
                done.append(self.take())
            return
        line = "".join(self.parts)
        line = line[: self.col] + text + line[self.col + len(text) :]
        self.parts, self.size = [line], len(line)
        self.col += len(text)
