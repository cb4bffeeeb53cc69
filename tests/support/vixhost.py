"""A Vix Note host for the tests: pyrelune.vix.host's `run` and `interpret` (the host's rules,
one reader for `vix doctor` and the tests), with the request `vix note` sends, a check of
every response against the response schema (`jsonschema` the authority), and, with
`check=True`, the demand that every run be one the host handles cleanly.

The host itself is written from what Vix Note's external cell runner does (vixcpp/note,
`ExternalProcessCellRunner::run` and `assets/note.js`; see HOSTS.md): fork + exec of the
runtime with no arguments, environment and working directory inherited (the project folder,
absolute, and the note's path as typed, go in the request: see `run_cell`), the whole request
in one write, 10 s and 1 MiB limits. Unlike the real host it never hangs (`hung`), and what
would throw inside the host is reported (`crashed`) instead of taking it down.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import jsonschema

from pyrelune.vix import host
from pyrelune.vix.host import PROTOCOL, strict_loads
from support.launch import SCRIPT

__all__ = ["DEADLINE", "DEADLINE_ENV", "MAX_OUTPUT", "PROTOCOL", "ROOMY", "HostResult", "VixHost",
           "encode_request", "judge", "project_folder", "strict_loads"]

#: Vix Note's limits.
WALL_CLOCK = host.TIMEOUT
MAX_OUTPUT = host.OUTPUT_LIMIT
#: How long this harness waits for pipes to close after the runtime exited
#: before it calls the host hung (the real host would wait forever).
HANG_AFTER = 5.0
#: The deadline, the runtime's and the host's alike, of a test of size or
#: memory rather than of time: one that no busy machine reaches.
ROOMY = 300.0
#: The runtime's deadline (`PYRELUNE_TIMEOUT`, seconds) in a test that waits one out and
#: checks what the cell did first: long enough for a fresh runtime to reach the cell's
#: first lines on a loaded machine, which 1 s was not always (two suites and two busy
#: loops on 2 cores).
DEADLINE = 3
DEADLINE_ENV = {"PYRELUNE_TIMEOUT": str(DEADLINE)}
#: What makes a folder a project to `vix note`: the nearest such parent of a
#: note is its workingDirectory (`~/.vix` makes HOME one, once anything is
#: installed globally).
PROJECT_MARKERS = ("vix.app", "vix.json", "CMakeLists.txt", ".vix", ".git")

REPO = Path(__file__).resolve().parents[2]
RESPONSE_SCHEMA = json.loads(
    (REPO / "schemas" / "vix-note-extension-1.response.json").read_text(encoding="utf-8")
)
_validator = jsonschema.Draft202012Validator(RESPONSE_SCHEMA)
encode_request = host.encode


class HostResult:
    """What happened to one cell, raw and as the user sees it."""

    def __init__(self, exchange: host.Exchange) -> None:
        outcome = host.interpret(exchange)
        self.returncode = exchange.returncode
        self.stdout = exchange.stdout
        self.stderr = exchange.stderr
        self.timed_out = exchange.timed_out  # the host's 10 s wall clock killed the runtime
        self.too_large = exchange.too_large  # stdout + stderr passed 1 MiB
        self.hung = exchange.hung  # something still held the pipes after the runtime exited
        self.sigpipe = exchange.sigpipe  # the runtime closed stdin before the request was written
        self.elapsed = exchange.seconds
        self.response: Any = outcome.response  # the parsed response, when stdout was valid JSON
        self.schema_errors = [] if self.response is None else [
            f"{list(e.absolute_path)}: {e.message}" for e in _validator.iter_errors(self.response)]
        crash = outcome.message.startswith("crash: ")
        #: What would have thrown inside the host.
        self.crashed: str | None = outcome.message.removeprefix("crash: ") if crash else None
        #: The failure message the cell shows.
        self.failure: str | None = None if outcome.ok or crash else outcome.message
        #: (kind, text): the cell's outputs in order, a failure's included.
        self.shown: list[tuple[str, str]] = outcome.outputs

    @property
    def ok(self) -> bool:
        """The cell shows a success."""
        return self.failure is None

    @property
    def headline(self) -> str | None:
        """The first line of the failure: the summary the page shows above the rest."""
        return None if self.failure is None else self.failure.split("\n", 1)[0]

    @property
    def error(self) -> dict[str, Any]:
        """The response's `error` object (tests of failures read code and details)."""
        assert isinstance(self.response, dict), self
        error = self.response.get("error")
        assert isinstance(error, dict), self.response
        return error

    def assert_well_behaved(self) -> None:
        """What every run must be: answered in time, exit 0, a schema-valid response."""
        assert not (self.timed_out or self.too_large or self.hung or self.sigpipe), self
        assert self.crashed is None, self
        assert self.returncode == 0, self
        assert self.response is not None, self
        assert self.schema_errors == [], self

    def text(self, kind: str = "stdout") -> str:
        """Everything shown of one kind, joined."""
        return "".join(text for k, text in self.shown if k == kind)

    def __repr__(self) -> str:
        return (
            f"HostResult(returncode={self.returncode}, failure={self.failure!r}, "
            f"shown={self.shown!r:.500}, stdout={self.stdout!r:.500}, "
            f"stderr={self.stderr!r:.500}, timed_out={self.timed_out}, hung={self.hung}, "
            f"crashed={self.crashed!r}, schema_errors={self.schema_errors})"
        )


