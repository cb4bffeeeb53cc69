"""The one command vocabulary: what a protocol codec asks of the kernel, and what the
supervisor sends its worker, with the wire form of the latter (a JSON object a line).

A codec's `Outcome` (`protocols.outcome`) carries these; the engine
(`supervisor.kernel.Kernel.apply`) carries them out. Those of `PipeCommand` go down the
control pipe as they are; `Interrupt` is a signal, `Debug` goes to the debugger's socket,
and `Shutdown`, `Admit` and `Disconnect` are for the mode's own wiring (the process, a
connection). Events go the other way (`events`, which also holds `SYNC` and the wire form
of `Continue`, the two messages of the handshake every mode uses).
"""

from __future__ import annotations

from pyrelune import fastjson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias


class Execute:
    """Run a cell; `cell` numbers it so that an interrupt reaches only it (see `interrupts`).

    `origin`: what the host knows the cell by (an rpc cell_id, a Jupyter request's header),
    given back with what its threads and tasks write once another cell runs (see
    `worker.origin`). For an IPython shell (see `worker.ipyshell`): `count`, the cell's
    execution count, if the host numbers its cells (Jupyter; None: the shell numbers them);
    `history`, whether the cell is kept in `In` and `Out`; `silent`, whether it leaves
    no trace at all.
    """

    __slots__ = ("cell", "count", "filename", "history", "inputs", "origin", "silent",
                 "source")

    def __init__(self, source: str, filename: str, cell: int = 0,
                 inputs: dict[str, Any] | None = None, origin: str | None = None,
                 count: int | None = None, history: bool = True,
                 silent: bool = False) -> None:
        self.source = source
        self.filename = filename
        self.cell = cell
        self.inputs = inputs
        self.origin = origin
        self.count = count
        self.history = history
        self.silent = silent


class Reset:
    """A fresh namespace; answered by a Done."""

    __slots__ = ()


class InputReply:
    """The answer to the InputRequest the cell waits on."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value


class CancelInput:
    """No one is left to answer: the cell's `input()` raises EOFError."""

    __slots__ = ()


class RefuseInput:
    """The host cannot answer input at all: the cell's `input()` raises
    StdinNotImplementedError (a Jupyter front end that sent allow_stdin false)."""

    __slots__ = ()


class Query:
    """Answer `kind` (complete, inspect, expressions: see `worker.introspect`) about the
    namespace with a Reply event, then a Done; numbered as a cell is, for its interrupt."""

    __slots__ = ("args", "cell", "kind")

    def __init__(self, kind: str, args: dict[str, Any], cell: int = 0) -> None:
        self.kind = kind
        self.args = args
        self.cell = cell
class RunInSubshell:
    """Run a cell on the thread of the worker's subshell `subshell` (JEP 91), beside the main
    shell's cell, in the one namespace; answered by a Reply of kind `SUBSHELL` naming its
    `origin` (the request's header, which its output names too: see `worker.origin`), not
    by a Done, which is the main shell's. `stop_on_error`: a failure aborts the subshell's
    cells queued behind it."""

    __slots__ = ("expressions", "filename", "origin", "silent", "source", "stop_on_error",
                 "subshell")

    def __init__(self, subshell: str, source: str, filename: str, origin: str,
                 silent: bool = False, stop_on_error: bool = True,
                 expressions: dict[str, Any] | None = None) -> None:
        self.subshell = subshell
        self.source = source
        self.filename = filename
        self.origin = origin
        self.silent = silent
        self.stop_on_error = stop_on_error
        self.expressions = expressions or {}  # user_expressions, evaluated after a cell ends well


class AskInSubshell:
    """A question (`kind` complete, inspect, is_complete, with `args` as a `Query`'s) or a
    comm message from the front end (`kind` comm) for the subshell's thread, served in turn
    with its cells; answered by a Reply of kind `SUBSHELL` naming `origin` (a question's
    answer under "answer")."""

    __slots__ = ("args", "kind", "origin", "subshell")

    def __init__(self, subshell: str, kind: str, args: dict[str, Any], origin: str) -> None:
        self.subshell = subshell
        self.kind = kind
        self.args = args
        self.origin = origin


class SubshellInput:
    """The answer to the `input()` of the subshell request `origin` (a Reply of kind
    `SUBSHELL_PROMPT` asked); None: the front end cannot answer."""

    __slots__ = ("origin", "value")

    def __init__(self, origin: str, value: str | None) -> None:
        self.origin = origin
        self.value = value


class InterruptSubshells:
    """KeyboardInterrupt in the subshell requests `origins` (see `worker.subshells`): in
    the one running, or as it starts if the interrupt came first."""

    __slots__ = ("origins",)

    def __init__(self, origins: list[str]) -> None:
        self.origins = origins


class MakeSubshell:
    """A subshell was created: the worker makes its thread now, so that its first cell runs
    at once even if the main shell's cell runs by then (see `worker.subshells`)."""

    __slots__ = ("subshell",)

    def __init__(self, subshell: str) -> None:
        self.subshell = subshell


class EndSubshell:
    """The subshell was deleted: its thread ends once its running cell is over."""

    __slots__ = ("subshell",)

    def __init__(self, subshell: str) -> None:
        self.subshell = subshell


#: The Reply kind that answers a `RunInSubshell` or an `AskInSubshell`.
SUBSHELL = "subshell"
#: The Reply kind of a subshell's `input()`: its origin, prompt and password (see `SubshellInput`).
SUBSHELL_PROMPT = "subshell_prompt"
#: How every subshell command's line begins (`to_wire`): the worker sets them aside unparsed.
SUBSHELL_LINE = b'{"op": "subshell'


