"""The Jupyter kernel's state machine: requests and engine events in, messages and commands out.

No I/O and no clock of its own, as the rpc codec (h11's way): the driver
(`modes.jupyter`) hands it each message's frames with the channel they came
on, and each engine event with the time; it sends the messages returned on
their channels and carries out the commands (run a cell, ask the worker,
interrupt, answer `input()`, shut down).

Shell requests are served one at a time, in order, as ipykernel serves them:
one that needs the worker (execute, complete, inspect) holds the queue until
the worker's answer is in. Control requests (interrupt, shutdown,
kernel_info, history, comm_info, usage: the engine's to measure, and
the subshells' create, list and delete) are answered at once, even while a
cell runs. A shell request naming a subshell in its header (JEP 91) is
served at once too, as ipykernel 7's subshell threads serve it (`_ASIDE`):
an execute_request, a question or a comm message goes to the worker, where
the subshell's thread serves it beside the main shell's cell; it is not a
phase (the phases are the main shell's) but an entry of `_in_subshells` or
`_asked_aside`, ended by its Reply, and a cell's `input()` is an entry of
`_prompted_aside` until its input_reply. An interrupt ends the main shell's
cell, or with none the subshells' (`interrupt`). Other requests naming a
subshell take their turn in the one queue; one naming a
subshell there is not is answered with an error, unrun. A shell request
sent on control (the messaging spec allows every one there) is answered on
control; one that needs the worker takes its turn in the shell queue,
behind a running cell: the worker runs one thing at a time (ipykernel would
run it in its control thread, next to the cell). Every request is wrapped
in `status` busy and idle on IOPub, with the request as parent; a cell's
output goes out under its execute_request, as does what a thread or a
task it started writes later, between cells or while another cell runs (the
worker names the cell: `Stream.origin`, the request's header as JSON); what
a comm handler sends while it handles a subshell's request goes under that
request (`Comm.origin`).

What the worker is doing for it is one phase, and every change of phase is
looked up in one table, `TRANSITIONS` ((phase, event) -> next phase), as
the rpc codec's: a cell running, waiting in `input()`, its
`user_expressions` being evaluated after it, a question (completion,
inspection, is_complete) asked or answered, a comm message handled. An
event a phase does not allow raises `NotAllowed`, which the codec turns
into what Jupyter expects: an `input_reply` nobody waits for is dropped, a
prompt with no cell to answer it is refused, an answer nobody asked for is
ignored. Control requests and the requests answered at once (kernel_info,
history, comm_info, interrupt, shutdown) change no phase, so they are not in
the table; a shutdown's restart or exit is the driver's.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from datetime import datetime, timezone

from pyrelune import NotAllowed, __version__, fastjson, transition
from pyrelune.protocols.colourtb import coloured
from pyrelune.protocols.jupytermessages import PROTOCOL_VERSION, BadMessage, Builder, Message, parse
from pyrelune.protocols.outcome import Outcome
from pyrelune.shaping.livecaps import DisplayBudget, StreamCap
from pyrelune.shaping.streaming import INTERVAL, Coalescer
from pyrelune.wire import debugstart, events
from pyrelune.wire.commands import (
    INTERRUPT,
    SUBSHELL,
    SUBSHELL_PROMPT,
    AskInSubshell,
    Debug,
    EndSubshell,
    Execute,
    InputReply,
    InterruptSubshells,
    MakeSubshell,
    Query,
    RefuseInput,
    RunInSubshell,
    Shutdown,
    SubshellInput,
)
from pyrelune.wire.events import (
    COMM_TYPES,
    Clear,
    Comm,
    Display,
    Done,
    InputRequest,
    Payload,
    Reply,
    Stream,
)
from pyrelune.wire.profile import HostProfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TypeAlias

    from pyrelune.protocols.debugger import DebugSession, Moves
    from pyrelune.protocols.jupytermessages import Signer
    from pyrelune.wire.events import CellError, Event

    #: What a Jupyter kernel sends: a channel's name and a message.
    Sent: TypeAlias = tuple[str, Message]

SHELL, CONTROL, STDIN, IOPUB = "shell", "control", "stdin", "iopub"
DEBUG = "debug_request"
#: The names an error without a Python exception (the worker died, ...) goes by.
_ENAMES = {events.WORKER_DIED: "WorkerDied", events.TIMEOUT: "Timeout"}
#: What a Jupyter front end shows: any type but pyrelune's own (which `_theirs` drops).
SHOWN = (events.ANY_MIME,)
# The phases: what the worker is doing for the codec.
IDLE = "idle"
RUNNING = "running"  # an execute_request's cell
WAITING_INPUT = "waiting_input"  # the cell (or a thread of it) is in input()
EVALUATING = "evaluating"  # the cell is over; its user_expressions are being evaluated
EVALUATING_WAITING_INPUT = "evaluating_waiting_input"  # an expression called input()
ASKING = "asking"  # a question (complete, inspect, is_complete) the worker answers
ANSWERED = "answered"  # its reply is sent; the worker's end of it is due
HANDLING_COMM = "handling_comm"  # a comm message from the front end, in the worker
# What moves them: shell requests served, stdin replies, engine events.
EXECUTE = "execute_request"
ASK = "question"  # complete_request, inspect_request, is_complete_request
COMM_MESSAGE = "comm_message"  # comm_open, comm_msg, comm_close
PROMPT = "input_request"  # the worker asks for input()
INPUT_REPLY = "input_reply"
EVALUATE = "user_expressions"  # the cell ended well with expressions to evaluate
REPLY = "reply"  # the worker's answer (a question's, or the expressions' values)
DONE = "done"  # the worker's end of what it was doing (or its death)

#: Every transition: (phase, event) -> next phase; a pair not here is not allowed.
TRANSITIONS: dict[tuple[str, str], str] = {
    (IDLE, EXECUTE): RUNNING,
    (IDLE, ASK): ASKING,
    (IDLE, COMM_MESSAGE): HANDLING_COMM,
    (IDLE, DONE): IDLE,  # not a request's: a worker lost between requests
    (RUNNING, PROMPT): WAITING_INPUT,
    (RUNNING, EVALUATE): EVALUATING,
    (RUNNING, DONE): IDLE,
    (WAITING_INPUT, INPUT_REPLY): RUNNING,
    (WAITING_INPUT, PROMPT): WAITING_INPUT,  # asked again: the front end is prompted again
    # The cell's end while a thread of it waits in input(), or interrupted inside it.
    (WAITING_INPUT, EVALUATE): EVALUATING,
    (WAITING_INPUT, DONE): IDLE,
    (EVALUATING, PROMPT): EVALUATING_WAITING_INPUT,
    (EVALUATING, REPLY): EVALUATING,
    (EVALUATING, DONE): IDLE,
    (EVALUATING_WAITING_INPUT, INPUT_REPLY): EVALUATING,
    (EVALUATING_WAITING_INPUT, PROMPT): EVALUATING_WAITING_INPUT,
    (EVALUATING_WAITING_INPUT, DONE): IDLE,
    (ASKING, REPLY): ANSWERED,
    (ASKING, DONE): IDLE,  # unanswered: the request gets an error reply
    (ANSWERED, REPLY): ANSWERED,  # a second answer: the first was the reply
    (ANSWERED, DONE): IDLE,
    (HANDLING_COMM, DONE): IDLE,  # comm messages have no reply
}
#: The phases a cell is in (`_cell` is set): its output is counted against its caps.
CELL_PHASES = frozenset({RUNNING, WAITING_INPUT, EVALUATING, EVALUATING_WAITING_INPUT})


def step(phase: str, event: str) -> str:
    """The phase `event` moves `phase` to; raises `NotAllowed` if it may not happen there."""
    return transition(TRANSITIONS, phase, event)


#: The history's session number: this kernel keeps only its own session's cells.
SESSION = 1
HELP_LINKS = [
    {"text": "Python Reference",
     "url": "https://docs.python.org/{}.{}".format(*sys.version_info[:2])},
    {"text": "NumPy Reference", "url": "https://numpy.org/doc/stable/reference/"},
    {"text": "Matplotlib Reference", "url": "https://matplotlib.org/stable/contents.html"},
    {"text": "pandas Reference", "url": "https://pandas.pydata.org/pandas-docs/stable/"},
]


def profile(cap: int, shell: str, snapshot_max: int = 0) -> HostProfile:
    """A Jupyter front end: it shows a cell's output while it runs, answers its `input()`
    on stdin, and talks to its widgets (comms)."""
    return HostProfile(cap, interactive=True, comms=True, shown=SHOWN, shell=shell,
                       snapshot_max=snapshot_max)


class _Cell:
    """The execute_request being run, and what its reply needs."""

    __slots__ = ("cap", "channel", "count", "error", "origin", "payload", "request", "silent",
                 "stop_on_error", "user_expressions")

    def __init__(self, request: Message, count: int, channel: str) -> None:
        content = request.content
        self.request = request
        self.channel = channel  # what it came on (shell, or control): its reply's
        self.origin = fastjson.dumps(request.header)  # how the worker names it (RunCell)
        self.count = count
        self.silent = bool(content.get("silent", False))
        self.stop_on_error = bool(content.get("stop_on_error", True))
        expressions = content.get("user_expressions") or {}
        self.user_expressions = expressions if isinstance(expressions, dict) else {}
        self.error: CellError | None = None
        self.payload: list[dict[str, Any]] = []  # pages (`obj?`) for the front end's pager
        self.cap: StreamCap | None = None  # a subshell's cell's own (the main shell's: codec's)


class JupyterCodec:
    """The protocol state of one kernel, for every front end connected to it."""

    def __init__(self, builder: Builder, signer: Signer, limit: int | None = None) -> None:
        self.builder = builder
        self.signer = signer
        self.execution_count = 0
        self.history: list[tuple[int, str]] = []  # (execution count, source) of stored cells
        self.phase = IDLE  # what the worker does for the codec (`TRANSITIONS`)
        # Requests waiting for the current one, each with the channel it came on (its reply's).
        self._queue: deque[tuple[str, Message]] = deque()
        self._current: Message | None = None  # the shell request the worker is serving
        self._current_channel = SHELL  # the channel it came on: its reply's
        self._cell: _Cell | None = None  # the execute_request among them, while it runs
        self._usage_asked: deque[tuple[str, Message]] = deque()  # the engine answers in order
        self._stopped_at: datetime | None = None  # an interrupt that found nothing to stop
        self._last_cell: Message | None = None  # the parent of output between cells
        self._named: tuple[str, Message | None] = ("", None)  # the last origin and its cell
        self._coalescer = Coalescer()
        self._cap = StreamCap() if limit is None else StreamCap(limit)
        self._displays = DisplayBudget(INTERVAL)
        self.comms: dict[str, dict[str, str]] = {}  # comm_id: {"target_name": ...} (comm_info)
        self._debugger: DebugSession | None = None  # from the first debug_request on
        self._debug_parent: Message | None = None  # the last debug_request: its events' parent
        self._debug_asked: tuple[Message | None, dict[str, Any] | None] = (None, None)
        self.subshells: list[str] = []  # the subshells' ids, oldest first (list_subshell)
        self._in_subshells: dict[str, _Cell] = {}  # their cells sent to the worker, by origin
        self._asked_aside: dict[str, Message] = {}  # their questions and comm messages, too
        self._prompted_aside: dict[str, Message] = {}  # their input_requests, by origin

    @property
    def busy(self) -> bool:
        """Whether the worker is serving a shell request (others wait in the queue); an
        interrupt has something to stop."""
        return self.phase != IDLE

    @property
    def busy_aside(self) -> bool:
        """Whether a subshell serves a request (an interrupt of an idle main shell's ends it:
        see `interrupt`)."""
        return bool(self._in_subshells or self._asked_aside)

    def aside_requests(self) -> frozenset[str]:
        """The subshells' requests sent to the worker and not over, by origin."""
        return frozenset((*self._in_subshells, *self._asked_aside))

    def interrupt(self) -> Outcome[Sent]:
        """What an interrupt ends: the main shell's cell (or question) if one runs, as
        ipykernel's SIGINT reaches its main thread; else every subshell's running request;
        else nothing, but the cell the front end sent just before may still be on its way
        (`interrupted_idle`, left to the caller, which knows when the interrupt came)."""
        outcome: Outcome[Sent] = Outcome()
        if self.busy:
            outcome.commands.append(INTERRUPT)
        elif self.busy_aside:
            outcome.commands.append(InterruptSubshells(self._first_aside()))
        return outcome

    def _first_aside(self) -> list[str]:
        """Each subshell's first request not over (running, or on its way), by origin; and
        every question (it runs in turn with the cells, and is quick)."""
        first: dict[object, str] = {}
        for origin, cell in self._in_subshells.items():
            first.setdefault(cell.request.header.get("subshell_id"), origin)
        return [*first.values(), *self._asked_aside]

    @property
    def flush_at(self) -> float | None:
        """When `tick()` has output to send (time.monotonic), if it has any."""
        debugging = self._debugger.flush_at if self._debugger is not None else None
        due = [at for at in (self._coalescer.flush_at, self._displays.flush_at, debugging)
               if at is not None]
        return min(due) if due else None

    def starting(self) -> Outcome[Sent]:
        """The kernel's first message: status `starting` on IOPub."""
        outcome: Outcome[Sent] = Outcome()
        self._status(outcome, "starting", None)
        return outcome

    def welcome(self, subscription: bytes) -> Outcome[Sent]:
        """`iopub_welcome` for a subscriber that just subscribed to `subscription` (JEP 65):
        under its own topic, so that it gets it; one that is not UTF-8 gets none, as from
        ipykernel. Then the kernel's state, as a status of no request's: a subscriber that
        came after the kernel's last status learns it. jupyter_server needs that: its own
        IOPub subscriber, connected as the kernel starts, holds a WebSocket's opening until
        it has seen a status other than `starting` (asking kernel_info again only every
        half second), and the kernel may have answered its first requests before that
        subscriber's connection, refused while the kernel was starting, was made again."""
        outcome: Outcome[Sent] = Outcome()
        try:
            topic = subscription.decode("utf-8")
        except UnicodeDecodeError:
            return outcome
        outcome.messages.append((IOPUB, self.builder.publish(
            "iopub_welcome", {"subscription": topic}, None, topic=subscription)))
        self._status(outcome, "busy" if self.busy else "idle", None)
        return outcome

    # -- requests ----------------------------------------------------------------------

    def receive(self, channel: str, frames: Sequence[bytes]) -> Outcome[Sent]:
        """One message off `channel`; a bad one is dropped, its problem given to log."""
        outcome: Outcome[Sent] = Outcome()
        try:
            message = parse(frames, self.signer)
        except BadMessage as exc:
            outcome.problems.append(f"dropped a message on {channel}: {exc}")
            return outcome
        if channel == STDIN:
            self._on_stdin(message, outcome)
        elif channel == SHELL and self._unknown_subshell(message, outcome):
            pass
        elif (channel == SHELL and message.msg_type in _ASIDE
              and message.header.get("subshell_id") is not None):
            # At once, beside the main shell's cell: a cell, a question or a comm message to
            # the subshell's thread; what the codec answers itself, answered now.
            if message.msg_type == EXECUTE:
                self._run_in_subshell(message, outcome)
            else:
                self._handle(channel, message, outcome)
        elif channel == CONTROL and message.msg_type in _CONTROL:
            self._handle(CONTROL, message, outcome)
        elif self.busy or self._debug_holds():
            self._queue.append((channel, message))  # a shell request on control too
        else:
            self._handle(channel, message, outcome)
        return outcome

    def _unknown_subshell(self, request: Message, outcome: Outcome[Sent]) -> bool:
        """Whether `request` names a subshell there is not (deleted, or never made): then it
        is answered at once with an error, unrun, as ipykernel answers it (a message with
        no reply, a comm's, gets only busy and idle, its client's sign that it is over)."""
        subshell = request.header.get("subshell_id")
        if subshell is None or subshell in self.subshells:
            return False
        self._status(outcome, "busy", request)
        if request.msg_type.endswith("_request"):
            self._reply(outcome, SHELL, request, _no_subshell(subshell))
        self._status(outcome, "idle", request)
        return True

    def _handle(self, channel: str, request: Message, outcome: Outcome[Sent]) -> None:
        """Serve `request`: busy, the reply (or the worker's command), idle once answered."""
        self._status(outcome, "busy", request)
        kind = request.msg_type
        handler = _HANDLERS.get(kind)
        if handler is None:
            outcome.problems.append(f"unknown message type on {channel}: {kind!r}")
            self._status(outcome, "idle", request)
            return
        if handler(self, channel, request, outcome):
            self._status(outcome, "idle", request)

    def _reply(self, outcome: Outcome[Sent], channel: str, request: Message,
               content: dict[str, Any]) -> None:
        outcome.messages.append((channel, self.builder.reply(request, content)))

    def _status(self, outcome: Outcome[Sent], state: str, parent: Message | None) -> None:
        self._publish(outcome, "status", {"execution_state": state}, parent)

    def _publish(self, outcome: Outcome[Sent], msg_type: str, content: dict[str, Any],
                 parent: Message | None, metadata: dict[str, Any] | None = None) -> None:
        outcome.messages.append((IOPUB, self.builder.publish(msg_type, content, parent,
                                                             metadata)))

    # Each handler answers True when the request is over (idle follows at once).

    def _on_kernel_info(self, channel: str, request: Message, outcome: Outcome[Sent]) -> bool:
        self._reply(outcome, channel, request, kernel_info())
        return True

    def _counted(self, channel: str, request: Message,
                 outcome: Outcome[Sent]) -> tuple[_Cell, str, bool] | None:
        """A cell for `request`, numbered and kept in the history if it is to be, its input
        published; with its filename and whether it is stored. None: it has no code (its
        error reply is sent)."""
        content = request.content
        code = content.get("code")
        if not isinstance(code, str):
            self._reply(outcome, channel, request, _error_content(
                "ValueError", "execute_request without code", self.execution_count))
            return None
        stored = bool(content.get("store_history", True)) and not content.get("silent", False)
        if stored:
            self.execution_count += 1
            self.history.append((self.execution_count, code))
            filename = f"<In[{self.execution_count}]>"
        else:
            filename = f"<In[{self.execution_count}] silent>"
        cell = _Cell(request, self.execution_count, channel)
        if not cell.silent:
            self._publish(outcome, "execute_input", {"code": code,
                                                     "execution_count": cell.count}, request)
        return cell, filename, stored

    def _on_execute(self, channel: str, request: Message, outcome: Outcome[Sent]) -> bool:
        counted = self._counted(channel, request, outcome)
        if counted is None:
            return True
        cell, filename, stored = counted
        code, silent = request.content["code"], cell.silent
        self.phase = step(self.phase, EXECUTE)
        self._cell = cell
        self._current = self._last_cell = request
        self._current_channel = channel
        self._cap.begin()
        self._displays.begin()
        outcome.commands.append(Execute(code, filename, origin=cell.origin, count=cell.count,
                                        history=stored, silent=silent))
        if self._overtaken(request):
            outcome.commands.append(INTERRUPT)  # after the Execute: it stops this cell
        return False

    def _on_complete(self, channel: str, request: Message, outcome: Outcome[Sent]) -> bool:
        return self._ask(request, outcome, "complete", _code_and_cursor(request.content),
                         channel)

    def _on_inspect(self, channel: str, request: Message, outcome: Outcome[Sent]) -> bool:
        args = _code_and_cursor(request.content)
        level = request.content.get("detail_level", 0)
        args["detail_level"] = level if level in (0, 1) else 0
        return self._ask(request, outcome, "inspect", args, channel)

    def _ask(self, request: Message, outcome: Outcome[Sent], kind: str,
             args: dict[str, Any], channel: str = SHELL) -> bool:
        """Ask the worker for `request`, which came on `channel` (its reply goes there); one
        naming a subshell, that subshell's thread, at once (its Reply of kind `SUBSHELL`
        answers it)."""
        subshell = request.header.get("subshell_id")
        if channel == SHELL and subshell is not None:
            origin = fastjson.dumps(request.header)
            self._asked_aside[origin] = request
            outcome.commands.append(AskInSubshell(subshell, kind, args, origin))
            return False
        self.phase = step(self.phase, COMM_MESSAGE if kind == "comm" else ASK)
        self._current = request
        self._current_channel = channel
        outcome.commands.append(Query(kind, args))
        return False

    def _on_is_complete(self, channel: str, request: Message, outcome: Outcome[Sent]) -> bool:
        code = request.content.get("code")
        return self._ask(request, outcome, "is_complete",
                         {"code": code if isinstance(code, str) else ""}, channel)

    def _on_history(self, channel: str, request: Message, outcome: Outcome[Sent]) -> bool:
        self._reply(outcome, channel, request,
                    {"status": "ok", "history": history(self.history, request.content)})
        return True

    def _on_comm_info(self, channel: str, request: Message, outcome: Outcome[Sent]) -> bool:
        target = request.content.get("target_name")
        comms = {comm_id: info for comm_id, info in self.comms.items()
                 if target is None or info.get("target_name") == target}
        self._reply(outcome, channel, request, {"status": "ok", "comms": comms})
        return True

    def _on_comm(self, channel: str, request: Message, outcome: Outcome[Sent]) -> bool:
        """comm_open, comm_msg, comm_close from the front end: to the comm's handler in the
        worker, in turn with the other shell requests (none is answered: idle follows)."""
        content = request.content
        comm_id = content.get("comm_id")
        if not isinstance(comm_id, str) or (request.msg_type == "comm_open" and not isinstance(
                content.get("target_name"), str)):
            outcome.problems.append(f"dropped a {request.msg_type} without comm_id or target")
            return True
        if request.msg_type == "comm_open":
            self.comms[comm_id] = {"target_name": content["target_name"]}
        elif request.msg_type == "comm_close":
            self.comms.pop(comm_id, None)
        from base64 import b64encode

        return self._ask(request, outcome, "comm", {
            "msg_type": request.msg_type, "content": content, "metadata": request.metadata,
            "header": request.header, "parent_header": request.parent_header,
            "buffers": [b64encode(buffer).decode() for buffer in request.buffers]}, channel)

    def _on_interrupt(self, channel: str, request: Message, outcome: Outcome[Sent]) -> bool:
        ended = self.interrupt()
        outcome.commands.extend(ended.commands)
        if not ended.commands:
            self.interrupted_idle(sent_at(request.header))
        self._reply(outcome, channel, request, {"status": "ok"})
        return True

    def interrupted_idle(self, at: datetime | None) -> None:
        """An interrupt sent `at` (a SIGINT: when it came) found nothing to stop: the cell it
        followed may not have arrived yet (each channel is a connection of its own, and one
        already up overtakes one being made). The next execute_request sent before it is
        interrupted as it starts (`_overtaken`)."""
        if at is not None:
            self._stopped_at = at

    def _overtaken(self, request: Message) -> bool:
        """Whether an interrupt that came first was sent after `request` (by header dates);
        the remembered interrupt is used up either way."""
        stopped_at, self._stopped_at = self._stopped_at, None
        if stopped_at is None:
            return False
        sent = sent_at(request.header)
        return sent is not None and sent <= stopped_at

    def _on_usage(self, channel: str, request: Message, outcome: Outcome[Sent]) -> bool:
        """The kernel's use of the machine: the engine measures it, busy or not."""
        self._usage_asked.append((channel, request))
        outcome.commands.append(Query("usage", {}))
        return False

    def _run_in_subshell(self, request: Message, outcome: Outcome[Sent]) -> None:
        """An execute_request naming a subshell: to that subshell's thread in the worker at
        once, whatever the main shell runs; its Reply (`SUBSHELL`) ends it."""
        self._status(outcome, "busy", request)
        counted = self._counted(SHELL, request, outcome)
        if counted is None:
            self._status(outcome, "idle", request)
            return
        cell, filename, _ = counted
        cell.cap = StreamCap(self._cap.limit)  # capped as the main shell's cells are
        self._in_subshells[cell.origin] = cell
        outcome.commands.append(RunInSubshell(
            request.header["subshell_id"], request.content["code"], filename, cell.origin,
            cell.silent, cell.stop_on_error, cell.user_expressions))

    def _subshell_done(self, outcome: Outcome[Sent], content: dict[str, Any]) -> None:
        """A subshell's request is over (its Reply of kind `SUBSHELL`): a cell's result, its
        error, its reply with its user_expressions' values; a question's reply."""
        origin = content.get("origin")
        self._prompted_aside.pop(origin, None)  # type: ignore[arg-type]
        asked = self._asked_aside.pop(origin, None)  # type: ignore[arg-type]
        if asked is not None:
            self._answered_aside(outcome, asked, content)
            return
        cell = self._in_subshells.pop(origin, None)  # type: ignore[arg-type]
        if cell is None:
            return  # not one of ours (a forged line, or told lost already)
        if cell.cap is not None and (tail := cell.cap.release()):
            for stream in tail:  # what was left out, said under the cell
                stream.origin = cell.origin
            self._streams(outcome, tail)
        status = content.get("status")
        if status == "aborted":
            self._reply(outcome, SHELL, cell.request, {"status": "aborted",
                                                       "execution_count": cell.count})
        elif status == "ok":
            result = content.get("result")
            if isinstance(result, dict) and not cell.silent:
                self._publish(outcome, "execute_result", {
                    "data": _theirs(result.get("data") or {}),
                    "metadata": _theirs(result.get("metadata") or {}),
                    "execution_count": cell.count}, cell.request)
            values = content.get("user_expressions")
            self._reply(outcome, SHELL, cell.request, {
                "status": "ok", "execution_count": cell.count,
                "user_expressions": values if isinstance(values, dict) else {}, "payload": []})
        else:
            ename, evalue = str(content.get("ename", "Error")), str(content.get("evalue", ""))
            reply = _error_content(ename, evalue, cell.count, coloured(
                str(content.get("traceback", "")), ename, evalue))
            if not cell.silent and reply["traceback"]:
                self._publish(outcome, "error", {k: reply[k] for k in (
                    "ename", "evalue", "traceback")}, cell.request)
            self._reply(outcome, SHELL, cell.request, reply)
        self._status(outcome, "idle", cell.request)

    def _answered_aside(self, outcome: Outcome[Sent], request: Message,
                        content: dict[str, Any]) -> None:
        """A subshell's question answered (or failed: an error reply, as the main shell's
        gets when its worker fails to answer), or its comm message handled; then idle."""
        answer = content.get("answer")
        if content.get("status") == "ok" and isinstance(answer, dict):
            self._reply(outcome, SHELL, request, {"status": "ok", **answer})
        elif request.msg_type.endswith("_request"):
            ename = str(content.get("ename", "Error"))
            evalue = str(content.get("evalue", "no reply"))
            self._reply(outcome, SHELL, request, {
                "status": "error", "ename": ename, "evalue": evalue,
                "traceback": coloured(str(content.get("traceback", "")), ename, evalue)})
        self._status(outcome, "idle", request)

    def _prompt_aside(self, outcome: Outcome[Sent], content: dict[str, Any]) -> None:
        """A subshell's `input()`: an input_request under its execute_request, if the front
        end allows stdin there; else refused at once."""
        origin = str(content.get("origin"))
        cell = self._in_subshells.get(origin)
        if cell is None or not cell.request.content.get("allow_stdin", False):
            outcome.commands.append(SubshellInput(origin, None))
            return
        prompt = self.builder.to(cell.request, "input_request", {
            "prompt": str(content.get("prompt", "")), "password": bool(content.get("password"))})
        self._prompted_aside[origin] = prompt
        outcome.messages.append((STDIN, prompt))

    def _answer_aside(self, reply: Message, outcome: Outcome[Sent]) -> bool:
        """Whether the input_reply `reply` is a subshell's: the one whose input_request it
        names as its parent, else (a front end that names none) the oldest waiting, if the
        main shell's cell does not wait."""
        if not self._prompted_aside:
            return False
        parent = reply.parent_header.get("msg_id")
        origin = next((origin for origin, prompt in self._prompted_aside.items()
                       if prompt.header.get("msg_id") == parent), None)
        if origin is None:
            if self.phase in (WAITING_INPUT, EVALUATING_WAITING_INPUT):
                return False
            origin = next(iter(self._prompted_aside))
        del self._prompted_aside[origin]
        value = reply.content.get("value", "")
        outcome.commands.append(SubshellInput(origin, value if isinstance(value, str)
                                              else str(value)))
        return True

    def worker_lost(self, why: str) -> Outcome[Sent]:
        """The worker is gone (`why`), and with it every subshell's thread: their running and
        queued requests fail; the subshells stay, their threads made anew in the fresh
        worker."""
        outcome: Outcome[Sent] = Outcome()
        for origin in [*self._in_subshells, *self._asked_aside]:
            self._subshell_done(outcome, {"origin": origin, "status": "error",
                                          "ename": "WorkerDied", "evalue": why})
        outcome.commands.extend(MakeSubshell(subshell) for subshell in self.subshells)
        return outcome

    def _on_create_subshell(self, channel: str, request: Message,
                            outcome: Outcome[Sent]) -> bool:
        """A subshell (JEP 91): an id that shell requests may name in their header."""
        from uuid import uuid4

        subshell = str(uuid4())
        self.subshells.append(subshell)
        outcome.commands.append(MakeSubshell(subshell))
        self._reply(outcome, channel, request, {"status": "ok", "subshell_id": subshell})
        return True

    def _on_delete_subshell(self, channel: str, request: Message,
                            outcome: Outcome[Sent]) -> bool:
        subshell = request.content.get("subshell_id")
        if subshell in self.subshells:
            self.subshells.remove(subshell)
            content: dict[str, Any] = {"status": "ok"}
            outcome.commands.append(EndSubshell(subshell))
        else:
            content = _no_subshell(subshell)
        self._reply(outcome, channel, request, content)
        return True

    def _on_list_subshell(self, channel: str, request: Message,
                          outcome: Outcome[Sent]) -> bool:
        self._reply(outcome, channel, request, {"status": "ok",
                                                "subshell_id": list(self.subshells)})
        return True

    def _on_debug(self, channel: str, request: Message, outcome: Outcome[Sent]) -> bool:
        """A DAP request for the debugger (`protocols.debugger`); idle follows its reply."""
        if self._debugger is None:
            from pyrelune.protocols.debugger import DebugSession

            self._debugger = DebugSession(entry=os.path.realpath(sys.argv[0]))
        self._debug_parent = request
        moves = self._debugger.request(request, request.content, not self.busy)
        self._moved(outcome, moves)
        return False

    def _moved(self, outcome: Outcome[Sent], moves: Moves) -> None:
        """What the debugger's session asks: replies, events, its questions to the idle
        worker (`_ask`), debugpy's start and its adapter's bytes; then the cells it held
        (see `_debug_holds`)."""
        for request, content in moves.replies:
            self._reply(outcome, CONTROL, request, content)
            self._status(outcome, "idle", request)
        for event in moves.events:
            self._publish(outcome, "debug_event", event, self._debug_parent)
        if moves.ask:
            ((token, args),) = moves.ask
            self._debug_asked = (token, None)
            self._ask(token, outcome, "debug", args)
        if moves.to_adapter or moves.connect is not None or moves.start:
            outcome.commands.append(Debug(b"".join(moves.to_adapter), moves.connect,
                                          moves.start))
        self._next(outcome)

    def _debug_holds(self) -> bool:
        """Whether cells wait for the debugger: debugpy is starting, or being set up again
        in a fresh worker (a breakpoint set before is then hit by the next cell)."""
        return self._debugger is not None and self._debugger.holding

    def debug_started(self, content: dict[str, Any]) -> Outcome[Sent]:
        """The worker's word on debugpy's start (`wire.debugstart`), or the kernel's failure."""
        outcome: Outcome[Sent] = Outcome()
        if self._debugger is not None:
            self._moved(outcome, self._debugger.answered(None, content))
        return outcome

    def debug_data(self, data: bytes) -> Outcome[Sent]:
        """Bytes from the debugger's adapter (`supervisor.debugrelay`)."""
        outcome: Outcome[Sent] = Outcome()
        if self._debugger is not None:
            from pyrelune.protocols.dap import DapError

            try:
                self._moved(outcome, self._debugger.received(data))
            except DapError as exc:
                outcome.problems.append(f"the debugger's adapter: {exc}")
                self._moved(outcome, self._debugger.lost())
        return outcome

    def debug_lost(self) -> Outcome[Sent]:
        """The connection to the debugger's adapter ended: its worker died."""
        outcome: Outcome[Sent] = Outcome()
        if self._debugger is not None:
            self._moved(outcome, self._debugger.lost())
        return outcome

    def _on_shutdown(self, channel: str, request: Message, outcome: Outcome[Sent]) -> bool:
        restart = bool(request.content.get("restart", False))
        content = {"status": "ok", "restart": restart}
        self._reply(outcome, channel, request, content)
        # Also on IOPub, as ipykernel does: every front end learns the kernel is going.
        self._publish(outcome, "shutdown_reply", content, request)
        self._status(outcome, "idle", request)
        outcome.commands.append(Shutdown(restart))
        return False

    def _on_stdin(self, message: Message, outcome: Outcome[Sent]) -> None:
        if message.msg_type != "input_reply":
            outcome.problems.append(f"unknown message type on stdin: {message.msg_type!r}")
            return
        if self._answer_aside(message, outcome):
            return
        try:
            self.phase = step(self.phase, INPUT_REPLY)
        except NotAllowed:
            outcome.problems.append("an input_reply with no input() waiting: ignored")
            return
        value = message.content.get("value", "")
        outcome.commands.append(InputReply(value if isinstance(value, str) else str(value)))

    # -- the engine's events ---------------------------------------------------------------

    def output(self, item: Event, now: float) -> Outcome[Sent]:
        """One engine event of the request the worker serves (or a late one of a past cell's)."""
        outcome: Outcome[Sent] = Outcome()
        parent = self._parent_of(item)
        aside = parent is not self._parent()  # another cell's: not counted in the running one's
        if isinstance(item, Stream):
            if not aside:
                sent = self._cap.add(item) if self._cell is not None else item
            elif (sub := self._in_subshells.get(item.origin or "")) and sub.cap is not None:
                sent = sub.cap.add(item)
            else:
                sent = item
            if sent is not None:
                self._streams(outcome, self._coalescer.add(sent, now))
            return outcome
        if isinstance(item, Display) and item.update and item.display_id is not None:
            self._displays.hold(item, now)  # only its last state goes out, at the next flush
            return outcome
        if isinstance(item, Payload):
            if self._cell is not None and not aside:
                self._cell.payload.append(item.content)
            return outcome  # what no cell waits on has no reply to go in
        self._flush(outcome)
        if isinstance(item, Display):
            if item.is_result or self._cell is None or aside or self._displays.admit():
                self._display(outcome, item, parent)
        elif isinstance(item, Clear):
            self._publish(outcome, "clear_output", {"wait": item.wait}, parent)
        elif isinstance(item, InputRequest):
            self._input_request(outcome, item)
        elif isinstance(item, Reply) and item.kind == debugstart.KIND:
            if self._debugger is not None:
                self._moved(outcome, self._debugger.answered(None, item.content))
        elif isinstance(item, Reply) and item.kind == SUBSHELL:
            self._subshell_done(outcome, item.content)
        elif isinstance(item, Reply) and item.kind == SUBSHELL_PROMPT:
            self._prompt_aside(outcome, item.content)
        elif isinstance(item, Reply) and item.kind == "usage":
            channel, request = self._usage_asked.popleft()
            self._reply(outcome, channel, request, item.content)
            self._status(outcome, "idle", request)
        elif isinstance(item, Reply):
            self._answered(outcome, item.content)
        elif isinstance(item, Comm):
            self._comm(outcome, item, parent)
        else:
            self._done(outcome, item)
        return outcome

    def _comm(self, outcome: Outcome[Sent], comm: Comm, parent: Message | None) -> None:
        """A comm message of the kernel's: on IOPub, under what output goes under (`parent`:
        the request whose handler or cell sent it)."""
        comm_id = comm.content["comm_id"]
        if comm.msg_type == "comm_open":
            target = comm.content.get("target_name")
            self.comms[comm_id] = {"target_name": target if isinstance(target, str) else ""}
        elif comm.msg_type == "comm_close":
            self.comms.pop(comm_id, None)
        outcome.messages.append((IOPUB, self.builder.publish(
            comm.msg_type, comm.content, parent, comm.metadata, comm.buffers)))

    def tick(self, now: float) -> Outcome[Sent]:
        """Stream text whose time has come (the driver's timer at `flush_at`)."""
        outcome: Outcome[Sent] = Outcome()
        self._streams(outcome, self._coalescer.due(now))
        if self._displays.due(now):
            self._send_updates(outcome)
        if self._debugger is not None:
            self._moved(outcome, self._debugger.tick(now))
        return outcome

    def said(self, text: str) -> Outcome[Sent]:
        """A note of the kernel's own on stderr, after the text that waits, under what output
        goes under (no cap counts it: it says what the front ends missed)."""
        outcome: Outcome[Sent] = Outcome()
        self._flush(outcome)
        self._publish(outcome, "stream", {"name": "stderr", "text": text}, self._parent())
        return outcome

    def _parent(self) -> Message | None:
        """What output belongs to: the running cell, the comm message being handled, or
        (between cells: a thread's, a task's) the last cell."""
        if self._cell is not None:
            return self._cell.request
        if self.phase == HANDLING_COMM:
            return self._current
        return self._last_cell

    def _parent_of(self, item: Event) -> Message | None:
        """What `item` goes under: the cell it names (a thread's or a task's of a cell that
        is not running; a subshell's request, whose handler sent a comm message), else
        `_parent()`."""
        origin = item.origin if isinstance(item, (Stream, Display, Clear, Comm)) else None
        if origin is None or (self._cell is not None and origin == self._cell.origin):
            return self._parent()
        if origin != self._named[0]:  # parsed once for a run of its output
            try:
                header = fastjson.loads(origin)
            except (ValueError, RecursionError):
                header = None
            cell = Message(header, {}, {}, {}) if isinstance(header, dict) else None
            self._named = (origin, cell)
        return self._named[1] or self._parent()  # a name no cell had: as if it had none

    def _flush(self, outcome: Outcome[Sent]) -> None:
        streams = self._coalescer.flush() if self._coalescer.flush_at is not None else []
        self._streams(outcome, streams + self._cap.release())
        self._send_updates(outcome)

    def _send_updates(self, outcome: Outcome[Sent]) -> None:
        for display in self._displays.take():
            self._display(outcome, display, self._parent_of(display))

    def _streams(self, outcome: Outcome[Sent], streams: list[Stream]) -> None:
        for stream in streams:
            if stream.text:
                self._publish(outcome, "stream", {"name": stream.name, "text": stream.text},
                              self._parent_of(stream))

    def _display(self, outcome: Outcome[Sent], display: Display, parent: Message | None) -> None:
        content: dict[str, Any] = {"data": _theirs(display.data),
                                   "metadata": _theirs(display.metadata)}
        if display.is_result and self._cell is not None:
            if self._cell.silent:
                return
            content["execution_count"] = self._cell.count
            self._publish(outcome, "execute_result", content, parent)
            return
        content["transient"] = {}
        if display.display_id is not None:
            content["transient"] = {"display_id": display.display_id}
        kind = "update_display_data" if display.update else "display_data"
        self._publish(outcome, kind, content, parent)

    def _input_request(self, outcome: Outcome[Sent], request: InputRequest) -> None:
        cell = self._cell
        if cell is None or not cell.request.content.get("allow_stdin", False):
            outcome.commands.append(RefuseInput())
            return
        try:
            self.phase = step(self.phase, PROMPT)
        except NotAllowed:  # no cell of this phase asks (a cell forged its worker's line)
            outcome.commands.append(RefuseInput())
            return
        outcome.messages.append((STDIN, self.builder.to(
            cell.request, "input_request", {"prompt": request.prompt,
                                            "password": request.password})))

    def _answered(self, outcome: Outcome[Sent], content: dict[str, Any]) -> None:
        """The worker's answer to what it was asked: the reply, or the cell's user_expressions."""
        try:
            before, self.phase = self.phase, step(self.phase, REPLY)
        except NotAllowed:
            return  # nothing was asked of the worker: no request waits for this
        if before == ASKING and self._current is not None and self._current.msg_type == DEBUG:
            self._debug_asked = (self._debug_asked[0], content)  # for the debugger, at Done
        elif before == EVALUATING and self._cell is not None:
            self._cell.user_expressions = content
        elif before == ASKING and self._current is not None:
            self._reply(outcome, self._current_channel, self._current, {"status": "ok", **content})

    def _done(self, outcome: Outcome[Sent], done: Done) -> None:
        """The worker's end of what it was doing: the request's reply, and idle."""
        before, request, cell = self.phase, self._current, self._cell
        dead = done.error is not None and done.error.code == events.WORKER_DIED
        if done.error is not None and dead and events.RESUMED not in done.error.evalue:
            self.comms.clear()  # they died with it: the front end's views are left unlinked
        # Resumed: the comms live on in the snapshot's namespace, but those opened after it
        # (the worker closes each when the front end next uses it: see `worker.comms`).
        if before in (RUNNING, WAITING_INPUT) and cell is not None:  # the cell itself is over
            cell.error = done.error
            if done.error is None and cell.user_expressions:
                self.phase = step(before, EVALUATE)  # the reply waits for their values
                outcome.commands.append(Query("expressions",
                                              {"expressions": cell.user_expressions}))
                return
        self.phase = step(before, DONE)
        if dead and self._debugger is not None:  # debugpy died too: set up again (`_next`)
            self._moved(outcome, self._debugger.lost())
        if request is None:
            return  # not ours: nothing was asked of the worker
        if request.msg_type == DEBUG and self._debugger is not None:
            (token, answer), self._debug_asked = self._debug_asked, (None, None)
            self._current = None
            self._moved(outcome, self._debugger.answered(token, answer))
            self._next(outcome)
            return
        if cell is not None:
            if before in (EVALUATING, EVALUATING_WAITING_INPUT) and done.error is not None:
                cell.user_expressions = {}  # they could not be evaluated
            self._finish_cell(outcome, cell)
            return
        if before == ASKING or (before == ANSWERED and done.error is not None):
            error = done.error  # the worker died (or failed) while it answered
            ename, evalue = (_ename(error), error.evalue) if error else ("WorkerDied", "no reply")
            self._reply(outcome, self._current_channel, request, {
                "status": "error", "ename": ename, "evalue": evalue,
                "traceback": coloured(error.traceback if error else "", ename, evalue)})
        self._status(outcome, "idle", request)  # after a comm message too: it has no reply
        self._current = None
        self._next(outcome)

    def _finish_cell(self, outcome: Outcome[Sent], cell: _Cell) -> None:
        """The execute_reply (after the error on IOPub); then what a failure aborts."""
        if note := self._displays.omitted():
            self._streams(outcome, [Stream("stderr", note)])  # under the cell: still `_cell`
        self._cell, self._current = None, None
        error = cell.error
        if error is None:
            self._reply(outcome, cell.channel, cell.request, {
                "status": "ok", "execution_count": cell.count,
                "user_expressions": cell.user_expressions, "payload": cell.payload})
        else:
            content = _error_content(_ename(error), error.evalue, cell.count,
                                     coloured(error.traceback, _ename(error), error.evalue))
            if not cell.silent and content["traceback"]:  # none: said its own way already
                self._publish(outcome, "error", {k: content[k] for k in (
                    "ename", "evalue", "traceback")}, cell.request)
            self._reply(outcome, cell.channel, cell.request, content)
        self._status(outcome, "idle", cell.request)
        if error is not None and cell.stop_on_error:
            self._abort_queued(outcome, cell.request.header.get("subshell_id"))
        self._next(outcome)

    def _abort_queued(self, outcome: Outcome[Sent], subshell: object) -> None:
        """Every execute_request of the failed cell's `subshell` (None: the main shell's)
        queued behind it is answered `aborted`, unrun.

        As ipykernel does: a notebook's "run all" stops at the first error; another
        subshell's cells, and requests of other kinds (completion, say), are still served.
        """
        kept: deque[tuple[str, Message]] = deque()
        for channel, request in self._queue:
            if (request.msg_type != "execute_request"
                    or request.header.get("subshell_id") != subshell):
                kept.append((channel, request))
                continue
            self._status(outcome, "busy", request)
            self._reply(outcome, channel, request, {"status": "aborted",
                                                  "execution_count": self.execution_count})
            self._status(outcome, "idle", request)
        self._queue = kept

    def _next(self, outcome: Outcome[Sent]) -> None:
        """Serve the queued shell requests until one needs the worker (debugpy set up again
        in a fresh worker first, if it died while debugged)."""
        if (self._debugger is not None and self._debugger.restore_due
                and self._current is None and self.phase == IDLE):
            self._moved(outcome, self._debugger.restore())
        while self._current is None and self._queue and not self._debug_holds():
            self._handle(*self._queue.popleft(), outcome)


