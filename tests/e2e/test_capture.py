"""Isolation and capture: every byte a cell writes reaches the response, never the protocol."""

from __future__ import annotations

import os
import signal

import pytest
from support.processes import gone_soon, running
from support.vixhost import VixHost


def test_every_writer_lands_in_order_in_its_stream(host: VixHost) -> None:
    result = host.run_cell(
        "import os, subprocess, sys\n"
        "print('1 print')\n"
        "os.write(1, b'2 os.write\\n')\n"
        "os.system('echo 3 os.system')\n"
        "subprocess.run(['echo', '4 subprocess'])\n"
        "sys.stdout.write('5 write\\n')\n"
        "print('e1', file=sys.stderr)\n"
        "os.write(2, b'e2\\n')\n"
        "os.system('echo e3 >&2')\n"
        "subprocess.run([sys.executable, '-c', 'import sys; sys.stderr.write(\"e4\\\\n\")'])\n"
    )
    assert result.ok, result
    assert result.response["stdout"] == "1 print\n2 os.write\n3 os.system\n4 subprocess\n5 write\n"
    assert result.response["stderr"] == "e1\ne2\ne3\ne4\n"
    assert result.stderr == b""


def test_c_printf_of_200_kb(host: VixHost) -> None:
    result = host.run_cell(
        "import ctypes\n"
        "libc = ctypes.PyDLL(None)\n"
        "libc.printf(b'%s\\n', b'x' * 200_000)\n"
        "libc.fflush(None)\n"
        "print('after')\n"
        "libc.printf(b'left in the C buffer')\n",
        env={"PYRELUNE_MAX_OUTPUT": str(900 * 1024)},  # over the default cap
    )
    assert result.ok, result
    assert result.response["stdout"] == "x" * 200_000 + "\nafter\nleft in the C buffer"


def test_split_multibyte_utf8_is_decoded_whole(host: VixHost) -> None:
    result = host.run_cell(
        "import os, time\n"
        "data = 'é€😀'.encode() * 500\n"
        "for i in range(len(data)):\n"
        "    os.write(1, data[i:i + 1])\n"
        "os.write(2, '€'.encode()[:1])\n"
        "time.sleep(0.2)\n"
        "os.write(2, '€'.encode()[1:])\n"
    )
    assert result.response["stdout"] == "é€😀" * 500
    assert result.response["stderr"] == "€"


def test_invalid_bytes_are_replaced(host: VixHost) -> None:
    result = host.run_cell("import os\n_ = os.write(1, b'a\\xffb\\xc3')")
    assert result.ok, result
    assert result.response["stdout"] == "a\ufffdb\ufffd"


def test_background_child_holding_the_capture_pipes_is_not_waited_for(host: VixHost) -> None:
    result = host.run_cell(
        "import subprocess\np = subprocess.Popen(['sleep', '30'])\nprint(p.pid)"
    )
    assert result.ok, result  # well before the child's 30 s (the host allows 10)
    pid = int(result.response["stdout"])
    assert gone_soon(pid)


def test_nothing_left_holds_the_hosts_pipes(host: VixHost) -> None:
    # A child in its own session escapes the process-group kill; it may live on,
    # but it must hold none of the host's pipes (the host would hang reading them).
    result = host.run_cell(
        "import subprocess\n"
        "p = subprocess.Popen(['sleep', '30'], start_new_session=True)\n"
        "print(p.pid)"
    )
    pid = int(result.response["stdout"])
    try:
        assert running(pid)  # it escaped the kill, so the check below means something
        assert not result.hung
    finally:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


def test_worker_exit_status(host: VixHost) -> None:
    result = host.run_cell("import os\nprint('before', flush=True)\nos._exit(3)")
    assert result.error["code"] == "worker_died"
    assert result.headline == "worker exited with status 3"
    assert result.response["stdout"] == "before\n"


def test_worker_segfault(host: VixHost) -> None:
    result = host.run_cell("import ctypes\nprint('before')\nctypes.string_at(0)")
    assert result.error["code"] == "worker_died"
    assert result.failure is not None and "killed by SIGSEGV (segmentation fault)" in result.failure
    assert result.response["stdout"] == "before\n"


#: A cell that writes `LINE` (bytes) into the runtime's own event pipe.
FORGED = """\
import gc, os
channel = next(o for o in gc.get_objects() if type(o).__name__ == "Channel")
print("before")
os.write(channel._event_fd, LINE + b"\\n")
"""


@pytest.mark.parametrize("line", [
    b"not json",
    b"[" * 100_000 + b"]" * 100_000,  # too deep for any parser's recursion
    b'{"t": "display", "data": {"application/json": ' + b"[" * 600 + b"]" * 600
    + b'}, "metadata": {}, "result": false}',  # parsed, but nested over 500 deep
    b'{"t": "display", "data": {"text/plain": 5}, "metadata": {}, "result": false}',
    b'{"t": "done", "error": {"code": "timeout"}}',
])
def test_a_line_forged_into_the_event_pipe_stops_the_worker(host: VixHost, line: bytes) -> None:
    result = host.run_cell(f"LINE = {line!r}\n{FORGED}")
    assert result.error["code"] == "worker_died"
    assert result.failure is not None
    assert result.failure.startswith("worker stopped: its event pipe carried a line that is not")
    assert result.response["stdout"] == "before\n"


def test_worker_sigkill(host: VixHost) -> None:
    result = host.run_cell("import os\nprint('before')\nos.kill(os.getpid(), 9)")
    assert result.error["code"] == "worker_died"
    assert result.failure is not None and "killed by SIGKILL" in result.failure
    assert result.response["stdout"] == "before\n"


def test_a_forked_child_does_not_answer_for_the_cell(host: VixHost) -> None:
    result = host.run_cell(
        "import os\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    print('child')\n"
        "else:\n"
        "    os.waitpid(pid, 0)\n"
        "    print('parent')\n"
    )
    assert result.ok, result
    assert result.response["stdout"] == "child\nparent\n"
