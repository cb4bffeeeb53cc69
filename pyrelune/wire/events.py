"""The one vocabulary of the worker and its supervisor: what a running cell can produce.

Every protocol renders these same events its own way. They cross the pipe from
the worker to the session as JSON lines (`to_wire` / `from_wire`); stream text
travels on the captured file descriptors instead, but for what a thread or
task writes for a cell other than the one running (see `worker.origin`).

`origin` names that other cell: what the supervisor gave with it (`Execute`),
None for the running cell's own output.

Plain classes with __slots__ rather than dataclasses: `dataclasses` imports
`inspect`, which costs more than the whole oneshot start-up budget allows.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias


#: Every error code the runtime gives, named once for the worker and all the
#: codecs. Here, not in a module of their own, because both processes load
#: this one anyway: a module more costs every oneshot cell an import on each
#: side of the fork. Plain strings, not an enum (`enum` costs more than this
#: whole module). Each protocol renders them its own way.
# How a cell failed: `CellError.code`.
PYTHON_SYNTAX_ERROR = "python_syntax_error"  # the cell does not compile
PYTHON_RUNTIME_ERROR = "python_runtime_error"  # the cell raised an exception
PYTHON_EXIT = "python_exit"  # the cell raised SystemExit
INTERRUPTED = "interrupted"  # KeyboardInterrupt ended the cell (the host interrupted it)
TIMEOUT = "timeout"  # the cell ran past its deadline and was killed
WORKER_DIED = "worker_died"  # the worker process ended, or broke the pipe protocol
#: How a `WORKER_DIED` error's words say that the kernel's snapshot took the lost worker's
#: place (see `supervisor.snapshots`): the namespace, and the comms in it, are the snapshot's.
RESUMED = "the kernel resumed from its snapshot"

# Why a request was refused before anything ran: `Rejected.code`. Vix Note
# gets it as is, rpc as its JSON-RPC number; lines has only the message.
INVALID_JSON = "invalid_json"  # not UTF-8, not JSON, or nested too deeply
REQUEST_TOO_LARGE = "request_too_large"  # more bytes than the runtime reads (oneshot)
INVALID_REQUEST = "invalid_request"  # JSON, but not a request the schema allows
UNKNOWN_METHOD = "unknown_method"  # a well-formed request of a type (method) not served
UNSUPPORTED_PROTOCOL = "unsupported_protocol"  # a request for another protocol (version)
INVALID_WORKING_DIRECTORY = "invalid_working_directory"  # the cell cannot run in that folder
INVALID_CONFIGURATION = "invalid_configuration"  # a setting (environment variable) is wrong
#: All of the above, for the test that no module spells one out.
CODES = (
    PYTHON_SYNTAX_ERROR, PYTHON_RUNTIME_ERROR, PYTHON_EXIT, INTERRUPTED, TIMEOUT, WORKER_DIED,
    INVALID_JSON, REQUEST_TOO_LARGE, INVALID_REQUEST, UNKNOWN_METHOD, UNSUPPORTED_PROTOCOL,
    INVALID_WORKING_DIRECTORY, INVALID_CONFIGURATION,
)

#: The worker's one message that is not an event (`{"t": "sync"}`): it asks for
#: `CONTINUE` once the supervisor has read all output written before it.
SYNC = "sync"
#: The supervisor's answer to every message the worker waits on. Spelled out
#: here (it is `commands.to_wire(Continue())`) so that a oneshot run, which
#: sends no other command, need not load `commands`.
CONTINUE = b'{"op": "continue"}\n'


class Stream:
    """Text a cell wrote to fd 1 (`stdout`) or fd 2 (`stderr`)."""

    __slots__ = ("name", "origin", "text")

    def __init__(self, name: str, text: str, origin: str | None = None) -> None:
        self.name = name
        self.text = text
        self.origin = origin

    def __repr__(self) -> str:
        return f"Stream({self.name!r}, {self.text!r})"


class Display:
    """A MIME bundle shown by `display()`, or the final expression (`is_result`).

    `display_id` names an output that later displays may replace: one with
    `update` replaces every output of the cell shown under that id (IPython's
    `update_display`), in place; the host gets only the last state. An empty
    bundle under an id is a placeholder: it shows nothing until updated.
    """

    __slots__ = ("data", "display_id", "is_result", "metadata", "origin", "update")

    def __init__(
        self, data: dict[str, Any], metadata: dict[str, Any], is_result: bool = False,
        display_id: str | None = None, update: bool = False, origin: str | None = None,
    ) -> None:
        self.data = data
        self.metadata = metadata
        self.is_result = is_result
        self.display_id = display_id
        self.update = update
        self.origin = origin

    def __repr__(self) -> str:
        return f"Display({sorted(self.data)}, is_result={self.is_result})"


class Clear:
    """`clear_output()`: what the cell showed so far goes.

    With `wait`, only once the cell shows something new (so a loop that
    clears and redraws never leaves the output empty in between).
    """

    __slots__ = ("origin", "wait")

    def __init__(self, wait: bool = False, origin: str | None = None) -> None:
        self.wait = wait
        self.origin = origin

    def __repr__(self) -> str:
        return f"Clear(wait={self.wait})"


class CellError:
    """Why a cell did not finish normally.

    `code` is machine-readable (`python_runtime_error`, `timeout`, ...);
    `ename` is the exception type, empty for failures that are not Python
    exceptions (a dead worker); `traceback` is trimmed to the cell's frames.
    """

    __slots__ = ("code", "column", "ename", "evalue", "line", "traceback")

    def __init__(
        self,
        code: str,
        ename: str,
        evalue: str,
        traceback: str = "",
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.code = code
        self.ename = ename
        self.evalue = evalue
        self.traceback = traceback
        self.line = line
        self.column = column

    @property
    def summary(self) -> str:
        """One line a host can show on its own: type, message and cell line."""
        return self.headline(column=False)

    def headline(self, column: bool) -> str:
        """The summary, with the column too when `column` and there is one (syntax errors)."""
        first = self.evalue.strip().splitlines()[0] if self.evalue.strip() else ""
        text = ": ".join(part for part in (self.ename, first) if part)
        if self.line is not None:
            where = f", column {self.column}" if column and self.column is not None else ""
            text += f" (line {self.line}{where})"
        return text

    def __repr__(self) -> str:
        return f"CellError({self.code!r}, {self.summary!r})"


class InputRequest:
    """The cell called `input()` (or `getpass`) and waits for a reply."""

    __slots__ = ("password", "prompt")

    def __init__(self, prompt: str, password: bool = False) -> None:
        self.prompt = prompt
        self.password = password

    def __repr__(self) -> str:
        return f"InputRequest({self.prompt!r})"


class Done:
    """The cell is over; `error` says why it failed, None when it succeeded."""

    __slots__ = ("error",)

    def __init__(self, error: CellError | None = None) -> None:
        self.error = error

    @property
    def ok(self) -> bool:
        return self.error is None

    def __repr__(self) -> str:
        return f"Done({self.error!r})"


class Reply:
    """The answer to a `commands.Query` of `kind`: a JSON object.

    The worker's (completions, an object's help) is followed by a Done, as a
    cell is; the engine's own (`supervisor.kernel.Kernel.ENGINE_ANSWERS`: the
    kernel's use of the machine) is not, as no worker was asked.
    """

    __slots__ = ("content", "kind")

    def __init__(self, content: dict[str, Any], kind: str) -> None:
        self.content = content
        self.kind = kind

    def __repr__(self) -> str:
        return f"Reply({self.kind!r}, {sorted(self.content)})"


class Comm:
    """A Jupyter comm message from the worker's side (`worker.comms`): `comm_open`,
    `comm_msg` or `comm_close`, its content (with `comm_id`), metadata and binary buffers.

    Sent without waiting for an answer, as the front end sends none. `origin` names
    the request it goes under when that is not the running one's: a subshell's comm
    message whose handler sends it, a thread's of an earlier cell (see `worker.origin`).
    """

    __slots__ = ("buffers", "content", "metadata", "msg_type", "origin")

    def __init__(self, msg_type: str, content: dict[str, Any], metadata: dict[str, Any],
                 buffers: list[bytes], origin: str | None = None) -> None:
        self.msg_type = msg_type
        self.content = content
        self.metadata = metadata
        self.buffers = buffers
        self.origin = origin

    def __repr__(self) -> str:
        return f"Comm({self.msg_type!r}, {self.content.get('comm_id')!r})"


class Payload:
    """A note for the reply to the running cell, as IPython's shell writes them: a page to
    show (`obj?`), the next cell's text (`%load`, `set_next_input`) or exit (`exit`).

    `content` holds at least `source`, the payload's kind, as Jupyter's execute_reply
    carries it. IPython's shell sends them (see `worker.ipyshell`); pyrelune's own sends
    pages (`display.page`).
    """

    __slots__ = ("content",)

    def __init__(self, content: dict[str, Any]) -> None:
        self.content = content

    def __repr__(self) -> str:
        return f"Payload({self.content.get('source')!r})"


#: A traceback formatted already (IPython's, coloured) is its parts, each after this
#: character, which no traceback holds; a Jupyter front end gets them as its list.
TRACEBACK_PARTS = "\x1e"


#: The comm messages a kernel sends and receives (the messaging spec's "custom messages").
COMM_TYPES = ("comm_open", "comm_msg", "comm_close")


if TYPE_CHECKING:
    Event: TypeAlias = Stream | Display | Clear | InputRequest | Reply | Done | Comm | Payload


def to_wire(event: Event) -> dict[str, Any]:
    """The JSON-ready form the worker sends to its session."""
    if isinstance(event, (Stream, Display, Clear)):
        message = _shown(event)
        if event.origin is not None:  # only then: the running cell's own output has none
            message["o"] = event.origin
        return message
    if isinstance(event, Reply):
        return {"t": "reply", "kind": event.kind, "content": event.content}
    if isinstance(event, Payload):
        return {"t": "payload", "content": event.content}
    if isinstance(event, Comm):
        from base64 import b64encode

        comm = {"t": "comm", "type": event.msg_type, "content": event.content,
                "metadata": event.metadata,
                "buffers": [b64encode(buffer).decode() for buffer in event.buffers]}
        if event.origin is not None:
            comm["o"] = event.origin
        return comm
    if isinstance(event, InputRequest):
        return {"t": "input", "prompt": event.prompt, "password": event.password}
    error = event.error
    if error is None:
        return {"t": "done"}
    return {"t": "done", "error": {slot: getattr(error, slot) for slot in CellError.__slots__}}


def _shown(event: Stream | Display | Clear) -> dict[str, Any]:
    if isinstance(event, Stream):
        return {"t": "stream", "name": event.name, "text": event.text}
    if isinstance(event, Clear):
        return {"t": "clear", "later": event.wait}  # "wait" is the channel's own key
    message: dict[str, Any] = {"t": "display", "data": event.data,
                               "metadata": event.metadata, "result": event.is_result}
    if event.display_id is not None:  # only then: most displays have none
        message["id"] = event.display_id
        message["update"] = event.update
    return message


def from_wire(message: Any) -> Event:
    """Inverse of `to_wire`; ValueError for anything it cannot have made.

    The worker's own messages always pass, but a cell can write to the event
    pipe too: what reaches the protocols must be what they expect, or they fail.
    """
    kind = message.get("t") if isinstance(message, dict) else None
    origin = message.get("o") if kind in _WITH_ORIGIN else None
    if origin is not None and not isinstance(origin, str):
        kind = None  # an origin is what the supervisor gave: a string
    if kind == "stream":
        name, text = message.get("name"), message.get("text")
        if name in ("stdout", "stderr") and isinstance(text, str):
            return Stream(name, text, origin)
    elif kind == "display":
        data, metadata, result = message.get("data"), message.get("metadata"), message.get("result")
        display_id, update = message.get("id"), message.get("update", False)
        if isinstance(data, dict) and isinstance(metadata, dict) and isinstance(result, bool) and (
            display_id is None or isinstance(display_id, str)
        ) and isinstance(update, bool) and not (update and display_id is None):
            for mime, value in data.items():
                if not (isinstance(value, str) or json_mime(mime)):
                    break  # the worker sends text, or JSON for a JSON type (display.json_safe)
            else:
                return Display(data, metadata, result, display_id, update, origin)
    elif kind == "clear":
        later = message.get("later")
        if isinstance(later, bool):
            return Clear(later, origin)
    elif kind == "input":
        prompt, password = message.get("prompt"), message.get("password")
        if isinstance(prompt, str) and isinstance(password, bool):
            return InputRequest(prompt, password)
    elif kind == "reply":
        content, asked = message.get("content"), message.get("kind")
        if isinstance(content, dict) and isinstance(asked, str):
            return Reply(content, asked)
    elif kind == "payload":
        content = message.get("content")
        if isinstance(content, dict) and isinstance(content.get("source"), str):
            return Payload(content)
    elif kind == "comm":
        comm = _comm(message, origin)
        if comm is not None:
            return comm
    elif kind == "done":
        error = message.get("error")
        if error is None:
            return Done()
        if isinstance(error, dict) and error.keys() == _ERROR_TYPES.keys() and all(
            isinstance(error[slot], kinds) for slot, kinds in _ERROR_TYPES.items()
        ) and error["code"] in _WORKER_CODES and _position(error["line"], 1) and _position(
            error["column"], 0
        ):
            return Done(CellError(**error))
    raise ValueError(f"not an event: {str(message)[:80]}")


def _comm(message: dict[str, Any], origin: str | None) -> Comm | None:
    """A comm event as `to_wire` makes it, else None."""
    msg_type, content = message.get("type"), message.get("content")
    metadata, buffers = message.get("metadata"), message.get("buffers")
    if msg_type not in COMM_TYPES or not isinstance(content, dict) or not isinstance(
            content.get("comm_id"), str) or not isinstance(metadata, dict) or not isinstance(
            buffers, list) or not all(isinstance(b, str) for b in buffers):
        return None
    import binascii
    from base64 import b64decode

    try:
        decoded = [b64decode(buffer, validate=True) for buffer in buffers]
    except binascii.Error:
        return None
    return Comm(msg_type, content, metadata, decoded, origin)


#: The events that may carry an origin.
_WITH_ORIGIN = ("stream", "display", "clear", "comm")
#: The types of CellError's slots, as `to_wire` sends them.
_ERROR_TYPES: dict[str, type | tuple[type, ...]] = {
    "code": str, "ename": str, "evalue": str, "traceback": str,
    "line": (int, type(None)), "column": (int, type(None)),
}
#: The codes a worker reports; the others are the supervisor's to give.
_WORKER_CODES = frozenset({PYTHON_SYNTAX_ERROR, PYTHON_RUNTIME_ERROR, PYTHON_EXIT, INTERRUPTED})
#: The largest line or column any JSON reader keeps exactly.
_MAX_POSITION = (1 << 53) - 1


def _position(value: int | None, least: int) -> bool:
    """A line (from 1) or column (from 0) as the schemas allow, or no position."""
    return value is None or (type(value) is int and least <= value <= _MAX_POSITION)


#: A whole display item of the rpc protocol (show, plot, HtmlOutput).
ITEM_MIME = "application/vnd.pyrelune.item+json"
#: A table as JSONML, offered beside `text/html` for pandas and numpy values.
JSONML_MIME = "application/vnd.pyrelune.jsonml+json"
#: What pyrelune's own types (the two above) begin with: only a host that names them gets them.
OWN_MIME = "application/vnd.pyrelune."
#: Every type (but pyrelune's own): what a host that shows any bundle says it shows (Jupyter).
ANY_MIME = "*/*"
#: The types a host that shows only text reads it from (see `shaping.textform`).
TEXT_FORMS = ("text/markdown", "text/plain", "text/html", "text/latex", "application/json")


def message_limit(cap: int) -> int:
    """The most bytes one event line may take, for a mode whose output cap is `cap`.

    The worker cuts its events to fit (`worker.bounds`); the supervisor stops
    a worker whose event pipe carries more (a cell writing into it).
    """
    return 2 * cap + (1 << 16)


def json_mime(mime: str) -> bool:
    """Whether a Display's value of type `mime` is JSON (else it is text)."""
    return mime == "application/json" or mime.endswith("+json")
