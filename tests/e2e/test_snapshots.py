"""A lost worker costs its cell, not the namespace: the kernel resumes from its snapshot.

The kernel forks a cell's snapshot once idle after it, or at once after a cell that ran long
(`kept` waits for the snapshot named for that cell): a quick cell sent back to back with the
one before finds the older snapshot; a long one queued after another finds its own.

Through the real lines and Jupyter kernels: after `a = list(range(10**6)); b = 5`, each way
of losing a worker (a segfault, `os._exit`, the SIGKILL the out-of-memory killer sends, the
kill of an interrupt a cell ignores) fails that cell, and the next one sees `a` and `b`.
"""

from __future__ import annotations

import os
import socket
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from support import jupyter_host
from support.jupyter_host import TIMEOUT, Kernel, Run, collect, execute, send_comm
from support.lines_host import Host as LinesHost
from support.lines_host import default_env, wait_for
from support.processes import gone_soon, kept, process_name, running
from support.rpc_host import Listener, PipeHost, WebSocketHost, stdout_of

from pyrelune.wire.events import RESUMED

SETUP = "a = list(range(10**6)); b = 5"
CHECK = "print(sum(a), b)"
SEEN = "499999500000 5\n"
#: Each way a worker is lost, and what its cell's error says of it.
LOSSES = {
    "segfault": ("import ctypes\nctypes.string_at(0)", "SIGSEGV"),
    "os._exit": ("import os\nos._exit(3)", "exited with status 3"),
    # What the kernel's out-of-memory killer does to a worker that grows too big.
    "SIGKILL": ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "SIGKILL"),
}
SEGFAULT = LOSSES["segfault"][0]
#: Long past the idle time after which a kernel with snapshots on forks one.
IDLE_ENOUGH = 0.3
#: A cell long past what a fork costs (its snapshot is forked at once, a cell queued or not).
LONG = "x = {value}\nimport time\ntime.sleep(0.5)"
IGNORES_SIGINT = ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                  "open({marker!r}, 'w').close()\nwhile True:\n    pass")


def _lines(**env: str) -> LinesHost:
    kernel = LinesHost(env=default_env(**env))
    kernel.ping()
    return kernel


def _kept(kernel: LinesHost, code: str, number: int = 1) -> dict[str, Any]:
    """`code`'s response, once the kernel has the snapshot of `cell {number}` (the lines
    kernel numbers the different codes it is sent, from 1)."""
    return kept(kernel.proc.pid, lambda: kernel.execute(code), f"cell {number}")


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _snapshot_of(kernel: LinesHost) -> int:
    """The pid of the kernel's frozen snapshot: its worker's child in a group of its own."""
    (worker,) = _children(kernel.proc.pid)
    found: list[int] = []

    def forked() -> bool:
        found[:] = [pid for pid in _children(worker) if os.getpgid(pid) == pid]
        return bool(found)

    wait_for(forked, "the snapshot")
    return found[0]


@pytest.mark.parametrize("loss", list(LOSSES))
def test_lines_a_lost_worker_keeps_the_namespace(lines_kernel: LinesHost, loss: str) -> None:
    code, said = LOSSES[loss]
    assert _kept(lines_kernel, SETUP)["error"] is None
    lost = lines_kernel.execute(code)
    assert said in lost["error"] and RESUMED in lost["error"], lost
    assert "the one cell 1 left" in lost["error"]
    after = lines_kernel.execute(CHECK)
    assert (after["stdout"], after["error"]) == (SEEN, None), after


def test_lines_an_interrupt_that_kills_keeps_the_namespace(lines_kernel: LinesHost,
                                                           tmp_path: Path) -> None:
    assert _kept(lines_kernel, SETUP)["error"] is None
    marker = tmp_path / "started"
    request = lines_kernel.send("execute", IGNORES_SIGINT.format(marker=str(marker)))
    lost = lines_kernel.interrupt_when(marker, request)
    assert "its worker was killed" in lost["error"] and RESUMED in lost["error"], lost
    assert lines_kernel.execute(CHECK)["stdout"] == SEEN


def test_lines_the_last_finished_cell_is_what_comes_back(lines_kernel: LinesHost) -> None:
    _kept(lines_kernel, "b = 6")
    lost = lines_kernel.execute(f"b = 7\n{SEGFAULT}")
    assert RESUMED in lost["error"]
    assert lines_kernel.execute("print(b)")["stdout"] == "6\n"


