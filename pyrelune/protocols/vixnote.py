"""The vix-note-extension-1 codec: request bytes in, response bytes out.

No I/O here. Responses are built for Vix Note's strict reader
(nlohmann::json): always an object with `protocol`, `ok`, string `stdout` and
`stderr`, `outputs` of `{mime, data}` strings, and on failure an `error`
object whose `message` is all the host shows: a one-line summary, then what
the user needs to act on it. Never NaN, never a lone surrogate, always UTF-8.
"""

from __future__ import annotations

from pyrelune import MAX_REQUEST, fastjson
from pyrelune.protocols import Rejected as Rejected  # the codec's own name for it
from pyrelune.protocols import Wording, read_object
from pyrelune.protocols.validation import errors as schema_errors
from pyrelune.shaping import Omitted, OutputBudget, clip, keep_tail, utf8_size
from pyrelune.wire.events import (
    INVALID_JSON,
    INVALID_REQUEST,
    REQUEST_TOO_LARGE,
    TEXT_FORMS,
    TIMEOUT,
    UNSUPPORTED_PROTOCOL,
    CellError,
    Display,
    Stream,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROTOCOL = "vix-note-extension-1"
#: The output types Vix Note accepts, in the order that suits it: it shows SVG as
#: an image and pretty-prints JSON, but shows HTML as escaped text (see `vixnote_outputs`).
MIME_ORDER = ("image/svg+xml", "application/json", "text/plain", "text/html")
#: What each output type is made from, beside itself (see `vixnote_outputs._renditions`).
_MADE_FROM = {"image/svg+xml": ("image/png", "image/jpeg"), "text/plain": TEXT_FORMS}
#: The error is outside the output budget, so it has caps of its own: the
#: one-line message a host shows, and the traceback; both also a share of
#: the limit, small enough that even as six-byte JSON escapes they fit.
MAX_MESSAGE = 2000
#: Below the summary, a failure's message shows the tail of the cell's output
#: and the traceback, each within this and a share of the limit.
MAX_CONTEXT = 8192
#: Below a timeout's summary: how to allow more, and the host's limit that no setting moves.
TIMEOUT_ADVICE = ("To allow a cell more time, set PYRELUNE_TIMEOUT (seconds; 0: no limit) where "
                  "`vix note` is started. Vix Note itself stops every cell after 10 s and then "
                  "shows only \"timeout\", so past about 9 s run the work outside the note "
                  "(`pyrelune run --timeout 0 script.py`, or python itself).")
#: requestId is echoed for a host's logs (Vix Note sends ":<cellId>" and never
#: reads it back), within this many bytes: head and tail, as `clip` keeps them.
MAX_REQUEST_ID = 1024
#: A value of the request an error message quotes (a workingDirectory, say) keeps
#: this many bytes of it, head and tail: a 1 MiB one would make a response Vix Note kills.
MAX_ECHO = 256
REQUEST_SCHEMA = "vix-note-extension-1.request"


def shown(order: tuple[str, ...]) -> tuple[str, ...]:
    """The types the worker builds for a Vix Note that shows `order`: those, in that order,
    and what they are made from (an SVG from a PNG, text from Markdown)."""
    return tuple(dict.fromkeys(made for mime in order
                               for made in (mime, *_MADE_FROM.get(mime, ()))))

WORDING = Wording(
    not_utf8="Request is not valid UTF-8: byte 0x{byte:02x} at offset {offset}",
    not_json="Request is not valid JSON: {error}",
    too_deep="Request is not usable JSON: nested too deeply",
    not_object="Request must be a JSON object, got {got}",
)


class Request:
    """The fields of a request the runtime acts on."""

    __slots__ = ("cell_id", "document_path", "request_id", "source", "working_directory")

    def __init__(
        self, source: str, cell_id: str | None, request_id: str | None, working_directory: str,
        document_path: str = "",
    ) -> None:
        self.source = source
        self.cell_id = cell_id
        self.request_id = request_id
        self.working_directory = working_directory
        self.document_path = document_path

    @property
    def filename(self) -> str:
        """The name tracebacks give the cell's code; compile() refuses a NUL in it."""
        if not self.cell_id:
            return "<cell>"
        name = self.cell_id.replace("\0", "\\x00")
        return f"<cell {name}>"


def parse_request(raw: bytes) -> Request:
    """Decode and check one request; raises `Rejected` saying what is wrong."""
    if len(raw) > MAX_REQUEST:
        raise Rejected(
            REQUEST_TOO_LARGE,
            f"Request too large: over {MAX_REQUEST:,} bytes ({MAX_REQUEST >> 20} MiB), "
            "the most this runtime reads",
        )
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if not raw.strip():
        raise Rejected(INVALID_REQUEST, "Empty request: expected one JSON object on stdin")
    try:
        message = read_object(raw, WORDING)
    except Rejected as error:
        if error.code == INVALID_JSON and (advice := _plain_code(raw)):
            raise Rejected(INVALID_JSON, advice, error.message) from None
        raise
    protocol = message.get("protocol", PROTOCOL)
    if isinstance(protocol, str) and protocol != PROTOCOL:
        raise Rejected(
            UNSUPPORTED_PROTOCOL,
            f"Unsupported protocol {echo(protocol)}: this runtime speaks {PROTOCOL}",
        )
    problems = schema_errors(message, REQUEST_SCHEMA)
    if problems:
        summary = _other_mode(message) or f"{problems[0]}\nA valid request: {EXAMPLE}"
        raise Rejected(INVALID_REQUEST, f"Invalid request: {summary}", "\n".join(problems))
    source: str = message["source"]
    if "\0" in source:
        before = source[: source.index("\0")]
        line, column = before.count("\n") + 1, len(before) - before.rfind("\n")
        raise Rejected(
            INVALID_REQUEST,
            f"Invalid request: source contains a NUL character (line {line}, column {column})",
        )
    return Request(
        source, message.get("cellId"), message.get("requestId"),
        message.get("workingDirectory", ""), message.get("documentPath") or "",
    )


def echo(value: str) -> str:
    """`value` as an error message quotes it: its repr, cut to `MAX_ECHO` bytes with a marker."""
    return repr(clip(value, MAX_ECHO, " "))


#: The request error messages show as one to copy.
EXAMPLE = '{"source": "print(2 + 3)"}'


def _plain_code(raw: bytes) -> str | None:
    """What to say of a request that is not JSON but text such as `print(1)`, the code itself
    (`echo 'print(1)' | pyrelune`): how to send it. None for text that was meant as JSON (it
    opens an object or an array) or is not text at all."""
    try:
        code = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    if code[:1] in ("{", "["):
        return None
    import warnings

    try:
        with warnings.catch_warnings():  # an invalid escape's SyntaxWarning would reach stderr
            warnings.simplefilter("ignore")
            compile(code, "<stdin>", "exec", dont_inherit=True)
        summary = "Request is not valid JSON: it looks like Python code, not a JSON request"
    except (SyntaxError, ValueError):
        summary = "Request is not valid JSON: pyrelune reads one JSON object with the code in it"
    request = fastjson.dumps_utf8({"source": code}).decode()
    if len(request) > MAX_ECHO:
        request = EXAMPLE
    import shlex

    # JSON text has no newline; dash's echo would turn a `\n` escape into one, printf does not
    command = "echo" if "\\" not in request else "printf '%s\\n'"
    return (f"{summary}\n"
            f"Give the code as the request's \"source\": {request}\n"
            f"For example: {command} {shlex.quote(request)} | pyrelune\n"
            "To run a file of code, or a notebook: pyrelune run FILE.py (or FILE.ipynb)")


#: What another mode's requests hold instead of `source`: the field that tells each apart.
_OTHER_MODES = (("type", ("execute", "restart", "ping"), "lines"), ("method", None, "rpc"))


def _other_mode(message: dict[str, Any]) -> str | None:
    """What to say of a request meant for a kernel mode (a lines or rpc request): which it is."""
    if "source" in message:
        return None
    for field, values, mode in _OTHER_MODES:
        value = message.get(field)
        if isinstance(value, str) and (values is None or value in values):
            shown = fastjson.dumps_utf8({field: value[:40]}).decode()
            return (f"this is a request for the {mode} kernel ({shown}), which "
                    f"`pyrelune --mode {mode}` reads; with no arguments pyrelune reads one "
                    'vix-note-extension-1 request, such as {"source": "print(2 + 3)"}')
    return None


def reject(error: Rejected, request_id: str | None = None) -> bytes:
    """The response to a request that never ran: `ok: false`, the reason as `error.code`.

    Message and details are bounded whatever they quote (`MAX_MESSAGE`, `MAX_CONTEXT`).
    """
    response = _base(request_id, ok=False)
    response["error"] = {"code": error.code, "message": clip(error.message, MAX_MESSAGE, " "),
                         "details": clip(error.details, MAX_CONTEXT)}
    return encode(response)


def respond(budget: OutputBudget, error: CellError | None, request_id: str | None) -> bytes:
    """The response to a cell that ran, kept within the budget's byte limit.

    Vix Note shows the `stdout` string, then `stderr`, then `outputs` in order,
    so stdout written after the first display is sent as `text/plain`
    outputs in its place; everything before it is the `stdout` string.
    """
    target = budget.limit
    failure = None
    summary = ""  # the diagnostic's message: the one line
    if error is not None:
        failure = {"code": error.code, "message": failure_message(error, budget, target),
                   "details": clip(error.traceback, target // 16)}
        summary = clip(error.summary, min(MAX_MESSAGE, target // 32), " ")
    while True:
        data = encode(_render(budget, error, failure, summary, request_id))
        if len(data) <= target or budget.limit == 0:
            return data
        # Escaping and the envelope made the response bigger than what it
        # keeps (a control character is six bytes as a JSON escape): keep
        # that much less, and a little more than that.
        budget.shrink(max(0, budget.kept * target // len(data) - 256))


def _render(
    budget: OutputBudget,
    error: CellError | None,
    failure: dict[str, str] | None,
    summary: str,
    request_id: str | None,
) -> dict[str, Any]:
    stdout: list[str] = []
    stderr: list[str] = []
    outputs: list[dict[str, str]] = []
    printed: dict[str, str] | None = None  # the text/plain output stdout is appended to

    def write_stdout(text: str) -> None:
        nonlocal printed
        if not outputs:
            stdout.append(text)
        elif printed is outputs[-1]:
            printed["data"] += text
        else:
            printed = {"mime": "text/plain", "data": text}
            outputs.append(printed)

    for item in budget.items():
        if isinstance(item, Stream):
            if item.name == "stderr":
                stderr.append(item.text)
            else:
                write_stdout(item.text)
        elif isinstance(item, Omitted):
            if note := item.displays_text():
                outputs.append(_text(note))
            if note := item.text("stdout"):
                write_stdout(note)
            if note := item.text("stderr"):
                stderr.append(note)
        elif item.data:  # an empty one is a placeholder never updated: nothing to show
            outputs.append(_output(item))
    response = _base(request_id, ok=error is None)
    response.update(stdout="".join(stdout), stderr="".join(stderr), outputs=outputs)
    if error is not None and failure is not None:
        response["error"] = failure
        response["diagnostics"] = [{"severity": "error", "message": summary,
                                    "line": error.line, "column": error.column}]
    return response


def failure_message(error: CellError, budget: OutputBudget, target: int) -> str:
    """What the page shows of a failed cell, which is `error.message` alone.

    The first line is the summary (with the column of a syntax error); below
    it, as a terminal would have shown them, the tail of what the cell wrote
    (the page shows neither `stdout` nor `stderr` of a failure) and the
    traceback, with its source lines, carets and the whole exception message.
    Each of the two keeps `MAX_CONTEXT` bytes, or a sixteenth of the limit;
    less if as JSON they would take more than an eighth of it (control
    characters are six-byte escapes), so that the error, `details` and
    `diagnostics` together still fit in the limit.
    """
    from pyrelune.shaping.terminal import strip_ansi  # loaded after the fork

    headline = clip(error.headline(column=True), min(MAX_MESSAGE, target // 32), " ")
    room = min(MAX_CONTEXT, target // 16)
    while True:
        parts = [headline, TIMEOUT_ADVICE] if error.code == TIMEOUT else [headline]
        printed = _printed(budget, room)
        if printed.strip():
            parts.append(printed.rstrip("\n"))
        if error.traceback.strip():
            parts.append(clip(error.traceback.rstrip("\n"), room))
        message = strip_ansi("\n\n".join(parts))
        if room <= 64 or len(encode(message)) - len(encode(headline)) <= target // 8:
            return message
        room //= 2


def _printed(budget: OutputBudget, room: int) -> str:
    """The last `room` bytes of the cell's output, streams and text outputs in order."""
    texts: list[str] = []
    for item in budget.items():
        if isinstance(item, Stream):
            texts.append(item.text)
        elif isinstance(item, Omitted):
            texts += [note for note in (item.displays_text(), item.text("stdout"),
                                        item.text("stderr")) if note]
        else:
            ((mime, data),) = item.data.items()
            texts.append(data if mime == "text/plain" else f"[{mime} output]")
            texts.append("" if texts[-1].endswith("\n") else "\n")
    text = "".join(texts)
    size = utf8_size(text)
    if size <= room:
        return text
    from pyrelune.shaping import notes

    kept = keep_tail(text, room)
    return f"{notes.earlier_output(size - utf8_size(kept))}{kept}"


def _text(text: str) -> dict[str, str]:
    return {"mime": "text/plain", "data": text}


def _output(display: Display) -> dict[str, str]:
    """The one output `select_output` left in the display."""
    ((mime, data),) = display.data.items()
    return {"mime": mime, "data": data}


def _base(request_id: str | None, ok: bool) -> dict[str, Any]:
    response: dict[str, Any] = {"protocol": PROTOCOL, "ok": ok}
    if request_id is not None:
        response["requestId"] = clip(request_id, MAX_REQUEST_ID, " ")
    if not ok:
        response.update(stdout="", stderr="", outputs=[])
    return response


def encode(response: Any) -> bytes:
    """A response as written: strict JSON in UTF-8 (lone surrogates become U+FFFD, NaN is
    refused), and a newline, so that a terminal's prompt does not land after it."""
    return fastjson.dumps_utf8(response) + b"\n"
