"""A small Vix Note host: runs `pyrelune` the way Vix Note runs an extension.

Written from what Vix Note's external cell runner does (vixcpp/note,
`ExternalProcessCellRunner::run` and `assets/note.js`): fork + exec of the
runtime with no arguments, no shell and no PATH lookup, environment and
working directory inherited (the project folder, absolute, and the note's
path as typed, go in the request: see `run_cell`); the whole
request (compact JSON, keys sorted, UTF-8 unescaped) in one write, then stdin
closed; stdout and stderr read separately; a 10 s wall clock (then SIGKILL of
the runtime process only) and a 1 MiB limit on stdout + stderr together.
Then the host's rules turn the process's result into what the user sees: for
`ok: false`, nothing but `error.message` (`failure`).

Unlike the real host, this one never hangs: a process left holding the pipes
after the runtime exited is reported (`hung`) after a few seconds instead of
being waited for forever, and anything that would throw inside the host
(`crashed`) is reported instead of taking it down. Every response is also
checked against the response schema, with `jsonschema` as the authority;
with `check=True` every run must be one the host handles cleanly.
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

from support.launch import SCRIPT

#: Vix Note's limits.
WALL_CLOCK = 10.0
MAX_OUTPUT = 1 << 20
#: How long this harness waits for pipes to close after the runtime exited
#: before it calls the host hung (the real host would wait forever).
HANG_AFTER = 5.0
#: The deadline, the runtime's and the host's alike, of a test of size or
#: memory rather than of time: one that no busy machine reaches.
ROOMY = 300.0
PROTOCOL = "vix-note-extension-1"
TYPED_MIMES = ("application/json", "text/html", "image/svg+xml")
#: What makes a folder a project to `vix note`: the nearest such parent of a
#: note is its workingDirectory (`~/.vix` makes HOME one, once anything is
#: installed globally).
PROJECT_MARKERS = ("vix.app", "vix.json", "CMakeLists.txt", ".vix", ".git")

REPO = Path(__file__).resolve().parents[2]
RESPONSE_SCHEMA = json.loads(
    (REPO / "schemas" / "vix-note-extension-1.response.json").read_text(encoding="utf-8")
)
_validator = jsonschema.Draft202012Validator(RESPONSE_SCHEMA)


def encode_request(request: dict[str, Any]) -> bytes:
    """The bytes Vix Note writes: compact JSON, sorted keys, UTF-8 not escaped."""
    return json.dumps(request, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode(
        "utf-8", "surrogatepass"
    )


class HostResult:
    """What happened to one cell, raw and as the user sees it."""

    def __init__(self) -> None:
        self.returncode: int | None = None
        self.stdout = b""
        self.stderr = b""
        self.timed_out = False  # the host's 10 s wall clock killed the runtime
        self.too_large = False  # stdout + stderr passed 1 MiB
        self.hung = False  # something still held the pipes after the runtime exited
        self.sigpipe = False  # the runtime closed stdin before the request was written
        self.crashed: str | None = None  # what would have thrown inside the host
        self.response: Any = None  # the parsed response, when stdout was valid JSON
        self.schema_errors: list[str] = []
        self.failure: str | None = None  # the failure message the cell shows
        self.shown: list[tuple[str, str]] = []  # (kind, text): the cell's outputs in order
        self.elapsed = 0.0

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
        """A host for tests of size or memory: neither it nor the runtime times out.

        Vix Note's 10 s and the runtime's 9 s are tested on their own; here they
        would only fail a slow (busy) machine.
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
        result = HostResult()
        environment = dict(os.environ) if self.env is None else dict(self.env)
        environment.update(env or {})
        start = time.monotonic()
        proc = subprocess.Popen(
            [self.command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            cwd=cwd,
            close_fds=True,
        )
        killer = threading.Timer(self.wall_clock, self._time_out, (proc, result))
        killer.start()
        try:
            self._write(proc, raw, result)
            self._read(proc, result, self.hang_after)
        finally:
            killer.cancel()
            _kill(proc)
            proc.wait()
            for pipe in (proc.stdout, proc.stderr):
                assert pipe is not None
                pipe.close()
        result.elapsed = time.monotonic() - start
        result.returncode = proc.returncode
        self._interpret(result)
        if self.check:
            result.assert_well_behaved()
        return result

    @staticmethod
    def _time_out(proc: subprocess.Popen[bytes], result: HostResult) -> None:
        if proc.poll() is None:
            result.timed_out = True
            _kill(proc)

    @staticmethod
    def _write(proc: subprocess.Popen[bytes], raw: bytes, result: HostResult) -> None:
        """One write of the whole request, then stdin closed."""
        assert proc.stdin is not None
        fd = proc.stdin.fileno()
        try:
            view = memoryview(raw)
            while view:  # os.write on a blocking pipe writes it all unless interrupted
                view = view[os.write(fd, view) :]
        except BrokenPipeError:
            result.sigpipe = True  # the real host does not ignore SIGPIPE: it would die
        finally:
            proc.stdin.close()

    @staticmethod
    def _read(proc: subprocess.Popen[bytes], result: HostResult, hang_after: float) -> None:
        """stdout and stderr until EOF, within the host's limits."""
        assert proc.stdout is not None and proc.stderr is not None
        chunks: dict[int, list[bytes]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
        total = 0
        exited_at: float | None = None
        with selectors.DefaultSelector() as selector:
            for fd in chunks:
                selector.register(fd, selectors.EVENT_READ)
            while selector.get_map():
                if exited_at is None and proc.poll() is not None:
                    exited_at = time.monotonic()
                if exited_at is not None and time.monotonic() - exited_at > hang_after:
                    result.hung = True
                    break
                if result.timed_out:
                    break
                for key, _ in selector.select(timeout=0.1):
                    data = os.read(key.fd, 1 << 16)
                    if not data:
                        selector.unregister(key.fd)
                        continue
                    chunks[key.fd].append(data)
                    total += len(data)
                    if total > MAX_OUTPUT:
                        result.too_large = True
                        _kill(proc)
                        break
                if result.too_large:
                    break
        result.stdout = b"".join(chunks[proc.stdout.fileno()])
        result.stderr = b"".join(chunks[proc.stderr.fileno()])

    @staticmethod
    def _interpret(result: HostResult) -> None:
        """The host's rules, from process result to what the cell shows."""
        stderr_text = result.stderr.decode("utf-8", "replace")
        if result.timed_out:
            result.failure = "extension execution timed out"
            return
        if result.too_large:
            result.failure = "extension output is too large"
            return
        if result.returncode != 0:
            result.failure = "extension process failed" + (f": {stderr_text}" * bool(stderr_text))
            return
        try:
            response = strict_loads(result.stdout)
        except ValueError as exc:
            result.failure = f"extension returned invalid JSON ({exc})"
            return
        result.response = response
        result.schema_errors = [
            f"{list(e.absolute_path)}: {e.message}" for e in _validator.iter_errors(response)
        ]
        if not isinstance(response, dict):
            result.crashed = "response is not an object"
            return
        protocol = response.get("protocol")
        if "protocol" in response and not isinstance(protocol, str):
            result.crashed = "protocol is not a string"
            return
        if protocol is not None and protocol != PROTOCOL:
            result.failure = f"unsupported extension protocol: {protocol}"
            return
        if not isinstance(response.get("ok"), bool):
            result.failure = "extension response has no boolean ok"
            return
        if not response["ok"]:
            error = response.get("error")
            if not isinstance(error, dict):
                result.crashed = "error is not an object"
                return
            message = error.get("message", "extension failed")
            if not isinstance(message, str):
                result.crashed = "error.message is not a string"
                return
            result.failure = message
            return
        for name in ("stdout", "stderr"):
            text = response.get(name)
            if isinstance(text, str) and text:
                result.shown.append((name, text))
        for item in response.get("outputs", []):
            if not isinstance(item, dict):
                result.crashed = "outputs item is not an object"
                return
            mime, data = item.get("mime"), item.get("data")
            if not isinstance(mime, str) or not isinstance(data, str):
                result.crashed = "outputs item has a non-string mime or data"
                return
            if mime == "text/plain":
                result.shown.append(("stdout", data))
            elif mime == "image/svg+xml" and not _renderable_svg(data):
                result.shown.append(("error", "Invalid SVG output"))
            elif mime in TYPED_MIMES:
                result.shown.append((mime, data))
            else:
                result.shown.append(("error", f"unsupported output MIME: {mime}"))
        if stderr_text:
            result.shown.append(("stderr", stderr_text))


def project_folder(note: Path) -> Path:
    """The workingDirectory `vix note` sends for `note`: its nearest parent folder holding a
    project marker, else the note's own folder."""
    folder = Path(os.path.abspath(note)).parent
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in PROJECT_MARKERS):
            return candidate
    return folder


def judge(stdout: bytes) -> HostResult:
    """What the host makes of a runtime that wrote `stdout` and exited 0: a codec's output,
    judged by the same rules without a process."""
    result = HostResult()
    result.returncode = 0
    result.stdout = stdout
    result.too_large = len(stdout) > MAX_OUTPUT
    VixHost._interpret(result)
    return result


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """What the host does at a limit: SIGKILL of the runtime process only, not its children."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGKILL)
        except ProcessLookupError:
            pass


def _renderable_svg(data: str) -> bool:
    text = data.strip()
    return text.startswith("<svg") and "javascript:" not in text


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_loads(data: bytes) -> Any:
    """Parse like nlohmann::json: UTF-8 only, no NaN/Infinity, no lone surrogates."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    text = data.decode("utf-8")  # UnicodeDecodeError is a ValueError
    value = json.loads(text, parse_constant=_refuse_constant)
    _check_strings(value)
    return value


def _check_strings(value: Any) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"lone surrogate in string {value[:40]!r}") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_strings(key)
            _check_strings(item)
    elif isinstance(value, list):
        for item in value:
            _check_strings(item)
