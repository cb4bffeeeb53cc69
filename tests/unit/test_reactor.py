"""The pipe kernel's event loop: the part of asyncio's loop it stands in for, in the same order."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from pyrelune.loop.reactor import Reactor

#: Only so that a broken loop fails instead of hanging.
PATIENCE = 30.0


@pytest.fixture
def reactor() -> Iterator[Reactor]:
    loop = Reactor()
    loop.call_later(PATIENCE, loop.stop)
    yield loop
    loop.close()


def test_what_a_callback_schedules_runs_in_the_next_turn(reactor: Reactor) -> None:
    seen: list[str] = []

    def first() -> None:
        seen.append("first")
        reactor.call_soon(seen.append, "scheduled by first")
        reactor.stop()  # the turn ends; what first scheduled is left for a later run

    reactor.call_soon(first)
    reactor.call_soon(seen.append, "second")
    reactor.run()
    assert seen == ["first", "second"]
    reactor.call_soon(reactor.stop)
    reactor.run()
    assert seen == ["first", "second", "scheduled by first"]


def test_timers_run_in_the_order_they_are_due_and_a_cancelled_one_never(
        reactor: Reactor) -> None:
    seen: list[str] = []
    now = reactor.time()
    reactor.call_at(now + 0.03, seen.append, "late")
    reactor.call_at(now + 0.01, seen.append, "early")
    cancelled = reactor.call_at(now + 0.02, seen.append, "cancelled")
    assert cancelled.when() == now + 0.02
    cancelled.cancel()
    reactor.call_later(0.05, reactor.stop)
    reactor.run()
    assert seen == ["early", "late"]


def test_a_reader_runs_while_its_descriptor_is_readable_until_removed(
        reactor: Reactor) -> None:
    read_end, write_end = os.pipe()
    got: list[bytes] = []

    def readable(fd: int) -> None:
        got.append(os.read(fd, 100))
        if got[-1] == b"":
            reactor.remove_reader(fd)
            reactor.stop()

    try:
        reactor.add_reader(read_end, readable, read_end)
        os.write(write_end, b"one")
        os.close(write_end)
        reactor.run()
    finally:
        os.close(read_end)
    assert got == [b"one", b""]


def test_a_reader_removed_in_its_turn_does_not_run(reactor: Reactor) -> None:
    """A worker's descriptor number is reused once it is replaced: its old callback must not run."""
    read_end, write_end = os.pipe()
    ran: list[int] = []
    try:
        os.write(write_end, b"x")
        reactor.add_reader(read_end, ran.append, 1)
        # Turn 1: this, then the reader (read_end stays readable: nothing reads it).
        # Turn 2: the removal, scheduled by this, then the reader's callback of that turn.
        reactor.call_soon(lambda: reactor.call_soon(reactor.remove_reader, read_end))
        reactor.call_later(0.05, reactor.stop)
        reactor.run()
    finally:
        os.close(read_end)
        os.close(write_end)
    assert ran == [1]  # turn 1's only


def test_another_thread_wakes_a_sleeping_loop(reactor: Reactor) -> None:
    seen: list[str] = []

    def from_thread() -> None:
        reactor.call_soon_threadsafe(seen.append, "woken")
        reactor.call_soon_threadsafe(reactor.stop)

    threading.Timer(0.05, from_thread).start()
    reactor.run()  # no timer is due before PATIENCE: only the thread can end it in time
    assert seen == ["woken"]


def test_nothing_another_thread_schedules_is_lost_while_the_loop_turns(
        reactor: Reactor) -> None:
    """The stdin thread of a kernel on a file hands over each chunk so: one lost is a hang,
    two swapped are requests answered out of order."""
    count = 20_000
    seen: list[int] = []

    def turning() -> None:  # a new turn, and a new list of ready callbacks, as fast as it can
        if len(seen) < count:
            reactor.call_soon(turning)
        else:
            reactor.stop()

    def from_thread() -> None:
        for number in range(count):
            reactor.call_soon_threadsafe(seen.append, number)

    reactor.call_soon(turning)
    thread = threading.Thread(target=from_thread)
    thread.start()
    reactor.run()
    thread.join()
    assert seen == list(range(count))


def test_a_signal_runs_its_handler_on_the_loop(reactor: Reactor) -> None:
    seen: list[int] = []
    reactor.add_signal_handler(signal.SIGUSR1, seen.append, 1)
    reactor.add_signal_handler(signal.SIGUSR2, reactor.stop)
    reactor.call_soon(os.kill, os.getpid(), signal.SIGUSR1)
    reactor.call_later(0.05, os.kill, os.getpid(), signal.SIGUSR2)
    reactor.run()
    assert seen == [1]


def test_close_gives_the_signals_back() -> None:
    reactor = Reactor()
    reactor.add_signal_handler(signal.SIGINT, reactor.stop)
    reactor.close()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.set_wakeup_fd(-1) == -1
