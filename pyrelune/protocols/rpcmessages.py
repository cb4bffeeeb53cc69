"""The rpc kernel's messages: requests read and checked, responses and events built.

Plain functions over plain values, as the spec and the schemas have them:
`parse` turns a line into a `Request` or a `Rejected` saying why not, and
the builders give each response and event its shape. What the kernel does
with them, across cells and connections, is `pyrelune.protocols.rpc`'s.
"""

from __future__ import annotations

import keyword
import math

from pyrelune import fastjson
from pyrelune.protocols import Rejected, Wording, read_object
from pyrelune.protocols.validation import certainly_valid
from pyrelune.protocols.validation import errors as schema_errors
from pyrelune.shaping import textform
from pyrelune.wire import events
from pyrelune.wire.events import ITEM_MIME, JSONML_MIME

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from pyrelune.wire.events import CellError

    Message: TypeAlias = dict[str, Any]

PROTOCOL_VERSION = 1
#: The MIME types a display's item is made from (see `display_item`).
SHOWN = (ITEM_MIME, JSONML_MIME, "text/html", "image/png", "image/svg+xml", *events.TEXT_FORMS)
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
KERNEL_BUSY = -32001
AUTH_REQUIRED = -32002
AUTH_FAILED = -32003
#: The number each reason a message is rejected for has on this wire.
_NUMBERS = {events.INVALID_JSON: PARSE_ERROR, events.INVALID_REQUEST: INVALID_REQUEST,
            events.UNKNOWN_METHOD: METHOD_NOT_FOUND}

#: Shown below an error of the envelope or of an execute.cell request, to copy.
EXAMPLE = ('A valid request: {"kind": "request", "id": 1, "method": "execute.cell", '
           '"params": {"source": "print(2 + 3)"}}')
METHODS = (
    "kernel.info", "kernel.auth", "execute.cell", "execute.interrupt", "kernel.reset",
    "execute.input_reply",
)
#: The schema of each method's requests (`schemas/<name>.json`).
_SCHEMAS = {method: f"rpc-kernel.request.{method}" for method in METHODS}
CAPABILITIES = ("stream", "display_data", "input_request", "interrupt", "reset", "inputs",
                "show", "plot")
WORDING = Wording(
    not_utf8="Parse error: not UTF-8 ({reason})",
    not_json="Parse error: {error}",
    too_deep="Parse error: JSON nested too deeply",
    not_object="Invalid request: a message must be a JSON object",
)


class Request:
    """A well-formed request of a known method."""

    __slots__ = ("id", "method", "params")

    def __init__(self, request_id: str | int, method: str, params: dict[str, Any]) -> None:
        self.id = request_id
        self.method = method
        self.params = params


def parse(raw: bytes | str) -> Request:
    """One request line, checked against the schemas; raises `Rejected` saying why not."""
    return check(read_object(raw, WORDING))


def check(message: Message) -> Request:
    """A JSON object as a request of a known method, its params as the method's schema has them.

    A request its method's schema accepts at once needs no other check (each
    method's schema holds the envelope's too); anything else goes through them
    in order, the envelope first, so that the error is the first one found.
    """
    request_id = request_id_of(message)
    method = message.get("method")
    if request_id is None or method not in METHODS or not certainly_valid(
            message, _SCHEMAS[method]):
        request_id, method = _checked_in_order(message, request_id, method)
    params: dict[str, Any] = message.get("params", {})
    for name in params.get("inputs", {}) if method == "execute.cell" else ():
        if not name.isidentifier() or keyword.iskeyword(name):
            raise Rejected(
                events.INVALID_REQUEST,
                f"Invalid execute.cell request: inputs key {name[:100]!r} "
                "is not a Python identifier",
                request_id=request_id,
            )
    return Request(request_id, method, params)


