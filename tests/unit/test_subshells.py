"""A Jupyter worker's subshells (`worker.subshells`), on a channel that collects replies."""

from __future__ import annotations

import queue
import threading
from typing import Any

from pyrelune.wire.commands import SUBSHELL, EndSubshell, MakeSubshell, RunInSubshell, to_wire
from pyrelune.wire.events import Reply
from pyrelune.worker.subshells import Subshells

#: The longest wait for a subshell's thread: far more than any cell here takes.
WAIT = 30


class Collected:
    """The channel's one use by a subshell: its replies, from its thread."""

    def __init__(self) -> None:
        self.replies: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()

    def notify(self, event: Reply) -> None:
        assert event.kind == SUBSHELL
        self.replies.put(event.content)


def test_a_failure_aborts_the_cells_queued_behind_it_not_those_sent_after() -> None:
    channel = Collected()
    go = threading.Event()
    namespace: dict[str, Any] = {"go": go}
    subshells = Subshells(channel, lambda: namespace, None)  # type: ignore[arg-type]

    def send(command: MakeSubshell | RunInSubshell | EndSubshell) -> None:
        subshells._take(to_wire(command))

    send(MakeSubshell("s"))
    send(RunInSubshell("s", "go.wait()\n1/0", "<In[1]>", "first"))
    send(RunInSubshell("s", "queued = True", "<In[2]>", "second"))
    go.set()
    failed = channel.replies.get(timeout=WAIT)
    assert (failed["origin"], failed["status"], failed["ename"]) == (
        "first", "error", "ZeroDivisionError")
    assert "1/0" in failed["traceback"] and "subshells.py" not in failed["traceback"]
    assert channel.replies.get(timeout=WAIT) == {"origin": "second", "status": "aborted"}
    assert "queued" not in namespace
    send(RunInSubshell("s", "x = 6\nx * 7", "<In[3]>", "third"))
    ok = channel.replies.get(timeout=WAIT)
    assert ok["status"] == "ok" and ok["result"]["data"] == {"text/plain": "42"}
    send(EndSubshell("s"))
    send(RunInSubshell("s", "None", "<In[4]>", "fourth"))  # made afresh, as in a fresh worker
    assert channel.replies.get(timeout=WAIT) == {"origin": "fourth", "status": "ok"}
