"""The rpc codec's state table, row by row: each allowed transition driven through the codec
with plain values (what it sends and commands, the state it ends in), and each pair the table
leaves out refused, the state unchanged."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from support.rpc_host import check

from pyrelune import NotAllowed
from pyrelune.protocols import rpc
from pyrelune.protocols import rpcmessages as msg
from pyrelune.protocols.outcome import Outcome
from pyrelune.protocols.rpc import (
    DONE,
    EXECUTE,
    IDLE,
    INPUT_REPLY,
    LEAVE,
    NOT_SERVED,
    PROMPT,
    RESET,
    RESETTING,
    RUNNING,
    RUNNING_THEN_RESET,
    SERVE,
    SERVED,
    WAITING_INPUT,
    WAITING_INPUT_THEN_RESET,
)
from pyrelune.wire.events import Done, InputRequest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pyrelune.protocols.rpcmessages import Message

PHASES = (IDLE, RUNNING, WAITING_INPUT, RESETTING, RUNNING_THEN_RESET, WAITING_INPUT_THEN_RESET)
PHASE_EVENTS = (EXECUTE, INPUT_REPLY, RESET, PROMPT, DONE)
CONNECTIONS = (NOT_SERVED, SERVED)
CONNECTION_EVENTS = (SERVE, LEAVE)
#: How a fresh kernel reaches each phase.
PATHS = {
    IDLE: (), RUNNING: (EXECUTE,), WAITING_INPUT: (EXECUTE, PROMPT), RESETTING: (RESET,),
    RUNNING_THEN_RESET: (EXECUTE, RESET), WAITING_INPUT_THEN_RESET: (EXECUTE, PROMPT, RESET),
}
#: Each row of the phase's table: state, event, next state, and what the codec sends and
#: commands on the way (responses by the method they answer, errors by their code).
PHASE_ROWS = [
    (IDLE, EXECUTE, RUNNING, ["response execute.cell", "Execute"]),
    (IDLE, RESET, RESETTING, ["Reset"]),
    (IDLE, DONE, IDLE, []),
    (RUNNING, PROMPT, WAITING_INPUT, ["input_request"]),
    (RUNNING, RESET, RUNNING_THEN_RESET, []),
    (RUNNING, DONE, IDLE, ["execute.done"]),
    (WAITING_INPUT, INPUT_REPLY, RUNNING, ["response execute.input_reply", "InputReply"]),
    (WAITING_INPUT, RESET, WAITING_INPUT_THEN_RESET, []),
    (WAITING_INPUT, DONE, IDLE, ["execute.done"]),
    (RUNNING_THEN_RESET, PROMPT, WAITING_INPUT_THEN_RESET, ["input_request"]),
    (RUNNING_THEN_RESET, RESET, RUNNING_THEN_RESET, []),
    (RUNNING_THEN_RESET, DONE, RESETTING, ["execute.done", "Reset"]),
    (WAITING_INPUT_THEN_RESET, INPUT_REPLY, RUNNING_THEN_RESET,
     ["response execute.input_reply", "InputReply"]),
    (WAITING_INPUT_THEN_RESET, RESET, WAITING_INPUT_THEN_RESET, []),
    (WAITING_INPUT_THEN_RESET, DONE, RESETTING, ["execute.done", "Reset"]),
    (RESETTING, RESET, RESETTING, []),
    (RESETTING, DONE, IDLE, ["response kernel.reset"]),
]
#: What a request or an event gets in a phase that does not allow it.
REFUSALS = {
    EXECUTE: [f"error {msg.KERNEL_BUSY}"],
    INPUT_REPLY: [f"error {msg.INVALID_REQUEST}"],
    PROMPT: [],  # no cell waits in it: nothing is shown
}
NOT_ALLOWED = [pair for pair in itertools.product(PHASES, PHASE_EVENTS)
               if pair not in rpc.TRANSITIONS]


def fire(kernel: rpc.RpcCodec, event: str) -> Outcome[Message]:
    """`event` as the codec meets it: a request of the served client, or an engine event."""
    if event == PROMPT:
        return kernel.output(InputRequest("?"), 0.0)
    if event == DONE:
        return kernel.output(Done(), 0.0)
    params: dict[str, Any] = {EXECUTE: {"cell_id": "c", "source": "x"},
                              INPUT_REPLY: {"value": "v"}, RESET: {}}[event]
    return kernel.receive(json.dumps({"kind": "request", "id": event, "method": event,
                                      "params": params}))


def summary(outcome: Outcome[Message]) -> list[str]:
    """The outcome, schema-checked, in words: messages then commands."""
    out = []
    for message in outcome.messages:
        decoded = json.loads(msg.encode(message))
        check(decoded, decoded.get("id"))  # a request's id is its method's name here
        if decoded["kind"] == "event":
            out.append(decoded["event"])
        elif "error" in decoded:
            out.append(f"error {decoded['error']['code']}")
        else:
            out.append(f"response {decoded['id']}")
    return out + [type(command).__name__ for command in outcome.commands]


def in_phase(phase: str) -> rpc.RpcCodec:
    kernel = rpc.RpcCodec()
    kernel.connect()
    for event in PATHS[phase]:
        fire(kernel, event)
    assert kernel.phase == phase
    return kernel


def test_the_rows_here_are_the_codecs_table() -> None:
    rows = {(state, event): after for state, event, after, _ in PHASE_ROWS}
    rows |= {(state, event): after for state, event, after in CONNECTION_ROWS}
    assert rows == rpc.TRANSITIONS


@pytest.mark.parametrize(("state", "event", "after", "outcome"), PHASE_ROWS)
def test_each_phase_transition(state: str, event: str, after: str, outcome: list[str]) -> None:
    kernel = in_phase(state)
    assert summary(fire(kernel, event)) == outcome
    assert kernel.phase == after
    assert kernel.state == rpc.SPEC_STATE[after]
    assert kernel.busy is (after != IDLE)


@pytest.mark.parametrize(("state", "event"), NOT_ALLOWED)
def test_each_event_a_phase_does_not_allow_is_refused(state: str, event: str) -> None:
    with pytest.raises(NotAllowed):
        rpc.step(state, event)
    kernel = in_phase(state)
    assert summary(fire(kernel, event)) == REFUSALS[event]
    assert kernel.phase == state


def test_a_busy_answer_names_the_reset_or_the_cell() -> None:
    for phase, what in ((RESETTING, "a reset"), (RUNNING_THEN_RESET, "cell 'c'")):
        (busy,) = fire(in_phase(phase), EXECUTE).messages
        assert f"Kernel busy: {what} is running" in busy["error"]["message"]


def test_the_spec_names_three_states() -> None:
    assert set(rpc.SPEC_STATE) == set(PHASES)
    assert set(rpc.SPEC_STATE.values()) == {IDLE, RUNNING, WAITING_INPUT}


CONNECTION_ROWS = [
    (NOT_SERVED, SERVE, SERVED),
    (SERVED, SERVE, SERVED),
    (SERVED, LEAVE, NOT_SERVED),
]


def connected(state: str, token: str | None) -> rpc.RpcCodec:
    kernel = rpc.RpcCodec(token=token)
    if token is None and state == NOT_SERVED:
        kernel.leave()
    assert kernel.connection == state
    return kernel


def serve(kernel: rpc.RpcCodec) -> list[str]:
    """A client comes: served at once without a token, else once it sends it."""
    if not kernel.needs_token:
        return summary(kernel.connect())
    auth = json.dumps({"kind": "request", "id": "kernel.auth", "method": "kernel.auth",
                       "params": {"token": "tok"}})
    return summary(kernel.knock(rpc.Guest(), auth))


@pytest.mark.parametrize(("state", "token"), [(NOT_SERVED, "tok"), (NOT_SERVED, None),
                                              (SERVED, None)])
def test_serve(state: str, token: str | None) -> None:
    kernel = connected(state, token)
    fire(kernel, EXECUTE)
    kernel.output(InputRequest("?"), 0.0)  # held, unless served
    shown = serve(kernel)
    assert kernel.connection == rpc.TRANSITIONS[state, SERVE] == SERVED
    first = "response kernel.auth" if token else "kernel.ready"
    assert shown[0] == first and shown[1:] == ["input_request"] + (["Admit"] if token else [])


def test_leave() -> None:
    kernel = connected(SERVED, None)
    kernel.leave()
    assert kernel.connection == rpc.TRANSITIONS[SERVED, LEAVE] == NOT_SERVED
    fire(kernel, EXECUTE)
    assert summary(kernel.output(InputRequest("?"), 0.0)) == []  # held for the next client


def test_the_connection_events_not_allowed() -> None:
    assert [pair for pair in itertools.product(CONNECTIONS, CONNECTION_EVENTS)
            if pair not in rpc.TRANSITIONS] == [(NOT_SERVED, LEAVE)]
    kernel = connected(NOT_SERVED, "tok")
    with pytest.raises(NotAllowed):
        kernel.leave()
    assert kernel.connection == NOT_SERVED
