"""No event, and no buffer the supervisor fills from the worker, outgrows the mode's cap.

Before: a cell writing newline-less bytes into the runtime's event pipe grew
the supervisor by a GiB a second; `raise ValueError("x" * 30_000_000)` made a
30 MB lines response and a 60 MB `execute.done`; a 300 MB display became one
300 MB event.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.lines_host import Host as LinesHost
from support.rpc_host import PipeHost
from support.vixhost import VixHost, encode_request

#: Writes endlessly into every descriptor it holds for writing only: the event pipe among them.
FLOOD = """\
import fcntl, os
pipes = []
for fd in range(3, 256):
    try:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
            pipes.append(fd)
    except OSError:
        pass
chunk = b'x' * 65536
while True:
    for fd in pipes:
        os.write(fd, chunk)
"""


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_oneshot_stops_a_worker_flooding_its_event_pipe() -> None:
    result = VixHost(env={"PYRELUNE_TIMEOUT": "30"}).run(encode_request({"source": FLOOD}))
    result.assert_well_behaved()
    assert result.error["code"] == "worker_died", result.error
    assert "event pipe" in result.error["message"]


def test_lines_stops_a_worker_flooding_its_event_pipe_and_lives_on(lines_kernel: LinesHost) -> None:
    answer = lines_kernel.execute(FLOOD)
    assert answer["error"] is not None and "event pipe" in answer["error"]
    assert lines_kernel.execute("print('alive')")["stdout"] == "alive\n"
    assert _peak_kib(lines_kernel.proc.pid) < 200 * 1024


def test_a_huge_error_is_cut_in_the_lines_response() -> None:
    kernel = LinesHost(env={"PYRELUNE_MAX_OUTPUT": str(1 << 20)})
    try:
        kernel.ping()
        request_id = kernel.send("execute", 'raise ValueError("x" * 30_000_000)')
        line = kernel.read_line(timeout=60)
        assert len(line) < 2 << 20
        answer = json.loads(line)
        assert answer["id"] == request_id and "characters cut" in answer["error"]
    finally:
        kernel.close()


def test_rpc_cuts_a_huge_error_and_a_huge_display(rpc_kernel: PipeHost) -> None:
    rpc_kernel.call("execute.cell", {"cell_id": "e",
                                 "source": 'raise ValueError("x" * 30_000_000)'})
    done = rpc_kernel.until_done()[-1]
    assert len(json.dumps(done)) < 2 << 20 and "characters cut" in done["data"]["error"]
    rpc_kernel.call("execute.cell", {"cell_id": "d", "source": (
        'display({"text/plain": "y" * 100_000_000}, raw=True)')})
    events = rpc_kernel.until_done()
    shown = [e for e in events if e["event"] == "display_data"]
    assert len(shown) == 1 and len(json.dumps(shown[0])) < 2 << 20
    assert "characters cut" in json.dumps(shown[0])
    assert _peak_kib(rpc_kernel.process.pid) < 200 * 1024
