"""Stream text as a terminal would show it: `\\r` and `\\b` applied, colours taken out.

A progress bar (tqdm, pip, curl) rewrites its line with `\\r` thousands of
times; a host that shows stream text verbatim would show every version, and
the output cap would spend its bytes on them. Applied here, on the way from
the worker to any protocol and before the cap, the line ends as its last
version.

Streaming, in bounded memory: finished lines pass on at once; only the
current line is held back, since it may still be rewritten. A line longer
than `MAX_LINE` is passed on as a terminal wraps it, after which `\\r`
returns to the start of its last row. A display (or `flush`) passes the
held-back lines on first, so text and displays keep their order. Each
cell's text is its own (`Stream.origin`: a thread of an earlier cell's):
lines of two cells are never joined, nor is one's `\r` applied to the other's.

For a host that shows text raw (Vix Note), ANSI control sequences go first:
coloured logs, `rich`, `pytest` and `tqdm` write colours (`ESC[31m`), cursor
moves, window titles and hyperlinks (OSC), which would show as `␛[31m`. The
text stays; CSI, the string sequences (OSC, DCS, SOS, PM, APC, ended by BEL
or ST) and two-character escapes go, before `\\r` and `\\b` are applied so
that columns count only text. A hand-written scanner, not a regular
expression: the oneshot path never loads `re`, and text without ESC costs
one `in` test. A sequence cut between two reads waits for its end.
"""

from __future__ import annotations

from pyrelune.wire.events import Clear, Display, Stream

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    #: A stream of one cell: its name, and the cell's origin (None: the running cell).
    Key: TypeAlias = tuple[str, str | None]

#: The widest row held back: a terminal this wide wraps longer lines.
MAX_LINE = 1 << 16


class Presenter:
    """Applies `\\r` and `\\b` to each stream, then hands items on to `sink`."""

    def __init__(
        self, sink: Callable[[Stream | Display | Clear], None], interleave: bool = False,
        plain: bool = False,
    ) -> None:
        """`interleave`: for a host that shows both streams in one place, as a
        terminal does; a line held back on one stream is passed on when text
        arrives on the other, so the two keep their order (a progress bar
        interrupted by a print then goes on in a new line, as in a terminal).
        `plain`: for a host that shows text raw; ANSI sequences are taken out.
        """
        self._sink = sink
        self._lines: dict[Key, Line] = {}
        self._interleave = interleave
        self._colours = AnsiStripper() if plain else None

    def add(self, item: Stream | Display | Clear) -> None:
        if isinstance(item, Stream):
            key = (item.name, item.origin)
            if self._interleave:
                self._flush_others(key, reopen=True)
            line = self._lines.setdefault(key, Line())
            text = item.text
            if self._colours is not None:
                text = self._colours.feed(key, text)
            for settled in line.feed(text):
                if settled:
                    self._sink(Stream(item.name, settled, item.origin))
        else:
            self._flush_others(None)  # `flush()`: held-back lines go first
            self._sink(item)

    def flush(self) -> None:
        """Pass on the lines held back (the end of the cell, or a display)."""
        self._flush_others(None)

    def close(self) -> None:
        """The end: also what is held of an unfinished sequence, as it was written."""
        if self._colours is not None:
            for key, text in self._colours.flush():
                for done in self._lines.setdefault(key, Line()).feed(text):
                    if done:
                        self._sink(Stream(key[0], done, key[1]))
        self.flush()

    def _flush_others(self, stream: Key | None, reopen: bool = False) -> None:
        """Pass on the lines held back but `stream`'s; with `reopen`, they may go on.

        Text on the other stream comes on the same screen, after which a line
        may still be rewritten. After a display (or at the end) it is another
        output, where a `\r` means nothing.
        """
        for key, line in self._lines.items():
            if key == stream:
                continue
            if text := line.take():
                self._sink(Stream(key[0], text, key[1]))
                line.passed_on = reopen
            elif not reopen:
                line.passed_on = False


