"""`pyrelune --mode lines` over real pipes, driven as the desktop notebook host drives it."""

from __future__ import annotations

import json
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cells import DEEP_JSON
from support.launch import SCRIPT
from support.lines_host import (
    COMMAND,
    WAIT,
    Host,
    KernelBroken,
    default_env,
    group_gone,
    strict_json,
    wait_for,
)
from support.processes import kept, running

from pyrelune.protocols.lines import EXAMPLE
from pyrelune.wire.events import RESUMED

INTERRUPTED = "KeyboardInterrupt: Execution interrupted"


@pytest.fixture
def kernel() -> Iterator[Host]:
    tab = Host()
    try:
        tab.ping()  # the host's start-up handshake
        yield tab
    finally:
        tab.kill()


# The host's own expectations ---------------------------------------------------------


def test_ping(kernel: Host) -> None:
    response = kernel.request("ping")
    assert response == {"id": response["id"], "type": "result", "stdout": "pong",
                        "stderr": "", "error": None, "output_type": "text"}


def test_execute_and_state_persist(kernel: Host) -> None:
    assert kernel.execute("print('hello')")["stdout"] == "hello\n"
    assert kernel.execute("x = 42")["stdout"] == ""
    assert kernel.execute("print(x)") | {"id": ""} == {
        "id": "", "type": "result", "stdout": "42\n", "stderr": "", "error": None,
        "output_type": "text"}


def test_error_keeps_output_and_shows_only_cell_frames(kernel: Host) -> None:
    response = kernel.execute("print('before')\ndef f():\n    return 1 / 0\nf()")
    assert response["stdout"] == "before\n"
    error = response["error"]
    assert error.startswith("Traceback (most recent call last):\n")
    assert error.endswith("ZeroDivisionError: division by zero\n")
    assert "return 1 / 0" in error and "line 4" in error  # source lines are quoted
    assert "pyrelune" not in error and "runtime.py" not in error and "cell.py" not in error


def test_stderr_capture(kernel: Host) -> None:
    response = kernel.execute("import sys; sys.stderr.write('warn')")
    assert (response["stderr"], response["error"]) == ("warn", None)


def test_restart_clears_state(kernel: Host) -> None:
    kernel.execute("y = 99")
    assert kernel.request("restart") | {"id": ""} == {
        "id": "", "type": "result", "stdout": "", "stderr": "", "error": None,
        "output_type": "text"}
    assert "NameError: name 'y' is not defined" in kernel.execute("print(y)")["error"]


def test_unknown_type(kernel: Host) -> None:
    response = kernel.request("example", "1")
    assert response["error"] == "Unknown request type: example"


def test_invalid_json_gets_empty_id(kernel: Host) -> None:
    kernel.write(b"not valid json {{{{\n")
    response = kernel.read("")
    assert response["error"].startswith("Invalid JSON: ")
    kernel.ping()


@pytest.mark.parametrize("payload", [None, [], 42, "text", True])
def test_non_object_requests(kernel: Host, payload: object) -> None:
    kernel.write(json.dumps(payload).encode() + b"\n")
    assert kernel.read("")["error"].startswith("Invalid request: expected a JSON object")
    kernel.ping()


def test_malformed_fields_are_answered(kernel: Host) -> None:
    kernel.write(b'{"id": "a", "type": "execute", "code": 5}\n')
    assert kernel.read("a")["error"] == ('Invalid request: "code" must be a string, not 5\n'
                                         f"{EXAMPLE}")
    kernel.write(b'{"id": "b"}\n')
    assert kernel.read("b")["error"].startswith('Invalid request: the request has no "type" field')
    kernel.write(b'{"id": "c", "type": "execute", "code": "1", "extra": true}\n')
    assert kernel.read("c")["stdout"] == "1\n"  # unknown fields are ignored
    kernel.write(b'\xff\xfe\n')
    assert kernel.read("")["error"].startswith("Invalid JSON: not UTF-8")


def test_source_in_place_of_code_is_named_as_the_likely_mistake(kernel: Host) -> None:
    """`source` is the code's name in oneshot and rpc requests: here it would run nothing."""
    kernel.write(b'{"id": "s", "type": "execute", "source": "1 + 1"}\n')
    response = kernel.read("s")
    assert response["error"].startswith('Invalid request: "source" given without "code"')
    assert (response["stdout"], response["stderr"]) == ("", "")
    kernel.write(b'{"id": "t", "type": "execute", "code": "1 + 1", "source": "2"}\n')
    assert kernel.read("t")["stdout"] == "2\n"  # with `code`, `source` is an unknown field
    kernel.ping()


