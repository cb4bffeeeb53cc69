"""A Jupyter worker's subshells (`worker.subshells`), on a channel that collects replies."""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING, Any

from pyrelune.wire.commands import (
    SUBSHELL,
    SUBSHELL_PROMPT,
    AskInSubshell,
    EndSubshell,
    InterruptSubshells,
    MakeSubshell,
    RunInSubshell,
    SubshellInput,
    to_wire,
)
from pyrelune.wire.events import Reply
from pyrelune.worker.subshells import Subshells

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyrelune.wire.commands import PipeCommand as Command
    from pyrelune.wire.events import InputRequest

#: The longest wait for a subshell's thread: far more than any cell here takes.
WAIT = 30


class Collected:
    """The channel's one use by a subshell: its replies, from its thread."""

    def __init__(self) -> None:
        self.replies: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self.prompt_aside: Callable[[InputRequest], Command | None] | None = None

    def waits_here(self) -> bool:
        """Only the main thread waits for answers; a subshell's thread is not it."""
        return False

    def notify(self, event: Reply) -> None:
        assert event.kind in (SUBSHELL, SUBSHELL_PROMPT)
        self.replies.put({**event.content, "kind": event.kind} if event.kind != SUBSHELL
                         else event.content)


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


def served(namespace: dict[str, Any]) -> tuple[Collected, Callable[[Command], None]]:
    """A subshell "s" over `namespace`, its channel, and the way to send it commands."""
    channel = Collected()
    subshells = Subshells(channel, lambda: namespace, None)  # type: ignore[arg-type]

    def send(command: Command) -> None:
        subshells._take(to_wire(command))

    send(MakeSubshell("s"))
    return channel, send


def test_a_subshell_answers_questions_and_evaluates_user_expressions() -> None:
    channel, send = served({"count_of_things": 42})
    send(AskInSubshell("s", "complete", {"code": "count_of_th", "cursor_pos": 11}, "asked"))
    answered = channel.replies.get(timeout=WAIT)
    assert answered["origin"] == "asked" and answered["status"] == "ok"
    assert "count_of_things" in answered["answer"]["matches"]
    send(RunInSubshell("s", "y = count_of_things", "<In[1]>", "ran",
                       expressions={"half": "y // 2", "bad": "nope"}))
    values = channel.replies.get(timeout=WAIT)["user_expressions"]
    assert values["half"]["data"]["text/plain"] == "21"
    assert values["bad"]["ename"] == "NameError"


def test_a_subshells_input_waits_for_its_own_answer() -> None:
    from pyrelune.worker.kernelloop import Prompter

    channel = Collected()
    namespace: dict[str, Any] = {"ask": Prompter(channel)}  # type: ignore[arg-type]
    subshells = Subshells(channel, lambda: namespace, None)  # type: ignore[arg-type]
    channel.prompt_aside = subshells.prompt  # as the worker's channel has it
    subshells._take(to_wire(RunInSubshell("s", "name = ask('Who? ')", "<In[1]>", "ran")))
    asked = channel.replies.get(timeout=WAIT)
    assert asked == {"origin": "ran", "prompt": "Who? ", "password": False,
                     "kind": SUBSHELL_PROMPT}
    subshells._take(to_wire(SubshellInput("someone-else", "no")))  # no one waits for it
    subshells._take(to_wire(SubshellInput("ran", "Ada")))
    assert channel.replies.get(timeout=WAIT) == {"origin": "ran", "status": "ok"}
    assert namespace["name"] == "Ada"


def test_an_interrupt_ends_a_subshells_running_cell_and_no_other_time() -> None:
    started = threading.Event()
    channel, send = served({"started": started})
    send(RunInSubshell("s", "started.set()\nwhile True:\n    pass", "<In[1]>", "endless"))
    send(RunInSubshell("s", "queued = True", "<In[2]>", "queued"))
    assert started.wait(WAIT)
    send(InterruptSubshells(["endless"]))
    ended = channel.replies.get(timeout=WAIT)
    assert (ended["origin"], ended["status"], ended["ename"]) == (
        "endless", "error", "KeyboardInterrupt")
    assert channel.replies.get(timeout=WAIT) == {"origin": "queued", "status": "aborted"}
    send(InterruptSubshells(["gone"]))  # nothing runs: nothing happens
    send(RunInSubshell("s", "6 * 7", "<In[3]>", "after"))
    assert channel.replies.get(timeout=WAIT)["result"]["data"] == {"text/plain": "42"}
    # Interrupted before it began (its command still on its way): it ends as it begins.
    send(InterruptSubshells(["late"]))
    send(RunInSubshell("s", "ran = True", "<In[4]>", "late", stop_on_error=False))
    late = channel.replies.get(timeout=WAIT)
    assert (late["origin"], late["ename"]) == ("late", "KeyboardInterrupt")
    send(RunInSubshell("s", "'next'", "<In[5]>", "next"))
    assert channel.replies.get(timeout=WAIT)["result"]["data"] == {"text/plain": "'next'"}
