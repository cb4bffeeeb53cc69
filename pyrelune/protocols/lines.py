"""The lines kernel codec: one JSON request per line in, one JSON result per line out.

No I/O here. Every response has exactly the six fields of the protocol
(`id`, `type`, `stdout`, `stderr`, `error`, `output_type`), whatever the
request was: a host that checks ids and parses every line must never see
anything else. Responses are strict JSON in UTF-8 on one line (no NaN, no
lone surrogate, no raw newline).
"""

from __future__ import annotations

from pyrelune import fastjson
from pyrelune.protocols import Rejected as Rejected  # the codec's own name for it
from pyrelune.protocols import Wording, read_object
from pyrelune.protocols.validation import errors as schema_errors
from pyrelune.shaping import Omitted, OutputBudget
from pyrelune.wire import events
from pyrelune.wire.events import (
    INVALID_REQUEST,
    UNKNOWN_METHOD,
    CellError,
    Display,
    Stream,
)
from pyrelune.wire.profile import HostProfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REQUEST_SCHEMA = "lines-kernel.request"
#: The request types this kernel understands; any other is answered with an error.
KNOWN_TYPES = ("execute", "restart", "ping")
#: What the host shows of a display: text, in stdout (see `shown`).
SHOWN = events.TEXT_FORMS
INTERRUPTED = "KeyboardInterrupt: Execution interrupted"
#: Shown below a request's error, to copy.
EXAMPLE = 'A valid request: {"id": "1", "type": "execute", "code": "print(2 + 3)"}'
WORDING = Wording(
    not_utf8="Invalid JSON: not UTF-8 (byte 0x{byte:02x} at offset {offset})",
    not_json="Invalid JSON: {error}",
    too_deep="Invalid JSON: nested too deeply",
    not_object="Invalid request: expected a JSON object, got {got}",
)


def profile(cap: int, shell: str, snapshot_max: int = 0) -> HostProfile:
    """The lines host: it sees a cell's output as text, once the cell ends."""
    return HostProfile(cap, shown=SHOWN, shell=shell, snapshot_max=snapshot_max)


class Request:
    """A well-formed request: `type` is one of `KNOWN_TYPES`."""

    __slots__ = ("code", "id", "type")

    def __init__(self, request_id: str, kind: str, code: str) -> None:
        self.id = request_id
        self.type = kind
        self.code = code


def parse_request(line: bytes) -> Request:
    """Decode and check one request line; raises `Rejected` with the error to answer."""
    message = read_object(line, WORDING)
    request_id = message.get("id", "")
    if not isinstance(request_id, str):
        request_id = ""
    problems = schema_errors(message, REQUEST_SCHEMA)
    if problems:
        raise Rejected(INVALID_REQUEST, f"Invalid request: {problems[0]}\n{EXAMPLE}",
                       request_id=request_id)
    kind: str = message["type"]
    if kind not in KNOWN_TYPES:
        raise Rejected(UNKNOWN_METHOD, f"Unknown request type: {kind}",
                       request_id=request_id)
    if kind == "execute" and "code" not in message and "source" in message:
        # The name the oneshot and rpc requests give the code: an empty cell would run.
        raise Rejected(INVALID_REQUEST, 'Invalid request: "source" given without "code": the '
                       'lines kernel runs the code in "code" ("source" is what oneshot and rpc '
                       f"requests call it)\n{EXAMPLE}", request_id=request_id)
    return Request(request_id, kind, message.get("code", ""))


def response(
    request_id: str, stdout: str = "", stderr: str = "", error: str | None = None
) -> bytes:
    """One response line (newline included)."""
    return encode({"id": request_id, "type": "result", "stdout": stdout, "stderr": stderr,
                   "error": error, "output_type": "text"})


def reject(rejected: Rejected) -> bytes:
    """The response to a line no request runs for: its id if it gave one, and why as `error`."""
    request_id = rejected.request_id
    return response(request_id if isinstance(request_id, str) else "", error=rejected.message)


def pong(request_id: str) -> bytes:
    return response(request_id, stdout="pong")


def shown(display: Display) -> Display:
    """What of a display this protocol shows, its text: the rest must not fill the cap.

    A display with no text form at all (an image alone, an empty HTML
    element, JavaScript, given raw) shows nothing, as an empty bundle (a
    placeholder to be updated) does; one whose `text/plain` only names its
    type shows that, as IPython's text frontends do.
    """
    from pyrelune.shaping.textform import best  # loaded for displays only

    text = best(display.data)
    data = {"text/plain": text} if text else {}
    return Display(data, {}, display.is_result, display.display_id, display.update)


def cell_response(request_id: str, output: OutputBudget, error: CellError | None) -> bytes:
    """The response to a cell: its output in order, then what went wrong, if anything.

    Displays (`display()` and the final expression) are text in `stdout`, a
    line each, between the prints around them; this protocol has no other
    place for them.
    """
    stdout: list[str] = []
    stderr: list[str] = []
    for item in output.items():
        if isinstance(item, Stream):
            (stdout if item.name == "stdout" else stderr).append(item.text)
        elif isinstance(item, Display):
            if item.data:  # an empty one is a placeholder never updated: nothing to show
                stdout.append(f"{item.data.get('text/plain', '')}\n")
        else:
            _omitted(item, stdout, stderr)
    return response(request_id, "".join(stdout), "".join(stderr), error_text(error))


def _omitted(marker: Omitted, stdout: list[str], stderr: list[str]) -> None:
    if note := marker.displays_text():
        stdout.append(note)
    if note := marker.text("stdout"):
        stdout.append(note)
    if note := marker.text("stderr"):
        stderr.append(note)


def error_text(error: CellError | None) -> str | None:
    """The `error` field: the cell's traceback, the interrupt string, or what happened."""
    if error is None:
        return None
    if error.code == events.INTERRUPTED:
        return f"KeyboardInterrupt: {error.evalue}"
    if error.ename and error.traceback:
        return error.traceback
    return error.summary


def encode(message: dict[str, Any]) -> bytes:
    """Strict JSON in UTF-8 on one line (JSON text never holds a raw newline)."""
    return fastjson.dumps_utf8(message) + b"\n"