class FreshRing:
    """Start the stdout ring afresh at the total `lap`: the session found it damaged
    (see `wire.ring`), or a reset follows. Sent between cells; nothing answers it."""

    __slots__ = ("lap",)

    def __init__(self, lap: int) -> None:
        self.lap = lap


class Continue:
    """The session has read everything the worker wrote before its last message: go on."""

    __slots__ = ()


class Interrupt:
    """KeyboardInterrupt to the running cell (SIGINT, aimed at it: see `interrupts`), and a
    kill of its worker if it does not end (see `supervisor.session`)."""

    __slots__ = ()


#: The one Interrupt there need be (it carries nothing).
INTERRUPT = Interrupt()


class Debug:
    """To the debugger's adapter in the worker (see `supervisor.debugrelay`): `start` it
    first, if asked (`wire.debugstart`), connect to `address`, if given (a new connection),
    then write `data` (framed DAP)."""

    __slots__ = ("address", "data", "start")

    def __init__(self, data: bytes, address: tuple[str, int] | None = None,
                 start: bool = False) -> None:
        self.data = data
        self.address = address
        self.start = start


class Shutdown:
    """Stop the kernel once the messages before it are sent; `restart`: one will follow."""

    __slots__ = ("restart",)

    def __init__(self, restart: bool) -> None:
        self.restart = restart


class Admit:
    """The guest connection sent the token: it is the served client now, the others go."""

    __slots__ = ()


class Disconnect:
    """Close the guest connection, `reason` saying why (a policy violation)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


if TYPE_CHECKING:
    #: What the control pipe carries.
    PipeCommand: TypeAlias = (Execute | Reset | InputReply | CancelInput | Continue | Query
                              | RefuseInput | FreshRing | RunInSubshell | MakeSubshell
                              | EndSubshell | AskInSubshell | SubshellInput | InterruptSubshells)
    #: What a codec may ask of the engine.
    Command: TypeAlias = (Execute | Query | InputReply | CancelInput | RefuseInput | Reset
                          | Interrupt | Debug | Shutdown | Admit | Disconnect | RunInSubshell
                          | MakeSubshell | EndSubshell | AskInSubshell | SubshellInput
                          | InterruptSubshells)

_SIMPLE: dict[str, type[Reset | CancelInput | Continue | RefuseInput]] = {
    "reset": Reset, "cancel": CancelInput, "continue": Continue, "refuse": RefuseInput}


def to_wire(command: PipeCommand) -> bytes:
    """One line for the control pipe."""
    message: dict[str, Any]
    if isinstance(command, Execute):
        message = {"op": "execute", "source": command.source, "filename": command.filename,
                   "cell": command.cell}
        if command.inputs:
            message["inputs"] = command.inputs
        if command.origin is not None:
            message["origin"] = command.origin
        if command.count is not None:
            message["count"] = command.count
        if not command.history:
            message["history"] = False
        if command.silent:
            message["silent"] = True
    elif isinstance(command, InputReply):
        message = {"op": "input", "value": command.value}
    elif isinstance(command, Query):
        message = {"op": "query", "kind": command.kind, "args": command.args,
                   "cell": command.cell}
    elif isinstance(command, FreshRing):
        message = {"op": "ring", "lap": command.lap}
    elif isinstance(command, RunInSubshell):
        message = {"op": "subshell", "subshell": command.subshell, "source": command.source,
                   "filename": command.filename, "origin": command.origin,
                   "silent": command.silent, "stop_on_error": command.stop_on_error}
        if command.expressions:
            message["expressions"] = command.expressions
    elif isinstance(command, AskInSubshell):
        message = {"op": "subshell_ask", "subshell": command.subshell, "kind": command.kind,
                   "args": command.args, "origin": command.origin}
    elif isinstance(command, SubshellInput):
        message = {"op": "subshell_input", "origin": command.origin, "value": command.value}
    elif isinstance(command, InterruptSubshells):
        message = {"op": "subshell_interrupt", "origins": command.origins}
    elif isinstance(command, MakeSubshell):
        message = {"op": "subshell_make", "subshell": command.subshell}
    elif isinstance(command, EndSubshell):
        message = {"op": "subshell_end", "subshell": command.subshell}
    else:
        message = {"op": next(op for op, kind in _SIMPLE.items() if isinstance(command, kind))}
    return (fastjson.dumps(message) + "\n").encode()


def from_wire(line: bytes) -> PipeCommand:
    """Inverse of `to_wire`. Only the supervisor writes the control pipe, so no check is made."""
    message: dict[str, Any] = fastjson.loads(line.decode())
    op = message["op"]
    if op == "execute":
        return Execute(message["source"], message["filename"], message["cell"],
                       message.get("inputs"), message.get("origin"), message.get("count"),
                       message.get("history", True), message.get("silent", False))
    if op == "input":
        return InputReply(message["value"])
    if op == "query":
        return Query(message["kind"], message["args"], message["cell"])
    if op == "ring":
        return FreshRing(message["lap"])
    if op == "subshell":
        return RunInSubshell(message["subshell"], message["source"], message["filename"],
                             message["origin"], message["silent"], message["stop_on_error"],
                             message.get("expressions"))
    if op == "subshell_ask":
        return AskInSubshell(message["subshell"], message["kind"], message["args"],
                             message["origin"])
    if op == "subshell_input":
        return SubshellInput(message["origin"], message["value"])
    if op == "subshell_interrupt":
        return InterruptSubshells(message["origins"])
    if op == "subshell_make":
        return MakeSubshell(message["subshell"])
    if op == "subshell_end":
        return EndSubshell(message["subshell"])
    return _SIMPLE[op]()
