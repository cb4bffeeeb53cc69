"""The standard streams' helpers: a bounded read of stdin, and a closed stream told."""

from __future__ import annotations

import os
import threading

from pyrelune.transports.stdio import closed, read_all


def test_read_all_keeps_at_most_one_byte_past_its_limit_and_reads_the_rest() -> None:
    read_fd, write_fd = os.pipe()

    def write() -> None:
        os.write(write_fd, b"x" * 300_000)  # more than a pipe holds: read to the end, or it waits
        os.close(write_fd)

    writer = threading.Thread(target=write)
    writer.start()
    assert read_all(read_fd, 1000) == b"x" * 1001
    writer.join()
    os.close(read_fd)


def test_read_all_without_a_limit_keeps_it_all() -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"abc")
    os.close(write_fd)
    assert read_all(read_fd) == b"abc"
    os.close(read_fd)


def test_closed_tells_an_open_descriptor_from_a_closed_one() -> None:
    read_fd, write_fd = os.pipe()
    os.close(write_fd)
    assert not closed(read_fd) and closed(write_fd)
    os.close(read_fd)
