"""The session's state table, row by row: each allowed transition driven through the session
with plain values (bytes, times), and each pair the table leaves out refused, the state
unchanged."""

from __future__ import annotations

import itertools

import pytest

from pyrelune import NotAllowed, fastjson
from pyrelune.supervisor import session as sessions
from pyrelune.supervisor.session import (
    BEGIN,
    DEADLINE,
    END,
    EOF,
    EVENTS_CLOSED,
    EVENTS_OPEN,
    FINISHED,
    FOREIGN,
    GRACE,
    INTERRUPT_SENT,
    INTERRUPTING,
    RUNNING,
    STARTING,
    TIMED_OUT,
    Kill,
    Session,
)
from pyrelune.wire.commands import INTERRUPT
from pyrelune.wire.events import WORKER_DIED, Done, message_limit, to_wire

KEY = "0123456789abcdef"
TIMEOUT = 5.0  # each cell's, from its begin: the first begins at 0
DONE_LINE = (fastjson.dumps(to_wire(Done()) | {"k": KEY}) + "\n").encode()
CELL_STATES = (STARTING, RUNNING, INTERRUPTING, TIMED_OUT, FINISHED)
CELL_EVENTS = (BEGIN, INTERRUPT_SENT, DEADLINE, END)


def in_state(state: str) -> Session:
    """A session brought to `state` the way a driver brings it there."""
    session = Session(message_limit(1 << 20), KEY)
    if state != STARTING:
        session.begin(0.0, TIMEOUT)
    if state == INTERRUPTING:
        session.interrupted(1.0)
    elif state == TIMED_OUT:
        assert session.due(TIMEOUT, heard=False) is INTERRUPT
    elif state == FINISHED:
        session.feed(DONE_LINE)
    assert session.state == state
    return session


def armed(session: Session) -> str:
    kill_at = session.kill_at(heard=False)
    return "nothing armed" if kill_at is None else f"kill at {kill_at:g}"


def fire(session: Session, event: str) -> str:
    """`event` as a driver makes it happen, and what came of it, in words."""
    if event == BEGIN:
        session.begin(10.0, TIMEOUT)
        return f"cell {session.cell}, {armed(session)}"
    if event == INTERRUPT_SENT:
        session.interrupted(10.0)
        return armed(session)
    if event == DEADLINE:  # the first cell's deadline
        due = session.due(TIMEOUT, heard=False)
        return f"{'interrupt' if due is INTERRUPT else type(due).__name__}, {armed(session)}"
    done = session.end(None)
    return "done " + ("ok" if done.error is None else done.error.code)


#: Each row of the cell's table: state, event, next state, and what came of it.
CELL_ROWS = [
    (STARTING, BEGIN, RUNNING, "cell 1, nothing armed"),
    (STARTING, INTERRUPT_SENT, STARTING, "nothing armed"),
    (STARTING, END, FINISHED, "done ok"),
    (RUNNING, INTERRUPT_SENT, INTERRUPTING, f"kill at {10 + GRACE:g}"),
    (RUNNING, DEADLINE, TIMED_OUT, f"interrupt, kill at {TIMEOUT + GRACE:g}"),
    (RUNNING, END, FINISHED, "done ok"),
    (INTERRUPTING, INTERRUPT_SENT, INTERRUPTING, f"kill at {1 + GRACE:g}"),
    (INTERRUPTING, END, FINISHED, "done ok"),
    (TIMED_OUT, INTERRUPT_SENT, TIMED_OUT, f"kill at {TIMEOUT + GRACE:g}"),
    (TIMED_OUT, END, FINISHED, "done timeout"),
    (FINISHED, BEGIN, RUNNING, "cell 2, nothing armed"),
    (FINISHED, INTERRUPT_SENT, FINISHED, "nothing armed"),
]
NOT_ALLOWED = [pair for pair in itertools.product(CELL_STATES, CELL_EVENTS)
               if pair not in sessions.TRANSITIONS]
EVENTS_ROWS = [(EVENTS_OPEN, EOF, EVENTS_CLOSED), (EVENTS_OPEN, FOREIGN, EVENTS_CLOSED)]


def test_the_rows_here_are_the_sessions_table() -> None:
    rows = {(state, event): after for state, event, after, _ in CELL_ROWS}
    rows |= {(state, event): after for state, event, after in EVENTS_ROWS}
    assert rows == sessions.TRANSITIONS


@pytest.mark.parametrize(("state", "event", "after", "outcome"), CELL_ROWS)
def test_each_cell_transition(state: str, event: str, after: str, outcome: str) -> None:
    session = in_state(state)
    assert fire(session, event) == outcome
    assert session.state == after
    assert session.finished is (after == FINISHED)


@pytest.mark.parametrize(("state", "event"), NOT_ALLOWED)
def test_each_event_a_cell_state_does_not_allow_is_refused(state: str, event: str) -> None:
    with pytest.raises(NotAllowed):
        sessions.step(state, event)
    session = in_state(state)
    cell = session.cell
    if event == DEADLINE:  # the clock is only read: a deadline past is no interrupt here
        assert not fire(session, event).startswith("interrupt")
    else:
        with pytest.raises(NotAllowed):
            fire(session, event)
    assert (session.state, session.cell) == (state, cell)


def test_the_worker_closing_its_event_pipe() -> None:
    session = in_state(RUNNING)
    session.events_ended()
    assert session.events == sessions.TRANSITIONS[EVENTS_OPEN, EOF] == EVENTS_CLOSED
    assert not session.events_open and session.state == RUNNING  # its exit ends the cell
    with pytest.raises(NotAllowed):
        session.events_ended()


def test_a_foreign_line_closes_the_event_pipe() -> None:
    session = in_state(RUNNING)
    (kill,) = session.feed(b"not a message\n")
    assert isinstance(kill, Kill) and kill.error.code == WORKER_DIED
    assert session.events == sessions.TRANSITIONS[EVENTS_OPEN, FOREIGN] == EVENTS_CLOSED
    with pytest.raises(NotAllowed):
        session.feed(b"not a message either\n")


def test_a_done_line_with_no_cell_running_is_foreign() -> None:
    session = in_state(FINISHED)
    (kill,) = session.feed(DONE_LINE)
    assert isinstance(kill, Kill) and "no cell running" in kill.error.evalue
    assert (session.state, session.events) == (FINISHED, EVENTS_CLOSED)
