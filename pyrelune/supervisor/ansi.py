"""ANSI control sequences taken out of text, for a host that shows text raw.

Coloured logs, `rich`, `pytest` and `tqdm` write colours (`ESC[31m`), cursor
moves, window titles and hyperlinks (OSC); Vix Note would show each as
`␛[31m`. The text stays, the sequences go: CSI, the string sequences (OSC,
DCS, SOS, PM, APC, ended by BEL or ST) and two-character escapes. Taken out
before `\\r` and `\\b` are applied, so that cursor columns count only text.

Hand-written rather than a regular expression: the oneshot path never loads
`re`, and text without ESC costs one `in` test. Streams arrive in pieces, so
a sequence cut between two reads waits for its end (`AnsiStripper`).
"""

from __future__ import annotations

ESC = "\x1b"
#: Longer than this and still unfinished, it was never a sequence: passed on as text.
MAX_SEQUENCE = 4096
_STRINGS = "]PX^_"  # OSC, DCS, SOS, PM, APC


class AnsiStripper:
    """Per stream, the text of each piece without its sequences."""

    def __init__(self) -> None:
        self._held: dict[str, str] = {}  # the start of a sequence cut at a piece's end

    def feed(self, stream: str, text: str) -> str:
        held = self._held.pop(stream, "")
        if not held and ESC not in text:
            return text
        clean, rest = _strip(held + text)
        if len(rest) > MAX_SEQUENCE:
            return clean + rest
        if rest:
            self._held[stream] = rest
        return clean

    def flush(self) -> list[tuple[str, str]]:
        """What is still held at the end: unfinished, so passed on as it was written."""
        held, self._held = self._held, {}
        return list(held.items())


def strip(text: str) -> str:
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
