"""`pyrelune --mode lines` over real pipes, driven as the desktop notebook host drives it."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lines_host import (
    COMMAND,
    WAIT,
    Host,
    KernelBroken,
    group_gone,
    pid_gone,
    strict_json,
    wait_for,
)

INTERRUPTED = "KeyboardInterrupt: Execution interrupted"


@pytest.fixture
def host() -> Iterator[Host]:
    kernel = Host()
    try:
        kernel.ping()  # the host's start-up handshake
        yield kernel
    finally:
        kernel.kill()


# The host's own expectations ---------------------------------------------------------


def test_ping(host: Host) -> None:
    response = host.request("ping")
    assert response == {"id": response["id"], "type": "result", "stdout": "pong",
                        "stderr": "", "error": None, "output_type": "text"}


def test_execute_and_state_persist(host: Host) -> None:
    assert host.execute("print('hello')")["stdout"] == "hello\n"
    assert host.execute("x = 42")["stdout"] == ""
    assert host.execute("print(x)") | {"id": ""} == {
        "id": "", "type": "result", "stdout": "42\n", "stderr": "", "error": None,
        "output_type": "text"}


def test_error_keeps_output_and_shows_only_cell_frames(host: Host) -> None:
    response = host.execute("print('before')\ndef f():\n    return 1 / 0\nf()")
    assert response["stdout"] == "before\n"
    error = response["error"]
    assert error.startswith("Traceback (most recent call last):\n")
    assert error.endswith("ZeroDivisionError: division by zero\n")
    assert "return 1 / 0" in error and "line 4" in error  # source lines are quoted
    assert "pyrelune" not in error and "worker.py" not in error and "cell.py" not in error


def test_stderr_capture(host: Host) -> None:
    response = host.execute("import sys; sys.stderr.write('warn')")
    assert (response["stderr"], response["error"]) == ("warn", None)


def test_restart_clears_state(host: Host) -> None:
    host.execute("y = 99")
    assert host.request("restart") | {"id": ""} == {
        "id": "", "type": "result", "stdout": "", "stderr": "", "error": None,
        "output_type": "text"}
    assert "NameError: name 'y' is not defined" in host.execute("print(y)")["error"]


def test_unknown_type(host: Host) -> None:
    response = host.request("example", "1")
    assert response["error"] == "Unknown request type: example"


def test_invalid_json_gets_empty_id(host: Host) -> None:
    host.write(b"not valid json {{{{\n")
    response = host.read("")
    assert response["error"].startswith("Invalid JSON: ")
    host.ping()


@pytest.mark.parametrize("payload", [None, [], 42, "text", True])
def test_non_object_requests(host: Host, payload: object) -> None:
    host.write(json.dumps(payload).encode() + b"\n")
    assert host.read("")["error"].startswith("Invalid request: expected a JSON object")
    host.ping()


def test_malformed_fields_are_answered(host: Host) -> None:
    host.write(b'{"id": "a", "type": "execute", "code": 5}\n')
    assert host.read("a")["error"].startswith("Invalid request: code: 5 is not of type")
    host.write(b'{"id": "b"}\n')
    assert "'type' is a required property" in host.read("b")["error"]
    host.write(b'{"id": "c", "type": "execute", "code": "1", "extra": true}\n')
    assert host.read("c")["stdout"] == "1\n"  # unknown fields are ignored
    host.write(b'\xff\xfe\n')
    assert host.read("")["error"].startswith("Invalid JSON: not UTF-8")


def test_final_expression_repr_and_underscore(host: Host) -> None:
    assert host.execute("6 * 7")["stdout"] == "42\n"
    assert host.execute("_ + 1")["stdout"] == "43\n"
    assert host.execute("None")["stdout"] == ""
    assert host.execute("'a'; ")["stdout"] == ""  # a trailing semicolon hides it
    assert host.execute("print('x')\n'y'")["stdout"] == "x\n'y'\n"


def test_missing_code_is_empty(host: Host) -> None:
    response = host.request("execute")
    assert (response["stdout"], response["stderr"], response["error"]) == ("", "", None)


def test_main_namespace(host: Host) -> None:
    assert host.execute("__name__")["stdout"] == "'__main__'\n"


def test_sys_exit_is_an_error_and_kernel_stays(host: Host) -> None:
    host.execute("kept = 1")
    assert "SystemExit: 1" in host.execute("import sys; sys.exit(1)")["error"]
    assert "SystemExit: 3" in host.execute("raise SystemExit(3)")["error"]
    assert host.execute("kept")["stdout"] == "1\n"


def test_input_raises_eoferror(host: Host) -> None:
    assert "EOFError" in host.execute("input('value: ')")["error"]
    host.ping()


def test_syntax_error(host: Host) -> None:
    error = host.execute("x = (")["error"]
    assert "SyntaxError" in error and "<cell" in error


# The predecessor's defects ------------------------------------------------------------


def test_fd_level_output_stays_out_of_the_protocol(host: Host) -> None:
    code = ("import os, subprocess, ctypes\n"
            "os.write(1, b'raw\\n')\n"
            "os.system('echo from-shell; echo shell-err >&2')\n"
            "subprocess.run(['echo', 'from-subprocess'])\n"
            "n = ctypes.CDLL(None).puts(b'from-c')\n")
    response = host.execute(code)
    assert response["stdout"].splitlines() == ["raw", "from-shell", "from-subprocess", "from-c"]
    assert response["stderr"] == "shell-err\n"
    host.ping()


def test_prints_keep_their_order_with_fd_writes(host: Host) -> None:
    code = ("import os, sys\n"
            "for i in range(3):\n"
            "    print(i)\n"
            "    os.write(1, b'w\\n')\n"
            "    os.system('echo s')\n"
            "print('end', end='')\n")
    assert host.execute(code)["stdout"] == "0\nw\ns\n1\nw\ns\n2\nw\ns\nend"


def test_many_prints(host: Host) -> None:
    response = host.execute("for i in range(1000):\n    print(i)")
    assert response["stdout"] == "".join(f"{i}\n" for i in range(1000))


def test_sigint_while_idle_does_nothing(host: Host) -> None:
    host.execute("kept = 'yes'")
    for _ in range(3):
        host.proc.send_signal(signal.SIGINT)
    host.ping()
    assert host.execute("kept")["stdout"] == "'yes'\n"
    assert host.proc.poll() is None


def test_os_exit_does_not_end_the_kernel(host: Host) -> None:
    host.execute("gone = 1")
    response = host.execute("print('bye')\nimport os; os._exit(3)")
    assert response["stdout"] == "bye\n"
    assert "worker exited with status 3" in response["error"]
    assert "namespace was lost" in response["error"]
    assert "NameError" in host.execute("gone")["error"]
    assert host.execute("1 + 1")["stdout"] == "2\n"


# Interrupts --------------------------------------------------------------------------


@pytest.mark.parametrize("loop", [
    "while True:\n    pass",
    "import time\ntime.sleep(100)",
])
def test_interrupt_keeps_the_namespace(host: Host, tmp_path: Path, loop: str) -> None:
    host.execute("survivor = 7")
    marker = tmp_path / "started"
    request_id = host.send("execute", f"open({str(marker)!r}, 'w').close()\nprint('busy')\n{loop}")
    response = host.interrupt_when(marker, request_id)
    assert response["error"] == INTERRUPTED
    assert response["stdout"] == "busy\n"
    assert host.execute("survivor")["stdout"] == "7\n"


def test_interrupt_reaches_os_system_children(host: Host, tmp_path: Path) -> None:
    marker, pidfile = tmp_path / "started", tmp_path / "child.pid"
    code = (f"import os\nopen({str(marker)!r}, 'w').close()\n"
            f"os.system('echo $$ > {pidfile}; exec sleep 100')\n"
            "while True: pass")
    request_id = host.send("execute", code)
    wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), "the child's pid")
    response = host.interrupt_when(marker, request_id)
    assert response["error"].startswith(INTERRUPTED)
    child = int(pidfile.read_text())
    wait_for(lambda: pid_gone(child), "the sleep child to end")
    assert host.execute("1")["stdout"] == "1\n"


@pytest.mark.parametrize(("setup", "stuck"), [
    ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)", "while True: pass"),
    ("", "sum(range(10**15))"),  # C code that never checks for signals
])
def test_cell_that_does_not_stop_is_killed_and_kernel_continues(
    host: Host, tmp_path: Path, setup: str, stuck: str
) -> None:
    host.execute("lost = 1")
    marker = tmp_path / "started"
    code = f"{setup}\nopen({str(marker)!r}, 'w').close()\n{stuck}"
    response = host.interrupt_when(marker, host.send("execute", code))
    assert response["error"].startswith(INTERRUPTED)
    assert "the cell did not stop, so its worker was killed" in response["error"]
    assert "namespace was lost" in response["error"]
    assert "NameError" in host.execute("lost")["error"]
    assert host.execute("print('fresh')")["stdout"] == "fresh\n"


# Crashes -----------------------------------------------------------------------------


@pytest.mark.parametrize(("code", "named"), [
    ("import ctypes; ctypes.string_at(0)", "SIGSEGV"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "SIGKILL"),
    ("import os; os.abort()", "SIGABRT"),
])
def test_crash_recovery(host: Host, code: str, named: str) -> None:
    host.execute("before = 1")
    response = host.execute(code)
    assert named in response["error"] and "namespace was lost" in response["error"]
    assert "NameError" in host.execute("before")["error"]
    assert host.execute("2 * 21")["stdout"] == "42\n"


# Cells that break their own process --------------------------------------------------


@pytest.mark.parametrize("code", [
    "import os; os.close(0); os.close(1); os.close(2)",
    "import os; fd = os.open(os.devnull, os.O_WRONLY); os.dup2(fd, 1); os.dup2(fd, 2)",
    "import os; r, w = os.pipe(); os.dup2(r, 0)",
    "import sys; sys.stdout = None; sys.stderr = None",
    "import sys; sys.stdout.close(); sys.stderr.close()",
])
def test_broken_standard_streams_are_restored(host: Host, code: str) -> None:
    host.execute(code)
    response = host.execute("import sys, os\nprint('out')\nos.write(2, b'err\\n')\n"
                            "print(repr(sys.stdin.read()))")
    assert (response["stdout"], response["stderr"], response["error"]) == (
        "out\n''\n", "err\n", None)


def test_fork_child_that_returns_stays_silent(host: Host) -> None:
    code = ("import os\npid = os.fork()\nprint('child' if pid == 0 else 'parent')\n"
            "if pid:\n    os.waitpid(pid, 0)")
    response = host.execute(code)
    assert sorted(response["stdout"].splitlines()) == ["child", "parent"]
    assert response["error"] is None
    code = "import os\nif os.fork() == 0:\n    print('stray child')"
    host.execute(code)
    for _ in range(5):  # one response each, in order, nothing extra
        assert host.execute("'next'")["stdout"].endswith("'next'\n")


def test_lone_surrogates_give_strict_json(host: Host) -> None:
    printed = host.execute("print('a\\ud800b')")
    assert printed["stdout"] == "a\\ud800b\n"
    assert host.execute("'\\udfff'")["stdout"] == "'\\udfff'\n"
    raised = host.execute("raise ValueError('bad \\ud800 value')")["error"]
    assert "ValueError: bad \ufffd" in raised and "\ud800" not in raised
    host.write(b'{"id": "s\\ud800", "type": "ping"}\n')
    assert strict_json(host.read_line())["id"].startswith("s\ufffd")
    host.ping()


# Transport ---------------------------------------------------------------------------


def test_pipelined_requests_are_answered_in_order(host: Host) -> None:
    ids = []
    batch = b""
    for i in range(50):
        kind = ("execute", "ping", "bogus")[i % 3]
        request = {"id": f"r{i}", "type": kind, "code": f"print({i})"}
        ids.append((request["id"], kind, i))
        batch += json.dumps(request).encode() + b"\n"
    host.write(batch)
    for request_id, kind, i in ids:
        response = host.read(request_id)
        expected = {"execute": f"{i}\n", "ping": "pong", "bogus": ""}[kind]
        assert response["stdout"] == expected


def test_requests_wait_while_a_cell_runs(host: Host) -> None:
    first = host.send("execute", "import time; time.sleep(0.3); print('slow')")
    second = host.send("execute", "print('fast')")
    assert host.read(first)["stdout"] == "slow\n"
    assert host.read(second)["stdout"] == "fast\n"


def test_blank_lines_are_skipped(host: Host) -> None:
    host.write(b"\n   \n")
    host.ping()


# Shutdown ----------------------------------------------------------------------------


def test_eof_ends_the_kernel_cleanly(host: Host) -> None:
    host.execute("import subprocess; child = subprocess.Popen(['sleep', '100'])")
    group = host.worker_group()
    assert host.close() == 0
    wait_for(lambda: group_gone(group), "the worker and its child to end")


def test_eof_while_busy_waits_for_the_cell(host: Host) -> None:
    request_id = host.send("execute", "import time; time.sleep(0.2); 'done'")
    assert host.proc.stdin
    host.proc.stdin.close()
    assert host.read(request_id)["stdout"] == "'done'\n"
    assert host.proc.wait(timeout=WAIT) == 0


@pytest.mark.parametrize("busy", [False, True])
def test_sigterm_ends_the_kernel_cleanly(host: Host, tmp_path: Path, busy: bool) -> None:
    host.execute("import subprocess; child = subprocess.Popen(['sleep', '100'])")
    group = host.worker_group()
    if busy:
        marker = tmp_path / "started"
        host.send("execute", f"open({str(marker)!r}, 'w').close()\nimport time; time.sleep(100)")
        wait_for(marker.exists, "the cell to start")
    host.proc.send_signal(signal.SIGTERM)
    assert host.proc.wait(timeout=WAIT) == 0
    wait_for(lambda: group_gone(group), "the worker and its child to end")


def test_host_sigkill_leaves_nothing_behind(host: Host, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    host.execute("import subprocess; child = subprocess.Popen(['sleep', '100'])")
    group = host.worker_group()
    host.send("execute", f"import os\nopen({str(marker)!r}, 'w').close()\nos.system('sleep 100')")
    wait_for(marker.exists, "the cell to start")
    host.proc.kill()
    host.proc.wait(timeout=WAIT)
    wait_for(lambda: group_gone(group), "every process the kernel started to end")


# Command line ------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["--mode=lines"],
    ["--mode", "lines"],
])
def test_command_line_spellings(argv: list[str]) -> None:
    kernel = Host([sys.executable, "-m", "pyrelune", *argv])
    try:
        kernel.ping()
        assert kernel.execute("1 + 2")["stdout"] == "3\n"
        assert kernel.close() == 0
    finally:
        kernel.kill()


def test_timeout_option_is_refused_for_lines() -> None:
    kernel = Host([*COMMAND, "--timeout", "3"])
    try:
        with pytest.raises(KernelBroken):
            kernel.ping()
        assert kernel.proc.wait(timeout=WAIT) == 2
        assert b"oneshot mode only" in kernel.stderr
    finally:
        kernel.kill()
