"""The Jupyter codec's state table, row by row: each allowed transition driven through the
codec with plain values (what it sends and commands, the phase it ends in), and each pair the
table leaves out refused, the phase unchanged."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from jupyter_client.session import Session

from pyrelune import NotAllowed
from pyrelune.protocols import jupyter
from pyrelune.protocols.jupyter import (
    ANSWERED,
    ASK,
    ASKING,
    COMM_MESSAGE,
    DONE,
    EVALUATE,
    EVALUATING,
    EVALUATING_WAITING_INPUT,
    EXECUTE,
    HANDLING_COMM,
    IDLE,
    INPUT_REPLY,
    PROMPT,
    REPLY,
    RUNNING,
    WAITING_INPUT,
    JupyterCodec,
)
from pyrelune.protocols.jupytermessages import Builder, Signer
from pyrelune.wire.events import CellError, Done, InputRequest, Reply

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pyrelune.protocols.jupyter import Sent
    from pyrelune.protocols.outcome import Outcome

KEY = b"states"
PHASES = (IDLE, RUNNING, WAITING_INPUT, EVALUATING, EVALUATING_WAITING_INPUT, ASKING, ANSWERED,
          HANDLING_COMM)
EVENTS = (EXECUTE, ASK, COMM_MESSAGE, PROMPT, INPUT_REPLY, EVALUATE, REPLY, DONE)
#: How a fresh codec reaches each phase.
PATHS = {
    IDLE: (), RUNNING: (EXECUTE,), WAITING_INPUT: (EXECUTE, PROMPT),
    EVALUATING: (EXECUTE, EVALUATE), EVALUATING_WAITING_INPUT: (EXECUTE, EVALUATE, PROMPT),
    ASKING: (ASK,), ANSWERED: (ASK, REPLY), HANDLING_COMM: (COMM_MESSAGE,),
}
#: What a finished cell sends: its reply, and idle (after the error, as it failed).
CELL_FAILED = ["iopub error", "shell execute_reply", "iopub status"]
#: Each row of the table: state, event, next state, and what the codec sends and commands
#: on the way (messages as their channel and type).
ROWS = [
    (IDLE, EXECUTE, RUNNING, ["iopub status", "iopub execute_input", "Execute"]),
    (IDLE, ASK, ASKING, ["iopub status", "Query"]),
    (IDLE, COMM_MESSAGE, HANDLING_COMM, ["iopub status", "Query"]),
    (IDLE, DONE, IDLE, []),
    (RUNNING, PROMPT, WAITING_INPUT, ["stdin input_request"]),
    (RUNNING, EVALUATE, EVALUATING, ["Query"]),
    (RUNNING, DONE, IDLE, CELL_FAILED),
    (WAITING_INPUT, INPUT_REPLY, RUNNING, ["InputReply"]),
    (WAITING_INPUT, PROMPT, WAITING_INPUT, ["stdin input_request"]),
    (WAITING_INPUT, EVALUATE, EVALUATING, ["Query"]),
    (WAITING_INPUT, DONE, IDLE, CELL_FAILED),
    (EVALUATING, PROMPT, EVALUATING_WAITING_INPUT, ["stdin input_request"]),
    (EVALUATING, REPLY, EVALUATING, []),
    (EVALUATING, DONE, IDLE, ["shell execute_reply", "iopub status"]),
    (EVALUATING_WAITING_INPUT, INPUT_REPLY, EVALUATING, ["InputReply"]),
    (EVALUATING_WAITING_INPUT, PROMPT, EVALUATING_WAITING_INPUT, ["stdin input_request"]),
    (EVALUATING_WAITING_INPUT, DONE, IDLE, ["shell execute_reply", "iopub status"]),
    (ASKING, REPLY, ANSWERED, ["shell complete_reply"]),
    (ASKING, DONE, IDLE, ["shell complete_reply", "iopub status"]),  # an error reply
    (ANSWERED, REPLY, ANSWERED, []),
    (ANSWERED, DONE, IDLE, ["iopub status"]),
    (HANDLING_COMM, DONE, IDLE, ["iopub status"]),
]
#: What a request or an event gets in a phase that does not allow it: a shell request
#: waits its turn, a prompt is refused, an answer or a reply nobody waits for is dropped.
REFUSALS: dict[str, list[str]] = {
    EXECUTE: [], ASK: [], COMM_MESSAGE: [], PROMPT: ["RefuseInput"], INPUT_REPLY: [],
    REPLY: [],
}
NOT_ALLOWED = [pair for pair in itertools.product(PHASES, EVENTS)
               if pair not in jupyter.TRANSITIONS]


def request(msg_type: str, content: dict[str, Any]) -> list[bytes]:
    session = Session(key=KEY, signature_scheme="hmac-sha256", username="tester")
    return [b"front", *session.serialize(session.msg(msg_type, content))]


def fire(codec: JupyterCodec, event: str) -> Outcome[Sent]:
    """`event` as the codec meets it: a request of the front end, or an engine event.

    Every cell asks for input and for one expression; so its plain end (`Done()`) is
    EVALUATE, and DONE ends it as a failure would (an interrupt).
    """
    if event == EXECUTE:
        return codec.receive(jupyter.SHELL, request("execute_request", {
            "code": "x", "allow_stdin": True, "user_expressions": {"e": "1"}}))
    if event == ASK:
        return codec.receive(jupyter.SHELL, request("complete_request", {"code": "x"}))
    if event == COMM_MESSAGE:
        return codec.receive(jupyter.SHELL, request("comm_msg", {"comm_id": "c", "data": {}}))
    if event == INPUT_REPLY:
        return codec.receive(jupyter.STDIN, request("input_reply", {"value": "v"}))
    if event == PROMPT:
        return codec.output(InputRequest("?"), 0.0)
    if event == REPLY:
        return codec.output(Reply({"matches": []}, "complete"), 0.0)
    failed = CellError("python_runtime_error", "KeyboardInterrupt", "", "")
    running = codec.phase in (RUNNING, WAITING_INPUT)
    return codec.output(Done(failed if event == DONE and running else None), 0.0)


def summary(outcome: Outcome[Sent]) -> list[str]:
    """The outcome in words: messages (channel and type) then commands."""
    return ([f"{channel} {message.msg_type}" for channel, message in outcome.messages]
            + [type(command).__name__ for command in outcome.commands])


def in_phase(phase: str) -> JupyterCodec:
    codec = JupyterCodec(Builder("kernel", "me"), Signer(KEY))
    for event in PATHS[phase]:
        fire(codec, event)
    assert codec.phase == phase
    return codec


def test_the_rows_here_are_the_codecs_table() -> None:
    assert {(state, event): after for state, event, after, _ in ROWS} == jupyter.TRANSITIONS


def test_every_phase_is_reached_and_every_event_used() -> None:
    assert {state for state, _ in jupyter.TRANSITIONS} == set(PHASES)
    assert {event for _, event in jupyter.TRANSITIONS} == set(EVENTS)


@pytest.mark.parametrize(("state", "event", "after", "outcome"), ROWS)
def test_each_transition(state: str, event: str, after: str, outcome: list[str]) -> None:
    codec = in_phase(state)
    assert summary(fire(codec, event)) == outcome
    assert codec.phase == after
    assert codec.busy is (after != IDLE)


@pytest.mark.parametrize(("state", "event"), NOT_ALLOWED)
def test_each_event_a_phase_does_not_allow_is_refused(state: str, event: str) -> None:
    with pytest.raises(NotAllowed):
        jupyter.step(state, event)
    if event == EVALUATE:
        return  # a cell's end, so only a cell's phase meets it (elsewhere a Done is DONE)
    codec = in_phase(state)
    assert summary(fire(codec, event)) == REFUSALS[event]
    assert codec.phase == state


def test_a_request_refused_while_busy_is_served_once_the_worker_is_done() -> None:
    codec = in_phase(ASKING)
    assert summary(fire(codec, EXECUTE)) == []  # queued
    fire(codec, REPLY)
    done = summary(fire(codec, DONE))
    assert done == ["iopub status", "iopub status", "iopub execute_input", "Execute"]
    assert codec.phase == RUNNING
