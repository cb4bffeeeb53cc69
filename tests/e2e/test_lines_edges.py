"""The lines kernel at the edges of its host: streams closed or full, a host that vanishes,
and a long session of distinct cells, each with real processes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.lines_host import COMMAND, WAIT, Host, default_env, wait_for
from support.processes import running

PING = b'{"id": "1", "type": "ping"}\n'


def _rss(pid: int) -> int:
    """Resident memory of `pid`, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def _worker(kernel: Host) -> int:
    children = Path(f"/proc/{kernel.proc.pid}/task/{kernel.proc.pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


@pytest.mark.parametrize(("redirect", "says"), [
    ("<&-", "stdin is closed"),
    (">&-", "stdout is closed"),
    (">/dev/full", "cannot write an answer to stdout: No space left on device"),
])
def test_an_odd_stream_is_said_on_stderr_with_a_failing_status(redirect: str, says: str) -> None:
    """Closed stdin used to hang forever: the worker's pipe took fd 0 and was read as requests."""
    command = " ".join(COMMAND)
    run = subprocess.run(["sh", "-c", f"printf '%s\\n' '{PING.decode().strip()}' | "
                                      f"{command} {redirect}"],
                         capture_output=True, timeout=WAIT, env=default_env())
    assert run.returncode != 0
    assert f"pyrelune: {says}" in run.stderr.decode(), run.stderr
    assert "Traceback" not in run.stderr.decode()


def test_with_stderr_closed_the_kernel_still_answers() -> None:
    run = subprocess.run(["sh", "-c", f"{' '.join(COMMAND)} 2>&-"], input=PING,
                         capture_output=True, timeout=WAIT, env=default_env())
    assert run.returncode == 0
    assert b'"pong"' in run.stdout


def test_a_kernel_whose_host_is_gone_stops_its_worker_and_exits(tmp_path: Path) -> None:
    """A host that closed both pipes while a cell looped left both processes spinning."""
    kernel = Host()
    try:
        kernel.ping()
        marker = tmp_path / "started"
        kernel.send("execute", f"open({str(marker)!r}, 'w').close()\nwhile True: pass")
        wait_for(marker.exists, "the cell to start")
        worker = _worker(kernel)
        assert kernel.proc.stdin and kernel.proc.stdout
        kernel.proc.stdin.close()
        kernel.proc.stdout.close()
        assert kernel.proc.wait(timeout=WAIT) == 0
        wait_for(lambda: not running(worker), "the worker to end")
    finally:
        kernel.kill()


def test_distinct_cells_keep_bounded_memory_on_both_sides() -> None:
    """100 distinct 1 MiB cells held 114 MiB in the kernel and 111 MiB in its worker."""
    kernel = Host()
    try:
        kernel.ping()
        assert kernel.execute("1")["error"] is None
        worker = _worker(kernel)
        before = _rss(kernel.proc.pid), _rss(worker)
        padding = "a" * (1 << 20)  # one constant: quick to compile, as large as the issue's
        for i in range(100):
            answer = kernel.execute(f"# cell {i}\npadding = {padding!r}\nprint({i})")
            assert answer["stdout"] == f"{i}\n", answer["error"]
        grown = _rss(kernel.proc.pid) - before[0], _rss(worker) - before[1]
        assert max(grown) < 48 << 20, [f"{g / 2**20:.0f} MiB" for g in grown]
        # A recent cell's function still quotes its line when it fails in a later cell.
        kernel.execute("def f():\n    return 1 / 0")
        assert "return 1 / 0" in kernel.execute("f()")["error"]
    finally:
        kernel.kill()


def test_restart_forgets_the_cells_sources() -> None:
    kernel = Host()
    try:
        kernel.ping()
        kernel.execute("def f():\n    return 1 / 0")
        assert kernel.request("restart")["error"] is None
        kept = kernel.execute("import linecache\nprint(len([k for k in linecache.cache "
                              "if k.startswith('<cell')]))")
        assert kept["stdout"] == "1\n", kept  # this cell's own
    finally:
        kernel.kill()

