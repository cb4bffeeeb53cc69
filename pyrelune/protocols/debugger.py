"""The Jupyter debugger's session, sans I/O: debug_request in, replies, events and DAP out.

The messaging spec's `debug_request` carries a Debug Adapter Protocol request;
ipykernel answers some itself and relays the rest to debugpy. So does this, but
from the supervisor: debugpy runs in the worker (started on the first
`initialize`, signalled whatever the worker does: `wire.debugstart`), its
adapter listens on loopback, and the
supervisor is its client (`supervisor.debugrelay` holds the socket). So every
request gets its reply whatever the worker does: one debugpy does not answer in
time (`WAIT`: the worker is in C code) fails with a message.

Answered here, as ipykernel answers them: `debugInfo` (the cells' file names,
breakpoints, stopped threads), `dumpCell` (the cell written where its code
says it is), `source`, `configurationDone` (sent to debugpy by the kernel itself
once debugpy is `initialized`, as the attach sequence needs). Asked of the idle
worker (`Moves.ask`): what needs the namespace while no thread is stopped
(`inspectVariables`, `variables` inside one of its entries, `richInspectVariables`,
`modules`). Turned into debugpy's own
requests: `richInspectVariables` in a stopped frame (an `evaluate`),
`copyToGlobals` (a `setExpression`). Everything else goes to debugpy as it is,
renumbered (`dap.Numbering`) and given back under the front end's number.

A worker that dies while attached takes debugpy with it: its requests fail,
stopped threads continue, and `terminated` ends the session (debugpy's own, or
`exited` and `terminated` when the connection ends without it); then, before
the next cell (which waits: `holding`), debugpy is started in the fresh worker and
attached again, with the breakpoints and exception filters the front end had set
(`restore`).
"""

from __future__ import annotations

import os

from pyrelune.protocols import dap
from pyrelune.wire.cellnames import HASH_SEED, cell_file, folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Seconds a request may wait for debugpy (or the worker) before it fails.
WAIT = 10.0
#: The names ipykernel leaves out of a namespace's variables.
HIDDEN = frozenset({
    "__name__", "__doc__", "__package__", "__loader__", "__spec__", "__annotations__",
    "__builtins__", "__builtin__", "__display__", "get_ipython", "debugpy", "exit", "quit",
    "In", "Out", "_oh", "_dh", "_", "__", "___"})
#: The kernel's own code, which stepping does not enter (as ipykernel leaves out its own
#: modules): a step out of the cell ends where the cell ends.
SKIPPED = ("pyrelune", "IPython")
#: The requests that resume a stopped thread: debugpy sends no `continued` after them.
_RESUMING = frozenset({"continue", "next", "stepIn", "stepOut", "stepBack", "goto"})
#: What the worker is asked for each namespace request (see `worker.debugging`).
_ASKED = {"inspectVariables": "variables", "richInspectVariables": "rich", "modules": "modules",
          "variables": "children"}


def shown(name: str) -> bool:
    """Whether a variable is the user's (not IPython's history, `_1`, `_i2`, ...)."""
    return (name not in HIDDEN and not (name[:1] == "_" and name[1:2].isdigit())
            and name[:2] != "_i")


class Moves:
    """What the session asks its driver to do, in this order: send the `replies` (each a
    debug_reply's content, with the token its request came with) and the `events`
    (debug_event), ask the idle worker (`ask`: token and arguments), have the worker
    `start` debugpy (its answer comes to `answered` with the token None, whatever the
    worker is doing), connect to the adapter (`connect`), then write `to_adapter`."""

    __slots__ = ("ask", "connect", "events", "replies", "start", "to_adapter")

    def __init__(self) -> None:
        self.replies: list[tuple[Any, dict[str, Any]]] = []
        self.events: list[dict[str, Any]] = []
        self.ask: list[tuple[Any, dict[str, Any]]] = []
        self.start = False
        self.connect: tuple[str, int] | None = None
        self.to_adapter: list[bytes] = []


