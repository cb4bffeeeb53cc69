"""Newline-delimited messages over a pair of file descriptors, for an event-driven kernel.

The rpc kernel over a pipe: requests arrive one per line on stdin, messages
leave one per line on a private duplicate of stdout. A pipe or socket is read on
the event loop (a `loop.reactor.Reactor`, or asyncio's: only the methods
they share are used); anything else (a file, a terminal) on a thread. A line longer
than `max_size` is reported, skipped to its end and never held in memory whole.
Writes are plain blocking writes, in order, one per turn of the event loop:
a host that stops reading stalls the kernel rather than making it buffer
without bound.
"""

from __future__ import annotations

import os
import stat

from pyrelune import spin
from pyrelune.wire import LineBuffer, write_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from pyrelune.loop.reactor import Loop

#: Requests answered in a row by one call of the reader (see `_readable`).
_RUN = 16
#: What the handler gets for a line that was longer than `max_size`.
OVERSIZED = b"\0oversized"


class LineSplitter:
    """Bytes in, complete lines out; a line over `max_size` becomes `OVERSIZED`, never kept."""

    def __init__(self, max_size: int) -> None:
        self._max_size = max_size
        self._buffer = LineBuffer()
        self._skipping = False  # inside a line already reported as too long

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines `chunk` completes; an empty chunk (end of input) ends the last one."""
        if not chunk:
            last = self._buffer.rest()
            return [last] if last.strip() and not self._skipping else []
        self._buffer.feed(chunk)
        lines = []
        while (line := self._buffer.pop()) is not None:
            if self._skipping:
                self._skipping = False
            elif line.strip():
                lines.append(line if len(line) <= self._max_size else OVERSIZED)
        if self._buffer.held > self._max_size:
            if not self._skipping:
                lines.append(OVERSIZED)
            self._skipping, self._buffer = True, LineBuffer()  # what it held is dropped
        return lines


class LineConnection:
    """One peer at the other end of `in_fd` and `out_fd`, for the life of the process."""

    def __init__(self, loop: Loop, in_fd: int, out_fd: int, max_size: int,
                 on_lost: Callable[[OSError | None], None] | None = None) -> None:
        """`on_lost(error)` once nothing can reach the host any more: None when the host
        closed its end (found by a write, or for a pipe at once: a silent cell would never
        write to find out), else the error a write to it failed with (a full disk)."""
        self._in_fd = in_fd
        self._out_fd = out_fd
        self._on_lost = on_lost
        self._lost = False
        self._splitter = LineSplitter(max_size)
        self._outgoing: list[bytes] = []
        self._flush_due = False  # a `_flush` is scheduled
        self._loop = loop
        self._handler: Callable[[bytes], bool] | None = None
        self._on_end: Callable[[bool], None] | None = None
        self._unhanded: list[bytes] = []  # lines read, not yet given to the handler: last first
        self._at_end = False  # the end of input was read
        self._ended = False  # `on_end` was called: no line is handed over any more
        mode = os.fstat(in_fd).st_mode
        self._on_loop = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
        if self._on_loop:
            # The common case (a host's pipe): read on the loop itself, no thread hop.
            os.set_blocking(in_fd, False)
            self._loop.add_reader(in_fd, self._readable)
        else:  # a file or a terminal: the loop cannot wait on it
            import threading  # only then: most hosts give a pipe

            threading.Thread(target=self._read_blocking, daemon=True,
                             name="pyrelune-stdin").start()
        if stat.S_ISFIFO(os.fstat(out_fd).st_mode):
            # A pipe's writing end is never readable: the loop wakes for it only
            # with POLLERR, when the host has closed its end.
            self._loop.add_reader(out_fd, self._lose, None)

    def _readable(self) -> None:
        """Read and answer requests while the host keeps sending them at once (see `spin`).

        At most `_RUN` in a row: the loop's other work (the worker's output,
        timers) must not wait behind a host that never pauses.
        """
        for _ in range(_RUN):
            try:
                chunk = os.read(self._in_fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            self._deliver(chunk)
            if not chunk:
                self._loop.remove_reader(self._in_fd)
                return
            # What was answered at once (a short cell's whole run) goes out now,
            # not a turn of the loop later.
            if not self._write_out() or not spin.poll([self._in_fd]):
                return

    def _read_blocking(self) -> None:
        while True:
            try:
                chunk = os.read(self._in_fd, 1 << 16)
            except OSError:
                chunk = b""
            self._loop.call_soon_threadsafe(self._deliver, chunk)
            if not chunk:
                return

    def _deliver(self, chunk: bytes) -> None:
        self._unhanded[:0] = reversed(self._splitter.feed(chunk))
        self._at_end = self._at_end or not chunk
        self._hand_over()

    def _hand_over(self) -> None:
        """Lines to the handler, in order; at the end of input, once all are handed over, stop.

        The handler's own failure is not caught: it is the loop's to report.
        """
        while self._handler is not None and self._unhanded and not self._ended:
            if not self._handler(self._unhanded.pop()):
                self._end(False)
        if self._at_end and self._handler is not None and not self._ended:
            self._end(True)

    def _end(self, at_end: bool) -> None:
        self._ended = True
        if self._on_end is not None:
            self._on_end(at_end)

    def deliver(self, handler: Callable[[bytes], bool], on_end: Callable[[bool], None]) -> None:
        """Hand each line to `handler`, then call `on_end`: True at the end of input, False
        once `handler` refused a line (none is handed over after it).

        Lines go to `handler` in the reader's own callback, not through a
        queue to a waiting coroutine: that costs a turn of the loop a request.
        A line longer than `max_size` arrives as `OVERSIZED`.
        """
        self._handler = handler
        self._on_end = on_end
        self._hand_over()

    def send(self, data: bytes) -> None:
        """Queue one message; what one turn of the loop sends leaves in one write.

        One `_flush` is scheduled at a time: the reader writes out what it
        answered at once (see `_readable`), and a host running cells back
        to back must not leave a no-op callback behind for each of them.
        """
        if not self._flush_due:
            self._flush_due = True
            self._loop.call_soon(self._flush)
        self._outgoing.append(data)

    def _flush(self) -> None:
        self._flush_due = False
        # After a cell's last message, a host running cells back to back
        # sends the next request at once: read it without sleeping first.
        reading = self._on_loop and not self._at_end
        if self._write_out() and reading and spin.poll([self._in_fd]):
            self._readable()

    def _write_out(self) -> bool:
        """Write what is queued, in one write; False if nothing was, or the host is gone."""
        if not self._outgoing:
            return False
        data = b"\n".join(self._outgoing) + b"\n"
        self._outgoing = []
        if self._lost:
            return False
        try:
            write_all(data, self._out_fd)
        except BrokenPipeError:
            self._lose(None)
            return False
        except OSError as exc:
            self._lose(exc)
            return False
        return True

    def _lose(self, error: OSError | None) -> None:
        """Nothing reaches the host any more: said once, and nothing else is written."""
        if not self._lost:
            self._lost = True
            self._outgoing = []
            self._loop.remove_reader(self._out_fd)
            if self._on_lost is not None:
                self._on_lost(error)

    def close(self) -> None:
        """Nothing to do: the peer is gone when stdin ends."""
