"""A worker that dies between cells costs the namespace, never the next cell.

Before, the cell after such a death was reported as "worker killed by
SIGALRM" and never ran. Now a fresh worker runs it, and the death is told
once, as a notice on stderr ahead of the cell's own output. Here with
snapshots off (PYRELUNE_SNAPSHOTS=0), the fallback when no snapshot is kept;
with them, see `test_snapshots`.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.lines_host import Host as LinesHost
from support.poll import GENEROUS
from support.processes import gone_soon
from support.rpc_host import PipeHost, stdout_of

ALARM = "import signal\nsignal.alarm(1)\nkept = 1"
#: Cells after which the worker's own machinery is broken: it dies on the next command.
BREAKERS = {
    "alarm": ALARM,
    "os.read": "import os\nos.read = None",
    "os._exit": "import os\nos.read = None\nos._exit = None",
    "modules": "import sys\nfor name in [m for m in sys.modules if m.startswith('pyrelune')]:\n"
               "    sys.modules[name] = None",
    "rlimit": "import resource\nresource.setrlimit(resource.RLIMIT_AS, (1 << 20, 1 << 20))",
}
#: The next cell; long, so that a worker left with no memory to spare cannot even read it.
NEXT = "print(6 * 7)\nprint(globals().get('kept'))\n#" + "x" * (4 << 20)


@pytest.fixture
def kernel_env() -> dict[str, str]:
    """The kernels here (`lines_kernel`, `rpc_kernel`) have snapshots off."""
    return {"PYRELUNE_SNAPSHOTS": "0"}


@pytest.mark.parametrize("breaker", list(BREAKERS))
def test_lines_runs_the_next_cell_in_a_fresh_worker(lines_kernel: LinesHost,
                                                    breaker: str) -> None:
    first = lines_kernel.execute(BREAKERS[breaker])
    if breaker == "alarm":
        assert first["error"] is None
        time.sleep(1.5)  # the alarm goes off while the kernel is idle
    answer = lines_kernel.execute(NEXT)
    assert answer["error"] is None, answer
    assert answer["stdout"] == "42\nNone\n"  # ran, in a fresh namespace
    if breaker != "alarm" and not answer["stderr"]:
        # The broken worker could still read and run the cell (a starved one,
        # on a busy machine even one without pyrelune's modules): nothing was lost.
        return
    assert answer["stderr"].count("worker ended between cells") == 1, answer["stderr"]
    again = lines_kernel.execute("print('next')")
    assert (again["stdout"], again["stderr"], again["error"]) == ("next\n", "", None)


@pytest.mark.parametrize("breaker", ["alarm", "os.read", "modules"])
def test_rpc_runs_the_next_cell_in_a_fresh_worker(breaker: str, rpc_kernel: PipeHost) -> None:
    rpc_kernel.run(BREAKERS[breaker])
    if breaker == "alarm":
        time.sleep(1.5)
    events = rpc_kernel.run("print(6 * 7)")
    assert events[-1]["data"]["status"] == "ok", events
    assert stdout_of(events) == "42\n"
    stderr = stdout_of(events, "stderr")
    if breaker == "alarm" or stderr:
        # As in the lines test: a broken worker that still ran the cell lost nothing.
        assert stderr.count("worker ended between cells") == 1, stderr
    assert stdout_of(rpc_kernel.run("print('next')")) == "next\n"


def test_rpc_resets_after_a_worker_that_died_between_cells(rpc_kernel: PipeHost) -> None:
    rpc_kernel.run(ALARM)
    time.sleep(1.5)
    assert rpc_kernel.call("kernel.reset", {})["result"] == {"ok": True}
    assert stdout_of(rpc_kernel.run("print(globals().get('kept'))")) == "None\n"


#: A thread of the cell's that writes its last words to stderr between cells, then ends the
#: worker: the exit and the words reach the kernel together. It waits for the host's word
#: (a file the host creates once the cell is over): a sleep of its own could end before the
#: cell does on a busy machine, and its words would then be the cell's own output.
LAST_WORDS = ("import os, sys, threading, time\n"
              "def leave(ended):\n"
              "    while not os.path.exists(ended):\n"
              "        time.sleep(0.01)\n"
              "    sys.stderr.write('last words\\n')\n"
              "    sys.stderr.flush()\n"
              "    os._exit(5)\n"
              "threading.Thread(target=leave, args=[{ended!r}]).start()")


def test_what_a_worker_wrote_before_it_died_between_cells_reaches_the_host(
        rpc_kernel: PipeHost, tmp_path: Path) -> None:
    ended = tmp_path / "ended"
    first = rpc_kernel.run(LAST_WORDS.format(ended=str(ended)) + "\nprint(os.getpid())",
                           cell_id="leaves")
    worker = int(stdout_of(first))
    ended.touch()
    late = rpc_kernel.receive()  # its death is told with the next cell: this is the words
    assert late["event"] == "stream", late
    assert late["data"] == {"cell_id": "leaves", "name": "stderr", "text": "last words\n"}
    # Its words come just before its exit: a cell sent in between could still start there.
    assert gone_soon(worker, GENEROUS), "the worker did not end"
    events = rpc_kernel.run("print(6 * 7)")
    assert stdout_of(events) == "42\n"
    assert "worker ended between cells (worker exited with status 5)" in stdout_of(
        events, "stderr")


def test_lines_tells_what_a_worker_wrote_before_it_died_between_cells(
        lines_kernel: LinesHost, tmp_path: Path) -> None:
    """The lines kernel reads nothing between cells: the words wait in the dead worker's pipe,
    and the next cell's answer gives them, ahead of the notice of its death."""
    ended = tmp_path / "ended"
    first = lines_kernel.execute(LAST_WORDS.format(ended=str(ended)) + "\nprint(os.getpid())")
    worker = int(first["stdout"])
    ended.touch()
    assert gone_soon(worker, GENEROUS), "the worker did not end"
    answer = lines_kernel.execute("print(6 * 7)")
    assert answer["stdout"] == "42\n", answer
    assert answer["stderr"].startswith("last words\npyrelune: the kernel's worker ended between "
                                       "cells (worker exited with status 5)"), answer
