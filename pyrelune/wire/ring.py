"""The rpc kernel's stdout in shared memory: what the worker prints, the session reads.

A host that shows output live must see each printed line as it is printed,
even when the cell then blocks in C code that holds the GIL (where no thread
of the worker's could flush a buffer). A pipe write per line gives that, at
a system call and a wake-up of the session per line. A copy into memory the
session reads gives it too, without either: this ring is anonymous shared
memory made before the fork, which outlives the worker, so what a killed or
crashed worker printed is still read.

A write is one copy (`mmap.write`, atomic under the GIL, so threads' writes
never mix), and nothing else: the session finds where the written bytes end
by looking for the first zero byte, since unwritten memory is zero and
printed text has none. Text that holds a NUL is the exception: its writer
also publishes how far it wrote (`written`), and the session looks from
there. A byte is either zero or final, whatever order the copy's stores
become visible in, so what is before the first zero was written.

The ring is used in laps: a write that does not fit before the end waits
until the session has read the lap, zeroes it and starts the next one at
offset 0 (`lap` is the total there). So a slow reader makes the cell wait,
as a full pipe would, and a write checks no free space. Nor does it wake
the session: while a cell runs, the session looks at the ring on a timer
(see `supervisor.evented`). The doorbell is for a worker that waits (for a
lap to be read, or before it writes around the ring), which rings it when
the session asked to be woken (`armed`).

Header words (8 bytes each, totals since the start): `written` and `lap` by
the worker, `read` and `armed` by the session (`armed` cleared by the worker
when it rings). The worker changes `lap` only once the session has read
everything, so a reader that sees the same `lap` before and after looking
has looked at one lap.
"""

from __future__ import annotations

import _thread
import mmap
import os
import time

from pyrelune.transports.stdio import write_all

#: Bytes a lap holds: a cell printing faster than the session reads waits past this.
SIZE = 1 << 20
WRITTEN, READ, ARMED, LAP = 0, 1, 2, 3
#: The runtime's own os.write: a cell's is wrapped (see `worker.flushfirst`).
_write_fd = os.write


class OutputRing:
    """The shared memory, its wake-up pipe, and the session's end of both."""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self.data = mmap.mmap(-1, size)
        self._header = mmap.mmap(-1, mmap.PAGESIZE)
        self.words = memoryview(self._header).cast("Q")
        self.words[ARMED] = 1
        self._view = memoryview(self.data)
        self._read = 0  # the session's own copy of `read`
        # The wake-up pipe: the worker writes it, the session reads it.
        self.doorbell_r, self.doorbell = os.pipe()
        for fd in (self.doorbell_r, self.doorbell):
            os.set_blocking(fd, False)

    def written(self) -> int:
        """How far the worker has written, as a total (read it before the pipes, see `link`)."""
        words = self.words
        while True:
            lap = words[LAP]
            start = max(self._read, words[WRITTEN]) - lap
            end = self.data.find(b"\0", start)
            if words[LAP] == lap:  # else it began a new lap meanwhile: look again
                return lap + (self.size if end < 0 else end)

    def take(self, upto: int) -> bytes:
        """What the worker wrote up to `upto` (a `written()` looked at earlier).

        Then asks to be woken when the worker waits (a worker that waits
        rings again and again, so no ring is missed for long).
        """
        words, start = self.words, self._read
        data = b""
        if upto > start:
            lap = words[LAP]
            data = self._view[start - lap:upto - lap].tobytes()
            words[READ] = self._read = upto
        words[ARMED] = 1
        return data

    def unread(self) -> bool:
        """Whether the worker wrote something not taken yet."""
        return self.written() > self._read

    def hear(self) -> None:
        """Empty the wake-up pipe (it is readable)."""
        try:
            while os.read(self.doorbell_r, 512):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        for fd in (self.doorbell_r, self.doorbell):
            if fd >= 0:
                os.close(fd)
        self.doorbell_r = self.doorbell = -1
        self.words.release()
        self._view.release()
        self._header.close()
        self.data.close()