def sent_at(header: dict[str, Any]) -> datetime | None:
    """A header's `date` (ISO 8601; without a zone: UTC), or None if it has none we can read."""
    date = header.get("date")
    if not isinstance(date, str):
        return None
    try:  # "Z" is read by Python 3.11 on, not by 3.10
        at = datetime.fromisoformat(date[:-1] + "+00:00" if date.endswith("Z") else date)
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)


def kernel_info() -> dict[str, Any]:
    """kernel_info_reply's content: language_info as ipykernel gives it."""
    import platform  # here: few requests need it

    python = platform.python_version()
    return {
        "status": "ok",
        "protocol_version": PROTOCOL_VERSION,
        "implementation": "pyrelune",
        "implementation_version": __version__,
        "language_info": {
            "name": "python",
            "version": python,
            "mimetype": "text/x-python",
            "codemirror_mode": {"name": "ipython", "version": 3},
            "pygments_lexer": "ipython3",
            "nbconvert_exporter": "python",
            "file_extension": ".py",
        },
        "banner": (f"Python {sys.version}\npyrelune {__version__}: a kernel whose interrupt "
                   "always ends the cell and whose worker is replaced if it dies\n"),
        "help_links": HELP_LINKS,
        "debugger": True,
        "supported_features": ["debugger", "kernel subshells"],
    }


