"""The warm process as tests drive it: through the `pyrelune warm` command, found in /proc."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support.launch import SCRIPT
from support.poll import GENEROUS, wait_until

#: How long a warm process may take to preload and answer (a busy machine is slow).
START_WITHIN = GENEROUS


def runtime_folder() -> Path:
    """A fresh folder, private (0700) and short, under the session's XDG_RUNTIME_DIR (see
    conftest): a test's own XDG_RUNTIME_DIR, whose warm socket path must fit AF_UNIX's 107
    bytes, which pytest's tmp_path (deeper under xdist) may not leave room for."""
    return Path(tempfile.mkdtemp(prefix="rt", dir=os.environ["XDG_RUNTIME_DIR"]))


@contextmanager
def own_runtime() -> Iterator[Path]:
    """A test's own runtime folder (`runtime_folder`), whose warm processes end with it."""
    folder = runtime_folder()
    try:
        yield folder
    finally:
        stop_all(folder)


def command(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, "warm", *args], capture_output=True, text=True,
                          env=env, timeout=START_WITHIN + 30)


def start(preload: str | None = None) -> dict[str, Any]:
    """Start the warm process of $PYRELUNE_WARM (or `preload`) and wait for it; its status."""
    done = command("start", *(["--preload", preload] if preload else []))
    assert done.returncode == 0, done
    found = status(preload)
    assert found is not None, done
    return found


def status(preload: str | None = None) -> dict[str, Any] | None:
    """The warm process's status as it reports it, read without typer's help text."""
    program = ("import json, sys; from pyrelune.warm.gate import preload_names; "
               "from pyrelune.warm import control; "
               "p = sys.argv[1]; found = control.status(preload_names(p) if p else "
               "control.setting()); print(json.dumps(found))")
    python = Path(SCRIPT).parent / "python"
    done = subprocess.run([str(python), "-c", program, preload or ""], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done
    found: dict[str, Any] | None = json.loads(done.stdout)
    return found


def processes(runtime_dir: Path, children: bool = False) -> list[int]:
    """Pids of the warm processes whose XDG_RUNTIME_DIR is `runtime_dir`.

    Not the children they fork (a spare, a cell's runtime) unless `children`.
    """
    found: dict[int, int] = {}
    marker = f"XDG_RUNTIME_DIR={runtime_dir}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            if b"pyrelune.warm.server" not in cmdline:
                continue
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if marker in environ and fields[0] != "Z":
            found[int(entry)] = int(fields[1])
    return [pid for pid, parent in found.items() if children or parent not in found]


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """os.environ with `values` set, then as it was."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def stop_all(runtime_dir: Path) -> None:
    """End every warm process of `runtime_dir` (SIGTERM, then SIGKILL): no test leaves one."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for pid in processes(runtime_dir, children=signum == signal.SIGKILL):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass
        if wait_until(lambda: not processes(runtime_dir, children=True), 10):
            return
    raise AssertionError(f"warm processes left running: {processes(runtime_dir)}")
