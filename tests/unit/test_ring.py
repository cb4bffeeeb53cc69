"""The rpc worker's stdout ring on plain values: one process plays both sides."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest

from pyrelune.wire.ring import OutputRing


@pytest.fixture
def ring() -> Iterator[OutputRing]:
    made = OutputRing(size=16)
    yield made
    made.close()


def test_what_is_written_is_taken_once_in_order(ring: OutputRing) -> None:
    assert ring.write(b"hello ") == 6
    assert ring.write(b"world") == 5
    assert ring.unread()
    assert ring.take(ring.written()) == b"hello world"
    assert not ring.unread()
    assert ring.take(ring.written()) == b""


def test_writes_wrap_around_the_end(ring: OutputRing) -> None:
    for word in (b"0123456789", b"abcdefghij", b"ABCDEFGHIJ"):
        ring.write(word)
        assert ring.take(ring.written()) == word


def test_only_what_was_written_before_the_pipes_were_read_is_taken(ring: OutputRing) -> None:
    ring.write(b"first ")
    upto = ring.written()
    ring.write(b"later")
    assert ring.take(upto) == b"first "
    assert ring.take(ring.written()) == b"later"


def test_a_full_ring_makes_the_writer_wait_for_the_reader(ring: OutputRing) -> None:
    data = bytes(range(256)) * 4
    writer = threading.Thread(target=ring.write, args=(memoryview(data),))
    writer.start()
    taken = b""
    while writer.is_alive() or ring.unread():
        taken += ring.take(ring.written())
    writer.join()
    assert taken == data


def test_the_reader_is_woken_once_per_round(ring: OutputRing) -> None:
    ring.write(b"a")
    ring.write(b"b")  # the first write rang; until the reader asks again, no more
    assert os.read(ring.doorbell_r, 16) == b"!"
    with pytest.raises(BlockingIOError):
        os.read(ring.doorbell_r, 16)
    ring.take(ring.written())
    ring.write(b"c")
    assert os.read(ring.doorbell_r, 16) == b"!"


def test_a_write_from_a_signal_handler_inside_a_write_is_refused(ring: OutputRing) -> None:
    inner: list[BaseException] = []

    class Reentrant(bytes):
        def __len__(self) -> int:  # runs inside the write, as a signal handler could
            try:
                ring.write(b"x")
            except RuntimeError as exc:
                inner.append(exc)
            return bytes.__len__(self)

    ring.write(Reentrant(b"abc"))
    assert [str(e) for e in inner] == ["reentrant call inside the ring's write"]
    assert ring.take(ring.written()) == b"abc"
