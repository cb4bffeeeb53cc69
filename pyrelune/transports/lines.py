"""Newline-delimited messages over a pair of file descriptors, for an asyncio kernel.

The rpc kernel over a pipe: requests arrive one per line on stdin, messages
leave one per line on a private duplicate of stdout. Reading runs on a thread
so that stdin may be anything (a pipe, a file, a terminal); a line longer than
`max_size` is reported, skipped to its end and never held in memory whole.
Writes are plain blocking writes, in order: a host that stops reading stalls
the kernel rather than making it buffer without bound.
"""

from __future__ import annotations

import asyncio
import os
import threading

from pyrelune.transports.stdio import write_all

#: What `receive()` returns for a line that was longer than `max_size`.
OVERSIZED = b"\0oversized"


class LineConnection:
    """One peer at the other end of `in_fd` and `out_fd`, for the life of the process."""

    def __init__(self, in_fd: int, out_fd: int, max_size: int) -> None:
        self._out_fd = out_fd
        self._max_size = max_size
        self._lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        thread = threading.Thread(target=self._read, args=(in_fd, loop), daemon=True,
                                  name="pyrelune-stdin")
        thread.start()

    def _read(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        pending = b""
        skipping = False  # inside a line already reported as too long
        put = self._lines.put_nowait
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                if pending.strip() and not skipping:
                    loop.call_soon_threadsafe(put, pending)
                loop.call_soon_threadsafe(put, None)
                return
            pending += chunk
            while (end := pending.find(b"\n")) >= 0:
                line, pending = pending[:end], pending[end + 1 :]
                if skipping:
                    skipping = False
                elif line.strip():
                    loop.call_soon_threadsafe(put, line if len(line) <= self._max_size
                                              else OVERSIZED)
            if len(pending) > self._max_size:
                if not skipping:
                    loop.call_soon_threadsafe(put, OVERSIZED)
                skipping, pending = True, b""

    async def receive(self) -> bytes | None:
        """The next line (without its newline), `OVERSIZED`, or None at end of input."""
        return await self._lines.get()

    def send(self, data: bytes) -> None:
        write_all(data + b"\n", self._out_fd)

    def close(self) -> None:
        """Nothing to do: the peer is gone when stdin ends."""
