"""The supervisor's commands survive their wire form, whatever they carry."""

from __future__ import annotations

from pyrelune.wire import commands, events
from pyrelune.wire.commands import CancelInput, Continue, Execute, InputReply, Reset


def test_execute_keeps_every_field() -> None:
    line = commands.to_wire(Execute("print('é')\n", "<cell 3>", 3, {"a": [1, None]}))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    back = commands.from_wire(line)
    assert isinstance(back, Execute)
    assert (back.source, back.filename, back.cell, back.inputs) == (
        "print('é')\n", "<cell 3>", 3, {"a": [1, None]})


def test_execute_without_inputs_sends_none() -> None:
    back = commands.from_wire(commands.to_wire(Execute("1", "<cell>", 1)))
    assert isinstance(back, Execute) and back.inputs is None and back.origin is None


def test_execute_carries_what_the_host_knows_the_cell_by() -> None:
    """Given back with what the cell's threads write later (see `worker.origin`)."""
    origin = '{"msg_id": "a1", "msg_type": "execute_request"}'
    back = commands.from_wire(commands.to_wire(Execute("1", "<cell>", 1, origin=origin)))
    assert isinstance(back, Execute) and back.origin == origin


def test_execute_carries_a_jupyter_cells_count_and_silence() -> None:
    """What an IPython shell numbers `In` and `Out` by (see `worker.ipyshell`)."""
    plain = commands.to_wire(Execute("1", "<cell>", 1))
    assert b"count" not in plain and b"silent" not in plain and b"history" not in plain
    back = commands.from_wire(plain)
    assert isinstance(back, Execute) and (back.count, back.history, back.silent) == (
        None, True, False)
    for count, history, silent in ((4, True, False), (4, False, False), (4, False, True)):
        back = commands.from_wire(commands.to_wire(Execute("1", "<In[4]>", 1, count=count,
                                                           history=history, silent=silent)))
        assert isinstance(back, Execute) and (back.count, back.history, back.silent) == (
            count, history, silent)


def test_an_input_reply_keeps_its_text() -> None:
    back = commands.from_wire(commands.to_wire(InputReply("a\nb\u2028\ud800")))
    assert isinstance(back, InputReply) and back.value == "a\nb\u2028\ud800"


def test_the_simple_commands_come_back_as_themselves() -> None:
    for command in (Reset(), CancelInput(), Continue()):
        assert type(commands.from_wire(commands.to_wire(command))) is type(command)


def test_the_handshake_lines_in_events_are_what_commands_would_write() -> None:
    """events.CONTINUE is spelled out so that oneshot need not load commands: it must agree."""
    assert commands.to_wire(Continue()) == events.CONTINUE
    assert type(commands.from_wire(events.CONTINUE)) is Continue