def test_lines_two_losses_in_a_row_each_resume(lines_kernel: LinesHost) -> None:
    _kept(lines_kernel, SETUP)
    for code, _ in (LOSSES["segfault"], LOSSES["os._exit"]):
        lost = lines_kernel.execute(code)
        assert RESUMED in lost["error"] and "the one cell 1 left" in lost["error"], lost
    assert lines_kernel.execute(CHECK)["stdout"] == SEEN


def test_lines_losses_leave_no_zombie(lines_kernel: LinesHost) -> None:
    """The snapshots a lost worker superseded (killed, not reaped yet) are the kernel's
    children once it dies: the kernel reaps them."""
    for value in range(10):
        _kept(lines_kernel, f"x = {value}", 2 * value + 1)
        # The woken worker forks a snapshot of itself at once, which `_kept` waits for.
        lost = _kept(lines_kernel, f"{LOSSES['os._exit'][0]}  # {value}", 2 * value + 1)
        assert RESUMED in lost["error"]
    assert lines_kernel.execute("print(x)")["stdout"] == "9\n"
    kernel = lines_kernel.proc.pid
    assert [pid for pid in _children(kernel) if not running(pid)] == []
    # The woken worker took back a worker's name.
    assert [pid for pid in _children(kernel) if process_name(pid).startswith(b"snap")] == []


def test_lines_long_cells_queued_back_to_back_each_get_their_snapshot(
        lines_kernel: LinesHost) -> None:
    """"Run All": the next cell waits while a long cell's snapshot is forked, so a loss
    costs only the lost cell."""
    sent = [lines_kernel.send("execute", code)
            for code in (LONG.format(value=1), LONG.format(value=2), SEGFAULT)]
    assert [lines_kernel.read(request)["error"] for request in sent[:2]] == [None, None]
    lost = lines_kernel.read(sent[2])
    assert RESUMED in lost["error"] and "the one cell 2 left" in lost["error"], lost
    assert lines_kernel.execute("print(x)")["stdout"] == "2\n"


def test_lines_threads_are_said_not_restored(lines_kernel: LinesHost) -> None:
    _kept(lines_kernel, "import threading, time\nb = 5\nthreading.Thread(target=time.sleep, "
          "args=(600,), name='sleeper', daemon=True).start()")
    lost = lines_kernel.execute(SEGFAULT)
    assert "threads are not restored" in lost["error"] and "sleeper" in lost["error"], lost
    assert lines_kernel.execute("print(b)")["stdout"] == "5\n"


def test_lines_a_snapshot_holds_no_descriptor_but_its_own(lines_kernel: LinesHost,
                                                         tmp_path: Path) -> None:
    path = tmp_path / "kept-open"
    lines_kernel.execute(f"import os, socket\nfd = os.open({str(path)!r}, os.O_CREAT | os.O_WRONLY)"
                         "\nlistener = socket.socket()\nlistener.bind(('127.0.0.1', 0))"
                         "\nlistener.listen()\nport = listener.getsockname()[1]")
    snapshot = _snapshot_of(lines_kernel)
    held: list[str] = []

    def released() -> bool:  # once set up: all but its socket point at nothing ("/")
        fds = os.listdir(f"/proc/{snapshot}/fd")
        held[:] = [os.readlink(f"/proc/{snapshot}/fd/{fd}") for fd in fds]
        return all(link == "/" or link.startswith("socket:") for link in held)

    wait_for(released, "the snapshot to release its descriptors")
    assert str(path) not in held
    assert sum(link.startswith("socket:") for link in held) == 1, held  # its own, to the kernel
    lost = lines_kernel.execute(SEGFAULT)
    assert RESUMED in lost["error"]
    assert f"descriptors were released, as if closed: {path}, a socket;" in lost["error"], lost
    after = _kept(lines_kernel, "try:\n    os.write(fd, b'x')\nexcept OSError as e:\n"
                                "    print(e.errno)\nprint(port)", 3)
    errno, port = after["stdout"].split()
    assert int(errno) == 9  # EBADF: as if closed
    with socket.socket() as probe:  # the port is no longer held by anyone
        probe.bind(("127.0.0.1", int(port)))
    # The woken worker's snapshot: what was released is not named again, nor its fresh pipes.
    again = lines_kernel.execute(SEGFAULT)
    assert RESUMED in again["error"] and "descriptors" not in again["error"], again
    assert "the one cell 3 left" in again["error"], again


