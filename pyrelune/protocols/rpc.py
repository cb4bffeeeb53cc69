"""The rpc-kernel codec and state machine: request lines in, messages and commands out.

The messages themselves (a request read and checked, each response and
event built) are `rpcmessages`'s; this is what the kernel does with them.

No I/O, no clock of its own (h11's way): the driver (`pyrelune.modes.rpc`)
hands it each incoming line and each engine event with the time, sends the
messages it returns and carries out the commands (start a cell, interrupt,
reset, answer `input()`, drop the client). So every transition and error code
is tested with plain values.

Its state is two machines in one table, `TRANSITIONS` ((state, event) ->
next state), which the code consults for every change: the kernel's phase
and whether a client is served. The phase is one of the spec's three states
(`idle`, `running`, `waiting_input`: inside `input()`), a reset under way
(which the spec counts as `idle`, but busy), or a cell with a reset asked for
after it. An event a state does not allow raises `NotAllowed`, which a
request turns into its error response (KERNEL_BUSY, INVALID_REQUEST).

One client at a time is served (`connect()`, or `knock()` with the right
token): it alone sees the cells. A connection that must send the token is a
`Guest` until it does; it holds nothing and is told nothing of the cells:
every request but `kernel.auth` gets AUTH_REQUIRED. While no client is served, the running
cell's events are held (within the cell's output cap) for the next one.
"""

from __future__ import annotations

import sys

from pyrelune import NotAllowed, __version__, transition
from pyrelune.protocols import Rejected, read_object
from pyrelune.protocols.outcome import Outcome
from pyrelune.protocols.rpcmessages import (
    AUTH_FAILED,
    CAPABILITIES,
    INVALID_REQUEST,
    KERNEL_BUSY,
    PROTOCOL_VERSION,
    SHOWN,
    WORDING,
    Request,
    another_client,
    auth_required,
    check,
    display_item,
    done_data,
    encode,
    error,
    event,
    parse,
    reject,
    request_id_of,
    response,
)
from pyrelune.shaping import Omitted, OutputBudget, clip
from pyrelune.shaping.livecaps import HeldOutput, StreamCap
from pyrelune.shaping.streaming import Coalescer
from pyrelune.shaping.terminal import Presenter
from pyrelune.wire import events
from pyrelune.wire.commands import INTERRUPT, Admit, Disconnect, Execute, InputReply, Reset
from pyrelune.wire.events import Clear, Display, Done, InputRequest, Stream
from pyrelune.wire.profile import HostProfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from pyrelune.protocols.rpcmessages import Message

#: Wrong tokens a connection may send before it is dropped.
MAX_AUTH_FAILURES = 3
#: What a guest may send in all before it is dropped: plenty for a host, which sends
#: kernel.auth first; little for one that floods and never reads what it is answered.
GUEST_MESSAGES = 64
GUEST_BYTES = 64 << 10

# The kernel's phases; the first three are the spec's states (`SPEC_STATE`).
IDLE = "idle"
RUNNING = "running"
WAITING_INPUT = "waiting_input"
RESETTING = "resetting"  # the namespace is being cleared
RUNNING_THEN_RESET = "running_then_reset"  # a kernel.reset waits for the cell to end
WAITING_INPUT_THEN_RESET = "waiting_input_then_reset"
# Whether a client is served (may see the cells).
NOT_SERVED = "not_served"
SERVED = "served"

# What moves them: requests of the served client, engine events, connections.
EXECUTE = "execute.cell"
INPUT_REPLY = "execute.input_reply"
RESET = "kernel.reset"
PROMPT = "input_request"  # the cell called input()
DONE = "done"  # the cell's (or the reset's) end
SERVE = "serve"  # connect() without a token, or knock() with the right one
LEAVE = "leave"

