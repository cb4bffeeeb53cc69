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

Header words (8 bytes each, totals since the start): `written`, `lap`,
`wait` (what it waits to be read, 0 when it does not wait) and `total`
(where its writes ended when a cell ended) by the worker; `read` and
`armed` by the session (`armed` cleared by the worker when it rings). The
worker changes `lap` only once the session has read everything, so a reader
that sees the same `lap` before and after looking has looked at one lap.

The ring is memory a cell can reach (through sys.stdout, or ctypes), so the
session trusts none of it. It keeps its own lap and position, zeroes what
it took (so no byte is ever read twice, or under a later cell, whatever the
header says), takes a `written` only within the lap and a new `lap` only
where it has read up to, and when the worker rings to wait for bytes the
session cannot find, gives them up so that the cell goes on (`unstick`). Anything
the worker would not have written, and a `total` at a cell's end that is
not where the session read up to, makes the ring damaged: the next cell
starts a fresh one, as every reset does (`restart`). Bytes a cell writes
into the data itself are output like any other, until the lap ends.
"""

from __future__ import annotations

import _thread
import mmap
import os
import time

from pyrelune.wire import write_all

#: Bytes a lap holds: a cell printing faster than the session reads waits past this.
SIZE = 1 << 20
WRITTEN, READ, ARMED, LAP, TOTAL, WAIT = 0, 1, 2, 3, 4, 5
#: More than any total gets to (2**62 bytes): a `wait` above it was a cell's.
_MOST = 1 << 62
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
        self.zeros = memoryview(bytes(size))
        self._read = 0  # the session's own copy of `read`
        self._lap = 0  # and of `lap`: where the lap it reads began
        self.damaged = False  # found what the worker never writes: see the module docstring
        # The wake-up pipe: the worker writes it, the session reads it.
        self.doorbell_r, self.doorbell = os.pipe()
        for fd in (self.doorbell_r, self.doorbell):
            os.set_blocking(fd, False)

    def written(self) -> int:
        """How far the worker has written, as a total (read it before the pipes, see `link`)."""
        words, size = self.words, self.size
        while True:
            lap = words[LAP]
            if lap != self._lap:
                self._next_lap(lap)
            read, mark = self._read, words[WRITTEN]
            start = read - self._lap
            if mark > read:  # text with a NUL was published this far
                if mark - self._lap <= size:
                    start = mark - self._lap
                else:
                    self.damaged = True
            end = self.data.find(b"\0", start)
            if words[LAP] == lap:  # else it began a new lap meanwhile: look again
                return self._lap + (size if end < 0 else end)

    def _next_lap(self, lap: int) -> None:
        """The worker says a new lap began at the total `lap`: read on from its offset 0.

        A new lap begins once the session has read the last one to its end,
        so `lap` is exactly `read`. Any other value a cell wrote: the session
        reads on where it was, as the worker writes on, until the worker's
        own next `lap`, or its wait (`unstick`), puts the word right.
        """
        if self._lap < lap == self._read:
            self._lap = lap
        else:
            self.damaged = True

    def unstick(self) -> None:
        """After the worker rang and all there is was taken: does it wait for more?

        It waits (`wait`) only for bytes it wrote before; if the session
        cannot find them, a cell wrote over where they are said to be: they
        are given up, and the worker goes on.
        """
        wait = self.words[WAIT]
        if _MOST >= wait > self._read and self.written() == self._read:
            self.damaged = True
            self._read = wait
            if not self._lap <= wait <= self._lap + self.size:
                self._lap = wait  # nowhere in this lap: the next one starts there
            self.words[READ] = wait

    def take(self, upto: int) -> bytes:
        """What the worker wrote up to `upto` (a `written()` looked at earlier), zeroed after.

        Then says how far it has read (again: a cell may have written over
        it) and asks to be woken when the worker waits (a worker that waits
        rings again and again, so no ring is missed for long).
        """
        words, start = self.words, self._read
        data = b""
        if upto > start:
            begin, end = start - self._lap, upto - self._lap
            data = self._view[begin:end].tobytes()
            self._view[begin:end] = self.zeros[begin:end]
            self._read = upto
        words[READ] = self._read
        words[ARMED] = 1
        return data

    def settle(self) -> bool:
        """A cell is over, all it printed taken: whether some of it may be missing.

        The worker says where its writes ended (`total`); elsewhere than
        where the session read up to, the ring is damaged too (past it: the
        session read bytes a cell wrote there, or a thread printed since).
        """
        total = self.words[TOTAL]
        missing = self.damaged or total > self._read
        self.damaged = self.damaged or total != self._read
        return missing

    def restart(self, always: bool = False) -> int | None:
        """A fresh ring if this one is damaged (`always`: a reset): its total, else None.

        Zeroed, with a lap that begins where the session has read up to, for
        the next command to carry: the worker, idle, starts the same lap
        (`RingWriter.restart`) before anything else.
        """
        if not (always or self.damaged):
            return None
        self._view[:] = self.zeros
        words, total = self.words, self._read
        self._lap = words[LAP] = words[WRITTEN] = words[READ] = words[TOTAL] = total
        words[WAIT] = 0
        self.damaged = False
        return total

    def unread(self) -> bool:
        """Whether the worker wrote something not taken yet."""
        return self.written() > self._read

    def hear(self) -> bool:
        """Empty the wake-up pipe; whether the worker had rung it."""
        rung = False
        try:
            while os.read(self.doorbell_r, 512):
                rung = True
        except BlockingIOError:
            pass
        return rung

    def close(self) -> None:
        for fd in (self.doorbell_r, self.doorbell):
            if fd >= 0:
                os.close(fd)
        self.doorbell_r = self.doorbell = -1
        self.words.release()
        self._view.release()
        self.zeros.release()
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
    NUL, a new lap, a line bigger than a lap) takes the lock, reentrant for
    a signal handler that prints while its own thread holds it: what such a
    handler prints meanwhile is held, and written once its thread's write is
    whole (`_busy`), never inside it.
    """

    def __init__(self, ring: OutputRing) -> None:
        self.ring = ring
        self.words = ring.words
        self.size = ring.size
        self.lap = 0
        self.lock = _thread.RLock()
        self._end: int | None = None  # where the lap ended, until the next one starts
        self._busy = False  # a write that takes more than one copy is under way
        self._held: list[bytes] = []  # what a signal handler printed meanwhile
        self.forked = False  # in a child the cell forked: it writes to fd 1 itself
        from pyrelune.wire.forks import in_cell_child  # the worker's end: it imports it

        in_cell_child(self._in_child)

    def _in_child(self) -> None:
        self.forked = True
        self.lock = _thread.RLock()

    def put(self, data: bytes) -> None:
        """Copy `data` in (a child the cell forked writes it to fd 1)."""
        if self.forked:
            write_all(data, 1)
        elif 0 in data:  # a NUL: its end is said, not found (see the module docstring)
            self.spill(data)
        else:
            try:
                self.ring.data.write(data)
            except ValueError:  # no room before the end of this lap
                self.spill(data)

    def spill(self, data: bytes) -> None:
        """Write what the one copy could not: in the next lap, whole if it can be.

        A write bigger than a lap fills this one first and goes on in laps.
        Then it says how far it wrote (`written`), as text with a NUL needs.
        """
        with self.lock:
            if self._busy:  # a signal handler's print, while its thread writes
                self._held.append(bytes(data))
                return
            self._busy = True
            try:
                self._place(data)
                while self._held:
                    self._place(self._held.pop(0))
                self.words[WRITTEN] = self._total()
            finally:
                self._busy = False
                held, self._held = self._held, []
                for data in held:  # interrupted: where nothing waits
                    write_all(data, 1)

    def _place(self, data: bytes) -> None:
        """Copy `data` in, from where the lap is, across as many laps as it needs.

        Every copy is one step that fits or fails whole: a signal handler's
        one copy between the look at the room and the copy only moves where
        this one goes. From the end of a lap to the end of `data`, the
        position stays at a lap's end, so no other copy can land inside: it
        fails, and `spill` holds it until `data` is whole.
        """
        memory, view, size = self.ring.data, memoryview(data), self.size
        while view:
            room = size - memory.tell()
            if len(view) <= room or (room and len(view) > size):
                try:
                    memory.write(view[:room])
                except ValueError:  # a handler's print took some of the room meanwhile
                    continue
                view = view[room:]
                if not view:
                    return
            self.words[WRITTEN] = self._total()  # NULs in what the lap holds: it is read to its end
            self._next_lap()
            count = min(len(view), size)
            memory[:count] = view[:count]
            view = view[count:]
            if not view:
                memory.seek(count)  # only now may others write after it

    def _next_lap(self) -> None:
        """Wait until the session has read this lap, then zero it and start the next one.

        The position stays at the end, for the caller to write from 0 (see `_place`).
        """
        memory = self.ring.data
        if self._end is None:
            # One step that ends the lap for every writer (threads' writes
            # fail from now on and wait for the lock): its end is where it was.
            self._end = self.size - len(memory.read())
        end = self._end
        self._wait_read(self.lap + end)  # an interrupt here leaves the lap ended
        self._begin(self.lap + end)

    def _begin(self, lap: int) -> None:
        """A zeroed lap that begins at the total `lap`, the position still at its end."""
        self.ring.data[:] = self.ring.zeros
        self.lap = lap
        self.words[LAP] = lap  # after the zeros, before the next lap's bytes
        with _thread.allocate_lock():
            pass  # its atomic operations order the stores, on any processor
        self._end = None

    def restart(self, total: int) -> None:
        """The session started a fresh ring at `total` (see `OutputRing.restart`): start it too."""
        with self.lock:
            self._busy = True
            try:
                self.ring.data.read()  # the lap ends for every writer, as in `_next_lap`
                self._begin(total)
                self.words[WRITTEN] = total
                self.ring.data.seek(0)
            finally:
                self._busy = False
                held, self._held = self._held, []
            for data in held:
                self.put(data)

    def settle(self) -> None:
        """A cell is over: say where its writes ended, for the session to check."""
        self.words[TOTAL] = self._total()

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
        words = self.words
        words[WAIT] = end  # for the session, if it cannot find what was written
        pause = 0.00005
        try:
            while words[READ] < end:
                ring(self.ring)
                time.sleep(pause)
                pause = min(pause * 2, 0.005)
        finally:
            words[WAIT] = 0
