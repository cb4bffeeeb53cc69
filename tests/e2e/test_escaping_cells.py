"""A cell that moves its worker out of its process group is still stopped, in every mode.

`os.setpgid(0, <the runtime's group>)` took the worker out of reach of a
signal to its own group: deadlines and interrupts missed it, and the kill
that follows them waited for ever (oneshot never answered, the lines kernel
ignored SIGINT, the rpc kernel froze).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.lines_host import Host as LinesHost
from support.processes import gone_soon
from support.rpc_host import PipeHost, stdout_of
from support.vixhost import DEADLINE_ENV, VixHost, encode_request

ESCAPE = "import os, time\nos.setpgid(0, os.getpgid(os.getppid()))\n"


@pytest.mark.slow  # waits out the runtime's deadline
def test_oneshot_answers_a_cell_that_left_its_group_by_the_deadline(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    source = (f"{ESCAPE}open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
              "print('escaped', flush=True)\ntime.sleep(60)")
    result = VixHost(env=DEADLINE_ENV).run(encode_request({"source": source}))
    result.assert_well_behaved()
    assert result.error["code"] == "timeout"
    assert result.response["stdout"] == "escaped\n"
    assert gone_soon(int(pid_file.read_text()))


def test_the_lines_kernel_interrupts_a_cell_that_left_its_group(
    tmp_path: Path, lines_kernel: LinesHost
) -> None:
    marker = tmp_path / "started"
    assert lines_kernel.execute("kept = 1")["error"] is None
    request_id = lines_kernel.send("execute", f"{ESCAPE}open({str(marker)!r}, 'w').close()\n"
                                   "time.sleep(60)")
    answer = lines_kernel.interrupt_when(marker, request_id)
    assert answer["error"] is not None and "KeyboardInterrupt" in answer["error"]
    assert lines_kernel.execute("print(kept)")["stdout"] == "1\n"


def test_the_rpc_kernel_interrupts_a_cell_that_left_its_group(rpc_kernel: PipeHost) -> None:
    rpc_kernel.run("kept = 'yes'")
    rpc_kernel.call("execute.cell", {"cell_id": "away", "source": (
        f"{ESCAPE}print('escaped', flush=True)\ntime.sleep(60)")})
    rpc_kernel.wait_event("stream")
    rpc_kernel.call("execute.interrupt", {})
    done = rpc_kernel.until_done()[-1]
    assert done["data"]["status"] == "error", json.dumps(done)
    assert stdout_of(rpc_kernel.run("print(kept)")) == "yes\n"
    info = rpc_kernel.call("kernel.info", {})
    assert "result" in info
