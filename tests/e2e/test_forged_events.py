"""A well-formed event that a cell writes into the runtime's event pipe is refused.

Before, a forged `done` made a schema-invalid oneshot response (an unknown
error code, a negative line) and, in the kernels, ended the cell early, so
that every later answer belonged to the cell before it.
"""

from __future__ import annotations

import json

import pytest
from support.lines_host import Host as LinesHost
from support.rpc_host import PipeHost, stdout_of
from support.vixhost import VixHost, encode_request

FORGE = """\
import fcntl, os, time
line = {line!r}
for fd in range(3, 256):
    try:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
            os.write(fd, line)
    except OSError:
        pass
time.sleep(0.3)
print("after the forgery")
"""
FORGED_DONES = [
    b'{"t": "done"}\n',
    b'{"t": "done", "error": {"code": "made_up", "ename": "E", "evalue": "x", '
    b'"traceback": "", "line": -4, "column": null}}\n',
]


@pytest.mark.parametrize("forged", FORGED_DONES, ids=["ok", "invalid"])
def test_oneshot_answers_a_forged_done_with_a_valid_response(forged: bytes) -> None:
    result = VixHost().run(encode_request({"source": FORGE.format(line=forged)}))
    result.assert_well_behaved()  # the schema included
    assert result.error["code"] == "worker_died", result.error
    assert "not one of its messages" in result.error["message"]


def test_lines_answers_stay_with_their_cells_after_a_forged_done(lines_kernel: LinesHost) -> None:
    forged = lines_kernel.execute(FORGE.format(line=FORGED_DONES[0]))
    assert forged["error"] is not None and "not one of its messages" in forged["error"]
    for n in range(3):
        assert lines_kernel.execute(f"print({n})")["stdout"] == f"{n}\n"


def test_rpc_events_stay_with_their_cells_after_a_forged_done(rpc_kernel: PipeHost) -> None:
    events = rpc_kernel.run(FORGE.format(line=FORGED_DONES[0]), cell_id="forger")
    assert events[-1]["data"]["status"] == "error", json.dumps(events[-1])
    for n in range(3):
        assert stdout_of(rpc_kernel.run(f"print({n})", cell_id=f"c{n}")) == f"{n}\n"