def test_lines_snapshots_off_behaves_as_before() -> None:
    kernel = _lines(PYRELUNE_SNAPSHOTS="0")
    try:
        kernel.execute(SETUP)
        time.sleep(IDLE_ENOUGH)
        assert _children(_children(kernel.proc.pid)[0]) == []  # no snapshot
        lost = kernel.execute(SEGFAULT)
        assert "namespace was lost" in lost["error"], lost
        assert "NameError" in kernel.execute(CHECK)["error"]
    finally:
        kernel.close()


def test_lines_a_reset_forgets_the_snapshot(lines_kernel: LinesHost) -> None:
    lines_kernel.execute(SETUP)
    snapshot = _snapshot_of(lines_kernel)
    assert lines_kernel.request("restart")["type"] == "result"
    assert gone_soon(snapshot)
    lost = lines_kernel.execute(SEGFAULT)
    assert "namespace was lost" in lost["error"], lost
    assert lines_kernel.execute("print('a' in dir())")["stdout"] == "False\n"


def test_lines_a_snapshot_over_its_budget_is_dropped_with_a_note() -> None:
    kernel = _lines(PYRELUNE_SNAPSHOT_MAX="1024")
    try:
        _kept(kernel, SETUP)
        lost = kernel.execute(SEGFAULT)
        assert "namespace was lost" in lost["error"], lost
        after = kernel.execute("print('a' in dir())")
        assert after["stdout"] == "False\n"
        said = lost["stderr"] + after["stderr"]  # ahead of the next cell's output
        assert said.count("was dropped") == 1 and "PYRELUNE_SNAPSHOT_MAX" in said, said
    finally:
        kernel.close()


def test_lines_no_snapshot_outlives_its_kernel() -> None:
    kernel = _lines()
    try:
        _kept(kernel, SETUP)
        kernel.execute(SEGFAULT)
        kernel.execute(CHECK)  # the woken worker has a snapshot of its own again
        snapshot = _snapshot_of(kernel)
    finally:
        kernel.close()
    assert gone_soon(snapshot)


def test_lines_no_snapshot_outlives_a_killed_kernel() -> None:
    kernel = _lines()
    kernel.execute(SETUP)
    snapshot = _snapshot_of(kernel)
    kernel.kill()
    assert gone_soon(snapshot)


# -- the rpc kernel --------------------------------------------------------------


def _rpc_error(events: list[dict[str, Any]]) -> str:
    done = events[-1]["data"]
    assert done["status"] == "error", events
    return str(done["error"])


@pytest.mark.parametrize("loss", list(LOSSES))
def test_rpc_a_lost_worker_keeps_the_namespace(rpc_kernel: PipeHost, loss: str) -> None:
    code, said = LOSSES[loss]
    kept(rpc_kernel.process.pid, lambda: rpc_kernel.run(SETUP, cell_id="setup"), "cell setup")
    error = _rpc_error(rpc_kernel.run(code))
    assert said in error and RESUMED in error and "the one cell setup left" in error, error
    assert stdout_of(rpc_kernel.run(CHECK)) == SEEN


def test_rpc_an_interrupt_that_kills_keeps_the_namespace(rpc_kernel: PipeHost) -> None:
    kept(rpc_kernel.process.pid, lambda: rpc_kernel.run(SETUP, cell_id="setup"), "cell setup")
    rpc_kernel.call("execute.cell", {"cell_id": "stubborn", "source": (
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "print('go', flush=True)\nwhile True:\n    pass")})
    rpc_kernel.wait_event("stream")
    rpc_kernel.call("execute.interrupt", {})
    error = _rpc_error(rpc_kernel.until_done())
    assert "its worker was killed" in error and RESUMED in error, error
    assert stdout_of(rpc_kernel.run(CHECK)) == SEEN


