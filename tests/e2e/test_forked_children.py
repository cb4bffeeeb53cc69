"""Processes a cell forks share its streams but never its conversation with the kernel.

Four children printing to stdout and stderr used to hang an rpc cell: each
switch between the streams made a child wait for an answer meant for the
worker (as `multiprocessing`'s fork start method does in real notebooks).
"""

from __future__ import annotations

import pytest
from support.lines_host import Host as LinesHost
from support.rpc_host import PipeHost, stdout_of

CELL = """\
import os, sys
children = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        for j in range(50):
            print(f"out {i} {j}")
            print(f"err {i} {j}", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    children.append(pid)
statuses = [os.waitpid(pid, 0)[1] for pid in children]
print("children", statuses)
"""


def _lines(text: str, prefix: str) -> list[str]:
    return sorted(line for line in text.splitlines() if line.startswith(prefix))


EXPECTED_OUT = sorted(f"out {i} {j}" for i in range(4) for j in range(50))
EXPECTED_ERR = sorted(f"err {i} {j}" for i in range(4) for j in range(50))


@pytest.mark.parametrize("attempt", range(3))
def test_rpc_children_that_print_to_both_streams_end(attempt: int, rpc_kernel: PipeHost) -> None:
    events = rpc_kernel.run(CELL)
    assert events[-1]["data"]["status"] == "ok", events[-1]
    out, err = stdout_of(events), stdout_of(events, "stderr")
    assert "children [0, 0, 0, 0]\n" in out
    assert _lines(out, "out ") == EXPECTED_OUT
    assert _lines(err, "err ") == EXPECTED_ERR
    assert stdout_of(rpc_kernel.run("print('after')")) == "after\n"


def test_lines_children_that_print_to_both_streams_end(lines_kernel: LinesHost) -> None:
    answer = lines_kernel.execute(CELL)
    assert answer["error"] is None, answer
    assert "children [0, 0, 0, 0]\n" in answer["stdout"]
    assert _lines(answer["stdout"], "out ") == EXPECTED_OUT
    assert _lines(answer["stderr"], "err ") == EXPECTED_ERR
