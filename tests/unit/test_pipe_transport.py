"""The rpc kernel's pipe transport: lines in from a real pipe (or file), messages out."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyrelune.loop.reactor import Reactor
from pyrelune.transports.pipe import OVERSIZED, LineConnection, LineSplitter

#: Only so that a broken build fails instead of hanging.
PATIENCE = 60.0


@pytest.fixture
def pipes() -> Iterator[tuple[int, int, int, int]]:
    """(in_r, in_w, out_r, out_w): the host writes in_w and reads out_r."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    yield in_r, in_w, out_r, out_w
    for fd in (in_r, in_w, out_r, out_w):
        try:
            os.close(fd)
        except OSError:
            pass  # closed by the test: the end of input


def test_a_line_split_across_reads_is_whole() -> None:
    splitter = LineSplitter(100)
    assert splitter.feed(b'{"a": ') == []
    assert splitter.feed(b'1}\n{"b"') == [b'{"a": 1}']
    assert splitter.feed(b": 2}\n\n") == [b'{"b": 2}']  # a blank line is no message


def test_a_line_over_the_limit_is_reported_once_and_skipped_to_its_end() -> None:
    splitter = LineSplitter(10)
    assert splitter.feed(b"x" * 8) == []
    assert splitter.feed(b"x" * 8) == [OVERSIZED]  # known too long before its end arrives
    assert splitter.feed(b"x" * 8) == []
    assert splitter.feed(b"x\nok\n") == [b"ok"]
    assert splitter.feed(b"y" * 11 + b"\n") == [OVERSIZED]
    assert splitter.feed(b"y" * 10 + b"\n") == [b"y" * 10]


def test_the_end_of_input_ends_the_last_line() -> None:
    splitter = LineSplitter(100)
    assert splitter.feed(b"last") == []
    assert splitter.feed(b"") == [b"last"]


def run(in_fd: int, out_fd: int, max_size: int,
        answer: bool = True) -> tuple[bool, list[bytes]]:
    """Deliver every line from `in_fd`, each answered by echoing it: the result and the lines."""
    reactor = Reactor()
    connection = LineConnection(reactor, in_fd, out_fd, max_size)
    seen: list[bytes] = []
    ended: list[bool] = []

    def handler(line: bytes) -> bool:
        seen.append(line)
        connection.send(b"echo " + line)
        return answer

    def on_end(at_end: bool) -> None:
        ended.append(at_end)
        reactor.call_soon(reactor.stop)  # after the turn of the loop that writes what was sent

    reactor.call_later(PATIENCE, reactor.stop)
    connection.deliver(handler, on_end)
    try:
        reactor.run()
    finally:
        reactor.close()
    assert len(ended) == 1, "delivery did not end"
    return ended[0], seen


def read_all(fd: int) -> bytes:
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 1 << 16)
    except BlockingIOError:
        return b""


def test_lines_from_a_pipe_until_its_end(pipes: tuple[int, int, int, int]) -> None:
    in_r, in_w, out_r, out_w = pipes
    os.write(in_w, b"one\n" + b"x" * 50 + b"\ntwo\nthree")
    os.close(in_w)
    ended, seen = run(in_r, out_w, max_size=20)
    assert ended is True
    assert seen == [b"one", OVERSIZED, b"two", b"three"]
    assert read_all(out_r) == b"echo one\necho \0oversized\necho two\necho three\n"


def test_a_refused_line_stops_delivery(pipes: tuple[int, int, int, int]) -> None:
    in_r, in_w, out_r, out_w = pipes
    os.write(in_w, b"one\ntwo\n")
    ended, seen = run(in_r, out_w, max_size=20, answer=False)
    assert ended is False and seen == [b"one"]
    assert read_all(out_r) == b"echo one\n"


def test_messages_sent_in_one_turn_leave_in_order(pipes: tuple[int, int, int, int]) -> None:
    _, _, out_r, out_w = pipes
    empty_r, empty_w = os.pipe()
    os.close(empty_w)

    reactor = Reactor()
    try:
        connection = LineConnection(reactor, empty_r, out_w, 100)
        for message in (b"1", b"2", b"3"):
            connection.send(message)
        assert read_all(out_r) == b""  # queued, not yet written
        reactor.call_soon(reactor.stop)
        reactor.run()
    finally:
        reactor.close()
        os.close(empty_r)
    assert read_all(out_r) == b"1\n2\n3\n"


def test_lines_from_a_file_are_read_too(pipes: tuple[int, int, int, int],
                                        tmp_path: Path) -> None:
    _, _, out_r, out_w = pipes
    requests = tmp_path / "requests"
    requests.write_bytes(b"a\nb\n")
    fd = os.open(requests, os.O_RDONLY)
    try:
        ended, seen = run(fd, out_w, max_size=20)
    finally:
        os.close(fd)
    assert ended is True and seen == [b"a", b"b"]
    assert read_all(out_r) == b"echo a\necho b\n"


def test_a_handler_failure_comes_out_of_the_loop(pipes: tuple[int, int, int, int]) -> None:
    in_r, in_w, _, out_w = pipes
    os.write(in_w, b"boom\n")

    def handler(line: bytes) -> bool:
        raise RuntimeError(line.decode())

    reactor = Reactor()
    reactor.call_later(PATIENCE, reactor.stop)
    LineConnection(reactor, in_r, out_w, 100).deliver(handler, lambda at_end: None)
    try:
        with pytest.raises(RuntimeError, match="boom"):
            reactor.run()
    finally:
        reactor.close()


def _lost_reasons(in_fd: int, out_fd: int) -> list[str | None]:
    """Run a connection until it says the host is lost (or PATIENCE): the errors' reasons."""
    reactor = Reactor()
    reasons: list[str | None] = []

    def lost(error: OSError | None) -> None:
        reasons.append(None if error is None else error.strerror)
        reactor.stop()

    connection = LineConnection(reactor, in_fd, out_fd, 100, lost)

    def answer(line: bytes) -> bool:
        connection.send(b"echo " + line)
        return True

    connection.deliver(answer, lambda at_end: None)
    reactor.call_later(PATIENCE, reactor.stop)
    try:
        reactor.run()
    finally:
        reactor.close()
    return reasons


def test_a_host_that_closed_its_end_of_stdout_is_lost_with_nothing_to_write(
        pipes: tuple[int, int, int, int]) -> None:
    in_r, _, out_r, out_w = pipes
    os.close(out_r)  # no line is sent, none answered: only the pipe's error says it
    assert _lost_reasons(in_r, out_w) == [None]


def test_a_write_that_fails_loses_the_host(pipes: tuple[int, int, int, int]) -> None:
    in_r, in_w, _, _ = pipes
    os.write(in_w, b"ping\n")
    with open("/dev/full", "wb") as full:
        assert _lost_reasons(in_r, full.fileno()) == ["No space left on device"]
