"""The session's decisions on plain values: bytes and times in, steps and wake-ups out."""

from __future__ import annotations

from pyrelune import fastjson
from pyrelune.supervisor.session import (
    COALESCE,
    GRACE,
    Kill,
    Send,
    Session,
)
from pyrelune.wire.commands import INTERRUPT
from pyrelune.wire.events import (
    CONTINUE,
    INTERRUPTED,
    PYTHON_RUNTIME_ERROR,
    TIMEOUT,
    WORKER_DIED,
    CellError,
    Display,
    Done,
    message_limit,
    to_wire,
)

KEY = "0123456789abcdef"


def line(event: Display | Done, **extra: object) -> bytes:
    return (fastjson.dumps(to_wire(event) | {"k": KEY} | extra) + "\n").encode()


LIMIT = message_limit(1 << 20)


def started(timeout: float | None = None, now: float = 100.0) -> Session:
    session = Session(LIMIT, KEY)
    session.begin(now, timeout)
    return session


def test_a_done_line_ends_the_cell() -> None:
    session = started()
    steps = session.feed(line(Done()))
    assert len(steps) == 1 and isinstance(steps[0], Done) and steps[0].ok
    assert session.finished


def test_a_line_split_across_reads_is_one_event() -> None:
    session = started()
    data = line(Done(CellError(PYTHON_RUNTIME_ERROR, "ValueError", "bad", "tb", 2)))
    assert session.feed(data[:7]) == []
    assert not session.finished
    (done,) = session.feed(data[7:])
    assert isinstance(done, Done) and done.error is not None and done.error.line == 2


def test_sync_is_answered_with_continue() -> None:
    steps = started().feed(b'{"t": "sync", "k": "0123456789abcdef"}\n')
    assert [type(s) for s in steps] == [Send] and isinstance(steps[0], Send)
    assert steps[0].line == CONTINUE


def test_a_display_waits_for_an_answer_unless_told_not_to() -> None:
    shown = Display({"text/plain": "1"}, {}, False)
    result = Display({"text/plain": "2"}, {}, True)
    steps = started().feed(line(shown) + line(shown, wait=False) + line(result) + line(Done()))
    assert [type(s).__name__ for s in steps] == ["Display", "Send", "Display", "Display", "Done"]


def test_a_foreign_line_stops_the_worker_and_the_rest_is_ignored() -> None:
    session = started()
    steps = session.feed(b'{"t": "done", "error": {"code": "nope"}, "k": "%s"}\n' % KEY.encode()
                         + line(Done()))
    assert len(steps) == 1 and isinstance(steps[0], Kill)
    assert steps[0].error.code == WORKER_DIED
    assert "not one of its messages" in steps[0].error.evalue
    assert not session.events_open
    assert not session.finished  # ends once the driver has killed it: Session.end


def test_json_nested_too_deep_is_foreign() -> None:
    deep = b'{"t": "display", "data": ' + b"[" * 600 + b"]" * 600 + b"}\n"
    (step,) = started().feed(deep)
    assert isinstance(step, Kill) and "deep" in step.error.evalue


def test_the_deadline_interrupts_then_kills_after_the_grace_period() -> None:
    session = started(timeout=9, now=100.0)
    assert session.wake_at(100.0, heard=False) == 109.0
    assert session.due(108.9, heard=False) is None
    assert session.due(109.0, heard=False) is INTERRUPT
    assert session.wake_at(109.0, heard=False) == 109.0 + GRACE
    assert session.due(109.0 + GRACE - 0.01, heard=False) is None
    kill = session.due(109.0 + GRACE, heard=False)
    assert isinstance(kill, Kill)
    assert (kill.error.code, kill.error.evalue) == (TIMEOUT, "Cell timed out after 9 s")
    done = session.end(kill.error)
    assert session.finished and done.error is not None
    assert (done.error.code, done.error.evalue) == (TIMEOUT, "Cell timed out after 9 s")


def test_a_cell_that_stops_in_time_after_its_deadline_reports_the_timeout_where_it_was() -> None:
    session = started(timeout=2.5, now=0.0)
    assert session.due(2.5, heard=False) is INTERRUPT
    interrupted = CellError(INTERRUPTED, "KeyboardInterrupt", "", "Traceback...", 3)
    (done,) = session.feed(line(Done(interrupted)))
    assert isinstance(done, Done) and done.error is not None
    assert (done.error.code, done.error.evalue) == (TIMEOUT, "Cell timed out after 2.5 s")
    assert (done.error.traceback, done.error.line) == ("Traceback...", 3)


def test_a_cell_that_raised_its_interrupt_gets_patience() -> None:
    session = started()
    session.interrupted(10.0, grace=0.4, patience=1.2)
    assert session.kill_at(heard=False) == 10.4
    assert session.kill_at(heard=True) == 11.2
    assert session.due(10.5, heard=True) is None
    kill = session.due(11.2, heard=True)
    assert isinstance(kill, Kill) and kill.error.code == INTERRUPTED
    assert "did not stop" in kill.error.evalue


def test_a_second_interrupt_does_not_move_the_kill() -> None:
    session = started()
    session.interrupted(10.0)
    session.interrupted(10.3)
    assert session.kill_at(heard=False) == 10.0 + GRACE