def ring(ring: OutputRing) -> None:
    """Wake the session if it asked to be."""
    words = ring.words
    if words[ARMED]:
        words[ARMED] = 0
        try:
            _write_fd(ring.doorbell, b"!")
        except OSError:
            pass  # rung already (the pipe is full), or the session is gone


class RingWriter:
    """The worker's end: `put` copies bytes in.

    `put`'s common case is the path of every line an rpc cell prints
    (`worker.liveprint` inlines it): one copy. What needs more (text with a
    NUL, a new lap) takes the lock, reentrant for a signal handler that
    prints while its own thread holds it.
    """

    def __init__(self, ring: OutputRing) -> None:
        self.ring = ring
        self.words = ring.words
        self.size = ring.size
        self.lap = 0
        self.lock = _thread.RLock()
        self._end: int | None = None  # where the lap ended, until the next one starts
        self._wrapping = False  # from the end of a lap to the start of the next
        self._held: list[bytes] = []  # what a signal handler printed meanwhile
        self._zeros = memoryview(bytes(ring.size))
        self.forked = False  # in a child the cell forked: it writes to fd 1 itself
        os.register_at_fork(after_in_child=self._in_child)

    def _in_child(self) -> None:
        self.forked = True
        self.lock = _thread.RLock()

    def put(self, data: bytes) -> None:
        """Copy `data` in (a child the cell forked writes it to fd 1)."""
        if self.forked:
            write_all(data, 1)
        elif 0 in data:  # a NUL
            self.publish(data)
        else:
            try:
                self.ring.data.write(data)
            except ValueError:  # no room before the end of this lap
                self.spill(data)

    def publish(self, data: bytes) -> None:
        """Copy in text that holds a NUL, and say how far it goes (see the module docstring)."""
        memory = self.ring.data
        with self.lock:
            try:
                memory.write(data)
            except ValueError:
                self.spill(data)
            self.words[WRITTEN] = self._total()

    def spill(self, data: bytes) -> None:
        """Write what did not fit: in the next lap, whole if it can be.

        A write bigger than a lap fills this one first and goes on in laps.
        """
        memory, view = self.ring.data, memoryview(data)
        with self.lock:
            if self._wrapping:  # a signal handler's print, while its thread starts a lap
                self._held.append(bytes(data))
                return
            while view:
                room = self.size - memory.tell()
                if len(view) <= room or (room and len(view) > self.size):
                    count = min(len(view), room)
                    memory.write(view[:count])
                    view = view[count:]
                if view:
                    self._next_lap()

    def _next_lap(self) -> None:
        """Wait until the session has read this lap, then zero it and start the next one.

        From the first step to the last, no write can land in the lap (the
        position is at its end): what a signal handler prints meanwhile is
        held (see `spill`), and written first in the next lap.
        """
        memory = self.ring.data
        self._wrapping = True
        started = False
        try:
            if self._end is None:
                # One step that ends the lap for every writer (threads' writes
                # fail from now on and wait for the lock): its end is where it was.
                self._end = self.size - len(memory.read())
            end = self._end
            self._wait_read(self.lap + end)  # an interrupt here leaves the lap ended
            memory[:end] = self._zeros[:end]
            self.lap += end
            self.words[LAP] = self.lap  # after the zeros, before the next lap's bytes
            with _thread.allocate_lock():
                pass  # its atomic operations order the stores, on any processor
            self._end = None
            memory.seek(0)
            started = True
        finally:
            self._wrapping = False
            held, self._held = self._held, []
            for data in held:  # in the new lap; or, interrupted, where nothing waits
                if started:
                    self.spill(data)
                else:
                    write_all(data, 1)

    def _total(self) -> int:
        """The total written so far."""
        return self.lap + (self.ring.data.tell() if self._end is None else self._end)

    def unread(self) -> bool:
        """Whether the session has yet to read something written (never in a forked child)."""
        return not self.forked and self.words[READ] < self._total()

    def wait_read(self) -> None:
        """Until the session has read everything written (threads that cannot ask it)."""
        self._wait_read(self._total())

    def _wait_read(self, end: int) -> None:
        pause = 0.00005
        while self.words[READ] < end:
            ring(self.ring)
            time.sleep(pause)
            pause = min(pause * 2, 0.005)
