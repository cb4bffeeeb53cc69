"""The rpc worker's stdout ring: both ends in one process, the reader on a thread where it must."""

from __future__ import annotations

import mmap
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyrelune.wire.ring import ARMED, READ, TOTAL, WAIT, WRITTEN, OutputRing, RingWriter
from pyrelune.wire.ring import LAP as LAP_WORD

#: Small laps, so that a test crosses many of them.
LAP = 4096


@pytest.fixture
def ring() -> Iterator[OutputRing]:
    made = OutputRing(LAP)
    yield made
    made.close()


def take_all(ring: OutputRing) -> bytes:
    return ring.take(ring.written())


class Reader:
    """The session's end, reading on a thread as the session's timer would."""

    def __init__(self, ring: OutputRing) -> None:
        self.ring = ring
        self.chunks: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.chunks.append(take_all(self.ring))
            time.sleep(0.0002)

    def stop(self) -> bytes:
        self._stop.set()
        self._thread.join()
        self.chunks.append(take_all(self.ring))
        return b"".join(self.chunks)


def test_written_bytes_are_read_once_and_in_order(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    assert not ring.unread()
    writer.put(b"one\n")
    writer.put(b"two\n")
    assert ring.unread() and writer.unread()
    assert take_all(ring) == b"one\ntwo\n"
    assert not ring.unread() and not writer.unread()
    assert take_all(ring) == b""


def test_the_end_of_what_was_written_is_found_without_being_told(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    ring.data.write(b"copied in, nothing else\n")  # what a print does (see liveprint)
    assert take_all(ring) == b"copied in, nothing else\n"
    assert writer.unread() is False


def test_text_with_nul_bytes_comes_through_whole(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    writer.put(b"a\0b\0\n")
    writer.put(b"after\n")
    writer.put(b"\0")
    assert take_all(ring) == b"a\0b\0\nafter\n\0"


def test_a_part_read_while_written_is_followed_by_the_rest(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    writer.put(b"first ")
    upto = ring.written()
    writer.put(b"second\n")
    assert ring.take(upto) == b"first "
    assert take_all(ring) == b"second\n"


def test_laps_wait_for_the_reader_and_lose_nothing(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    lines = [b"%d %s\n" % (i, b"x" * (i % 97)) for i in range(3000)]
    reader = Reader(ring)
    for line in lines:
        writer.put(line)
    assert reader.stop() == b"".join(lines)
    assert writer.lap > 10 * LAP


def test_a_write_bigger_than_a_lap_goes_on_in_laps(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    big = bytes(range(1, 256)) * 100  # no NUL: found by the zero after it
    reader = Reader(ring)
    writer.put(b"before\n")
    writer.put(big)
    writer.put(b"after\n")
    assert reader.stop() == b"before\n" + big + b"after\n"


def test_a_line_that_does_not_fit_starts_the_next_lap_whole(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    writer.put(b"a" * (LAP - 10))
    assert take_all(ring) == b"a" * (LAP - 10)
    writer.put(b"b" * 100 + b"\n")  # not cut at the lap's end
    assert writer.lap == LAP - 10
    assert ring.data[:101] == b"b" * 100 + b"\n"
    assert take_all(ring) == b"b" * 100 + b"\n"


def test_threads_writes_never_mix(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    reader = Reader(ring)

    def work(n: int) -> None:
        for i in range(2000):
            writer.put(b"%d:%s\n" % (n, b"%d" % n * (i % 50)))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = reader.stop().splitlines()
    assert len(lines) == 8000
    for line in lines:
        n, _, rest = line.partition(b":")
        assert set(rest) <= set(n)


def test_a_waiting_writer_rings_once_asked(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    writer.put(b"x" * (LAP - 1))
    assert ring.words[ARMED] == 1  # as made: the session asks to be woken
    waiting = threading.Thread(target=writer.put, args=(b"yy",))
    waiting.start()
    assert select.select([ring.doorbell_r], [], [], 60)[0]
    assert os.read(ring.doorbell_r, 16) == b"!"
    assert ring.words[ARMED] == 0  # once, until asked again
    assert take_all(ring) == b"x" * (LAP - 1)
    waiting.join(60)
    assert not waiting.is_alive()
    assert take_all(ring) == b"yy"
    assert ring.words[READ] == LAP + 1


def test_a_forked_child_writes_to_fd_1_not_into_the_ring(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(out_w, 1)
        writer.put(b"from the child\n")
        os._exit(0)
    os.close(out_w)
    os.waitpid(pid, 0)
    with os.fdopen(out_r, "rb") as pipe:
        assert pipe.read() == b"from the child\n"
    assert not ring.unread()


def test_a_signal_handler_that_prints_never_lands_inside_a_line(ring: OutputRing) -> None:
    """Its print, on the thread that is in the middle of one across laps, waits for it."""
    writer = RingWriter(ring)
    reader = Reader(ring)
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: writer.put(b"H\n"))
    signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)
    try:
        lines = [b"%d" % i * (LAP // 3 + i) + b"\n" for i in range(1, 40)]
        lines += [b"%d" % i * (LAP * 2 + i) + b"\n" for i in range(1, 6)]
        for line in lines:
            writer.put(line)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    got = [line + b"\n" for line in reader.stop().splitlines() if line != b"H"]
    assert got == lines


@pytest.mark.parametrize("value", [7, LAP * 3, 1 << 40, (1 << 64) - 1])
def test_a_written_lap_word_never_has_bytes_read_again(ring: OutputRing, value: int) -> None:
    writer = RingWriter(ring)
    writer.put(b"read once\n")
    assert take_all(ring) == b"read once\n"
    ring.words[LAP_WORD] = value  # what a cell can do
    writer.put(b"after\n")
    assert b"read once" not in take_all(ring)
    assert ring.damaged


def test_what_was_taken_is_zeroed(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    writer.put(b"abc\n")
    assert take_all(ring) == b"abc\n"
    assert ring.data[:4] == bytes(4)


def test_a_fresh_ring_starts_both_ends_at_the_sessions_total(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    writer.put(b"one\n")
    take_all(ring)
    ring.words[WRITTEN] = 1 << 30  # beyond the lap: damaged
    ring.written()
    assert ring.restart() == 4 and not ring.damaged
    writer.ring.data.seek(3000)  # the worker's own position, moved by a cell
    writer.restart(4)
    writer.put(b"two\n")
    assert take_all(ring) == b"two\n"
    assert ring.restart() is None
    assert ring.restart(always=True) == 8


def test_a_cell_end_elsewhere_than_read_is_damage(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    writer.put(b"x\n")
    take_all(ring)
    writer.settle()
    ring.settle()
    assert not ring.damaged
    ring.words[TOTAL] = 99
    ring.settle()
    assert ring.damaged


def test_a_worker_that_waits_for_what_cannot_be_found_goes_on(ring: OutputRing) -> None:
    """A thread of the cell's wrote over the lap while the worker waits for it to be read."""
    writer = RingWriter(ring)
    writer.put(b"x" * (LAP - 100))
    waiting = threading.Thread(target=writer.put, args=(b"y" * 200,))
    waiting.start()
    assert select.select([ring.doorbell_r], [], [], 60)[0]
    while ring.words[WAIT] == 0:
        time.sleep(0.001)
    ring.data[:1] = b"\0"  # what a cell can do: the session finds nothing there
    ring.words[WRITTEN] = 0
    assert take_all(ring) == b""
    assert ring.hear()
    ring.unstick()
    waiting.join(60)
    assert not waiting.is_alive() and ring.damaged
    assert take_all(ring) == b"y" * 200


def test_a_written_lap_word_loses_nothing_printed(ring: OutputRing) -> None:
    writer = RingWriter(ring)
    writer.put(b"before\n")
    ring.words[LAP_WORD] = 3  # not where the session has read up to (0): not taken
    writer.put(b"after\n")
    assert take_all(ring) == b"before\nafter\n"
    assert ring.damaged
    writer.settle()
    assert ring.settle()  # said: the cell may have lost output


class _Interrupting(mmap.mmap):
    """Ring memory that runs a "signal handler" just before its `skip`-th next write, as a
    signal can between the look at the room and the copy."""

    handler: Callable[[], None] | None = None
    skip = 0

    def write(self, data: Any, /) -> int:
        cls = type(self)
        if cls.handler is not None:
            if cls.skip == 0:
                handler, cls.handler = cls.handler, None
                handler()
            cls.skip -= 1
        return super().write(data)


def test_a_handler_that_prints_between_two_steps_of_a_write_makes_it_fail_never() -> None:
    """The room is looked at, then the copy made: a print in between takes some room."""
    ring = OutputRing(LAP)
    ring._view.release()  # its memory, replaced by one that can be interrupted
    ring.data.close()
    ring.data = _Interrupting(-1, LAP)
    ring._view = memoryview(ring.data)
    try:
        writer = RingWriter(ring)
        reader = Reader(ring)
        writer.put(b"a" * (LAP - 100))
        _Interrupting.handler = lambda: writer.put(b"handler\n")
        _Interrupting.skip = 1  # not the one copy, which fails: the first of the long write
        writer.put(b"b" * (LAP + 50) + b"\n")  # bigger than a lap: it fills this one first
        writer.put(b"after\n")
        got = reader.stop()
        assert got.replace(b"handler\n", b"") == (b"a" * (LAP - 100) + b"b" * (LAP + 50)
                                                 + b"\nafter\n")
        assert b"handler\n" in got
    finally:
        ring.close()