class _Waiting:
    """A front end's request in flight (or the kernel's own, `token` None)."""

    __slots__ = ("deadline", "kind", "request", "token")

    def __init__(self, token: Any, request: dict[str, Any], kind: str) -> None:
        self.token = token
        self.request = request
        self.kind = kind  # "relay", "rich", "copy", or the kernel's own: "own"
        self.deadline: float | None = None  # set at the next tick


def response(request: dict[str, Any], success: bool = True, body: dict[str, Any] | None = None,
             message: str | None = None) -> dict[str, Any]:
    """A DAP response to the front end's `request`."""
    reply: dict[str, Any] = {"seq": request.get("seq", 0), "type": "response",
                             "request_seq": request.get("seq", 0), "success": success,
                             "command": request.get("command", "")}
    if body is not None:
        reply["body"] = body
    if message is not None:
        reply["message"] = message
    return reply


class DebugSession:
    """One kernel's debugger, for every front end connected to it."""

    def __init__(self, skipped: tuple[str, ...] = SKIPPED, entry: str = "") -> None:
        """`skipped`: the packages whose frames the debugger leaves out (see `SKIPPED`);
        `entry`: the script the kernel was started by (its frame is under every cell's)."""
        self.skipped = skipped
        self.entry = entry
        self.started = False  # the front end initialized the debugger
        self.attached = False  # to the current worker's debugpy
        self.starting = False  # the worker was asked to start debugpy
        self._start_deadline: float | None = None  # set at the next tick
        self.restore_due = False  # the worker died while attached: set up the next as it was
        self._restoring = False  # and the kernel's own initialize and attach are on their way
        self.breakpoints: dict[str, list[dict[str, Any]]] = {}
        self.stopped: set[int] = set()
        self._numbering = dap.Numbering()
        self._reader = dap.Reader()
        self._waiting: list[_Waiting] = []  # everything sent and not answered yet
        self._held: list[_Waiting] = []  # for debugpy once it is attached
        self._setup: dict[str, dict[str, Any]] = {}  # initialize's, attach's, exceptions' args
        self._variables: list[dict[str, Any]] = []  # the last inspectVariables' answer
        self._address: tuple[str, int] | None = None  # where the worker's adapter listens
        self._replaying = False  # attaching to a fresh worker: configure it as the last

    # -- the front end's requests -----------------------------------------------------

    def request(self, token: Any, request: dict[str, Any], worker_idle: bool) -> Moves:
        """A debug_request's content; `worker_idle`: the worker could answer a question
        now (no cell runs)."""
        moves = Moves()
        command = request.get("command")
        arguments = request.get("arguments")
        args: dict[str, Any] = arguments if isinstance(arguments, dict) else {}
        if not isinstance(command, str) or not command:
            moves.replies.append((token, response(request, False, message="no command")))
        elif command == "debugInfo":
            moves.replies.append((token, response(request, body=self.info())))
        elif command == "dumpCell":
            self._dump(token, request, args, moves)
        elif command == "source":
            self._source(token, request, args, moves)
        elif command == "configurationDone":  # sent by the kernel itself, once initialized
            moves.replies.append((token, response(request)))
        elif command in _ASKED and not (self.stopped and command in ("richInspectVariables",
                                                                     "variables")):
            self._ask(token, request, args, worker_idle, moves)
        elif command == "copyToGlobals":
            self._copy(token, request, args, moves)
        elif command == "richInspectVariables":
            self._rich(token, request, args, moves)
        elif command in ("initialize", "attach") or self.started:
            self._relay(_Waiting(token, request, "relay"), worker_idle, moves)
        else:
            moves.replies.append((token, response(request, False,
                                                  message="the debugger is not started")))
        return moves

    def info(self) -> dict[str, Any]:
        """debugInfo's body, as ipykernel gives it."""
        return {"isStarted": self.started, "hashMethod": "Murmur2", "hashSeed": HASH_SEED,
                "tmpFilePrefix": folder(os.getpid()) + os.sep, "tmpFileSuffix": ".py",
                "breakpoints": [{"source": source, "breakpoints": lines}
                                for source, lines in self.breakpoints.items()],
                "stoppedThreads": sorted(self.stopped), "richRendering": True,
                "exceptionPaths": ["Python Exceptions"], "copyToGlobals": True}

    def _dump(self, token: Any, request: dict[str, Any], args: dict[str, Any],
              moves: Moves) -> None:
        code = args.get("code")
        if not isinstance(code, str):
            moves.replies.append((token, response(request, False, message="no code")))
            return
        path = cell_file(os.getpid(), code)
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            with open(path, "w", encoding="utf-8") as file:
                file.write(code)
        except OSError as exc:
            moves.replies.append((token, response(request, False, message=str(exc))))
            return
        moves.replies.append((token, response(request, body={"sourcePath": path})))

    def _source(self, token: Any, request: dict[str, Any], args: dict[str, Any],
                moves: Moves) -> None:
        source = args.get("source")
        path = source.get("path") if isinstance(source, dict) else None
        try:
            if not isinstance(path, str):
                raise OSError("no path")
            with open(path, encoding="utf-8") as file:
                content = file.read()
        except (OSError, ValueError):
            moves.replies.append((token, response(request, False, body={},
                                                  message="source unavailable")))
            return
        moves.replies.append((token, response(request, body={"content": content})))

    def _ask(self, token: Any, request: dict[str, Any], args: dict[str, Any],
             worker_idle: bool, moves: Moves) -> None:
        command = request["command"]
        name = args.get("variableName")
        if command == "richInspectVariables" and not (isinstance(name, str)
                                                      and name.isidentifier()):
            # ipykernel's answer: the panel's groups ("special variables") show nothing
            success = name in ("special variables", "function variables")
            moves.replies.append((token, response(request, success,
                                                  body={"data": {}, "metadata": {}})))
        elif worker_idle:
            moves.ask.append((token, {"action": _ASKED[command], "request": request,
                                      "name": name,
                                      "reference": args.get("variablesReference")}))
        elif command == "inspectVariables":  # a cell runs: the namespace as last seen
            moves.replies.append((token, response(request, body={
                "variables": self._variables})))
        elif command == "variables":  # a cell runs: what it holds cannot be opened now
            moves.replies.append((token, response(request, body={"variables": []})))
        else:
            moves.replies.append((token, response(request, False, message=(
                "the namespace is read between cells, or in a stopped frame"))))

    def _rich(self, token: Any, request: dict[str, Any], args: dict[str, Any],
              moves: Moves) -> None:
        """A variable's rich views, in the frame stopped in: IPython's formatter, evaluated
        there by debugpy."""
        name = args.get("variableName")
        if not (isinstance(name, str) and name.isidentifier()):
            self._ask(token, request, args, False, moves)
            return
        arguments = {"expression": f"get_ipython().display_formatter.format({name})",
                     "frameId": args.get("frameId"), "context": "clipboard"}
        self._send(_Waiting(token, request, "rich"), "evaluate", arguments, moves)

    def _copy(self, token: Any, request: dict[str, Any], args: dict[str, Any],
              moves: Moves) -> None:
        """A variable of the stopped frame, copied into the namespace (`globals()`)."""
        destination, source = args.get("dstVariableName"), args.get("srcVariableName")
        if not (isinstance(destination, str) and destination.isidentifier()
                and isinstance(source, str) and source.isidentifier()):
            moves.replies.append((token, response(request, False, message=(
                "dstVariableName and srcVariableName must be valid identifiers"))))
            return
        arguments = {"expression": f"globals()['{destination}']", "value": source,
                     "frameId": args.get("srcFrameId")}
        self._send(_Waiting(token, request, "copy"), "setExpression", arguments, moves)

    def _relay(self, waiting: _Waiting, worker_idle: bool, moves: Moves) -> None:
        """To debugpy under the kernel's own number, once it is attached (started first)."""
        command = waiting.request.get("command", "")
        args = waiting.request.get("arguments")
        if command in ("initialize", "attach", "setExceptionBreakpoints"):
            self._setup[command] = args if isinstance(args, dict) else {}
        elif command == "setBreakpoints" and isinstance(args, dict):
            source = args.get("source")
            path = source.get("path") if isinstance(source, dict) else None
            if isinstance(path, str):
                self.breakpoints[path] = list(args.get("breakpoints") or [])
        if self.attached or (self._address is not None and command in ("initialize",
                                                                         "attach")):
            self._send(waiting, command, args, moves)
        elif self._address is not None or self.starting or self.restore_due:
            self._held.append(waiting)  # sent once debugpy is attached
        else:  # a cell may be running: the worker starts debugpy on a thread of its own
            self._held.append(waiting)
            self._start(moves)

    def _start(self, moves: Moves) -> None:
        self.starting = True
        self._start_deadline = None
        moves.start = True

    @property
    def holding(self) -> bool:
        """Whether cells are to wait: debugpy is starting, or being set up again as it was
        (`restore`), so that the breakpoints set are in place when the next cell runs."""
        return self.starting or self._restoring or self.restore_due

    def restore(self) -> Moves:
        """Start debugpy in the fresh worker, to attach and configure it as it was in the
        one that died (its breakpoints, its exception filters), before the next cell."""
        moves = Moves()
        self.restore_due = False
        if self.started and not self.starting:
            self._restoring = True
            self._start(moves)
        return moves

    def _send(self, waiting: _Waiting, command: str, arguments: Any, moves: Moves) -> None:
        if waiting.kind == "relay" and command == "attach":
            arguments = self._attach_arguments()
        elif command == "disconnect":
            # The worker is the kernel's, never the debugger's to end: JupyterLab turning its
            # debugger off sends terminateDebuggee, which would take the namespace with it.
            given = arguments if isinstance(arguments, dict) else {}
            arguments = {**given, "terminateDebuggee": False}
        self._waiting.append(waiting)
        moves.to_adapter.append(self._numbering.request(command, arguments, waiting))

    def _attach_arguments(self) -> dict[str, Any]:
        assert self._address is not None  # debugpy listens: its adapter is connected to
        arguments = dict(self._setup.get("attach", {}))
        arguments["connect"] = {"host": self._address[0], "port": self._address[1]}
        arguments["rules"] = [{"module": name, "include": False} for name in self.skipped]
        if self.entry:
            arguments["rules"].append({"path": self.entry, "include": False})
        arguments.setdefault("justMyCode", False)
        return arguments

    # -- the worker's answers ------------------------------------------------------------

    def answered(self, token: Any, content: dict[str, Any] | None) -> Moves:
        """The worker's answer to what `ask` asked (None: it died or could not answer)."""
        moves = Moves()
        if token is None:  # debugpy's start
            self._started_in_worker(content, moves)
            return moves
        request = content.get("request") if content else None
        if content is None or not isinstance(request, dict) or "error" in content:
            message = content.get("error") if content else "the worker did not answer"
            moves.replies.append((token, response(request or {}, False, message=str(message))))
            return moves
        if request.get("command") == "inspectVariables":
            self._variables = [v for v in content.get("variables", []) if shown(v["name"])]
            body: dict[str, Any] = {"variables": self._variables}
        elif request.get("command") == "variables":
            body = {"variables": [v for v in content.get("variables", [])
                                  if shown(v.get("name", ""))]}
        elif request.get("command") == "modules":
            moves.replies.append((token, {"body": {"modules": content.get("modules", []),
                                                   "totalModules": content.get("total", 0)}}))
            return moves
        else:
            body = {"data": content.get("data", {}), "metadata": content.get("metadata", {})}
        moves.replies.append((token, response(request, body=body)))
        return moves

    def _started_in_worker(self, content: dict[str, Any] | None, moves: Moves) -> None:
        held, self._held = self._held, []
        self.starting = False
        address = (content or {}).get("address")
        if not (isinstance(address, list) and len(address) == 2):
            self._restoring = False
            message = (content or {}).get("error", "the worker could not start debugpy")
            for waiting in held:
                moves.replies.append((waiting.token, response(waiting.request, False,
                                                              message=str(message))))
            return
        self._address = (str(address[0]), int(address[1]))
        self._reader = dap.Reader()
        moves.connect = self._address
        replay = self.started and not any(w.request.get("command") == "initialize"
                                          for w in held)
        if replay:  # a fresh worker for a session begun in the last one: as it was set up
            self._own("initialize", self._setup.get("initialize", {}), moves)
            self._own("attach", self._attach_arguments(), moves)
        for waiting in held:
            command = waiting.request.get("command", "")
            if command in ("initialize", "attach"):
                self._send(waiting, command, waiting.request.get("arguments"), moves)
            else:
                self._held.append(waiting)  # once attached
        self._replaying = replay
        if not replay:  # no set-up of the kernel's own to wait for (the session ended)
            self._restoring = False

    def _own(self, command: str, arguments: dict[str, Any], moves: Moves) -> None:
        """A request of the kernel's own: its answer goes to no front end."""
        self._send(_Waiting(None, {"command": command}, "own"), command, arguments, moves)

    # -- debugpy's messages ----------------------------------------------------------------

    def received(self, data: bytes) -> Moves:
        """Bytes from the adapter; DapError if they are not DAP."""
        moves = Moves()
        for message in self._reader.feed(data):
            if message.get("type") == "event":
                self._event(message, moves)
            elif message.get("type") == "response":
                self._response(message, moves)
        return moves

    def _event(self, event: dict[str, Any], moves: Moves) -> None:
        name = event.get("event")
        given = event.get("body")
        body: dict[str, Any] = given if isinstance(given, dict) else {}
        if name == "initialized":  # the attach sequence: configured as it is, at once
            if self._replaying:
                self._replay_configuration(moves)
            self._own("configurationDone", {}, moves)
        elif name == "stopped" and isinstance(body.get("threadId"), int):
            self.stopped.add(body["threadId"])
        elif name == "continued":
            if body.get("allThreadsContinued", True):
                self.stopped.clear()
            else:
                self.stopped.discard(body.get("threadId", -1))
        elif name == "terminated" and self.attached and not self._leaving():
            self._detached(moves)  # the worker died: so did the session
        moves.events.append(event)

    def _leaving(self) -> bool:
        """Whether a front end's `disconnect` is on its way: debugpy ends its session with
        `terminated` before it answers, the worker alive (it is not the worker's death)."""
        return any(w.request.get("command") == "disconnect" for w in self._waiting)

    def _detached(self, moves: Moves) -> None:
        """debugpy is gone with its worker: its stopped threads continue (JupyterLab clears
        its call stack and variables on `continued`), the next request starts another."""
        for thread in sorted(self.stopped):
            moves.events.append(_event("continued", {"threadId": thread,
                                                     "allThreadsContinued": True}))
        self.stopped = set()
        self.restore_due = self.started and self.attached  # the next worker: as this one
        self._restoring = False
        self.attached = self.starting = False
        self._address = None

    def _replay_configuration(self, moves: Moves) -> None:
        """The breakpoints and exception filters the front end set, in a fresh worker."""
        self._replaying = False
        for path, lines in self.breakpoints.items():
            self._own("setBreakpoints", {"source": {"path": path}, "breakpoints": lines}, moves)
        if "setExceptionBreakpoints" in self._setup:
            self._own("setExceptionBreakpoints", self._setup["setExceptionBreakpoints"], moves)

    def _response(self, message: dict[str, Any], moves: Moves) -> None:
        known, waiting = self._numbering.answered(message)
        if not known or waiting not in self._waiting:
            return
        self._waiting.remove(waiting)
        request: dict[str, Any] = waiting.request
        command = request.get("command")
        if command == "attach" and waiting.kind == "own":
            self._restoring = False  # configured (or not): the cells it held go on
        if command == "attach" and message.get("success"):
            self.attached = True
            self.started = True
            held, self._held = self._held, []
            for later in held:
                self._send(later, later.request.get("command", ""),
                           later.request.get("arguments"), moves)
        elif command == "initialize" and waiting.kind == "relay" and not message.get("success"):
            self.starting = False
        if waiting.kind == "own":
            return
        if waiting.kind == "rich":
            moves.replies.append((waiting.token, self._rich_reply(request, message)))
            return
        reply = dict(message)
        reply["seq"] = reply["request_seq"] = request.get("seq", 0)
        reply["command"] = command
        if command == "setBreakpoints" and message.get("success"):
            path = request["arguments"]["source"]["path"]  # checked on the way in
            self.breakpoints[path] = [{"line": b["line"]} for b in
                                      (message.get("body") or {}).get("breakpoints", [])
                                      if isinstance(b, dict) and "line" in b]
        elif command == "variables" and isinstance(message.get("body"), dict):
            reply["body"] = {**message["body"], "variables": [
                v for v in message["body"].get("variables", []) if shown(v.get("name", ""))]}
        elif command in _RESUMING and message.get("success"):  # no `continued` follows these
            body = message.get("body") or {}
            thread = (request.get("arguments") or {}).get("threadId")
            if body.get("allThreadsContinued", command == "continue"):
                self.stopped.clear()
            else:
                self.stopped.discard(thread)
        elif command == "disconnect":
            self._ended()
        moves.replies.append((waiting.token, reply))

    def _rich_reply(self, request: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
        data: dict[str, Any] = {}
        metadata: dict[str, Any] = {}
        if message.get("success"):
            from ast import literal_eval

            try:
                data, metadata = literal_eval((message.get("body") or {}).get("result", ""))
            except (ValueError, SyntaxError, TypeError):
                pass
        return response(request, body={"data": data, "metadata": {
            k: v for k, v in metadata.items() if k in data}})

    def _ended(self) -> None:
        """disconnect: debugpy goes on listening in the worker, for the next initialize."""
        self.started = self.attached = False
        self._address = None
        self.breakpoints = {}
        self.stopped = set()

    # -- time and loss -----------------------------------------------------------------

    @property
    def flush_at(self) -> float | None:
        """When `tick` has requests to fail (0: new ones to time, at once)."""
        deadlines = [w.deadline for w in self._waiting]
        if self.starting:
            deadlines.append(self._start_deadline)
        if None in deadlines:
            return 0.0
        return min((d for d in deadlines if d is not None), default=None)

    def tick(self, now: float) -> Moves:
        """Requests debugpy did not answer within `WAIT` fail (the worker is busy in C code)."""
        moves = Moves()
        if self.starting:
            if self._start_deadline is None:
                self._start_deadline = now + WAIT
            elif self._start_deadline <= now:  # the worker died, or its cell holds it in C
                self._started_in_worker({"error": "debugpy did not start in time: the worker "
                                                  "may be busy in C code"}, moves)
        for waiting in list(self._waiting):
            if waiting.deadline is None:
                waiting.deadline = now + WAIT
            elif waiting.deadline <= now:
                self._waiting.remove(waiting)
                self._numbering.forget(waiting)
                if waiting.kind == "own" and waiting.request.get("command") == "attach":
                    self._restoring = False
                if waiting.kind != "own":
                    moves.replies.append((waiting.token, response(waiting.request, False, message=(
                        "debugpy did not answer in time: the worker may be busy in C code"))))
        return moves

    def lost(self, exit_code: int = -1) -> Moves:
        """The adapter's connection closed: the worker died. Its requests fail, its threads
        continue and the session ends, as debugpy ends one whose program exited."""
        moves = Moves()
        if self._address is None and not self.attached:
            return moves  # nothing was connected (the worker's death and the connection's
            # end each tell it: the second is no news; debugpy may be starting meanwhile)
        self._numbering.waiting()
        for waiting in self._waiting + self._held:
            if waiting.kind != "own":
                moves.replies.append((waiting.token, response(waiting.request, False,
                                                              message="the worker died")))
        self._waiting, self._held = [], []
        attached = self.attached
        self._detached(moves)
        if attached:  # debugpy did not say so itself
            moves.events.append(_event("exited", {"exitCode": exit_code}))
            moves.events.append(_event("terminated", {}))
        return moves


def _event(name: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"seq": 0, "type": "event", "event": name, "body": body}