def history(cells: list[tuple[int, str]], request: dict[str, Any]) -> list[list[Any]]:
    """history_request's entries over this session's `cells`: tail, range or search."""
    output = bool(request.get("output", False))
    access = request.get("hist_access_type", "tail")
    chosen: list[tuple[int, str]]
    if access == "range":
        session = request.get("session", 0)
        if session not in (0, SESSION):
            return []  # earlier sessions: this kernel keeps none
        start = _int(request.get("start"), None) or 1
        stop = _int(request.get("stop"), None)
        chosen = [(n, s) for n, s in cells if n >= start and (stop is None or n < stop)]
    elif access == "search":
        from fnmatch import fnmatchcase

        pattern = request.get("pattern") or "*"
        chosen = [(n, s) for n, s in cells if fnmatchcase(s, str(pattern))]
        if request.get("unique"):
            seen: set[str] = set()
            unique = []
            for n, s in reversed(chosen):  # the last run of each source is kept
                if s not in seen:
                    seen.add(s)
                    unique.append((n, s))
            chosen = unique[::-1]
        chosen = _last(chosen, request.get("n"))
    else:
        chosen = _last(cells, request.get("n", 10))
    return [[SESSION, n, [s, None] if output else s] for n, s in chosen]


def _last(cells: list[tuple[int, str]], n: Any) -> list[tuple[int, str]]:
    count = _int(n, None)
    return cells if count is None else (cells[-count:] if count > 0 else [])


