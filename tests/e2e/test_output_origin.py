"""Output goes under the cell that started the thread or task writing it, as in ipykernel.

A thread one cell started that prints while a later cell runs, or after it
ended, is the first cell's output: Jupyter front ends get it under that
cell's execute_request (its `parent_header`), an rpc host under its
`cell_id`. So do an asyncio task's, a ThreadPoolExecutor job's (whichever
cell started the pool's threads) and a thread's thread's; the running
cell's own output, its own threads' too, stays under it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_kernel_test.msgspec_v5 import validate_message
from support import jupyter_host
from support.rpc_host import TIMEOUT, PipeHost

#: What a kernel showed, by (cell, stream): the text of each, joined in the order it came.
#: Displays are under the stream name "display", by their text.
Shown = dict[tuple[str, str], str]


class RpcCells:
    """Cells of an rpc kernel over a pipe, by cell_id."""

    def __init__(self, kernel: PipeHost) -> None:
        self.kernel = kernel

    def run(self, cell: str, source: str) -> Shown:
        events = self.kernel.run(source, cell_id=cell)
        assert events[-1]["data"]["status"] == "ok", events
        return _rpc_shown(events)

    def idle(self, until: str) -> Shown:
        """What comes while no cell runs, until text holding `until`."""
        events: list[dict[str, Any]] = []
        while not any(until in e["data"].get("text", "") for e in events):
            events.append(self.kernel.receive())
        return _rpc_shown(events)


def _rpc_shown(events: list[dict[str, Any]]) -> Shown:
    shown: Shown = {}
    for event in events:
        data = event["data"]
        if event["event"] == "stream":
            key = (data["cell_id"], data["name"])
            shown[key] = shown.get(key, "") + data["text"]
        elif event["event"] == "display_data":
            key = (data["cell_id"], "display")
            shown[key] = shown.get(key, "") + data["item"]
    return shown


class JupyterCells:
    """Cells of a Jupyter kernel through jupyter_client, named by the test: each request's
    IOPub output is told apart by its parent_header."""

    def __init__(self, client: BlockingKernelClient) -> None:
        self.client = client
        self.names: dict[str, str] = {}  # msg_id: the cell's name

    def run(self, cell: str, source: str) -> Shown:
        msg_id = self.client.execute(source)
        self.names[msg_id] = cell
        shown: Shown = {}
        while not self._take(self.client.get_iopub_msg(timeout=TIMEOUT), shown, msg_id):
            pass
        reply = self.client.get_shell_msg(timeout=TIMEOUT)
        assert reply["content"]["status"] == "ok", reply
        return shown

    def idle(self, until: str) -> Shown:
        shown: Shown = {}
        while not any(until in text for text in shown.values()):
            self._take(self.client.get_iopub_msg(timeout=TIMEOUT), shown, "")
        return shown

    def _take(self, message: dict[str, Any], shown: Shown, msg_id: str) -> bool:
        """Add `message` to `shown`; whether it ends the request `msg_id` (its idle status)."""
        parent = message["parent_header"].get("msg_id")
        kind, content = message["msg_type"], message["content"]
        if kind == "status":
            return parent == msg_id and bool(content["execution_state"] == "idle")
        if kind in ("stream", "display_data"):
            validate_message(message)
            name = content["name"] if kind == "stream" else "display"
            key = (self.names.get(parent, f"unknown {parent}"), name)
            text = content["text"] if kind == "stream" else content["data"]["text/plain"]
            shown[key] = shown.get(key, "") + text
        return False


@pytest.fixture(scope="module")
def jupyter_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingKernelClient]:
    with jupyter_host.started(tmp_path_factory.mktemp("jupyter")) as (_, client):
        yield client


@pytest.fixture(params=["rpc", "jupyter"])
def cells(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RpcCells | JupyterCells]:
    if request.param == "rpc":
        kernel = PipeHost()
        try:
            assert kernel.receive()["event"] == "kernel.ready"
            yield RpcCells(kernel)
        finally:
            kernel.close()
    else:
        client = request.getfixturevalue("jupyter_client")
        jupyter_host.drain_iopub(client)
        yield JupyterCells(client)


#: A thread of cell "one" that writes once cell "two" says so, and says when it has.
WAITING_THREAD = """
import sys, threading
go, written = threading.Event(), threading.Event()
def later():
    go.wait()
    print('thread of one')
    print('its error', file=sys.stderr)
    written.set()
