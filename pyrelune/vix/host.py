"""Run one cell the way Vix Note's external runner does, and read the result by its rules.

`run` starts the command like the host (no arguments, no shell, inherited
environment and directory, the whole request written at once and stdin
closed, 10 s and 1 MiB limits). `interpret` is the host's reading of what
came back, on plain values, including the responses that would crash it:
`pyrelune vix doctor` and the tests' Vix Note host (tests/support/vixhost.py,
which starts the runtime its own stricter way) both read results through it.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

PROTOCOL = "vix-note-extension-1"
TIMEOUT = 10.0
OUTPUT_LIMIT = 1024 * 1024
MIMES = ("application/json", "text/html", "image/svg+xml")
TIMED_OUT = "extension execution timed out"
TOO_LARGE = "extension output is too large"
HUNG = ("the runtime exited but left a process holding its stdout/stderr: "
        "Vix Note would wait forever")


@dataclass
class Exchange:
    """What the runtime process did: its exit status and bytes, or why it never finished."""

    returncode: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    seconds: float = 0.0
    failure: str = ""  # set when the host gave up: timeout, too much output, cannot start
    timed_out: bool = False  # the wall clock killed the runtime
    too_large: bool = False  # stdout + stderr passed the limit: killed
    hung: bool = False  # something still held the pipes after the runtime exited
    sigpipe: bool = False  # the runtime closed stdin before the request was written


@dataclass
class Verdict:
    """What the host makes of an exchange: what the user sees in the cell, and the response
    as parsed, when stdout was JSON."""

    ok: bool
    message: str
    outputs: list[tuple[str, str]] = field(default_factory=list)  # (stdout|stderr|error|MIME, text)
    response: Any = None

    def text(self, kind: str = "stdout") -> str:
        return "".join(text for k, text in self.outputs if k == kind)


def request(source: str, extension_id: str, version: str, working_directory: str = "",
            cell_id: str = "cell-doctor") -> bytes:
    """The request bytes Vix Note writes (see `encode`)."""
    return encode({
        "protocol": PROTOCOL, "requestId": f"doctor:{cell_id}", "cellId": cell_id,
        "cellType": "python", "source": source, "executionCount": 0,
        "workingDirectory": working_directory, "documentPath": "",
        "extensionId": extension_id, "extensionVersion": version,
    })


def encode(message: dict[str, Any]) -> bytes:
    """A request as Vix Note writes it: compact JSON, keys sorted, UTF-8 not escaped."""
    return json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8", "surrogatepass")


def run(command: str, payload: bytes, timeout: float = TIMEOUT,
        limit: int = OUTPUT_LIMIT) -> Exchange:
    """Start `command` as Vix Note does and collect what it writes."""
    started = time.perf_counter()
    try:
        process = subprocess.Popen(
            [command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            close_fds=True,
        )
    except OSError as error:
        # Vix Note's child would _exit(127) here: "extension process failed", no stderr.
        return Exchange(127, failure=f"cannot start {command}: {error.strerror or error}")
    try:
        stdout, stderr = process.communicate(payload, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            process.wait(timeout=0)
            exited = True
        except subprocess.TimeoutExpired:
            exited = False
        process.kill()
        _reap(process)
        seconds = time.perf_counter() - started
        if exited:
            return Exchange(process.returncode, seconds=seconds, failure=HUNG, hung=True)
        return Exchange(None, seconds=seconds, failure=TIMED_OUT, timed_out=True)
    seconds = time.perf_counter() - started
    if len(stdout) + len(stderr) > limit:
        return Exchange(process.returncode, seconds=seconds, failure=TOO_LARGE, too_large=True)
    return Exchange(process.returncode, stdout, stderr, seconds)


def _reap(process: subprocess.Popen[bytes]) -> None:
    for stream in (process.stdout, process.stderr, process.stdin):
        if stream is not None:
            stream.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass  # unkillable (uninterruptible sleep): nothing more a host can do


def interpret(exchange: Exchange) -> Verdict:
    """The cell's result as Vix Note shows it; messages prefixed "crash:" would bring it down."""
    if exchange.failure:  # what the runtime wrote does not survive it (kept to diagnose)
        return Verdict(False, exchange.failure)
    stderr = exchange.stderr.decode("utf-8", "replace")
    if exchange.returncode != 0:
        return Verdict(False, "extension process failed", [("stderr", stderr)] if stderr else [])
    try:
        response = strict_loads(exchange.stdout)
    except ValueError as error:
        return Verdict(False, f"extension returned invalid JSON ({error})",
                       [("stderr", stderr)] if stderr else [])
    try:
        verdict = _read_response(response, stderr)
    except TypeError as error:
        verdict = Verdict(False, f"crash: {error}")
    verdict.response = response
    return verdict


def _read_response(response: Any, stderr: str) -> Verdict:
    if not isinstance(response, dict):
        raise TypeError(f"the response is {type(response).__name__}, not an object")
    protocol = _get_string(response, "protocol", "")
    if protocol and protocol != PROTOCOL:
        return Verdict(False, "extension returned invalid protocol")
    if not isinstance(response.get("ok"), bool):
        return Verdict(False, "extension response missing boolean ok")
    if not response["ok"]:
        error = response.get("error", {})
        if not isinstance(error, dict):
            raise TypeError(f"`error` is {type(error).__name__}, not an object")
        message = _get_string(error, "message", "extension failed")
        return Verdict(False, message, [("error", message)])
    outputs: list[tuple[str, str]] = []
    for key in ("stdout", "stderr"):
        if isinstance(response.get(key), str) and response[key]:
            outputs.append((key, response[key]))
    items = response.get("outputs")
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            raise TypeError("an `outputs` item is not an object")
        mime = _get_string(item, "mime", "text/plain")
        data = _get_string(item, "data", "")
        if mime == "text/plain":
            outputs.append(("stdout", data))
        elif mime == "image/svg+xml" and not renderable_svg(data):
            outputs.append(("error", "Invalid SVG output"))
        elif mime in MIMES:
            outputs.append((mime, data))
        else:
            outputs.append(("error", f"unsupported output MIME: {mime}"))
    if stderr:
        outputs.append(("stderr", stderr))
    return Verdict(True, "extension cell executed", outputs)


def renderable_svg(data: str) -> bool:
    """note.js shows an SVG only if its trimmed text starts with `<svg` and holds no
    `javascript:`; an XML prolog or DOCTYPE (as matplotlib writes) is "Invalid SVG output"."""
    text = data.strip()
    return text.startswith("<svg") and "javascript:" not in text


def _get_string(item: dict[str, Any], key: str, default: str) -> str:
    value = item.get(key, default)
    if not isinstance(value, str):
        raise TypeError(f"`{key}` is {type(value).__name__}, not a string")
    return value


def strict_loads(raw: bytes) -> Any:
    """Parse like nlohmann::json: BOM skipped, UTF-8 checked, no NaN, no lone surrogate."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    text = raw.decode("utf-8")  # UnicodeDecodeError is a ValueError

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    value = json.loads(text, parse_constant=refuse)
    if _has_lone_surrogate(value):
        raise ValueError("a string holds a lone surrogate escape")
    return value


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False