def test_final_expression_repr_and_underscore(kernel: Host) -> None:
    assert kernel.execute("6 * 7")["stdout"] == "42\n"
    assert kernel.execute("_ + 1")["stdout"] == "43\n"
    assert kernel.execute("None")["stdout"] == ""
    assert kernel.execute("'a'; ")["stdout"] == ""  # a trailing semicolon hides it
    assert kernel.execute("print('x')\n'y'")["stdout"] == "x\n'y'\n"


def test_json_nested_too_deep_shows_as_text(kernel: Host) -> None:
    """Encodable under the cell's recursion limit, not under the kernel's: text instead."""
    response = kernel.execute(DEEP_JSON)
    assert (response["stdout"], response["error"]) == ("Deep()\n", None)
    assert "nested at most 500 deep" in response["stderr"]
    assert kernel.execute("1 + 1")["stdout"] == "2\n"


def test_missing_code_is_empty(kernel: Host) -> None:
    response = kernel.request("execute")
    assert (response["stdout"], response["stderr"], response["error"]) == ("", "", None)


def test_main_namespace(kernel: Host) -> None:
    assert kernel.execute("__name__")["stdout"] == "'__main__'\n"


def test_sys_exit_is_an_error_and_kernel_stays(kernel: Host) -> None:
    kernel.execute("kept = 1")
    assert "SystemExit: 1" in kernel.execute("import sys; sys.exit(1)")["error"]
    assert "SystemExit: 3" in kernel.execute("raise SystemExit(3)")["error"]
    assert kernel.execute("kept")["stdout"] == "1\n"


def test_input_raises_eoferror(kernel: Host) -> None:
    assert "EOFError" in kernel.execute("input('value: ')")["error"]
    kernel.ping()


def test_syntax_error(kernel: Host) -> None:
    error = kernel.execute("x = (")["error"]
    assert "SyntaxError" in error and "<cell" in error


# The predecessor's defects ------------------------------------------------------------


def test_fd_level_output_stays_out_of_the_protocol(kernel: Host) -> None:
    code = ("import os, subprocess, ctypes\n"
            "os.write(1, b'raw\\n')\n"
            "os.system('echo from-shell; echo shell-err >&2')\n"
            "subprocess.run(['echo', 'from-subprocess'])\n"
            "n = ctypes.CDLL(None).puts(b'from-c')\n")
    response = kernel.execute(code)
    assert response["stdout"].splitlines() == ["raw", "from-shell", "from-subprocess", "from-c"]
    assert response["stderr"] == "shell-err\n"
    kernel.ping()


def test_prints_keep_their_order_with_fd_writes(kernel: Host) -> None:
    code = ("import os, sys\n"
            "for i in range(3):\n"
            "    print(i)\n"
            "    os.write(1, b'w\\n')\n"
            "    os.system('echo s')\n"
            "print('end', end='')\n")
    assert kernel.execute(code)["stdout"] == "0\nw\ns\n1\nw\ns\n2\nw\ns\nend"


def test_many_prints(kernel: Host) -> None:
    response = kernel.execute("for i in range(1000):\n    print(i)")
    assert response["stdout"] == "".join(f"{i}\n" for i in range(1000))


def test_sigint_while_idle_does_nothing(kernel: Host) -> None:
    kernel.execute("kept = 'yes'")
    for _ in range(3):
        kernel.proc.send_signal(signal.SIGINT)
    kernel.ping()
    assert kernel.execute("kept")["stdout"] == "'yes'\n"
    assert kernel.proc.poll() is None


def test_os_exit_does_not_end_the_kernel(kernel: Host) -> None:
    kept(kernel.proc.pid, lambda: kernel.execute("gone = 1"), "cell 1")
    response = kernel.execute("print('bye')\nimport os; os._exit(3)")
    assert response["stdout"] == "bye\n"
    assert "worker exited with status 3" in response["error"]
    assert RESUMED in response["error"]
    assert kernel.execute("gone")["stdout"] == "1\n"
    assert kernel.execute("1 + 1")["stdout"] == "2\n"


# Interrupts --------------------------------------------------------------------------


