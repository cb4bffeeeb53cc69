"""The board a kernel's session and worker share about interrupts, on plain values
(both sides in one process: the memory is the same either way)."""

from __future__ import annotations

from pyrelune.wire.interrupts import Interrupts


def test_a_signal_nobody_aimed_is_for_whatever_cell_runs() -> None:
    board = Interrupts()
    assert board.meant_for(1) and board.meant_for(7)
    assert not board.aimed_at(1)


def test_the_sessions_signal_is_for_the_cell_it_names() -> None:
    board = Interrupts()
    board.aim(2)
    assert not board.meant_for(1)  # came while cell 1 was still ending: not for it


def test_a_signal_that_comes_before_its_cell_ends_that_cell_as_it_starts() -> None:
    board = Interrupts()
    board.aim(3)
    assert board.meant_for(2) is False  # the idle worker got it before cell 3's command
    assert board.aimed_at(3)


def test_a_late_signal_for_an_ended_cell_spares_the_next_one() -> None:
    board = Interrupts()
    board.aim(4)
    assert board.aimed_at(4) or board.meant_for(4)
    board.aim(4)  # a second click on stop, delivered while cell 5 runs
    assert not board.meant_for(5)
    assert board.meant_for(5)  # then the cell's own raise_signal(SIGINT) still counts
    assert not board.aimed_at(5)


def test_a_cell_interrupted_as_it_starts_is_not_interrupted_again_by_that_signal() -> None:
    board = Interrupts()
    board.aim(6)
    assert board.aimed_at(6)
    assert not board.meant_for(6)  # the signal itself, arriving now: no second interrupt
    assert not board.aimed_at(6)
    board.aim(6)  # a second click on stop while the cell cleans up: that one counts
    assert board.meant_for(6)


def test_heard_until_forgotten() -> None:
    board = Interrupts()
    assert not board.heard()
    board.hear()
    assert board.heard()
    board.forget()
    assert not board.heard()


def test_the_board_says_whether_the_worker_started_a_cell() -> None:
    board = Interrupts()
    assert not board.started(1)
    board.begin(1)
    assert board.started(1) and not board.started(2)
    board.begin(2)
    assert board.started(2) and not board.started(1)