class VixHost:
    """Runs cells through a runtime command exactly as Vix Note does."""

    def __init__(
        self,
        command: str | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
        hang_after: float = HANG_AFTER,
        wall_clock: float = WALL_CLOCK,
    ) -> None:
        self.command = command or SCRIPT
        self.env = env
        self.check = check
        self.hang_after = hang_after
        self.wall_clock = wall_clock

    @classmethod
    def roomy(cls) -> VixHost:
        """A host under which neither it nor the runtime times out (the `host` fixture's).

        Vix Note's 10 s and the runtime's 8.5 s are tested on their own; elsewhere
        they would only fail a slow (busy) machine.
        """
        return cls(env={**os.environ, "PYRELUNE_TIMEOUT": str(ROOMY)}, wall_clock=ROOMY)

    def run_cell(
        self,
        source: str,
        note: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: dict[str, str] | None = None,
        **fields: Any,
    ) -> HostResult:
        """Run `source` with the request fields `vix note` sends.

        `note` is the note's path as typed when `vix note` was started in
        `cwd` (the runtime's current directory too), maybe relative; the
        workingDirectory is then the note's project folder, always absolute,
        and often not the note's own folder (see `project_folder`).
        """
        here = Path(cwd if cwd is not None else os.getcwd()).absolute()
        project = project_folder(here / note) if note else here
        request = {
            "protocol": PROTOCOL,
            "requestId": ":cell-python",
            "cellId": "cell-python",
            "cellType": "python",
            "source": source,
            "executionCount": 0,
            "workingDirectory": str(project),
            "documentPath": note or "",
            "extensionId": "softadastra/pyrelune",
            "extensionVersion": "0.2.0",
        }
        request.update(fields)
        return self.run(encode_request(request), env=env, cwd=cwd)

    def run(
        self,
        raw: bytes,
        env: dict[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> HostResult:
        """Send `raw` as the request, collect the process's result, apply the host's rules."""
        environment = dict(os.environ) if self.env is None else dict(self.env)
        environment.update(env or {})
        result = HostResult(_exchange(self.command, raw, environment, cwd, self.wall_clock,
                                      self.hang_after))
        if self.check:
            result.assert_well_behaved()
        return result


def project_folder(note: Path) -> Path:
    """The workingDirectory `vix note` sends for `note`: its nearest parent folder holding a
    project marker, else the note's own folder."""
    folder = Path(os.path.abspath(note)).parent
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in PROJECT_MARKERS):
            return candidate
    return folder


def _exchange(command: str, raw: bytes, env: dict[str, str],
              cwd: str | os.PathLike[str] | None, wall_clock: float,
              hang_after: float) -> host.Exchange:
    """Run `command` as the host does, noting each way it could go wrong for the host: the
    wall clock, the output limit (killed as soon as passed), pipes held after the runtime
    exited, a request the runtime did not read."""
    exchange = host.Exchange(None)
    start = time.monotonic()
    proc = subprocess.Popen([command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=cwd, close_fds=True)
    killer = threading.Timer(wall_clock, _time_out, (proc, exchange))
    killer.start()
    try:
        _write(proc, raw, exchange)
        _read(proc, exchange, hang_after)
    finally:
        killer.cancel()
        _kill(proc)
        proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            assert pipe is not None
            pipe.close()
    exchange.seconds = time.monotonic() - start
    exchange.returncode = proc.returncode
    if exchange.timed_out:
        exchange.failure = host.TIMED_OUT
    elif exchange.too_large:
        exchange.failure = host.TOO_LARGE
    elif exchange.hung:
        exchange.failure = host.HUNG
    return exchange


def _time_out(proc: subprocess.Popen[bytes], exchange: host.Exchange) -> None:
    if proc.poll() is None:
        exchange.timed_out = True
        _kill(proc)


def _write(proc: subprocess.Popen[bytes], raw: bytes, exchange: host.Exchange) -> None:
    """One write of the whole request, then stdin closed."""
    assert proc.stdin is not None
    try:
        view = memoryview(raw)
        while view:  # os.write on a blocking pipe writes it all unless interrupted
            view = view[os.write(proc.stdin.fileno(), view):]
    except BrokenPipeError:
        exchange.sigpipe = True  # the real host does not ignore SIGPIPE: it would die
    finally:
        proc.stdin.close()


def _read(proc: subprocess.Popen[bytes], exchange: host.Exchange, hang_after: float) -> None:
    """stdout and stderr until EOF, within the host's limits (kept to diagnose, whatever the
    host would show)."""
    assert proc.stdout is not None and proc.stderr is not None
    chunks: dict[int, list[bytes]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
    total = 0
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map() and not (exchange.timed_out or exchange.too_large):
            if exited_at is None and proc.poll() is not None:
                exited_at = time.monotonic()
            if exited_at is not None and time.monotonic() - exited_at > hang_after:
                exchange.hung = True
                break
            for key, _ in selector.select(timeout=0.1):
                data = os.read(key.fd, 1 << 16)
                if not data:
                    selector.unregister(key.fd)
                    continue
                chunks[key.fd].append(data)
                total += len(data)
                if total > MAX_OUTPUT:
                    exchange.too_large = True
                    _kill(proc)
                    break
    exchange.stdout = b"".join(chunks[proc.stdout.fileno()])
    exchange.stderr = b"".join(chunks[proc.stderr.fileno()])


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """What the host does at a limit: SIGKILL of the runtime process only, not its children."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGKILL)
        except ProcessLookupError:
            pass


def judge(stdout: bytes) -> HostResult:
    """What the host makes of a runtime that wrote `stdout` and exited 0: a codec's output,
    judged by the same rules without a process."""
    too_large = len(stdout) > MAX_OUTPUT
    return HostResult(host.Exchange(0, stdout, too_large=too_large,
                                    failure=host.TOO_LARGE if too_large else ""))