@pytest.mark.parametrize("loop", [
    "while True:\n    pass",
    "import time\ntime.sleep(100)",
])
def test_interrupt_keeps_the_namespace(kernel: Host, tmp_path: Path, loop: str) -> None:
    kernel.execute("survivor = 7")
    marker = tmp_path / "started"
    code = f"open({str(marker)!r}, 'w').close()\nprint('busy')\n{loop}"
    request_id = kernel.send("execute", code)
    response = kernel.interrupt_when(marker, request_id)
    assert response["error"] == INTERRUPTED
    assert response["stdout"] == "busy\n"
    assert kernel.execute("survivor")["stdout"] == "7\n"


def test_an_interrupt_while_the_kernel_starts_is_ignored() -> None:
    """The SIGINT lands while the kernel imports its modules (made certain by an import hook)."""
    starter = (
        "import os, signal, sys\n"
        "class Interrupter:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'pyrelune.modes.lines':\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "sys.meta_path.insert(0, Interrupter())\n"
        "sys.argv = ['pyrelune', '--mode', 'lines']\n"
        "from pyrelune.__main__ import main\n"
        "main()\n"
    )
    host = Host([sys.executable, "-c", starter])
    try:
        host.ping()
    finally:
        host.close()


def test_a_cells_own_sigint_still_raises_after_an_interrupt(kernel: Host, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    request_id = kernel.send("execute", f"open({str(marker)!r}, 'w').close()\nwhile True: pass")
    assert kernel.interrupt_when(marker, request_id)["error"].startswith(INTERRUPTED)
    code = ("import signal, _thread\nfor how in (lambda: signal.raise_signal(signal.SIGINT),\n"
            "            _thread.interrupt_main):\n"
            "    try:\n        how()\n        for _ in range(10**6): pass\n"
            "    except KeyboardInterrupt:\n        print('caught')")
    assert kernel.execute(code)["stdout"] == "caught\ncaught\n"


def test_a_double_interrupt_still_keeps_the_namespace(kernel: Host, tmp_path: Path) -> None:
    """A double click on the host's stop button: the second SIGINT lands while the first
    KeyboardInterrupt is being reported, which used to end the worker."""
    kernel.execute("survivor = 7")
    for attempt in range(10):
        marker = tmp_path / f"started{attempt}"
        request_id = kernel.send("execute", f"open({str(marker)!r}, 'w').close()\nwhile True: pass")
        wait_for(marker.exists, "the cell to start")
        kernel.proc.send_signal(signal.SIGINT)
        time.sleep(0.0005)
        response = kernel.interrupt_when(marker, request_id)  # the second SIGINT
        assert response["error"].startswith(INTERRUPTED), response["error"]
        after = kernel.execute("survivor")
        assert after["stdout"] == "7\n", after["error"]


def test_interrupt_reaches_os_system_children(kernel: Host, tmp_path: Path) -> None:
    marker, pidfile = tmp_path / "started", tmp_path / "child.pid"
    code = (f"import os\nopen({str(marker)!r}, 'w').close()\n"
            f"os.system('echo $$ > {pidfile}; exec sleep 100')\n"
            "while True: pass")
    request_id = kernel.send("execute", code)
    wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), "the child's pid")
    response = kernel.interrupt_when(marker, request_id)
    assert response["error"].startswith(INTERRUPTED)
    child = int(pidfile.read_text())
    wait_for(lambda: not running(child), "the sleep child to end")
    assert kernel.execute("1")["stdout"] == "1\n"


@pytest.mark.parametrize(("setup", "stuck"), [
    ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)", "while True: pass"),
    ("", "sum(range(10**15))"),  # C code that never checks for signals
])
def test_cell_that_does_not_stop_is_killed_and_kernel_continues(
    kernel: Host, tmp_path: Path, setup: str, stuck: str
) -> None:
    kept(kernel.proc.pid, lambda: kernel.execute("lost = 1"), "cell 1")
    marker = tmp_path / "started"
    code = f"{setup}\nopen({str(marker)!r}, 'w').close()\n{stuck}"
    response = kernel.interrupt_when(marker, kernel.send("execute", code))
    assert response["error"].startswith(INTERRUPTED)
    assert "the cell did not stop, so its worker was killed" in response["error"]
    assert RESUMED in response["error"]  # from the snapshot the last cell left
    assert kernel.execute("lost")["stdout"] == "1\n"
    assert kernel.execute("print('fresh')")["stdout"] == "fresh\n"