#: Every transition: (state, event) -> next state; a pair not here is not allowed.
TRANSITIONS: dict[tuple[str, str], str] = {
    (IDLE, EXECUTE): RUNNING,
    (IDLE, RESET): RESETTING,
    (IDLE, DONE): IDLE,  # not a cell's: a worker lost between cells
    (RUNNING, PROMPT): WAITING_INPUT,
    (RUNNING, RESET): RUNNING_THEN_RESET,
    (RUNNING, DONE): IDLE,
    (WAITING_INPUT, INPUT_REPLY): RUNNING,
    (WAITING_INPUT, RESET): WAITING_INPUT_THEN_RESET,
    (WAITING_INPUT, DONE): IDLE,  # interrupted, or its worker died, inside input()
    (RUNNING_THEN_RESET, PROMPT): WAITING_INPUT_THEN_RESET,
    (RUNNING_THEN_RESET, RESET): RUNNING_THEN_RESET,
    (RUNNING_THEN_RESET, DONE): RESETTING,
    (WAITING_INPUT_THEN_RESET, INPUT_REPLY): RUNNING_THEN_RESET,
    (WAITING_INPUT_THEN_RESET, RESET): WAITING_INPUT_THEN_RESET,
    (WAITING_INPUT_THEN_RESET, DONE): RESETTING,
    (RESETTING, RESET): RESETTING,  # answered with the one under way
    (RESETTING, DONE): IDLE,
    (NOT_SERVED, SERVE): SERVED,
    # Without a token the kernel is served from the start (its first client may
    # not be connected yet: a pipe's host is there at once); its driver refuses
    # a connection while another is served (`refuse`).
    (SERVED, SERVE): SERVED,
    (SERVED, LEAVE): NOT_SERVED,
}
#: The state the spec names for each phase (kernel.ready, kernel.info, kernel.auth).
SPEC_STATE = {IDLE: IDLE, RESETTING: IDLE, RUNNING: RUNNING, RUNNING_THEN_RESET: RUNNING,
              WAITING_INPUT: WAITING_INPUT, WAITING_INPUT_THEN_RESET: WAITING_INPUT}


def profile(cap: int, shell: str, snapshot_max: int = 0) -> HostProfile:
    """The rpc host: it shows a cell's output while it runs and answers its `input()`."""
    return HostProfile(cap, interactive=True, shown=SHOWN, shell=shell,
                       snapshot_max=snapshot_max)


def step(state: str, event: str) -> str:
    """The state `event` moves `state` to; raises `NotAllowed` if it may not happen there."""
    return transition(TRANSITIONS, state, event)


class Guest:
    """A connection that has not sent the token yet: what it sent so far, the wrong tokens."""

    __slots__ = ("failures", "messages", "size")

    def __init__(self) -> None:
        self.failures = 0
        self.messages = 0
        self.size = 0  # bytes (UTF-8)

    def over_budget(self, raw: bytes | str) -> bool:
        """Count `raw`; True once more than `GUEST_MESSAGES` or `GUEST_BYTES` came."""
        self.messages += 1
        if isinstance(raw, str) and len(raw) <= GUEST_BYTES:  # else too big whatever it is
            raw = raw.encode("utf-8", "surrogatepass")
        self.size += len(raw)
        return self.messages > GUEST_MESSAGES or self.size > GUEST_BYTES


