"""`pyrelune --mode rpc` starts without typer; what typer must judge still goes to typer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.launch import SCRIPT
from support.rpc_host import TIMEOUT, check

Ran = subprocess.CompletedProcess[bytes]


def imported(args: list[str], stdin: bytes = b"") -> tuple[set[str], Ran]:
    """The modules the real `pyrelune` process imported for `args`, and how it ended."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    result = subprocess.run([SCRIPT, *args], input=stdin, env=env,
                            capture_output=True, timeout=TIMEOUT)
    lines = result.stderr.decode().splitlines()
    return {line.rsplit("|", 1)[1].strip() for line in lines
            if line.startswith("import time:")}, result


@pytest.mark.parametrize("options", [
    [], ["--max-message-size", "4096"], ["--max-message-size=4096", "--auth-timeout", "3"],
])
def test_the_rpc_kernel_starts_without_typer(options: list[str]) -> None:
    modules, result = imported(["--mode", "rpc", *options])
    assert result.returncode == 0, result.stderr[-2000:]
    ready = json.loads(result.stdout.splitlines()[0])
    check(ready)
    assert ready["event"] == "kernel.ready"
    assert "pyrelune.modes.rpc" in modules  # it did start the kernel
    assert not {"typer", "click", "pyrelune.cli.app"} & modules


def test_the_pipe_kernel_runs_a_cell_without_asyncio() -> None:
    """asyncio takes longer to import than the rest of the kernel: over a pipe it is not used."""
    request = {"kind": "request", "id": "1", "method": "execute.cell",
               "params": {"cell_id": "c", "source": "1+1"}}
    modules, result = imported(["--mode", "rpc"], json.dumps(request).encode() + b"\n")
    assert result.returncode == 0, result.stderr[-2000:]
    messages = [json.loads(line) for line in result.stdout.splitlines()]
    assert messages[-1]["event"] == "execute.done", messages
    assert messages[-1]["data"]["status"] == "ok"
    assert "pyrelune.loop.reactor" in modules
    assert "asyncio" not in modules


def test_the_rpc_worker_starts_without_functools() -> None:
    """It is the worker's slowest import (with collections), and an rpc worker needs none of it:
    its first answer waits for whatever it imports. Started as the console script starts it
    (`-m` would import functools itself, for runpy)."""
    script = "import sys\nfrom pyrelune.__main__ import main\nsys.exit(main())"
    source = "import sys\n[m for m in ('functools', 'asyncio') if m in sys.modules]"
    request = {"kind": "request", "id": "1", "method": "execute.cell",
               "params": {"cell_id": "c", "source": source}}
    result = subprocess.run([sys.executable, "-c", script, "--mode", "rpc"],
                            input=json.dumps(request).encode() + b"\n", capture_output=True,
                            timeout=TIMEOUT)
    messages = [json.loads(line) for line in result.stdout.splitlines()]
    shown = [m["data"]["item"] for m in messages if m.get("event") == "display_data"]
    assert shown == ["[]"], messages


def test_a_websocket_kernel_starts_without_typer(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("secret")
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    process = subprocess.Popen([SCRIPT, "--mode", "rpc", "--listen",
                                "127.0.0.1:0", "--token-file", str(token)], env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    try:
        assert process.stdout is not None
        listening = json.loads(process.stdout.readline())
        assert listening["event"] == "kernel.listening"
        process.terminate()
        _, errors = process.communicate(timeout=TIMEOUT)
    finally:
        process.kill()
    modules = {line.rsplit("|", 1)[1].strip() for line in errors.decode().splitlines()
               if line.startswith("import time:")}
    assert "pyrelune.transports.websocket" in modules
    assert "asyncio" in modules  # WebSocket's library runs on it
    assert not {"typer", "click", "pyrelune.cli.app"} & modules


@pytest.mark.parametrize(("args", "says"), [
    (["--help"], b"--listen HOST:PORT"),
    (["--max-message-size", "12"], b"--max-message-size must be a whole number of bytes"),
    (["--token", "t"], b"--token is for WebSocket kernels: add --listen"),
    (["--listen", "nowhere"], b"expected HOST:PORT"),
    (["--bogus"], b"No such option"),
    (["--token-file", "/nonexistent/token"], b"does not exist"),
])
def test_help_and_usage_errors_are_typers(args: list[str], says: bytes) -> None:
    modules, result = imported(["--mode", "rpc", *args])
    assert "typer" in modules
    assert result.returncode == (0 if args == ["--help"] else 2), result
    assert says in result.stdout + result.stderr


@pytest.mark.parametrize(("args", "option", "says"), [
    (["--listen", "nope"], "--listen", "--listen 'nope': expected HOST:PORT"),
    (["--keyfile", sys.executable], "--keyfile", "--keyfile is for WebSocket kernels"),
    (["--listen", "127.0.0.1:0", "--keyfile", sys.executable], "--keyfile",
     "--keyfile needs --certfile"),
])
def test_the_options_rules_are_all_said_as_usage_errors(args: list[str], option: str,
                                                        says: str) -> None:
    """One style for every refusal of the options: the usage line, and the option named."""
    _, result = imported(["--mode", "rpc", *args])
    assert result.returncode == 2, result
    assert result.stdout == b""
    said = [line for line in result.stderr.decode().splitlines()
            if not line.startswith("import time:")]
    text = " ".join(" ".join(said).split())  # typer wraps long lines
    assert text.startswith("Usage: pyrelune [OPTIONS]"), text
    assert f"Invalid value for {option}: {says}" in text, text


def test_listen_without_websockets_says_which_extra_to_install() -> None:
    """websockets is the `websocket` extra's: a kernel asked to listen without it says so."""
    script = ("import sys\nsys.modules['websockets'] = None  # as if it were not installed\n"
              "from pyrelune.__main__ import main\nsys.exit(main())")
    result = subprocess.run([sys.executable, "-c", script, "--mode", "rpc", "--listen",
                             "127.0.0.1:0"], stdin=subprocess.DEVNULL, capture_output=True,
                            timeout=TIMEOUT)
    assert result.returncode == 2, result
    assert result.stdout == b""
    assert b"--listen needs the websockets package" in result.stderr
    assert b"pip install 'websockets>=" in result.stderr, result.stderr
    assert b"pip install '<pyrelune checkout or wheel>[websocket]'" in result.stderr
