"""What ipykernel cannot do, promised by the Jupyter kernel and checked through jupyter_client.

An interrupt always ends the cell; a worker that dies costs the cell, never
the kernel; output is bounded; what C code and subprocesses write comes in
order; and nothing a cell does reaches a ZeroMQ socket.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
from pathlib import Path

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from support import jupyter_host
from support.jupyter_host import TIMEOUT, Kernel, collect, execute
from support.processes import kept

#: A kernel per interrupt_mode: SIGINT to the kernel process, or interrupt_request.
kernel, client = jupyter_host.module_kernel("signal", "message")


def _started(client: BlockingKernelClient, code: str, marker: str = "started") -> str:
    """Send `code` (which prints `marker` once it runs) and return when it has."""
    msg_id = str(client.execute(code))
    seen = ""
    while marker not in seen:
        message = client.get_iopub_msg(timeout=TIMEOUT)
        if message["parent_header"].get("msg_id") == msg_id and message["msg_type"] == "stream":
            seen += message["content"]["text"]
    return msg_id


def _interrupted(kernel: Kernel, code: str) -> jupyter_host.Run:
    manager, client = kernel
    msg_id = _started(client, code)
    manager.interrupt_kernel()
    return collect(client, msg_id)


def test_an_interrupt_ends_a_sleeping_cell_and_keeps_the_namespace(kernel: Kernel) -> None:
    client = kernel[1]
    execute(client, "kept = 'still here'")
    run = _interrupted(kernel, "import time\nprint('started', flush=True)\ntime.sleep(300)")
    assert run.content["status"] == "error"
    assert run.content["ename"] == "KeyboardInterrupt"
    assert "time.sleep(300)" in _plain("\n".join(run.content["traceback"]))
    assert execute(client, "kept").of("execute_result")[0]["data"]["text/plain"] == (
        "'still here'")


def test_an_interrupt_ends_a_cell_that_ignores_sigint(kernel: Kernel) -> None:
    manager, client = kernel
    pid = jupyter_host.pid(manager)
    # The namespace the kill leaves.
    kept(pid, lambda: execute(client, "before = 1"), jupyter_host.held)
    code = ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "print('started', flush=True)\nwhile True:\n    pass")
    run = _interrupted(kernel, code)
    assert run.content["status"] == "error"
    evalue = run.content["evalue"]
    assert "the cell did not stop, so its worker was killed" in evalue
    assert "resumed from its snapshot" in evalue  # the reply says what namespace is kept
    # The same kernel, still connected.
    assert jupyter_host.pid(manager) == pid and manager.is_alive()
    assert execute(client, "1 + 1").of("execute_result")[0]["data"]["text/plain"] == "2"


def test_an_interrupt_ends_a_loop_inside_c(kernel: Kernel) -> None:
    client = kernel[1]
    run = _interrupted(kernel, "print('started', flush=True)\nsum(range(10**11))")
    assert run.content["status"] == "error"
    assert run.content["ename"] == "KeyboardInterrupt"
    assert execute(client, "print('next')").stdout() == "next\n"


@pytest.mark.parametrize(("code", "said"), [
    ("import ctypes\nctypes.string_at(0)", "SIGSEGV"),
    ("import os\nos._exit(3)", "exited with status 3"),
    # What the kernel's out-of-memory killer does to a worker that grows too big.
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "SIGKILL"),
])
def test_a_worker_that_dies_fails_its_cell_and_the_next_resumes_from_its_snapshot(
        kernel: Kernel, code: str, said: str) -> None:
    manager, client = kernel
    pid = jupyter_host.pid(manager)
    kept(pid, lambda: execute(client, "before = 1"), jupyter_host.held)
    run = execute(client, f"print('partial', flush=True)\n{code}")
    assert run.content["status"] == "error"
    assert run.stdout() == "partial\n"  # what it printed before it died is kept
    assert run.content["ename"] == "WorkerDied"
    assert said in run.content["evalue"] and "resumed from its snapshot" in run.content["evalue"]
    (error,) = run.of("error")
    assert said in _plain("\n".join(error["traceback"]))
    assert jupyter_host.pid(manager) == pid and manager.is_alive()  # no "kernel died"
    after = execute(client, "'before' in dir()")
    assert after.content["status"] == "ok"  # the next cell runs at once
    # Which snapshot it resumed from (this cell's, or the one before when the crash came
    # within the worker's idle wait) is tests/e2e/test_snapshots.py's to check; here, seen
    # on CI to race, it is not asserted.


def test_a_flood_of_output_arrives_capped_head_and_tail(kernel: Kernel) -> None:
    manager, client = kernel
    code = ("import sys\n"
            "def peak():\n"
            "    status = open('/proc/self/status').read()\n"
            "    return int(status.split('VmHWM:')[1].split()[0]) << 10\n"
            "before = peak()\n"
            "for i in range(400_000):\n"
            "    sys.stdout.write(f'line {i:07d} ' + 'x' * 100 + '\\n')\n"
            "print('the worker grew by', peak() - before)")
    before = _peak_rss(jupyter_host.pid(manager))
    run = execute(client, code)  # 45 MB printed
    assert run.content["status"] == "ok"
    text = run.stdout()
    assert text.startswith("line 0000000 ")
    grown = re.search(r"the worker grew by (\d+)\n$", text)
    assert grown is not None and int(grown.group(1)) < 24 << 20  # nor did the worker
    assert len(text.encode()) < 3 << 20
    assert re.search(r"omitted|dropped", text), text[-2000:]
    # The kernel did not hold the flood.
    assert _peak_rss(jupyter_host.pid(manager)) - before < 24 << 20


def test_c_and_subprocess_output_reaches_the_cell_in_order(kernel: Kernel) -> None:
    client = kernel[1]
    code = ("import os, subprocess, sys, ctypes\n"
            "print('one')\n"
            "os.write(1, b'two\\n')\n"
            "subprocess.run(['echo', 'three'])\n"
            "ctypes.CDLL(None).puts(b'four')\n"
            "print('five')\n"
            "os.write(2, b'six\\n')\n")
    run = execute(client, code)
    assert run.content["status"] == "ok"
    assert run.stdout() == "one\ntwo\nthree\nfour\nfive\n"
    assert run.stdout("stderr") == "six\n"


def _sockets(pid: int) -> set[str]:
    """The sockets process `pid` holds, as /proc names them (`socket:[inode]`)."""
    links = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile
            links.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return {link for link in links if link.startswith("socket:")}


def test_a_cell_holds_no_socket_it_could_write_into(kernel: Kernel) -> None:
    manager, client = kernel
    code = ("import os\n"
            "links = [os.readlink(f'/proc/self/fd/{fd}') for fd in os.listdir('/proc/self/fd')\n"
            "         if os.path.exists(f'/proc/self/fd/{fd}')]\n"
            "sorted(link for link in links if link.startswith('socket:'))")
    run = execute(client, code)
    held = set(ast.literal_eval(run.of("execute_result")[0]["data"]["text/plain"]))
    # The worker's own (its cells' asyncio loop wakes itself through a socket pair) may be
    # there; none of the kernel's, whose sockets speak to the front end.
    kernels = _sockets(jupyter_host.pid(manager))
    assert kernels  # what the test looks for is there to find
    assert not held & kernels, held & kernels
    assert manager.is_alive()


def test_heartbeat_answers_while_a_cell_runs(kernel: Kernel) -> None:
    import zmq

    manager, client = kernel
    msg_id = _started(client, "import time\nprint('started', flush=True)\ntime.sleep(300)")
    context = zmq.Context()
    socket = context.socket(zmq.REQ)
    try:
        socket.connect(f"tcp://{manager.ip}:{manager.hb_port}")
        socket.send(b"ping")
        assert socket.poll(int(TIMEOUT * 1000)) and socket.recv() == b"ping"
    finally:
        socket.close(linger=0)
        context.term()
    manager.interrupt_kernel()
    assert collect(client, msg_id).content["ename"] == "KeyboardInterrupt"


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) << 10
    raise AssertionError("no VmHWM")


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_an_interrupt_ends_a_cell_waiting_for_input(kernel: Kernel) -> None:
    manager, client = kernel
    msg_id = client.execute("value = input('never answered: ')", allow_stdin=True)
    assert client.get_stdin_msg(timeout=TIMEOUT)["msg_type"] == "input_request"
    manager.interrupt_kernel()
    run = collect(client, msg_id)
    assert run.content["ename"] == "KeyboardInterrupt"
    assert execute(client, "print('next')").stdout() == "next\n"


def test_control_answers_while_a_cell_runs_and_shell_requests_wait_their_turn(
        kernel: Kernel) -> None:
    manager, client = kernel
    running = _started(client, "import time\nprint('started', flush=True)\ntime.sleep(300)")
    info = client.session.msg("kernel_info_request", {})
    client.control_channel.send(info)
    reply = client.control_channel.get_msg(timeout=TIMEOUT)
    assert reply["parent_header"]["msg_id"] == info["header"]["msg_id"]  # while it sleeps
    waiting = client.complete("pri")
    manager.interrupt_kernel()
    assert collect(client, running).content["ename"] == "KeyboardInterrupt"
    completion = client.get_shell_msg(timeout=TIMEOUT)
    assert completion["parent_header"]["msg_id"] == waiting
    assert "print" in completion["content"]["matches"]


def test_a_flood_of_displays_is_bounded_and_the_cell_says_what_was_left_out(
        kernel: Kernel) -> None:
    client = kernel[1]
    msg_id = client.execute("from IPython.display import display\n"
                            "for i in range(20_000):\n    display(i)")
    kinds: list[str] = []
    notes = ""
    while True:  # IOPub read as it comes, as a front end reads it
        message = client.get_iopub_msg(timeout=TIMEOUT)
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        kinds.append(message["msg_type"])
        if message["msg_type"] == "stream":
            notes += message["content"]["text"]
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
    assert kinds.count("display_data") < 20_000
    assert f"{20_000 - kinds.count('display_data'):,} more displays were not shown" in notes
    reply = client.get_shell_msg(timeout=TIMEOUT)
    assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["status"] == "ok"


def test_a_worker_that_dies_while_it_completes_costs_the_completion_only(
        kernel: Kernel) -> None:
    manager, client = kernel
    pid = jupyter_host.pid(manager)
    execute(client, "import os\nclass Bomb:\n    def __dir__(self):\n        os._exit(7)\n"
                    "bomb = Bomb()")
    reply = client.complete("bomb.x", reply=True, timeout=TIMEOUT)
    assert reply["content"]["status"] == "error"
    assert "exited with status 7" in reply["content"]["evalue"]
    assert jupyter_host.pid(manager) == pid
    assert execute(client, "print('fresh')").stdout() == "fresh\n"


def test_a_big_display_arrives_whole(kernel: Kernel) -> None:
    client = kernel[1]
    code = ("from IPython.display import HTML, display\n"
            "display(HTML('<table>' + '<tr><td>cell</td></tr>' * 150_000 + '</table>'))")
    (shown,) = execute(client, code).of("display_data")
    assert len(shown["data"]["text/html"]) == len("<table></table>") + 22 * 150_000  # 3.3 MB
