"""A desktop notebook host of the lines kernel, as it behaves (see the host facts).

It spawns `pyrelune --mode lines` with pipes, pings it, checks that every
response id is its request's id and that every line is strict JSON matching
the response schema, interrupts with SIGINT and kills the kernel with
SIGKILL 2 s later if the same execution is still running, and drains the
kernel's stderr so that a full pipe cannot deadlock it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import jsonschema

from support.launch import runtime
from support.poll import wait_until

ROOT = Path(__file__).resolve().parents[2]
RESPONSE_SCHEMA = json.loads((ROOT / "schemas" / "lines-kernel.response.json").read_text())
COMMAND = runtime("--mode", "lines")
#: Waiting, never asserting speed: generous for a noisy machine.
WAIT = 60.0
#: The host's SIGKILL after an unanswered interrupt.
KILL_AFTER_INTERRUPT = 2.0


def default_env(**changes: str) -> dict[str, str]:
    """This environment with the kernel's defaults, PYTHONUNBUFFERED unset whatever it says."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    return env | changes


class KernelBroken(AssertionError):
    """What the host reports when the kernel breaks its protocol."""


def strict_json(line: bytes) -> dict[str, Any]:
    """Parse a response line as a strict parser (serde_json) would."""
    text = line.decode("utf-8")  # strict: invalid UTF-8 raises

    def refuse(name: str) -> None:
        raise KernelBroken(f"not JSON: {name}")

    message = json.loads(text, parse_constant=refuse)
    for value in message.values() if isinstance(message, dict) else ():
        if isinstance(value, str):
            value.encode("utf-8")  # a lone surrogate escape (\\ud800) raises here
    return message  # type: ignore[no-any-return]


class Host:
    """One kernel process, driven like one notebook tab."""

    def __init__(self, command: list[str] | None = None, env: dict[str, str] | None = None,
                 cwd: Path | None = None):
        self.proc = subprocess.Popen(
            command or COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=default_env() if env is None else env, cwd=cwd,
        )
        self.stderr = bytearray()
        self._stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_thread.start()
        self._pending = b""
        self.responses: list[dict[str, Any]] = []

    def _drain_stderr(self) -> None:
        assert self.proc.stderr
        while chunk := os.read(self.proc.stderr.fileno(), 1 << 16):
            self.stderr += chunk

    # requests -------------------------------------------------------------
    def write(self, data: bytes) -> None:
        assert self.proc.stdin
        os.write(self.proc.stdin.fileno(), data)

    def send(self, kind: str, code: str | None = None, **extra: Any) -> str:
        request_id = str(uuid.uuid4())
        request: dict[str, Any] = {"id": request_id, "type": kind, **extra}
        if code is not None:
            request["code"] = code
        self.write(json.dumps(request).encode() + b"\n")
        return request_id

    def request(self, kind: str, code: str | None = None, **extra: Any) -> dict[str, Any]:
        return self.read(self.send(kind, code, **extra))

    def execute(self, code: str) -> dict[str, Any]:
        return self.request("execute", code)

    def ping(self) -> dict[str, Any]:
        response = self.request("ping")
        assert response["stdout"] == "pong"
        return response

    # responses ------------------------------------------------------------
    def read_line(self, timeout: float = WAIT) -> bytes:
        assert self.proc.stdout
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise self.broken(f"no response in {timeout:g} s")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise self.broken("kernel closed stdout")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def broken(self, why: str) -> KernelBroken:
        """The failure to report, with what the kernel wrote on stderr so far: often the cause."""
        return KernelBroken(f"{why}; kernel stderr so far: {bytes(self.stderr)!r}")

    def read(self, request_id: str, timeout: float = WAIT) -> dict[str, Any]:
        """The next response; it must be the one to `request_id`, and well-formed."""
        response = strict_json(self.read_line(timeout))
        jsonschema.validate(response, RESPONSE_SCHEMA)
        if response["id"] != request_id:
            raise KernelBroken(f"id mismatch: sent {request_id!r}, got {response!r}")
        self.responses.append(response)
        return response

    # signals --------------------------------------------------------------
    def interrupt_when(self, marker: Path, request_id: str) -> dict[str, Any]:
        """Once the cell created `marker`, SIGINT; SIGKILL 2 s later as the host does."""
        wait_for(marker.exists, "the cell to start")
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.read(request_id, timeout=KILL_AFTER_INTERRUPT)
        except KernelBroken:
            self.proc.kill()
            raise self.broken("the interrupt was not answered before the host's SIGKILL") from None

    def worker_group(self) -> int:
        """The process group the kernel's worker (and every cell's child) runs in."""
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        pids = [int(p) for p in children.split()]
        assert len(pids) == 1, pids
        return os.getpgid(pids[0])

    def close(self) -> int:
        """EOF on stdin, as a tab being closed; the exit status."""
        assert self.proc.stdin
        self.proc.stdin.close()
        status = self.proc.wait(timeout=WAIT)
        self._stderr_thread.join(WAIT)
        return status

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=WAIT)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream:
                stream.close()


def wait_for(condition: Any, what: str, timeout: float = WAIT) -> None:
    """`support.poll.wait_until`, failing the test with `what` it waited for."""
    if not wait_until(condition, timeout, interval=0.01):
        raise AssertionError(f"timed out waiting for {what}")


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return _only_zombies(pgid)


def _only_zombies(pgid: int) -> bool:
    """Killed members not yet reaped by their parent still count as gone."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return False
    return True