def test_a_cell_that_raised_its_interrupt_may_clean_up(kernel: Host, tmp_path: Path) -> None:
    kernel.execute("kept = 1")
    marker = tmp_path / "started"
    code = (f"import time\nopen({str(marker)!r}, 'w').close()\n"
            "try:\n    time.sleep(100)\nfinally:\n    time.sleep(0.7)\n    print('cleaned up')")
    response = kernel.interrupt_when(marker, kernel.send("execute", code))
    assert response["stdout"] == "cleaned up\n"
    assert response["error"].startswith(INTERRUPTED)
    assert "killed" not in response["error"]
    assert kernel.execute("kept")["stdout"] == "1\n"


def test_a_cell_that_catches_its_interrupt_is_killed_before_the_host_would(
    kernel: Host, tmp_path: Path
) -> None:
    marker = tmp_path / "started"
    # The marker is made inside the `try`: an interrupt before it would end the cell.
    code = ("import time\nwhile True:\n    try:\n"
            f"        open({str(marker)!r}, 'w').close()\n        time.sleep(100)\n"
            "    except KeyboardInterrupt:\n        pass")
    # answered before the host's SIGKILL of the whole kernel, or interrupt_when fails
    response = kernel.interrupt_when(marker, kernel.send("execute", code))
    assert "the cell did not stop, so its worker was killed" in response["error"]
    assert kernel.execute("print('fresh')")["stdout"] == "fresh\n"


