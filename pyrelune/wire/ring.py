"""The rpc kernel's stdout in shared memory: what the worker prints, the session reads.

A host that shows output live needs each printed line to leave the worker
as it is printed, even when the cell then blocks in C code that holds the
GIL (no thread of the worker's could flush it then). A write to a pipe per
line costs a system call and a wake-up of the session per line; a copy into
memory the session can read costs neither. So the worker's sys.stdout is
line-buffered into this ring (anonymous shared memory, made before the
fork): each line is copied in and published at once, under a lock (one
line, one copy: threads' prints stay whole), and the session reads it on
its own schedule, also after the worker died (nothing published is lost).

The session is woken only when it asks to be (`armed`): once per reading
round, not once per line. A ring the session does not empty (a slow host)
makes the cell wait, as a pipe would. Bytes written around sys.stdout (fd 1
itself: `os.write`, subprocesses, C code) still go through the capture
pipe; the worker hands the ring over (waits until the session has read it)
before any of those, and the session reads the pipes before the ring, so
both keep the order they were written in (see `worker.kernelloop`).

Counters are totals since the start (8-byte words, each written by one side
only): `written` by the worker after its copy, `read` by the session.
"""

from __future__ import annotations

import _thread
import io
import mmap
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeAlias

    Buffer: TypeAlias = bytes | bytearray | memoryview

#: Bytes the ring holds: a cell printing faster than the session reads waits past this.
SIZE = 1 << 20
_HEADER = 64
_WRITTEN, _READ, _ARMED = 0, 1, 2
#: The runtime's own os.write (a cell's may be wrapped, see `flushfirst`).
_write_fd = os.write


class OutputRing:
    """The shared memory and both sides' ends of it."""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._memory = mmap.mmap(-1, _HEADER + size)
        self._words = memoryview(self._memory)[:_HEADER].cast("Q")
        self._data = memoryview(self._memory)[_HEADER:]
        self._words[_ARMED] = 1
        self._fence = _thread.allocate_lock()  # its atomic operations order memory
        # The wake-up pipe: the worker writes it, the session reads it (and
        # rings it itself when it may have missed a write, see `take`).
        self.doorbell_r, self.doorbell = os.pipe()
        for fd in (self.doorbell_r, self.doorbell):
            os.set_blocking(fd, False)
        self._lock = _thread.RLock()  # the worker's: one write at a time
        self._inside = False
        self._forked = False

    # the session's side -------------------------------------------------------

    def written(self) -> int:
        """The worker's total, read before the pipes (see `take`)."""
        return self._words[_WRITTEN]

    def take(self, upto: int) -> bytes:
        """What the worker published up to `upto` (a `written()` read before the pipes).

        Then asks to be woken by the next write: once a round, not once a line.
        """
        words = self._words
        start = int(words[_READ])
        data = self._copy(start, upto) if upto > start else b""
        words[_READ] = upto
        words[_ARMED] = 1
        with self._fence:
            pass
        if words[_WRITTEN] != upto and words[_ARMED]:
            self._ring()  # written while we armed: the worker may not have seen it
        return data

    def hear(self) -> None:
        """Empty the wake-up pipe (it is readable)."""
        try:
            while os.read(self.doorbell_r, 512):
                pass
        except BlockingIOError:
            pass

    def _copy(self, start: int, end: int) -> bytes:
        size, data = self.size, self._data
        at, stop = start % size, end % size
        if at < stop or stop == 0:
            return bytes(data[at:stop or size])
        return bytes(data[at:]) + bytes(data[:stop])

    def close(self) -> None:
        for fd in (self.doorbell_r, self.doorbell):
            if fd >= 0:
                os.close(fd)
        self.doorbell_r = self.doorbell = -1
        self._words.release()
        self._data.release()
        self._memory.close()

    # the worker's side --------------------------------------------------------

    def worker_side(self) -> None:
        """In the worker, from the fork on (the session's end of the wake-up pipe was closed)."""
        self.doorbell_r = -1
        os.register_at_fork(after_in_child=self._in_child)

    def _in_child(self) -> None:
        """A process the cell forked writes to fd 1 itself: the ring has one writer."""
        self._forked = True
        self._lock = _thread.RLock()

    def unread(self) -> bool:
        """Whether the session has not read everything published yet (never, in a forked child)."""
        if self._forked:
            return False
        words = self._words
        return words[_READ] != words[_WRITTEN]

    def wait_read(self) -> None:
        """Until the session has read everything published (for threads that cannot ask it)."""
        pause = 0.0001
        while self.unread():
            self._ring()
            time.sleep(pause)
            pause = min(pause * 2, 0.01)

    def write(self, data: Buffer) -> int:
        """Copy `data` in and publish it; waits while the ring is full.

        On every printed line's path: a line that fits goes in one slice
        assignment, without a loop or a call.
        """
        if self._forked:
            return _write_all(1, data)
        lock = self._lock
        lock.acquire()
        try:
            if self._inside:  # a signal handler's print, inside this very write
                raise RuntimeError("reentrant call inside the ring's write")
            self._inside = True
            words = self._words
            written = words[_WRITTEN]
            at = written % self.size
            size = len(data)
            if (type(data) is bytes and at + size <= self.size
                    and written + size - words[_READ] <= self.size):
                self._data[at:at + size] = data
                words[_WRITTEN] = written + size
            else:
                size = self._write_slowly(memoryview(data).cast("B"))
        finally:
            self._inside = False
            lock.release()
        if words[_ARMED]:
            self._ring()
        return size

    def _write_slowly(self, view: memoryview) -> int:
        """Any buffer, in pieces: to the ring's end, then from its start, as room is made."""
        total = len(view)
        size, words, ring = self.size, self._words, self._data
        while view:
            written = words[_WRITTEN]
            free = size - (written - words[_READ])
            if not free:
                self._wait_for_room(written)
                continue
            at = written % size
            count = min(len(view), free, size - at)
            ring[at:at + count] = view[:count]
            view = view[count:]
            words[_WRITTEN] = written + count
        return total

    def _wait_for_room(self, written: int) -> None:
        pause = 0.0001
        while self._words[_READ] + self.size == written:
            self._ring()
            time.sleep(pause)
            pause = min(pause * 2, 0.01)

    def _ring(self) -> None:
        if self._words[_ARMED]:
            self._words[_ARMED] = 0
            try:
                _write_fd(self.doorbell, b"!")
            except (BlockingIOError, BrokenPipeError):
                pass  # already rung, or the session is gone


def _write_all(fd: int, data: Buffer) -> int:
    view = memoryview(data).cast("B")
    total = len(view)
    while view:
        view = view[_write_fd(fd, view):]
    return total


class RingWriter(io.RawIOBase):
    """sys.stdout.buffer of an rpc worker: writes go to the ring, fd 1 stays the capture pipe."""

    def __init__(self, ring: OutputRing) -> None:
        super().__init__()
        self.write = ring.write  # type: ignore[method-assign, assignment]  # one call less
        self.name = "<stdout>"

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return 1  # what a subprocess given sys.stdout writes to: the capture pipe

    def isatty(self) -> bool:
        return False