class Line:
    """One stream's current line and the cursor in it.

    A line passed on unfinished because the other stream wrote (a progress
    bar on stderr, a print on stdout) is the host's now: a `\r` that
    rewrites it is passed on too, before the new text, rather than being
    applied to nothing here (which would join every state of the bar on one
    line).
    """

    __slots__ = ("col", "lead", "parts", "passed_on", "size")

    def __init__(self) -> None:
        self.parts: list[str] = []  # appending is the common case: join only to overwrite
        self.size = 0
        self.col = 0
        self.passed_on = False  # the start of this line was passed on unfinished
        self.lead = ""  # "\r" when the line rewrites one passed on (see the class docstring)

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
            self.passed_on = False
            if self.parts or self.lead:  # the line held back ends at the first newline
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
                self.passed_on = False
            for start, row in enumerate(piece.split("\r")):
                if start and self.passed_on:  # the host's line is rewritten: it gets the \r
                    if held := self.take():
                        done.append(held)
                    self.lead, self.passed_on = "\r", False
                elif start:
                    self.col = 0
                for back, run in enumerate(row.split("\b")):
                    if back:
                        self.col = max(0, self.col - 1)
                    self._write(run, done)
        return done

    def take(self) -> str:
        """The line as it stands; the next text starts a new one."""
        text = self.lead + "".join(self.parts)
        self.parts, self.size, self.col, self.lead = [], 0, 0, ""
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
        if self.col == 0 and ESC in line:  # rewritten from its start (`\r`): sequences take
            line = strip_ansi(line)  # no columns, and `ESC[2K` must not lose its ESC to the text
        line = line[: self.col] + text + line[self.col + len(text) :]
        self.parts, self.size = [line], len(line)
        self.col += len(text)


ESC = "\x1b"
#: Longer than this and still unfinished, it was never a sequence: passed on as text.
MAX_SEQUENCE = 4096
_STRINGS = "]PX^_"  # OSC, DCS, SOS, PM, APC


class AnsiStripper:
    """Per stream, the text of each piece without its sequences."""

    def __init__(self) -> None:
        self._held: dict[Key, str] = {}  # the start of a sequence cut at a piece's end

    def feed(self, stream: Key, text: str) -> str:
        held = self._held.pop(stream, "")
        if not held and ESC not in text:
            return text
        clean, rest = _strip(held + text)
        if len(rest) > MAX_SEQUENCE:
            return clean + rest
        if rest:
            self._held[stream] = rest
        return clean

    def flush(self) -> list[tuple[Key, str]]:
        """What is still held at the end: unfinished, so passed on as it was written."""
        held, self._held = self._held, {}
        return list(held.items())


def strip_ansi(text: str) -> str:
    """`text` without its sequences; an unfinished one at its end is kept as text."""
    if ESC not in text:
        return text
    clean, rest = _strip(text)
    return clean + rest


def _strip(text: str) -> tuple[str, str]:
    """`text` without its complete sequences, and the unfinished one it ends with."""
    kept: list[str] = []
    start = 0
    at = text.find(ESC)
    while at >= 0:
        kept.append(text[start:at])
        end = _end(text, at)
        if end < 0:
            return "".join(kept), text[at:]
        start = end
        at = text.find(ESC, start)
    kept.append(text[start:])
    return "".join(kept), ""


def _end(text: str, at: int) -> int:
    """Where the sequence that starts at `at` (an ESC) ends; -1 if `text` ends first.

    A malformed one ends before the character that breaks it, which stays text.
    """
    size = len(text)
    i = at + 1
    if i >= size:
        return -1
    kind = text[i]
    if kind == "[":  # CSI: parameter and intermediate bytes, then one final byte
        i += 1
        while i < size:
            code = ord(text[i])
            if 0x40 <= code <= 0x7E:
                return i + 1
            if not 0x20 <= code <= 0x3F:
                return i
            i += 1
        return -1
    if kind in _STRINGS:
        st = text.find(ESC + "\\", i + 1)
        bel = text.find("\x07", i + 1) if kind == "]" else -1
        if bel >= 0 and (st < 0 or bel < st):
            return bel + 1
        if st >= 0:
            return st + 2
        return -1
    while i < size and 0x20 <= ord(text[i]) <= 0x2F:  # nF: intermediates, then a final byte
        i += 1
    if i >= size:
        return -1
    return i + 1 if 0x30 <= ord(text[i]) <= 0x7E else i