def test_rpc_losses_one_after_another_each_resume(rpc_kernel: PipeHost) -> None:
    """Cells back to back, a loss, the next cell: each time the woken worker answers it, in
    the namespace of a finished cell, its output read from the ring it shares with the dead
    one."""
    for round_ in range(10):
        for value in range(5):
            rpc_kernel.run(f"x = {round_ * 5 + value}")
        name = f"kept{round_}"
        kept(rpc_kernel.process.pid,
             partial(rpc_kernel.run, "print('kept', flush=True)", cell_id=name), f"cell {name}")
        assert RESUMED in _rpc_error(rpc_kernel.run("import os\nos._exit(1)"))
        assert stdout_of(rpc_kernel.run("print(x)")) == f"{round_ * 5 + 4}\n"
    kernel = rpc_kernel.process.pid
    assert [pid for pid in _children(kernel) if not running(pid)] == []


def test_rpc_the_last_finished_cell_is_what_comes_back(rpc_kernel: PipeHost) -> None:
    kept(rpc_kernel.process.pid, lambda: rpc_kernel.run("b = 6", cell_id="six"), "cell six")
    assert RESUMED in _rpc_error(rpc_kernel.run(f"b = 7\nprint('seven')\n{SEGFAULT}"))
    assert stdout_of(rpc_kernel.run("print(b)")) == "6\n"


def test_rpc_snapshots_off_behaves_as_before() -> None:
    kernel = PipeHost(env={"PYRELUNE_SNAPSHOTS": "0"})
    try:
        kernel.wait_event("kernel.ready")
        kernel.run(SETUP)
        time.sleep(IDLE_ENOUGH)
        assert _children(_children(kernel.process.pid)[0]) == []  # no snapshot
        assert "namespace was lost" in _rpc_error(kernel.run(SEGFAULT))
        assert kernel.run(CHECK)[-1]["data"]["ename"] == "NameError"
    finally:
        kernel.close()


def test_rpc_over_websocket_a_lost_worker_keeps_the_namespace() -> None:
    server = Listener(env={"PYRELUNE_TOKEN": "t"})
    host = WebSocketHost(server.url)
    try:
        host.wait_event("kernel.ready")
        assert host.call("kernel.auth", {"token": "t"})["result"]["ok"] is True
        kept(server.process.pid, lambda: host.run(SETUP, cell_id="setup"), "cell setup")
        assert RESUMED in _rpc_error(host.run(SEGFAULT))
        assert stdout_of(host.run(CHECK)) == SEEN
    finally:
        host.close()
        server.close()


# -- the Jupyter kernel ---------------------------------------------------------

kernel, client = jupyter_host.module_kernel()


@pytest.mark.parametrize("loss", list(LOSSES))
def test_jupyter_a_lost_worker_keeps_the_namespace(kernel: Kernel, client: BlockingKernelClient,
                                                   loss: str) -> None:
    code, said = LOSSES[loss]
    setup = kept(jupyter_host.pid(kernel[0]), lambda: execute(client, SETUP), jupyter_host.held)
    run = execute(client, code)
    assert run.content["status"] == "error" and run.content["ename"] == "WorkerDied"
    evalue = run.content["evalue"]
    assert said in evalue and RESUMED in evalue, evalue
    assert f"the one In [{setup.content['execution_count']}] left" in evalue
    assert execute(client, CHECK).stdout() == SEEN


def test_jupyter_an_interrupt_that_kills_keeps_the_namespace(kernel: Kernel,
                                                             tmp_path: Path) -> None:
    manager, client = kernel
    jupyter_host.drain_iopub(client)
    kept(jupyter_host.pid(manager), lambda: execute(client, SETUP), jupyter_host.held)
    marker = tmp_path / "started"
    msg_id = str(client.execute(IGNORES_SIGINT.format(marker=str(marker))))
    wait_for(marker.exists, "the cell to start")
    manager.interrupt_kernel()
    run = collect(client, msg_id)
    assert "its worker was killed" in run.content["evalue"], run.content
    assert RESUMED in run.content["evalue"]
    assert execute(client, CHECK).stdout() == SEEN


def test_jupyter_long_cells_queued_back_to_back_each_get_their_snapshot(
        kernel: Kernel, client: BlockingKernelClient) -> None:
    sent = [str(client.execute(code))
            for code in (LONG.format(value=1), LONG.format(value=2), SEGFAULT)]
    runs = [collect(client, msg_id) for msg_id in sent]
    assert [run.content["status"] for run in runs] == ["ok", "ok", "error"]
    evalue = runs[2].content["evalue"]
    assert f"the one In [{runs[1].content['execution_count']}] left" in evalue, evalue
    assert execute(client, "print(x)").stdout() == "2\n"