class RpcCodec:
    """The protocol state of one kernel, across the connections it serves one at a time."""

    def __init__(self, token: str | None = None, limit: int | None = None) -> None:
        self._token = token.encode() if token is not None else None
        self.phase = IDLE
        self.connection = NOT_SERVED if self.needs_token else SERVED
        self.cell_id = ""
        self._resets: list[str | int] = []  # requests waiting for the namespace to be cleared
        self._prompt: InputRequest | None = None  # the input() a waiting phase waits in
        self._coalescer = Coalescer()
        self._settled: list[Stream | Display | Clear | InputRequest | Done] = []
        self._screen = Presenter(self._settled.append, interleave=True)
        self._cap = StreamCap() if limit is None else StreamCap(limit)
        self._held = HeldOutput(self._cap.limit)
        # The cell's output since it first cleared or showed an updatable display: a
        # host that only appends cannot take either back, so it gets the last state.
        self._replaceable: OutputBudget | None = None

    @property
    def state(self) -> str:
        """The spec's name for the phase: `idle`, `running` or `waiting_input`."""
        return SPEC_STATE[self.phase]

    @property
    def busy(self) -> bool:
        """A cell runs, or a reset: no cell may start."""
        return self.phase != IDLE

    @property
    def flush_at(self) -> float | None:
        """When `tick()` has stream text to send (time.monotonic), if it has any."""
        return self._coalescer.flush_at

    @property
    def needs_token(self) -> bool:
        """Whether a connection is a `Guest` until it sends the token."""
        return self._token is not None

    def connect(self) -> Outcome[Message]:
        """A new connection: `kernel.ready`, then, if it is served, what was held and the prompt.

        It is served at once when no token is needed; otherwise it is a
        guest, told nothing of the cells (`cell_id` is null), until `knock()`
        has its token.
        """
        if self.needs_token:
            return Outcome([self._ready(None)])
        return Outcome([self._ready(self.cell_id if self.state != IDLE else None),
                        *self._serve()])

    def refuse(self) -> list[Message]:
        """What a connection gets when another one is being served: it is dropped after this."""
        return [self._ready(None), another_client()]

    def leave(self) -> None:
        """The served client is gone: the cell's events are held for the next one."""
        self.connection = step(self.connection, LEAVE)

    def _ready(self, cell_id: str | None) -> Message:
        return event("kernel.ready", {"version": PROTOCOL_VERSION, "state": self.state,
                                      "cell_id": cell_id, "auth_required": self.needs_token})

    def _serve(self) -> list[Message]:
        """A client is served from now on: what was held for it, then the pending prompt."""
        self.connection = step(self.connection, SERVE)
        held, self._held = self._held.release(_note), HeldOutput(self._cap.limit)
        if self.state == WAITING_INPUT and self._prompt is not None:
            held.append(self._input_request(self._prompt))
        return held

    def receive(self, raw: bytes | str) -> Outcome[Message]:
        """One message from the served client."""
        try:
            request = parse(raw)
        except Rejected as exc:
            return Outcome([reject(exc)])
        return _HANDLERS[request.method](self, request)

    def knock(self, guest: Guest, raw: bytes | str) -> Outcome[Message]:
        """One message from `guest`: only malformed JSON and `kernel.auth` are answered as such.

        Anything else, well-formed or not, gets AUTH_REQUIRED. The right token
        makes the guest the served client (`Admit`), with what was held for it.
        Past its budget, the guest is dropped unanswered.
        """
        if guest.over_budget(raw):
            return Outcome(commands=[Disconnect(
                f"more than {GUEST_MESSAGES} messages or {GUEST_BYTES >> 10} KiB "
                "before kernel.auth")])
        message = None
        try:
            message = read_object(raw, WORDING)
            if message.get("method") != "kernel.auth":
                return Outcome([auth_required(request_id_of(message))])
            request = check(message)
        except Rejected as exc:
            if message is None and exc.code != events.INVALID_JSON:
                return Outcome([auth_required(None)])  # JSON, but not an object
            return Outcome([reject(exc)])
        if not self._token_matches(request):
            guest.failures += 1
            left = MAX_AUTH_FAILURES - guest.failures
            if left <= 0:
                failed = error(request.id, AUTH_FAILED, "Authentication failed: wrong token")
                return Outcome([failed], [Disconnect("authentication failed")])
            return Outcome([error(request.id, AUTH_FAILED,
                                  f"Authentication failed: wrong token ({left} attempts left)")])
        return Outcome([self._auth_ok(request), *self._serve()], [Admit()])

    def _token_matches(self, request: Request) -> bool:
        import hmac  # here: a kernel without a token never needs it, and it delays the start

        return self._token is None or hmac.compare_digest(
            self._token, str(request.params["token"]).encode("utf-8", "surrogatepass"))

    def _auth_ok(self, request: Request) -> Message:
        return response(request.id, {"ok": True, "state": self.state,
                                     "cell_id": self.cell_id if self.state != IDLE else None})

    def _on_kernel_info(self, request: Request) -> Outcome[Message]:
        import platform  # here: it delays the start, and few requests need it

        return Outcome([response(request.id, {
            "version": PROTOCOL_VERSION, "language": "python",
            "python_version": "{}.{}".format(*sys.version_info[:2]),
            "implementation": f"{platform.python_implementation()} {platform.python_version()}",
            "pyrelune_version": __version__, "state": self.state,
            "capabilities": list(CAPABILITIES),
        })])

    def _on_kernel_auth(self, request: Request) -> Outcome[Message]:
        """The served client is in already: its token is checked, and nothing changes."""
        if not self._token_matches(request):
            return Outcome([error(request.id, AUTH_FAILED, "Authentication failed: wrong token")])
        return Outcome([self._auth_ok(request)])

    def _on_execute_cell(self, request: Request) -> Outcome[Message]:
        try:
            self.phase = step(self.phase, EXECUTE)
        except NotAllowed:
            # The cell's id, as the host sent it, cut: an error message stays one short line.
            what = ("a reset" if self.phase == RESETTING
                    else f"cell {clip(self.cell_id, 256, ' ')!r}")
            return Outcome([error(request.id, KERNEL_BUSY, f"Kernel busy: {what} is running "
                                  "(wait for execute.done, or send execute.interrupt)")])
        params = request.params
        self.cell_id = params.get("cell_id", str(request.id))
        self._cap.begin()
        command = Execute(params["source"], f"<cell {self.cell_id}>",
                          inputs=params.get("inputs", {}), origin=self.cell_id)
        return Outcome([response(request.id, {"status": "started"})], [command])

    def _on_execute_interrupt(self, request: Request) -> Outcome[Message]:
        running = self.state != IDLE
        return Outcome([response(request.id, {"ok": True, "interrupted": running})],
                       [INTERRUPT] if running else [])

    def _on_kernel_reset(self, request: Request) -> Outcome[Message]:
        before, self.phase = self.phase, step(self.phase, RESET)
        self._resets.append(request.id)
        if before != IDLE:
            return Outcome()  # answered when the cell (or the reset under way) is over
        return Outcome(commands=[Reset()])

    def _on_execute_input_reply(self, request: Request) -> Outcome[Message]:
        try:
            self.phase = step(self.phase, INPUT_REPLY)
        except NotAllowed:
            waiting = f"No input() is waiting for a reply (the kernel is {self.state})"
            return Outcome([error(request.id, INVALID_REQUEST, waiting)])
        self._prompt = None
        return Outcome([response(request.id, {"ok": True})],
                       [InputReply(str(request.params["value"]))])

    def output(self, item: Stream | Display | Clear | InputRequest | Done,
               now: float) -> Outcome[Message]:
        """One engine event of the running cell (or of the reset), for this connection.

        A terminal shows the host's text, so stream text passes a terminal's rules first
        (`shaping.terminal.Presenter`): `\r` and `\b` applied, so a progress bar arrives
        collapsed, and the two streams kept in the order a terminal shows them. What it
        holds back of a line goes ahead of any other event.
        """
        if isinstance(item, Stream):
            self._screen.add(item)
        else:
            self._screen.flush()
            self._settled.append(item)
        settled = self._settled.copy()  # the list the Presenter appends to stays this one
        self._settled.clear()
        outcome: Outcome[Message] = Outcome()
        for each in settled:
            part = self._output(each, now)
            outcome.messages += part.messages
            outcome.commands += part.commands
        if self.connection != SERVED:
            outcome.messages = self._hold(outcome.messages)
        return outcome

    def _output(
        self, item: Stream | Display | Clear | InputRequest | Done, now: float
    ) -> Outcome[Message]:
        if isinstance(item, (Stream, Display, Clear)):
            return self._shown(item, now)
        messages = [*self._flush(), *self._release()]  # the cell ends, or waits for input
        if isinstance(item, InputRequest):
            try:
                self.phase = step(self.phase, PROMPT)
            except NotAllowed:  # no cell runs to wait in it (a cell forged its worker's line)
                return Outcome(messages)
            self._prompt = item
            messages.append(self._input_request(item))
            return Outcome(messages)
        return self._done(item, messages)

    def _shown(self, item: Stream | Display | Clear, now: float) -> Outcome[Message]:
        """Output of the cell: sent as it comes, until a later event may take it back.

        This protocol only appends (`display_data`), so from the cell's first
        `clear_output` or display under an id on, its output is kept as the
        list those change, and sent in its last state when the cell ends or
        waits for input. Output between cells (a thread's) is sent as it comes.
        """
        if item.origin is not None and item.origin != self.cell_id:
            return self._aside(item, now)
        held = self._replaceable
        if held is None and isinstance(item, Stream):
            sent = self._cap.add(item)
            return Outcome(self._streams(self._coalescer.add(sent, now) if sent else []))
        if held is None and isinstance(item, Display) and (
            item.display_id is None or self.state == IDLE
        ):
            return Outcome([*self._flush(), self._display(item)])
        if held is None and isinstance(item, Clear) and self.state == IDLE:
            return Outcome()  # nothing of a running cell's to clear
        if held is None:
            held = self._replaceable = OutputBudget(self._cap.limit)
        held.apply(item)
        return Outcome()

    def _aside(self, item: Stream | Display | Clear, now: float) -> Outcome[Message]:
        """Output of another cell than the one running or last run (its thread's, its task's):
        under that cell's id, as it comes, outside this cell's cap. What it clears was sent
        long ago: it stays."""
        if isinstance(item, Stream):
            return Outcome(self._streams(self._coalescer.add(item, now)))
        if isinstance(item, Display):
            held = self._coalescer.flush() if self._coalescer.flush_at is not None else []
            return Outcome([*self._streams(held), self._display(item)])
        return Outcome()

    def _done(self, done: Done, messages: list[Message]) -> Outcome[Message]:
        before, self.phase = self.phase, step(self.phase, DONE)
        self._prompt = None
        if before == RESETTING:
            messages += [response(request_id, {"ok": True}) for request_id in self._resets]
            self._resets = []
        elif before != IDLE:  # else not ours (no cell was running): nothing to report
            messages.append(event("execute.done", done_data(self.cell_id, done.error)))
        if self.phase == RESETTING:
            return Outcome(messages, [Reset()])  # the reset asked for while the cell ran
        return Outcome(messages)

    def _display(self, display: Display) -> Message:
        return event("display_data", {"cell_id": self._cell_of(display),
                                       "item": display_item(display.data)})

    def _cell_of(self, item: Stream | Display) -> str:
        """The id of the cell `item` is output of: the one it names, else the running one."""
        return self.cell_id if item.origin is None else item.origin

    def _release(self) -> list[Message]:
        """The last state of the output held as replaceable, in order, within the stream cap."""
        output, self._replaceable = self._replaceable, None
        if output is None:
            return []
        messages: list[Message] = []
        streams: list[Stream] = []
        for item in output.items():
            if isinstance(item, Stream):
                if (sent := self._cap.add(item)) is not None:
                    streams.append(sent)
                continue
            messages += self._streams(_joined(streams))
            streams = []
            if isinstance(item, Omitted):  # displays have no stream: stderr says they went
                notes = (("stderr", item.displays_text()), ("stdout", item.text("stdout")),
                         ("stderr", item.text("stderr")))
                messages += self._streams([Stream(name, note) for name, note in notes if note])
            elif item.data:  # an empty one is a placeholder never updated: nothing to show
                messages.append(self._display(item))
        return messages + self._streams(_joined(streams)) + self._flush()

    def tick(self, now: float) -> Outcome[Message]:
        """Stream text whose time has come (the driver's timer at `flush_at`)."""
        due = self._streams(self._coalescer.due(now))
        return Outcome(due if self.connection == SERVED else self._hold(due))

    def _hold(self, messages: list[Message]) -> list[Message]:
        """Keep `messages` for the next client (none is to be sent now): output within the
        cap. The pending prompt is not held: `_serve()` sends it after them."""
        for message in messages:
            kind = message.get("event")
            if kind in ("stream", "display_data"):
                self._held.offer(message, len(encode(message)))
            elif kind != "input_request":
                self._held.keep(message)
        return []

    def _flush(self) -> list[Message]:
        # Before each display and at each end: usually nothing is held (no `flush_at`).
        streams = self._coalescer.flush() if self._coalescer.flush_at is not None else []
        streams += self._cap.release()
        return self._streams(streams) if streams else []

    def _streams(self, streams: list[Stream]) -> list[Message]:
        return [event("stream", {"cell_id": self._cell_of(s), "name": s.name, "text": s.text})
                for s in streams if s.text]

    def _input_request(self, request: InputRequest) -> Message:
        data: dict[str, Any] = {"cell_id": self.cell_id, "prompt": request.prompt}
        if request.password:
            data["password"] = True
        return event("input_request", data)


#: Each method's handler: one for each of `rpcmessages.METHODS`, the only methods `parse` lets in.
_HANDLERS: dict[str, Callable[[RpcCodec, Request], Outcome[Message]]] = {
    "kernel.info": RpcCodec._on_kernel_info,
    "kernel.auth": RpcCodec._on_kernel_auth,
    "execute.cell": RpcCodec._on_execute_cell,
    "execute.interrupt": RpcCodec._on_execute_interrupt,
    "kernel.reset": RpcCodec._on_kernel_reset,
    "execute.input_reply": RpcCodec._on_execute_input_reply,
}


def _joined(streams: list[Stream]) -> list[Stream]:
    """Consecutive pieces of one stream as one."""
    out: list[Stream] = []
    for stream in streams:
        if out and out[-1].name == stream.name:
            out[-1] = Stream(stream.name, out[-1].text + stream.text)
        else:
            out.append(stream)
    return out


def _note(first: Message, text: str) -> Message:
    """The note standing where held output was dropped: on stderr, under its cell."""
    return event("stream", {"cell_id": first["data"]["cell_id"], "name": "stderr", "text": text})
