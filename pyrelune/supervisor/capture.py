"""The session's end of the capture pipes (and of the rpc worker's stdout ring): bytes become text.

Decoding is incremental, so a multi-byte UTF-8 character split across two
reads stays whole; invalid bytes become U+FFFD instead of failing.
"""

from __future__ import annotations

import codecs
import os

from pyrelune.wire.events import Stream

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pyrelune.wire.ring import OutputRing

_CHUNK = 1 << 16
#: One call returns at most this much, so a flood cannot pile up in memory.
_MAX_READ = 16 * _CHUNK


class CapturedStream:
    """One capture pipe (`stdout` or `stderr`), read without ever blocking."""

    def __init__(self, name: str, fd: int) -> None:
        self.name = name
        self.fd = fd
        self.closed = False
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        os.set_blocking(fd, False)

    def fileno(self) -> int:
        return self.fd

    def read_available(self) -> Stream | None:
        """What the pipe holds right now (up to 1 MiB), or None when it holds nothing."""
        parts: list[str] = []
        for _ in range(_MAX_READ // _CHUNK):
            if self.closed:
                break
            try:
                data = os.read(self.fd, _CHUNK)
            except BlockingIOError:
                break
            if not data:
                self.close()
                parts.append(self._decoder.decode(b"", final=True))
                break
            parts.append(self._decoder.decode(data))
        text = "".join(parts)
        return Stream(self.name, text) if text else None

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self.fd)


class CapturedRing:
    """The rpc worker's stdout ring (see `wire.ring`), read as `stdout` text."""

    name = "stdout"

    def __init__(self, ring: OutputRing) -> None:
        self.ring = ring
        self.fd = ring.doorbell_r
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def read(self, upto: int) -> Stream | None:
        """What the worker published up to `upto` (`ring.written()`, read before the pipes)."""
        text = self._decoder.decode(self.ring.take(upto))
        return Stream(self.name, text) if text else None

    def restart(self, always: bool) -> int | None:
        """A fresh ring if it is damaged, or `always` (see `OutputRing.restart`)."""
        lap = self.ring.restart(always)
        if lap is not None:
            self._decoder.reset()  # a character cut by the damage is not finished by the next
        return lap
