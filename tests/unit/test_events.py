"""The worker-to-session wire: from_wire refuses what to_wire cannot have made.

What it does make is accepted: every end-to-end test runs on it.
"""

from __future__ import annotations

from typing import Any

import pytest

from pyrelune.wire.events import from_wire


@pytest.mark.parametrize("message", [
    [], "done", None, {}, {"t": "other"},
    {"t": "display", "data": {"text/plain": 5}, "metadata": {}, "result": False},
    {"t": "display", "data": {"text/plain": "x"}, "metadata": [], "result": False},
    {"t": "display", "data": {"text/plain": "x"}, "metadata": {}},
    {"t": "display", "data": ["text/plain"], "metadata": {}, "result": True},
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
