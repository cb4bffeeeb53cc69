"""Hosts that start the runtime with odd standard streams: closed (`<&-`, `>&-`) or full.

Each gets one clear line on stderr and a non-zero status, never a raw
traceback or a silent success; oneshot still reads all of stdin first when
it can (a host that writes the whole request before reading would otherwise
die of SIGPIPE).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from support.launch import SCRIPT
from support.processes import running
from support.vixhost import encode_request

TIMEOUT = 120  # generous: a busy machine
REQUEST = encode_request({"source": "print(2 + 3)"})
RPC_CELL = (b'{"kind": "request", "id": 1, "method": "execute.cell", '
            b'"params": {"cell_id": "a", "source": "print(6 * 7)"}}\n')


def closing(fd: int) -> Callable[[], None]:
    return lambda: os.close(fd)


def start(mode: list[str], preexec: Callable[[], None] | None = None,
          stdout: Path | None = None) -> subprocess.Popen[bytes]:
    """The runtime in `mode`, its stdout a pipe or the file `stdout`."""
    with contextlib.ExitStack() as files:
        out = files.enter_context(open(stdout, "wb")) if stdout else subprocess.PIPE
        return subprocess.Popen([SCRIPT, *mode], stdin=subprocess.PIPE,
                                stdout=out, stderr=subprocess.PIPE, preexec_fn=preexec)


def finish(process: subprocess.Popen[bytes], data: bytes) -> tuple[int, str]:
    """Write `data` (all of it: a BrokenPipeError fails the test), then the status and stderr."""
    try:
        _, err = process.communicate(data, timeout=TIMEOUT)
    finally:
        process.kill()  # a hung runtime must not outlive the test
    return process.returncode, err.decode()


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize("mode", [[], ["--mode", "rpc"]], ids=["oneshot", "rpc"])
def test_a_closed_stdin_is_said(mode: list[str]) -> None:
    process = subprocess.Popen([SCRIPT, *mode],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, preexec_fn=closing(0))
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    finally:
        process.kill()
    assert process.returncode != 0
    assert "stdin is closed" in one_line(err.decode())
    assert out == b""


@pytest.mark.parametrize(("mode", "data"), [([], REQUEST), (["--mode", "rpc"], RPC_CELL)],
                         ids=["oneshot", "rpc"])
def test_a_closed_stdout_is_said_after_reading_stdin(mode: list[str], data: bytes) -> None:
    big = data if mode else encode_request({"source": "x = 1", "pad": "p" * (1 << 20)})
    status, err = finish(start(mode, closing(1)), big)  # all of it written: no SIGPIPE
    assert status != 0
    assert "stdout is closed" in one_line(err)


@pytest.mark.parametrize(("mode", "data"), [([], REQUEST), (["--mode", "rpc"], RPC_CELL)],
                         ids=["oneshot", "rpc"])
def test_a_full_stdout_is_said(mode: list[str], data: bytes) -> None:
    status, err = finish(start(mode, stdout=Path("/dev/full")), data)
    assert status != 0
    line = one_line(err)
    assert "No space left on device" in line and "stdout" in line, line



def test_an_rpc_kernel_whose_host_closed_both_pipes_stops_its_looping_cell() -> None:
    """Not a host that only ends stdin (the cell finishes, its events are sent): one that left."""
    process = start(["--mode", "rpc"])
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b'{"kind": "request", "id": 1, "method": "execute.cell", "params": '
                        b'{"cell_id": "a", "source": "import os\\nprint(os.getpid(), flush=True)'
                        b'\\nwhile True: pass"}}\n')
    process.stdin.flush()
    worker = 0
    while not worker:
        line = process.stdout.readline()
        assert line, "the kernel ended before the cell printed"
        if b'"stream"' in line:
            worker = int(line.split(b'"text": "')[1].split(b"\\n")[0])
    process.stdin.close()
    process.stdout.close()
    try:
        assert process.wait(timeout=TIMEOUT) == 0  # as when its input ends: its host is done
    finally:
        if process.poll() is None:  # failed: neither it nor its worker may outlive the test
            os.killpg(worker, 9)
            process.kill()
    assert not running(worker)  # killed and reaped before the kernel exited


def test_an_rpc_kernel_with_stderr_closed_still_serves() -> None:
    process = subprocess.Popen([SCRIPT, "--mode", "rpc"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               preexec_fn=closing(2))
    try:
        out, _ = process.communicate(RPC_CELL, timeout=TIMEOUT)
    finally:
        process.kill()
    assert process.returncode == 0
    assert b'"text": "42\\n"' in out, out
