"""`PYRELUNE_SHELL=ipython` (or `--shell ipython`) in the lines and rpc kernels: IPython's own
shell runs their cells (for hosts that want a notebook's fidelity), each protocol as it is; a
bad value is said; a oneshot cell takes it too. The Jupyter kernel's (its default) is
tests/e2e/test_jupyter_ipython_shell.py's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.launch import runtime
from support.lines_host import Host as LinesHost
from support.lines_host import default_env
from support.rpc_host import PipeHost

IPYTHON = {"PYRELUNE_SHELL": "ipython"}
FAILING = "def inner():\n    return 1 / 0\ninner()"


def test_a_lines_kernel_runs_its_cells_in_ipythons_shell() -> None:
    kernel = LinesHost(None, default_env(**IPYTHON))
    try:
        shell = kernel.execute("type(get_ipython()).__name__")
        assert shell["stdout"] == "'ZMQInteractiveShell'\n" and shell["error"] is None
        assert kernel.execute("6 * 7")["stdout"] == "42\n"
        assert kernel.execute("_ + 1")["stdout"] == "43\n"  # IPython's `_`
        timed = kernel.execute("%time sum(range(10))")
        assert "Wall time" in timed["stdout"] and timed["stdout"].endswith("45\n")
        error = kernel.execute(FAILING)["error"]
        # IPython's traceback, as text: no colours, none of the runtime's frames.
        assert error.startswith("-----") and error.endswith("ZeroDivisionError: division by zero")
        assert "\x1b[" not in error and "\x1e" not in error and "pyrelune" not in error
        assert "----> 2     return 1 / 0" in error
    finally:
        kernel.close()


def test_a_lines_kernel_with_a_bad_shell_says_so_and_runs_plain() -> None:
    kernel = LinesHost(None, default_env(PYRELUNE_SHELL="zsh"))
    try:
        assert kernel.execute("'get_ipython' in dir(__builtins__)")["stdout"] == "False\n"
    finally:
        kernel.close()
        assert "PYRELUNE_SHELL must be 'ipython' or 'plain', not 'zsh'; using plain" in (
            kernel.stderr.decode())


def _outcome(events: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    out = "".join(e["data"]["text"] for e in events if e["event"] == "stream")
    return out, events[-1]["data"]


def test_an_rpc_kernel_runs_its_cells_in_ipythons_shell() -> None:
    kernel = PipeHost(env=IPYTHON)
    try:
        assert kernel.receive()["event"] == "kernel.ready"
        out, done = _outcome(kernel.run("print(type(get_ipython()).__name__)", cell_id="a"))
        assert out == "ZMQInteractiveShell\n" and done["status"] == "ok"
        # The rpc protocol's own builtins are still there.
        out, _ = _outcome(kernel.run("print(callable(show), callable(plot))", cell_id="b"))
        assert out == "True True\n"
        _, done = _outcome(kernel.run(FAILING, cell_id="c"))
        assert done["status"] == "error" and done["ename"] == "ZeroDivisionError"
        assert done["evalue"] == "division by zero"
        # A reset empties IPython's namespace; the shell goes on.
        assert kernel.call("kernel.reset", {})["result"] == {"ok": True}
        out, _ = _outcome(kernel.run("print('inner' in dir(), callable(get_ipython))",
                                     cell_id="d"))
        assert out == "False True\n"
    finally:
        kernel.close()


def test_an_rpc_kernel_refuses_a_bad_shell() -> None:
    done = subprocess.run(runtime("--mode", "rpc"), input="", capture_output=True, text=True,
                          env=default_env(PYRELUNE_SHELL="IPython"), timeout=60)
    assert done.returncode == 2
    assert "PYRELUNE_SHELL must be 'ipython' or 'plain', not 'IPython'" in done.stderr


def test_the_command_line_chooses_the_shell_of_a_lines_kernel() -> None:
    kernel = LinesHost([*runtime("--mode", "lines", "--shell", "ipython")], default_env())
    try:
        assert kernel.execute("type(get_ipython()).__name__")["stdout"] == (
            "'ZMQInteractiveShell'\n")
    finally:
        kernel.close()


@pytest.mark.parametrize("args", [
    ("--mode", "jupyter", "-f", "kernel.json", "--shell", "bash"),  # its own reading
    ("--mode", "rpc", "--shell", "bash"),  # typer's
])
def test_a_kernel_refuses_a_bad_shell_option(args: tuple[str, ...], tmp_path: Path) -> None:
    (tmp_path / "kernel.json").write_text('{"transport": "tcp", "ip": "127.0.0.1", "key": "k", '
                                          '"signature_scheme": "hmac-sha256"}')
    done = subprocess.run(runtime(*args), input="", capture_output=True, text=True,
                          env=default_env(), timeout=60, cwd=tmp_path)
    assert done.returncode == 2
    assert "--shell must be 'ipython' or 'plain', not 'bash'" in done.stderr


def test_a_oneshot_cell_runs_in_ipythons_shell_when_asked() -> None:
    """As a script still: what its threads print is waited for; errors are IPython's text."""
    cell = ("import threading, time\nprint(type(get_ipython()).__name__)\n"
            "threading.Thread(target=lambda: (time.sleep(0.2), print('late'))).start()\n6 * 7")
    for how, env in ((("--shell", "ipython"), default_env()),
                     ((), default_env(PYRELUNE_SHELL="ipython"))):
        done = subprocess.run(runtime(*how), input=json.dumps({"source": cell}),
                              capture_output=True, text=True, env=env, timeout=60)
        response = json.loads(done.stdout)
        assert done.returncode == 0 and response["ok"] is True, response
        shown = response["stdout"] + "".join(o["data"] for o in response["outputs"])
        assert "ZMQInteractiveShell" in shown and "42" in shown and "late" in shown
    failed = subprocess.run(runtime("--shell", "ipython"), input='{"source": "1/0"}',
                            capture_output=True, text=True, env=default_env(), timeout=60)
    error = json.loads(failed.stdout)["error"]
    assert error["code"] == "python_runtime_error" and "Cell In[1], line 1" in error["details"]
    bad = subprocess.run(runtime(), input='{"source": "1"}', capture_output=True, text=True,
                         env=default_env(PYRELUNE_SHELL="zsh"), timeout=60)
    assert json.loads(bad.stdout)["error"]["code"] == "invalid_configuration"
