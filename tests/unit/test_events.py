"""The worker-to-session wire: from_wire refuses what to_wire cannot have made.

What it does make is accepted: every end-to-end test runs on it.
"""

from __future__ import annotations

from typing import Any

import pytest

from pyrelune.wire.events import Clear, Display, Payload, Reply, Stream, from_wire, to_wire


@pytest.mark.parametrize("message", [
    [], "done", None, {}, {"t": "other"},
    {"t": "display", "data": {"text/plain": 5}, "metadata": {}, "result": False},
    {"t": "display", "data": {"text/plain": "x"}, "metadata": [], "result": False},
    {"t": "display", "data": {"text/plain": "x"}, "metadata": {}},
    {"t": "display", "data": ["text/plain"], "metadata": {}, "result": True},
    {"t": "display", "data": {}, "metadata": {}, "result": False, "update": True},
    {"t": "display", "data": {}, "metadata": {}, "result": False, "id": 7},
    {"t": "display", "data": {}, "metadata": {}, "result": False, "id": "d", "update": "yes"},
    {"t": "clear"}, {"t": "clear", "later": 1},
    {"t": "stream", "name": "stdin", "text": "x", "o": "c"},
    {"t": "stream", "name": "stdout", "text": b"x", "o": "c"},
    {"t": "stream", "name": "stdout"},
    {"t": "stream", "name": "stdout", "text": "x", "o": 3},
    {"t": "display", "data": {}, "metadata": {}, "result": False, "o": {"msg_id": "m"}},
    {"t": "clear", "later": False, "o": ["c"]},
    {"t": "input", "prompt": 3, "password": False},
    {"t": "input", "prompt": "?"},
    {"t": "payload"}, {"t": "payload", "content": {"text": "x"}},
    {"t": "payload", "content": {"source": 1}}, {"t": "payload", "content": ["page"]},
    {"t": "done", "error": "it failed"},
    {"t": "done", "error": {"code": "timeout"}},
    {"t": "done", "error": {"code": "timeout", "ename": "", "evalue": "", "traceback": "",
                            "line": "3", "column": None}},
])
def test_anything_else_is_refused(message: Any) -> None:
    """A cell can write to the event pipe too: the session must not pass it on."""
    with pytest.raises(ValueError, match="not an event"):
        from_wire(message)


def test_display_ids_and_clears_travel_whole() -> None:
    update = from_wire(to_wire(Display({"text/plain": "x"}, {}, display_id="d", update=True)))
    assert isinstance(update, Display) and (update.display_id, update.update) == ("d", True)
    plain = to_wire(Display({"text/plain": "x"}, {}))
    assert "id" not in plain and "update" not in plain  # nothing more on the common path
    for wait in (False, True):
        clear = from_wire(to_wire(Clear(wait)))
        assert isinstance(clear, Clear) and clear.wait is wait


def test_another_cells_output_names_its_cell_and_the_running_ones_says_nothing_more() -> None:
    """`origin`: a thread's or a task's of a cell other than the one running (worker.origin)."""
    for event in (Stream("stderr", "late\n", "cell 1"), Display({"text/plain": "x"}, {},
                  origin="cell 1"), Clear(True, "cell 1")):
        back = from_wire(to_wire(event))
        assert isinstance(back, type(event)) and back.origin == "cell 1"
    stream = from_wire(to_wire(Stream("stderr", "late\n", "cell 1")))
    assert isinstance(stream, Stream) and (stream.name, stream.text) == ("stderr", "late\n")
    for event in (Stream("stdout", "x"), Display({"text/plain": "x"}, {}), Clear()):
        message = to_wire(event)
        assert "o" not in message  # nothing more on the common path
        back = from_wire(message)
        assert isinstance(back, type(event)) and back.origin is None


def test_a_payload_travels_whole() -> None:
    """An IPython shell's note for the cell's reply (`worker.ipyshell`)."""
    page = {"source": "page", "data": {"text/plain": "help"}, "start": 0}
    back = from_wire(to_wire(Payload(page)))
    assert isinstance(back, Payload) and back.content == page


def test_a_reply_says_what_it_answers() -> None:
    """The codec tells the engine's own answers from the worker's by the query's kind."""
    back = from_wire(to_wire(Reply({"matches": []}, "complete")))
    assert isinstance(back, Reply) and (back.kind, back.content) == ("complete", {"matches": []})
    with pytest.raises(ValueError):
        from_wire(to_wire(Reply({}, "x")) | {"kind": 1})  # a kind is a name


def test_subshell_commands_travel_whole_and_say_so_first() -> None:
    """The worker sets a subshell's lines aside by their start alone (`worker.subshells`)."""
    from pyrelune.wire import commands

    run = commands.RunInSubshell("s1", "x", "<In[2]>", '{"msg_id": "m"}', silent=True,
                                 stop_on_error=False)
    expressions = commands.RunInSubshell("s1", "x", "<In[3]>", "o", expressions={"a": "x"})
    for command in (run, expressions, commands.MakeSubshell("s1"), commands.EndSubshell("s1"),
                    commands.AskInSubshell("s1", "complete", {"code": "x", "cursor_pos": 1},
                                           "o"),
                    commands.SubshellInput("o", "Ada"), commands.SubshellInput("o", None),
                    commands.InterruptSubshells(["o", "p"])):
        line = commands.to_wire(command)
        assert line.startswith(commands.SUBSHELL_LINE)
        back = commands.from_wire(line)
        assert type(back) is type(command) and vars_of(back) == vars_of(command)
    execute = commands.to_wire(commands.Execute('{"op": "subshell"}', "<In[1]>"))
    assert not execute.startswith(commands.SUBSHELL_LINE)  # whatever a cell's source says


def vars_of(command: object) -> dict[str, object]:
    return {name: getattr(command, name) for name in command.__slots__}  # type: ignore[attr-defined]
