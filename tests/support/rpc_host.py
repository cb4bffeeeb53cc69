"""A test host for the rpc kernel: real process, real pipe or real WebSocket.

Every message the kernel sends is checked against the schemas in `schemas/`
with jsonschema (the envelope, then the event's or the method's result schema).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

import pyrelune.schemas
from support.launch import runtime

SCHEMA_DIR = Path(pyrelune.schemas.__file__).parent
TIMEOUT = 60.0  # generous: a noisy 2-core machine


@cache
def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / f"{name}.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def check(message: Any, method: str | None = None) -> None:
    """Fail unless `message` matches its schemas (`method`: the request a response answers)."""
    assert isinstance(message, dict), message
    if message.get("kind") == "event":
        name = "rpc-kernel.listening" if message.get("event") == "kernel.listening" else (
            f"rpc-kernel.event.{message.get('event')}")
        validator(name).validate(message)
        return
    validator("rpc-kernel.response").validate(message)
    if method is not None and "result" in message:
        validator(f"rpc-kernel.result.{method}").validate(message["result"])


class Host:
    """Request/response bookkeeping shared by both transports."""

    def __init__(self) -> None:
        self._methods: dict[Any, str] = {}
        self._backlog: list[dict[str, Any]] = []
        self._ids = 0

    def _send_text(self, text: str) -> None:
        raise NotImplementedError

    def _receive_text(self, timeout: float) -> str | None:
        raise NotImplementedError

    def send_raw(self, text: str) -> None:
        self._send_text(text)

    def request(self, method: str, params: dict[str, Any] | None = None,
                request_id: Any = None) -> Any:
        """Send a request (schema-checked as a host would build it); its id."""
        if request_id is None:
            self._ids += 1
            request_id = f"r{self._ids}"
        message: dict[str, Any] = {"kind": "request", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._methods[request_id] = method
        self._send_text(json.dumps(message))
        return request_id

    def receive(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next message, checked; a backlogged one first."""
        if self._backlog:
            return self._backlog.pop(0)
        return self._fresh(timeout)

    def _fresh(self, timeout: float) -> dict[str, Any]:
        text = self._receive_text(timeout)
        assert text is not None, "the kernel closed the connection"
        message: dict[str, Any] = json.loads(text)
        check(message, self._methods.get(message.get("id")) if message.get("kind") == "response"
              else None)
        return message

    def response(self, request_id: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The response to `request_id`; events met on the way are kept for `receive()`."""
        for i, message in enumerate(self._backlog):
            if message.get("kind") == "response" and message["id"] == request_id:
                return self._backlog.pop(i)
        while True:
            message = self._fresh(timeout)
            if message.get("kind") == "response" and message["id"] == request_id:
                return message
            self._backlog.append(message)

    def take_backlog(self) -> list[dict[str, Any]]:
        """The messages `response()` met on its way and kept, taken out."""
        backlog, self._backlog = self._backlog, []
        return backlog

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.response(self.request(method, params))

    def run(self, source: str, cell_id: str = "c", **params: Any) -> list[dict[str, Any]]:
        """Execute a cell and return its events through execute.done."""
        started = self.call("execute.cell", {"cell_id": cell_id, "source": source, **params})
        assert started["result"] == {"status": "started"}, started
        return self.until_done()

    def until_done(self) -> list[dict[str, Any]]:
        events = []
        while True:
            message = self.receive()
            assert message["kind"] == "event", message
            events.append(message)
            if message["event"] == "execute.done":
                return events

    def wait_event(self, name: str) -> dict[str, Any]:
        while True:
            message = self.receive()
            if message.get("event") == name:
                return message


def stdout_of(events: list[dict[str, Any]], name: str = "stdout") -> str:
    return "".join(e["data"]["text"] for e in events
                   if e["event"] == "stream" and e["data"]["name"] == name)


def peak_memory(pid: int) -> int:
    """The most memory `pid` has held resident so far (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for process {pid}")


def kernel_command(*args: str) -> list[str]:
    return runtime("--mode", "rpc", *args)


class PipeHost(Host):
    """`pyrelune --mode rpc` as a child with pipes, as an editor starts it."""

    def __init__(self, *args: str, env: dict[str, str] | None = None,
                 command: list[str] | None = None, cwd: Path | None = None) -> None:
        """`command` replaces `pyrelune --mode rpc` (`args` follow it)."""
        super().__init__()
        self.process = subprocess.Popen(
            [*(command or kernel_command()), *args], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **(env or {})},
            cwd=cwd,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.stderr = bytearray()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line.decode("utf-8"))
        self._lines.put(None)

    def _read_stderr(self) -> None:
        _drain(self.process, self.stderr)

    def _send_text(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def send_bytes(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def _receive_text(self, timeout: float) -> str | None:
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            raise _hung(timeout, self.stderr) from None

    def end_input(self) -> None:
        """Close the kernel's stdin, as a host does that has nothing more to ask."""
        assert self.process.stdin is not None
        self.process.stdin.close()

    def close(self) -> int:
        """End stdin and wait for the kernel to exit; its status."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=TIMEOUT)
        finally:
            self.process.kill()


class Listener:
    """`pyrelune --mode rpc --listen ...` as a server process; `url` from its one stdout line."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            kernel_command("--listen", "127.0.0.1:0", *args), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
        assert self.process.stdout is not None
        self.errors = bytearray()  # its stderr so far, for a hung kernel's test to show
        self._reader = threading.Thread(target=_drain, args=(self.process, self.errors),
                                        daemon=True)
        self._reader.start()
        line = self.process.stdout.readline()
        assert line, _hung(TIMEOUT, self.errors)
        self.announcement = json.loads(line)
        check(self.announcement)
        self.url: str = self.announcement["data"]["url"]
        _LISTENERS[self.url] = self
        self.stderr = ""

    def close(self) -> None:
        """Stop the server (SIGTERM); what it wrote on stderr is kept in `stderr`."""
        _LISTENERS.pop(self.url, None)
        if self.process.returncode is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=TIMEOUT)
            self._reader.join(timeout=TIMEOUT)
            self.stderr = self.errors.decode(errors="replace")
        finally:
            self.process.kill()


#: The listening kernels by URL: a client's timeout shows its kernel's stderr.
_LISTENERS: dict[str, Listener] = {}


def _drain(process: subprocess.Popen[bytes], into: bytearray) -> None:
    """A kernel's stderr into `into`, in chunks: a hung kernel's last words may not end a line."""
    assert process.stderr is not None
    while chunk := os.read(process.stderr.fileno(), 1 << 16):
        into += chunk


class KernelSilent(TimeoutError, AssertionError):
    """Nothing came from the kernel in time: a timeout a test may expect, else its failure."""


def _hung(timeout: float, stderr: bytearray) -> KernelSilent:
    """The failure of a test whose kernel said nothing: with its stderr, which often says why."""
    return KernelSilent(f"no message from the kernel in {timeout:g} s; "
                        f"its stderr so far: {bytes(stderr)!r}")


class WebSocketHost(Host):
    """A WebSocket client of a listening kernel (websockets' sync client)."""

    def __init__(self, url: str, **connect: Any) -> None:
        from websockets.exceptions import InvalidMessage
        from websockets.sync.client import connect as ws_connect

        super().__init__()
        self._kernel = _LISTENERS.get(url)
        self._stack = contextlib.ExitStack()
        try:
            self.websocket = self._stack.enter_context(ws_connect(url, open_timeout=TIMEOUT,
                                                                  **connect))
        except (InvalidMessage, OSError) as error:  # no answer at all: what the kernel said
            if self._kernel is None:
                raise
            raise AssertionError(
                f"no WebSocket connection to {url}: {error!r}; the kernel "
                f"{'is running' if self._kernel.process.poll() is None else 'has ended'}, "
                f"its stderr so far: {bytes(self._kernel.errors)!r}") from error

    def _send_text(self, text: str) -> None:
        self.websocket.send(text)

    def _receive_text(self, timeout: float) -> str | None:
        try:
            data = self.websocket.recv(timeout=timeout)
        except TimeoutError:
            raise _hung(timeout, self._kernel.errors if self._kernel else bytearray()) from None
        return data if isinstance(data, str) else data.decode()

    def close(self) -> None:
        self._stack.close()