def _checked_in_order(message: Message, request_id: str | int | None,
                      method: Any) -> tuple[str | int, str]:
    """The envelope, the method, then the method's params; raises `Rejected` at the first
    that is wrong, else gives back the id and the method."""
    problems = schema_errors(message, "rpc-kernel.request")
    if problems or request_id is None:  # the schema requires a string or integer id
        problem = problems[0] if problems else (
            f'"id" must be a string or an integer, not {fastjson.dumps(message.get("id"))}')
        raise Rejected(events.INVALID_REQUEST, f"Invalid request: {problem}\n{EXAMPLE}",
                       request_id=request_id)
    if method not in METHODS:
        raise Rejected(events.UNKNOWN_METHOD, f"Method not found: {str(method)[:100]!r}",
                       request_id=request_id)
    problems = schema_errors(message, _SCHEMAS[method])
    if problems:
        example = f"\n{EXAMPLE}" if method == "execute.cell" else ""
        raise Rejected(events.INVALID_REQUEST, f"Invalid {method} request: {problems[0]}{example}",
                       request_id=request_id)
    return request_id, method


def request_id_of(message: Message) -> str | int | None:
    """The id a response to `message` echoes: None unless a string or an integer.

    JSON Schema counts `7.0` as an integer, so the envelope's schema lets it
    through: it is echoed as `7`, the same JSON number.
    """
    request_id = message.get("id")
    if isinstance(request_id, float) and request_id.is_integer():
        return int(request_id)
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        return None
    return request_id


def response(request_id: str | int | None, result: dict[str, Any]) -> Message:
    return {"kind": "response", "id": request_id, "result": result}


def error(request_id: str | int | None, code: int, message: str) -> Message:
    return {"kind": "response", "id": request_id, "error": {"code": code, "message": message}}


def reject(rejected: Rejected) -> Message:
    """The error response to a message no method runs for: the reason as its JSON-RPC number."""
    return error(rejected.request_id, _NUMBERS[rejected.code], rejected.message)


def event(name: str, data: dict[str, Any]) -> Message:
    return {"kind": "event", "event": name, "data": data}


def encode(message: Message) -> bytes:
    """One message as strict UTF-8 JSON (no newline): NaN and infinities become null."""
    try:
        return fastjson.dumps_utf8(message)
    except ValueError:
        return fastjson.dumps_utf8(_finite(message))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def display_item(data: dict[str, Any]) -> Any:
    """A MIME bundle as one item of the spec's shapes, the richest the bundle offers.

    `show()`/`plot()` items travel whole; tables (pandas, numpy) as JSONML;
    then HTML, PNG, SVG; anything else as its text (Markdown and LaTeX as
    their source, which say more than a repr naming the type).
    """
    if ITEM_MIME in data:
        return data[ITEM_MIME]
    if JSONML_MIME in data:
        return data[JSONML_MIME]
    if isinstance(data.get("text/html"), str):
        return {"kind": "html", "content": data["text/html"]}
    for mime, fmt in (("image/png", "png"), ("image/svg+xml", "svg")):
        if isinstance(data.get(mime), str):
            return {"kind": "image", "format": fmt, "data": data[mime]}
    return textform.best(data)


def done_data(cell_id: str, error: CellError | None) -> dict[str, Any]:
    """`execute.done`'s data: the trimmed traceback (or the reason) when the cell failed."""
    if error is None:
        return {"cell_id": cell_id, "status": "ok"}
    return {"cell_id": cell_id, "status": "error",
            "error": error.traceback or error.summary + "\n",
            "ename": error.ename, "evalue": error.evalue, "line": error.line}


def another_client() -> Message:
    """The error a connection gets before it is dropped for the client being served."""
    return error(None, KERNEL_BUSY,
                 "Another client is connected to this kernel; only one may be at a time")


def auth_required(request_id: str | int | None) -> Message:
    return error(request_id, AUTH_REQUIRED,
                 "Authentication required: send kernel.auth with the token first")