threading.Thread(target=later).start()
"""
TWO = "go.set()\nwritten.wait()\nprint('two itself')"


def test_a_thread_writing_while_a_later_cell_runs_is_under_its_own_cell(
        cells: RpcCells | JupyterCells) -> None:
    assert cells.run("one", WAITING_THREAD) == {}
    assert cells.run("two", TWO) == {("one", "stdout"): "thread of one\n",
                                     ("one", "stderr"): "its error\n",
                                     ("two", "stdout"): "two itself\n"}


def test_a_threads_thread_is_under_the_cell_too(cells: RpcCells | JupyterCells) -> None:
    source = WAITING_THREAD.replace("threading.Thread(target=later).start()",
                                    "threading.Thread(target=lambda: (go.wait(), threading."
                                    "Thread(target=later).start())).start()")
    cells.run("one", source)
    assert cells.run("two", TWO)[("one", "stdout")] == "thread of one\n"


def test_a_task_is_under_the_cell_that_created_it(cells: RpcCells | JupyterCells) -> None:
    cells.run("one", "import asyncio\ngo = asyncio.Event()\nasync def later():\n"
                     "    await go.wait()\n    print('task of one')\n"
                     "task = asyncio.get_event_loop().create_task(later())")
    assert cells.run("two", "go.set()\nawait task\nprint('two itself')") == {
        ("one", "stdout"): "task of one\n", ("two", "stdout"): "two itself\n"}


def test_an_executor_job_is_under_the_cell_that_submitted_it(
        cells: RpcCells | JupyterCells) -> None:
    # The pool's thread is started by cell "zero"; the job is cell "one"'s.
    cells.run("zero", "import threading\nfrom concurrent.futures import ThreadPoolExecutor\n"
                      "pool = ThreadPoolExecutor(1)\npool.submit(int).result()")
    cells.run("one", "go = threading.Event()\n"
                     "job = pool.submit(lambda: (go.wait(), print('job of one')))")
    assert cells.run("two", "go.set()\njob.result()\nprint('two itself')") == {
        ("one", "stdout"): "job of one\n", ("two", "stdout"): "two itself\n"}


def test_a_display_from_an_earlier_cells_thread_is_under_that_cell(
        cells: RpcCells | JupyterCells) -> None:
    cells.run("one", WAITING_THREAD.replace(
        "print('thread of one')", "display({'text/plain': 'shown by one'}, raw=True)"))
    assert cells.run("two", TWO)[("one", "display")] == "shown by one"


def test_long_text_of_an_earlier_cell_arrives_whole(cells: RpcCells | JupyterCells) -> None:
    cells.run("one", WAITING_THREAD.replace("'thread of one'", "'x' * 10_000"))
    assert cells.run("two", TWO)[("one", "stdout")] == "x" * 10_000 + "\n"


def test_a_thread_writing_after_a_later_cell_ended_is_under_its_own_cell(
        cells: RpcCells | JupyterCells) -> None:
    cells.run("one", "import threading, time\ngo = threading.Event()\n"
                     "threading.Thread(target=lambda: (go.wait(), time.sleep(0.2), "
                     "print('late of one'))).start()")
    shown = cells.run("two", "go.set()")
    if not shown:  # printed once two had ended, as it most often is
        shown = cells.idle("late of one")
    assert shown == {("one", "stdout"): "late of one\n"}


def test_the_running_cells_own_threads_stay_under_it(cells: RpcCells | JupyterCells) -> None:
    cells.run("one", WAITING_THREAD)
    shown = cells.run("two", "own = threading.Thread(target=print, args=('thread of two',))\n"
                             "own.start()\nown.join()\n" + TWO)
    assert shown[("two", "stdout")] == "thread of two\ntwo itself\n"
    assert shown[("one", "stdout")] == "thread of one\n"


def test_many_prints_of_an_earlier_cell_arrive_whole_and_in_order(
        cells: RpcCells | JupyterCells) -> None:
    cells.run("one", WAITING_THREAD.replace("print('thread of one')",
                                            "for n in range(2000): print(n)"))
    shown = cells.run("two", TWO)
    assert shown[("one", "stdout")] == "".join(f"{n}\n" for n in range(2000))