def _int(value: Any, default: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _code_and_cursor(content: dict[str, Any]) -> dict[str, Any]:
    code = content.get("code")
    code = code if isinstance(code, str) else ""
    cursor = content.get("cursor_pos")
    if not isinstance(cursor, int) or isinstance(cursor, bool) or not 0 <= cursor <= len(code):
        cursor = len(code)
    return {"code": code, "cursor_pos": cursor}


def _theirs(bundle: dict[str, Any]) -> dict[str, Any]:
    """A bundle without the types pyrelune adds for its own hosts (a table as JSONML, an rpc
    item): a notebook keeps what ipykernel would have given it."""
    if not any(mime.startswith(events.OWN_MIME) for mime in bundle):
        return bundle
    return {mime: value for mime, value in bundle.items() if not mime.startswith(events.OWN_MIME)}


def _ename(error: CellError) -> str:
    return error.ename or _ENAMES.get(error.code, "Error")


def _error_content(ename: str, evalue: str, count: int,
                   traceback: list[str] | None = None) -> dict[str, Any]:
    return {"status": "error", "execution_count": count, "ename": ename, "evalue": evalue,
            "traceback": [f"{ename}: {evalue}"] if traceback is None else traceback,
            "user_expressions": {},
            "payload": []}


def _no_subshell(subshell: object) -> dict[str, Any]:
    """The error reply to a request naming a subshell there is not (ipykernel's words)."""
    return {"status": "error", "ename": "UnknownSubshellError",
            "evalue": f"Unknown subshell_id {subshell!r}", "traceback": []}


#: Each request type's handler. Every one is served on control too (the messaging spec
#: allows it), its reply on control: those of `_CONTROL` at once, even while a cell runs
#: (they need no worker, or only the engine); the others in turn with shell's.
_HANDLERS: dict[str, Callable[[JupyterCodec, str, Message, Outcome[Sent]], bool]] = {
    "kernel_info_request": JupyterCodec._on_kernel_info,
    "execute_request": JupyterCodec._on_execute,
    "complete_request": JupyterCodec._on_complete,
    "inspect_request": JupyterCodec._on_inspect,
    "is_complete_request": JupyterCodec._on_is_complete,
    "history_request": JupyterCodec._on_history,
    "comm_info_request": JupyterCodec._on_comm_info,
    "interrupt_request": JupyterCodec._on_interrupt,
    **dict.fromkeys(COMM_TYPES, JupyterCodec._on_comm),
    "shutdown_request": JupyterCodec._on_shutdown,
    "usage_request": JupyterCodec._on_usage,
    DEBUG: JupyterCodec._on_debug,
    "create_subshell_request": JupyterCodec._on_create_subshell,
    "delete_subshell_request": JupyterCodec._on_delete_subshell,
    "list_subshell_request": JupyterCodec._on_list_subshell,
}
#: The shell requests a subshell serves at once, beside the main shell's cell (as ipykernel 7,
#: whose subshell threads serve every shell request; the others take their turn here).
_ASIDE = frozenset({EXECUTE, "complete_request", "inspect_request", "is_complete_request",
                    "history_request", "comm_info_request", "kernel_info_request",
                    *COMM_TYPES})
_CONTROL = frozenset({"kernel_info_request", "interrupt_request", "shutdown_request",
                      "usage_request", DEBUG, "history_request", "comm_info_request",
                      "create_subshell_request", "delete_subshell_request",
                      "list_subshell_request"})
