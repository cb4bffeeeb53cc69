"""Between an rpc kernel's cells, as in a notebook: the cells' asyncio loop runs while the
kernel is idle, so a task or thread a cell started goes on, and what it prints reaches the host
under that cell's id; while a cell's own code runs the loop does not, so `asyncio.run()` works."""

from __future__ import annotations

import time

from support.rpc_host import TIMEOUT, PipeHost, stdout_of

TICKER = """
import asyncio
async def tick():
    for n in range(3):
        await asyncio.sleep(0.05)
        print(f"tick {n}", flush=True)
task = asyncio.get_event_loop().create_task(tick())
print("started")
"""


def late_output(kernel: PipeHost, until: str) -> list[dict[str, object]]:
    """The stream events the kernel sends while idle, until one holds `until`."""
    events = []
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        message = kernel.receive()
        assert message["kind"] == "event" and message["event"] == "stream", message
        events.append(message)
        if until in message["data"]["text"]:
            return events
    raise AssertionError(f"no {until!r} within {TIMEOUT} s: {events}")


def test_a_task_goes_on_between_cells_under_its_cell(rpc_kernel: PipeHost) -> None:
    events = rpc_kernel.run(TICKER, cell_id="starter")
    assert stdout_of(events) == "started\n", events
    late = late_output(rpc_kernel, "tick 2")
    assert "".join(e["data"]["text"] for e in late) == "tick 0\ntick 1\ntick 2\n"  # type: ignore[index]
    assert {e["data"]["cell_id"] for e in late} == {"starter"}  # type: ignore[index]
    events = rpc_kernel.run("print(task.done(), task.exception())", cell_id="check")
    assert stdout_of(events) == "True None\n", events


def test_asyncio_run_still_works_in_a_cell_while_a_task_is_pending(
        rpc_kernel: PipeHost) -> None:
    source = ("import asyncio\nstop = asyncio.Event()\nasync def wait():\n    await stop.wait()\n"
              "    print('stopped')\nwaiter = asyncio.get_event_loop().create_task(wait())")
    assert rpc_kernel.run(source)[-1]["data"]["status"] == "ok"
    events = rpc_kernel.run("async def two():\n    return 2\nprint(asyncio.run(two()))")
    assert stdout_of(events) == "2\n", events
    # The cells' loop is current again in the next cell, and its task still waits.
    events = rpc_kernel.run("print(asyncio.get_event_loop() is waiter.get_loop(), "
                            "waiter.done())")
    assert stdout_of(events) == "True False\n", events
    # Set, it ends once the kernel is idle: its print may be read with the cell's end or after.
    events = rpc_kernel.run("stop.set()")
    if "stopped" not in stdout_of(events):
        events = late_output(rpc_kernel, "stopped")
    assert stdout_of(events) == "stopped\n", events


def test_the_loop_does_not_run_while_a_cells_own_code_runs(rpc_kernel: PipeHost) -> None:
    rpc_kernel.run("import asyncio, time\nticks = []\nasync def count():\n    while True:\n"
                   "        ticks.append(1)\n        await asyncio.sleep(0.01)\n"
                   "counter = asyncio.get_event_loop().create_task(count())")
    events = rpc_kernel.run("seen = len(ticks)\ntime.sleep(0.3)\n"
                            "print(len(ticks) == seen, asyncio.get_event_loop().is_running())")
    assert stdout_of(events) == "True False\n", events
    # While idle it ran: a cell that awaits a little sees the count grown.
    events = rpc_kernel.run("before = len(ticks)\nawait asyncio.sleep(0.2)\n"
                            "print(len(ticks) > before)\ncounter.cancel()")
    assert stdout_of(events) == "True\n", events


def test_a_threads_late_print_arrives_while_idle(rpc_kernel: PipeHost) -> None:
    source = ("import threading\ngo = threading.Event()\n"
              "def later():\n    go.wait()\n    print('from the thread')\n"
              "threading.Thread(target=later).start()\ngo.set()")
    events = rpc_kernel.run(source, cell_id="threaded")
    late = [e for e in events if e["event"] == "stream"]
    if not late:  # printed after the cell's end: sent while the kernel is idle
        late = late_output(rpc_kernel, "from the thread")
    assert late[-1]["data"] == {"cell_id": "threaded", "name": "stdout",
                                "text": "from the thread\n"}


def test_displays_from_a_task_between_cells_do_not_take_the_next_cells_place(
        rpc_kernel: PipeHost) -> None:
    source = ("import asyncio\nasync def shower():\n    for n in range(20):\n"
              "        display({'text/plain': f'shown {n}'}, raw=True)\n"
              "        await asyncio.sleep(0.005)\n"
              "shower_task = asyncio.get_event_loop().create_task(shower())")
    events = rpc_kernel.run(source, cell_id="shows")
    assert events[-1]["data"]["status"] == "ok", events
    # Cells sent while the task displays still run, each once, in order; nothing is lost.
    for n in range(5):
        more = rpc_kernel.run(f"print({n})", cell_id=f"next{n}")
        assert stdout_of(more) == f"{n}\n", more
        events += more
    shown = [e for e in events if e["event"] == "display_data"]
    while len(shown) < 20:
        message = rpc_kernel.receive()
        assert message["event"] == "display_data", message
        shown.append(message)
    assert [e["data"]["item"] for e in shown] == [f"shown {n}" for n in range(20)]


def test_a_task_that_raises_systemexit_between_cells_costs_nothing_else(
        rpc_kernel: PipeHost) -> None:
    rpc_kernel.run("import asyncio\nkept = 'namespace'\nasync def leave():\n"
                   "    await asyncio.sleep(0.05)\n    raise SystemExit(3)\n"
                   "leaver = asyncio.get_event_loop().create_task(leave())", cell_id="leaves")
    late = late_output(rpc_kernel, "SystemExit")
    assert late[-1]["data"]["name"] == "stderr"  # type: ignore[index]
    events = rpc_kernel.run("print(kept, leaver.done())")
    assert stdout_of(events) == "namespace True\n", events