def test_a_flood_of_interrupts_while_the_worker_is_replaced(kernel: Host, tmp_path: Path) -> None:
    """SIGINTs keep coming while the kernel kills a stubborn cell and starts a fresh worker."""
    marker = tmp_path / "started"
    code = (f"import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            f"open({str(marker)!r}, 'w').close()\nwhile True: pass")
    request_id = kernel.send("execute", code)
    wait_for(marker.exists, "the cell to start")
    end = time.monotonic() + 1.0  # past the kill at 0.4 s and the new worker's start
    while time.monotonic() < end:
        kernel.proc.send_signal(signal.SIGINT)
        time.sleep(0.001)
    response = kernel.read(request_id)
    assert "the cell did not stop, so its worker was killed" in response["error"]
    assert kernel.execute("print('alive')")["stdout"] == "alive\n"


@pytest.mark.parametrize("breaker", [
    "import sys\nsys.stdout.reconfigure(encoding='latin-1', errors='strict')",
    "import os\nos.set_blocking(1, False)\nos.set_blocking(2, False)",
])
def test_what_a_cell_does_to_its_streams_ends_with_it(kernel: Host, breaker: str) -> None:
    kernel.execute(breaker)
    big = 3 * 1024 * 1024  # more than the capture pipe holds: a non-blocking fd 1 would fail
    response = kernel.execute(
        f"import os\nprint('é€')\nprint('x' * {big})\nos.write(1, b'end\\n');")
    assert response["error"] is None, response["error"]
    assert response["stdout"] == "é€\n" + "x" * big + "\nend\n"


# Crashes -----------------------------------------------------------------------------


@pytest.mark.parametrize(("code", "named"), [
    ("import ctypes; ctypes.string_at(0)", "SIGSEGV"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "SIGKILL"),
    ("import os; os.abort()", "SIGABRT"),
])
def test_crash_recovery(kernel: Host, code: str, named: str) -> None:
    kept(kernel.proc.pid, lambda: kernel.execute("before = 1"), "cell 1")
    response = kernel.execute(code)
    assert named in response["error"] and RESUMED in response["error"]
    assert kernel.execute("before")["stdout"] == "1\n"
    assert kernel.execute("2 * 21")["stdout"] == "42\n"


def test_a_line_forged_into_the_event_pipe_replaces_the_worker(kernel: Host) -> None:
    kept(kernel.proc.pid, lambda: kernel.execute("before = 1"), "cell 1")
    response = kernel.execute(
        "import gc, os\n"
        "channel = next(o for o in gc.get_objects() if type(o).__name__ == 'Channel')\n"
        "os.write(channel._event_fd, b'[' * 100_000 + b']' * 100_000 + b'\\n')")
    assert "worker stopped: its event pipe carried a line" in response["error"]
    assert RESUMED in response["error"]
    assert kernel.execute("before")["stdout"] == "1\n"
    assert kernel.execute("2 * 21")["stdout"] == "42\n"


# Buffered stdout ---------------------------------------------------------------------
# stdout is block-buffered (no one reads a cell's output before it ends), yet
# it keeps its order with everything that writes around it.


@pytest.mark.parametrize(("code", "expected"), [
    ("import sys\nprint('text')\nsys.stdout.buffer.write(b'bytes\\n')\nprint('text')",
     "text\nbytes\ntext\n"),
    ("import os\nprint('a')\nos.writev(1, [b'b', b'\\n'])\nprint('c')", "a\nb\nc\n"),
    ("import subprocess\nprint('a')\nsubprocess.Popen(['echo', 'b']).wait()\nprint('c')",
     "a\nb\nc\n"),
    ("import os\nprint('a')\nif os.fork() == 0:\n    print('child')\n    os._exit(0)\n"
     "os.wait()\nprint('c')", "a\nchild\nc\n"),
    ("import os, sys\nprint('a')\nif os.fork() == 0:\n    os.execv(sys.executable, "
     "[sys.executable, '-c', 'print(\"exec\")'])\nos.wait()\nprint('c')", "a\nexec\nc\n"),
    ("import io, os, sys\nprint('a')\nsys.stdout = io.StringIO()\nn = os.write(1, b'b\\n')",
     "a\nb\n"),
    ("import sys\nprint('a')\nsys.stdout = None\nimport os; n = os.write(1, b'b\\n')", "a\nb\n"),
])
def test_buffered_stdout_keeps_the_order(kernel: Host, code: str, expected: str) -> None:
    response = kernel.execute(code)
    assert (response["stdout"], response["error"]) == (expected, None)


@pytest.mark.parametrize("end", [
    "import os; os._exit(0)",
    "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    "import os; os.abort()",
])
def test_a_cell_that_ends_its_own_worker_keeps_its_prints(kernel: Host, end: str) -> None:
    response = kernel.execute(f"print('last words')\n{end}")
    assert response["stdout"] == "last words\n"
    assert "namespace was lost" in response["error"]


def test_a_crash_says_buffered_prints_may_be_lost(kernel: Host) -> None:
    error = kernel.execute("print('maybe')\nimport ctypes; ctypes.string_at(0)")["error"]
    assert "SIGSEGV" in error and "PYTHONUNBUFFERED=1" in error


def test_pythonunbuffered_keeps_every_line_through_a_crash() -> None:
    tab = Host(env=default_env(PYTHONUNBUFFERED="1"))
    try:
        tab.ping()
        response = tab.execute("print('last words')\nimport ctypes; ctypes.string_at(0)")
        assert response["stdout"] == "last words\n"
        assert "SIGSEGV" in response["error"] and "PYTHONUNBUFFERED" not in response["error"]
    finally:
        tab.kill()


# Cells that break their own process --------------------------------------------------


@pytest.mark.parametrize("code", [
    "import os; os.close(0); os.close(1); os.close(2)",
    "import os; fd = os.open(os.devnull, os.O_WRONLY); os.dup2(fd, 1); os.dup2(fd, 2)",
    "import os; r, w = os.pipe(); os.dup2(r, 0)",
    "import sys; sys.stdout = None; sys.stderr = None",
    "import sys; sys.stdout.close(); sys.stderr.close()",
])
def test_broken_standard_streams_are_restored(kernel: Host, code: str) -> None:
    kernel.execute(code)
    response = kernel.execute("import sys, os\nprint('out')\nos.write(2, b'err\\n')\n"
                            "print(repr(sys.stdin.read()))")
    assert (response["stdout"], response["stderr"], response["error"]) == (
        "out\n''\n", "err\n", None)


def test_fork_child_that_returns_stays_silent(kernel: Host) -> None:
    code = ("import os\npid = os.fork()\nprint('child' if pid == 0 else 'parent')\n"
            "if pid:\n    os.waitpid(pid, 0)")
    response = kernel.execute(code)
    assert sorted(response["stdout"].splitlines()) == ["child", "parent"]
    assert response["error"] is None
    code = "import os\nif os.fork() == 0:\n    print('stray child')"
    kernel.execute(code)
    for _ in range(5):  # one response each, in order, nothing extra
        assert kernel.execute("'next'")["stdout"].endswith("'next'\n")


def test_lone_surrogates_give_strict_json(kernel: Host) -> None:
    printed = kernel.execute("print('a\\ud800b')")
    assert printed["stdout"] == "a\\ud800b\n"
    assert kernel.execute("'\\udfff'")["stdout"] == "'\\udfff'\n"
    raised = kernel.execute("raise ValueError('bad \\ud800 value')")["error"]
    assert "ValueError: bad \ufffd" in raised and "\ud800" not in raised
    kernel.write(b'{"id": "s\\ud800", "type": "ping"}\n')
    assert strict_json(kernel.read_line())["id"].startswith("s\ufffd")
    kernel.ping()


def test_a_bad_max_output_is_a_warning_not_a_dead_kernel() -> None:
    tab = Host(env=default_env(PYRELUNE_MAX_OUTPUT="lots"))
    try:
        tab.ping()
        assert tab.execute("print('x' * 5000)")["stdout"] == "x" * 5000 + "\n"
        wait_for(lambda: b"PYRELUNE_MAX_OUTPUT must be a whole number of bytes" in tab.stderr,
                 "the warning on stderr")
    finally:
        tab.kill()


# Transport ---------------------------------------------------------------------------


def test_pipelined_requests_are_answered_in_order(kernel: Host) -> None:
    ids = []
    batch = b""
    for i in range(50):
        kind = ("execute", "ping", "bogus")[i % 3]
        request = {"id": f"r{i}", "type": kind, "code": f"print({i})"}
        ids.append((request["id"], kind, i))
        batch += json.dumps(request).encode() + b"\n"
    kernel.write(batch)
    for request_id, kind, i in ids:
        response = kernel.read(request_id)
        expected = {"execute": f"{i}\n", "ping": "pong", "bogus": ""}[kind]
        assert response["stdout"] == expected


def test_requests_wait_while_a_cell_runs(kernel: Host) -> None:
    first = kernel.send("execute", "import time; time.sleep(0.3); print('slow')")
    second = kernel.send("execute", "print('fast')")
    assert kernel.read(first)["stdout"] == "slow\n"
    assert kernel.read(second)["stdout"] == "fast\n"


def test_blank_lines_are_skipped(kernel: Host) -> None:
    kernel.write(b"\n   \n")
    kernel.ping()


# Shutdown ----------------------------------------------------------------------------


def test_eof_ends_the_kernel_cleanly(kernel: Host) -> None:
    kernel.execute("import subprocess; child = subprocess.Popen(['sleep', '100'])")
    group = kernel.worker_group()
    assert kernel.close() == 0
    wait_for(lambda: group_gone(group), "the worker and its child to end")


def test_eof_while_busy_waits_for_the_cell(kernel: Host) -> None:
    request_id = kernel.send("execute", "import time; time.sleep(0.2); 'done'")
    assert kernel.proc.stdin
    kernel.proc.stdin.close()
    assert kernel.read(request_id)["stdout"] == "'done'\n"
    assert kernel.proc.wait(timeout=WAIT) == 0


@pytest.mark.parametrize("busy", [False, True])
def test_sigterm_ends_the_kernel_cleanly(kernel: Host, tmp_path: Path, busy: bool) -> None:
    kernel.execute("import subprocess; child = subprocess.Popen(['sleep', '100'])")
    group = kernel.worker_group()
    if busy:
        marker = tmp_path / "started"
        kernel.send("execute", f"open({str(marker)!r}, 'w').close()\nimport time; time.sleep(100)")
        wait_for(marker.exists, "the cell to start")
    kernel.proc.send_signal(signal.SIGTERM)
    assert kernel.proc.wait(timeout=WAIT) == 0
    wait_for(lambda: group_gone(group), "the worker and its child to end")


def test_host_sigkill_leaves_nothing_behind(kernel: Host, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    kernel.execute("import subprocess; child = subprocess.Popen(['sleep', '100'])")
    group = kernel.worker_group()
    kernel.send("execute", f"import os\nopen({str(marker)!r}, 'w').close()\nos.system('sleep 100')")
    wait_for(marker.exists, "the cell to start")
    kernel.proc.kill()
    kernel.proc.wait(timeout=WAIT)
    wait_for(lambda: group_gone(group), "every process the kernel started to end")


# Command line ------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["--mode=lines"],
    ["--mode", "lines"],
])
def test_command_line_spellings(argv: list[str]) -> None:
    kernel = Host([SCRIPT, *argv])
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
