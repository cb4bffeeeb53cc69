"""IOPub's flow on plain values: a full budget holds the worker until IOPub drains, or until
nothing has been written for the stall limit; then large messages are counted, not sent,
and said, until the budget drains."""

from __future__ import annotations

from pyrelune.transports.iopubflow import HELD, OPEN, STALLED, IopubFlow

BUDGET, STALL, LARGE = 1000, 5.0, 100


def held(written: int = 0, at: float = 0.0) -> IopubFlow:
    flow = IopubFlow(BUDGET, STALL, LARGE)
    assert flow.sent(BUDGET + 1, written, at)
    assert flow.state == HELD
    return flow


def test_under_the_budget_everything_goes_and_nothing_waits() -> None:
    flow = IopubFlow(BUDGET, STALL, LARGE)
    assert not flow.sent(BUDGET, 0, 0.0)
    assert flow.admit(LARGE * 10)
    assert flow.note() is None


def test_over_the_budget_the_worker_waits_until_iopub_drains_to_half() -> None:
    flow = held()
    assert not flow.sent(BUDGET * 2, 0, 1.0)  # said once
    assert flow.look(BUDGET // 2 + 1, 1, 1.0) == HELD
    assert flow.look(BUDGET // 2, 2, 2.0) == OPEN
    assert flow.note() is None


def test_a_subscriber_that_writes_nothing_for_the_stall_limit_has_stalled() -> None:
    flow = held(written=7, at=10.0)
    assert flow.look(BUDGET + 1, 7, 10.0 + STALL - 0.1) == HELD
    assert flow.look(BUDGET + 1, 7, 10.0 + STALL) == STALLED


def test_what_is_written_meanwhile_restarts_the_stall_limit() -> None:
    flow = held(written=7, at=0.0)
    assert flow.look(BUDGET + 1, 8, STALL - 1) == HELD  # a slow subscriber, not a stalled one
    assert flow.look(BUDGET + 1, 8, STALL + 1) == HELD
    assert flow.look(BUDGET + 1, 8, 2 * STALL - 1) == STALLED


def test_no_stall_limit_waits_for_ever() -> None:
    flow = IopubFlow(BUDGET, 0.0, LARGE)
    assert flow.sent(BUDGET + 1, 0, 0.0)
    assert flow.look(BUDGET + 1, 0, 1e9) == HELD


def test_stalled_large_messages_are_counted_small_ones_go_and_the_note_says_them_once() -> None:
    flow = held()
    flow.look(BUDGET + 1, 0, STALL)
    assert flow.admit(LARGE - 1)
    assert not flow.admit(LARGE)
    assert not flow.admit(3 << 20)
    assert not flow.sent(BUDGET + 1, 0, STALL)  # the worker is read: nothing holds it again
    note = flow.note()
    assert note is not None
    assert note.startswith("pyrelune: 2 outputs were not sent (3.0 MiB): a front end "
                           "connected to IOPub stopped reading")
    assert flow.note() is None
    assert not flow.admit(4096)
    assert (flow.note() or "").startswith("pyrelune: 1 output was not sent (4 KiB)")


def test_once_drained_everything_is_sent_again() -> None:
    flow = held()
    flow.look(BUDGET + 1, 0, STALL)
    assert flow.look(BUDGET // 2, 0, STALL + 1) == OPEN
    assert flow.admit(LARGE)
    assert flow.sent(BUDGET + 1, 0, STALL + 2)  # and a full budget holds the worker again