def test_jupyter_the_shell_comes_back_as_its_namespace_left_it(
        kernel: Kernel, client: BlockingKernelClient) -> None:
    """Out, `_`, the cells' asyncio loop and In are the restored namespace's; the counts go
    on from the front end's, and In[n] is still cell n's (the lost cells' inputs empty)."""
    held = kept(jupyter_host.pid(kernel[0]), lambda: execute(
        client, "import asyncio\nasync def seven(): return 7\nawait seven() * 6"),
        jupyter_host.held)
    count = held.content["execution_count"]
    lost = execute(client, f"kept_out = {count}\n{SEGFAULT}")
    assert RESUMED in lost.content["evalue"], lost.content
    check = ("print(Out[{held}], _, 'kept_out' in dir(), await asyncio.sleep(0, 'loop'))\n"
             "print(repr(In[{lost}]), In[{now}][:5])")
    run = execute(client, check.format(held=count, lost=count + 1, now=count + 2))
    assert run.content["execution_count"] == count + 2, run.content
    assert run.stdout() == "42 42 False loop\n'' print\n", run.stdout()


def _slider(run: Run) -> str:
    """The comm id of the one IntSlider `run` made."""
    (comm_id,) = [c["comm_id"] for c in run.of("comm_open")
                  if c["data"]["state"].get("_model_name") == "IntSliderModel"]
    return str(comm_id)


def _move(client: BlockingKernelClient, comm_id: str, value: int) -> Run:
    """The front end moves the slider `comm_id` to `value`."""
    return send_comm(client, "comm_msg", {"comm_id": comm_id, "data": {
        "method": "update", "state": {"value": value}, "buffer_paths": []}})


def test_jupyter_widgets_after_a_restore(kernel: Kernel, client: BlockingKernelClient) -> None:
    """A widget the snapshot holds works on, both ways; one made after it is closed, at the
    front end's first message to it, instead of talking to nothing."""
    pytest.importorskip("ipywidgets")
    held = _slider(kept(jupyter_host.pid(kernel[0]), lambda: execute(
        client, "import ipywidgets\nslider = ipywidgets.IntSlider(value=3)\nslider"),
        jupyter_host.held))
    lost = execute(client, f"late = ipywidgets.IntSlider(value=4)\nlate\n{SEGFAULT}")
    assert RESUMED in lost.content["evalue"], lost.content
    late = _slider(lost)
    info = collect(client, client.comm_info("jupyter.widget")).content["comms"]
    assert held in info
    assert _move(client, held, 7).of("comm_close") == []
    assert execute(client, "print(slider.value)").stdout() == "7\n"
    updates = [c["data"]["state"] for c in execute(client, "slider.value = 42").of("comm_msg")
               if c["comm_id"] == held]
    assert {"value": 42} in updates, updates
    assert [c["comm_id"] for c in _move(client, late, 9).of("comm_close")] == [late]
    assert late not in collect(client, client.comm_info()).content["comms"]


def test_jupyter_snapshots_off_behaves_as_before(tmp_path: Path) -> None:
    with jupyter_host.started(tmp_path, env={"PYRELUNE_SNAPSHOTS": "0"}) as (_, client):
        execute(client, SETUP)
        time.sleep(IDLE_ENOUGH)
        run = execute(client, SEGFAULT)
        assert "namespace was lost" in run.content["evalue"]
        after = execute(client, "'a' in dir()", timeout=TIMEOUT)
        assert after.of("execute_result")[0]["data"]["text/plain"] == "False"


def test_lines_a_snapshot_of_a_broken_worker_gives_way_to_a_fresh_one(
        lines_kernel: LinesHost) -> None:
    """A cell that broke the worker's machinery broke its snapshot's too: once woken, it dies
    before its first cell, and a fresh worker runs that cell. (Whether the worker forked a
    snapshot before its broken read ended it depends on which came first; either way the
    next cell runs, in a fresh worker.)"""
    (worker,) = _children(lines_kernel.proc.pid)
    lines_kernel.execute("kept = 1\nimport os\nos.read = None")
    assert gone_soon(worker)  # idle, it forked its snapshot, then could not read a command
    answer = lines_kernel.execute("print(6 * 7)")
    assert (answer["stdout"], answer["error"]) == ("42\n", None), answer
    assert "namespace was lost" in answer["stderr"], answer
