"""CapturedStream: bytes from a pipe become text without blocking or breaking characters."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from pyrelune.supervisor.capture import CapturedStream


@pytest.fixture
def pipe() -> Iterator[tuple[CapturedStream, int]]:
    read_fd, write_fd = os.pipe()
    stream = CapturedStream("stdout", read_fd)
    yield stream, write_fd
    stream.close()
    try:
        os.close(write_fd)
    except OSError:
        pass


def text(stream: CapturedStream) -> str | None:
    chunk = stream.read_available()
    if chunk is None:
        return None
    assert chunk.name == "stdout"
    return chunk.text


def test_nothing_available_returns_none_without_blocking(pipe: tuple[CapturedStream, int]) -> None:
    stream, _ = pipe
    assert text(stream) is None
    assert not stream.closed


def test_a_character_split_across_reads_stays_whole(pipe: tuple[CapturedStream, int]) -> None:
    stream, write_fd = pipe
    data = "a€😀".encode()
    os.write(write_fd, data[:2])
    assert text(stream) == "a"
    os.write(write_fd, data[2:5])
    assert text(stream) == "€"
    os.write(write_fd, data[5:])
    assert text(stream) == "😀"


def test_invalid_bytes_are_replaced(pipe: tuple[CapturedStream, int]) -> None:
    stream, write_fd = pipe
    os.write(write_fd, b"a\xffb")
    assert text(stream) == "a\ufffdb"


def test_an_unfinished_character_at_eof_is_replaced(pipe: tuple[CapturedStream, int]) -> None:
    stream, write_fd = pipe
    os.write(write_fd, b"x\xe2\x82")
    os.close(write_fd)
    assert text(stream) == "x\ufffd"
    assert stream.closed
    assert text(stream) is None


def test_one_read_is_bounded(pipe: tuple[CapturedStream, int]) -> None:
    stream, write_fd = pipe
    os.set_blocking(write_fd, False)
    written = 0
    try:
        while True:
            written += os.write(write_fd, b"z" * 65536)
    except BlockingIOError:
        pass
    received = 0
    while (chunk := text(stream)) is not None:
        assert len(chunk) <= 1 << 20
        received += len(chunk)
    assert received == written