def test_an_interrupt_before_the_deadline_is_not_a_timeout() -> None:
    session = started(timeout=9, now=0.0)
    session.interrupted(1.0)
    assert session.wake_at(1.0, heard=False) == 1.0 + GRACE
    kill = session.due(9.0, heard=False)
    assert isinstance(kill, Kill) and kill.error.code == INTERRUPTED


def test_a_cell_is_stopped_once_interrupted_or_out_of_time_until_the_next_begins() -> None:
    """What `Kernel.settle` asks before it sends a cell again to a fresh worker."""
    session = started(timeout=9, now=0.0)
    assert not session.stopped
    session.interrupted(1.0)
    assert session.stopped
    session.end(None)
    assert session.stopped  # still, as its Done is settled
    session.interrupted(2.0)  # late, for the cell that ended
    session.begin(3.0, timeout=1)
    assert not session.stopped
    assert session.due(4.0, heard=False) is INTERRUPT  # the deadline's
    assert session.stopped


def test_an_interrupt_with_no_cell_begun_stops_nothing() -> None:
    session = Session(LIMIT, KEY)
    session.interrupted(1.0)
    assert not session.stopped
    session.begin(2.0)
    assert not session.stopped


def test_a_trickle_of_output_pauses_reading_for_a_moment() -> None:
    session = started()
    session.took(20, now=5.0)
    assert session.paused(5.0)
    assert session.wake_at(5.0, heard=False) == 5.0 + COALESCE
    assert not session.paused(5.0 + COALESCE)


def test_a_flood_or_an_ended_cell_does_not_pause() -> None:
    session = started()
    session.took(1 << 20, now=5.0)
    assert not session.paused(5.0)
    session.took(0, now=5.0)
    assert not session.paused(5.0)
    session.feed(line(Done()))
    session.took(20, now=5.0)
    assert not session.paused(5.0)


def test_a_new_cell_forgets_the_last_ones_clock() -> None:
    session = started(timeout=1, now=0.0)
    assert session.due(1.0, heard=False) is INTERRUPT
    session.took(5, now=1.0)
    session.end(None)
    session.begin(50.0)
    assert session.cell == 2 and not session.finished
    assert session.due(1000.0, heard=False) is None
    assert session.wake_at(50.0, heard=False) is None
    (done,) = session.feed(line(Done()))
    assert isinstance(done, Done) and done.ok  # no timeout carried over


def test_bytes_without_a_newline_stop_the_worker_at_the_limit() -> None:
    session = started()
    chunk = b"x" * (1 << 16)
    for _ in range(LIMIT // len(chunk) - 1):
        assert session.feed(chunk) == []
    (step,) = session.feed(chunk + chunk)
    assert isinstance(step, Kill) and "without a newline" in step.error.evalue
    assert not session.events_open


def test_events_before_an_endless_line_are_kept() -> None:
    session = started()
    steps = session.feed(b'{"t": "sync", "k": "0123456789abcdef"}\n' + b"x" * LIMIT)
    assert [type(s) for s in steps] == [Send, Kill]


def test_a_whole_line_over_the_limit_is_foreign_too() -> None:
    session = Session(1 << 16, KEY)
    session.begin(0.0)
    (step,) = session.feed(b"x" * (1 << 16) + b"\n")
    assert isinstance(step, Kill) and "more than any of its messages" in step.error.evalue


def test_a_line_without_the_workers_key_is_foreign() -> None:
    """A well-formed Done that a cell wrote into the pipe does not end its cell."""
    session = started()
    (step,) = session.feed(b'{"t": "done"}\n')
    assert isinstance(step, Kill) and "key" in step.error.evalue
    assert not session.finished


def test_an_unknown_code_or_a_negative_line_is_foreign() -> None:
    for error in ({"code": "made_up", "line": 1}, {"code": "python_runtime_error", "line": -3},
                  {"code": "timeout", "line": None}):
        fields = {"ename": "E", "evalue": "", "traceback": "", "column": None, **error}
        data = (fastjson.dumps({"t": "done", "error": fields, "k": KEY}) + "\n").encode()
        (step,) = started().feed(data)
        assert isinstance(step, Kill), error


def test_a_driver_may_give_the_deadline_a_shorter_grace() -> None:
    session = Session(LIMIT, KEY)
    session.begin(100.0, 8.5, grace=0.25)
    assert session.due(108.5, heard=False) is INTERRUPT
    assert session.wake_at(108.5, heard=False) == 108.75
    assert session.due(108.7, heard=False) is None
    kill = session.due(108.75, heard=False)
    assert isinstance(kill, Kill) and kill.error.code == TIMEOUT
    assert kill.error.evalue == "Cell timed out after 8.5 s"


def test_the_clock_matters_only_with_a_deadline_an_interrupt_or_a_pause() -> None:
    session = started()
    assert not session.timed(100.0)
    session.took(10, now=100.0)
    assert session.timed(100.0) and not session.timed(100.0 + COALESCE)
    session.interrupted(101.0)
    assert session.timed(200.0)
    assert started(timeout=5).timed(100.0)
