"""The worker-to-session wire: from_wire refuses what to_wire cannot have made.

What it does make is accepted: every end-to-end test runs on it.
"""

from __future__ import annotations

from typing import Any

import pytest

from pyrelune.wire.events import Clear, Display, from_wire, to_wire


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
    {"t": "input", "prompt": 3, "password": False},
    {"t": "input", "prompt": "?"},
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
