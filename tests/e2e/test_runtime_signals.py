"""A cell that signals the runtime itself (`os.kill(os.getppid(), ...)`).

Oneshot always answers, and says which signal the runtime received; a
kernel takes the cell's SIGINT as any interrupt and its SIGTERM as the end
the README documents.
"""

from __future__ import annotations

import os

import pytest
from support.lines_host import Host
from support.rpc_host import PipeHost
from support.vixhost import DEADLINE_ENV, VixHost

SIGNAL_THE_RUNTIME = "import os, signal, time\nos.kill(os.getppid(), signal.{name})\n"


@pytest.mark.parametrize(("name", "said"), [
    ("SIGINT", "Cell interrupted: the runtime received SIGINT"),
    ("SIGTERM", "Cell stopped: the runtime received SIGTERM"),
])
@pytest.mark.parametrize("after", ["time.sleep(30)", "print('went on')", "pass"],
                         ids=["sleeping", "printing", "done"])
def test_oneshot_answers_a_signal_the_cell_sent_it(
    host: VixHost, name: str, said: str, after: str
) -> None:
    result = host.run_cell("print('before', flush=True)\n" + SIGNAL_THE_RUNTIME.format(name=name)
                           + after)
    assert result.error["code"] == "interrupted"
    assert result.failure is not None and result.failure.startswith(said), result
    assert result.response["stdout"].startswith("before\n")


@pytest.mark.parametrize("name", ["SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM"])
def test_oneshot_answers_any_signal_that_would_end_it(host: VixHost, name: str) -> None:
    result = host.run_cell(SIGNAL_THE_RUNTIME.format(name=name) + "time.sleep(30)")
    assert result.failure == f"Cell stopped: the runtime received {name}", result


@pytest.mark.slow  # waits out the runtime's deadline
def test_oneshot_answers_a_signal_sent_again_and_again() -> None:
    """The cell carries on after its KeyboardInterrupt: the deadline stops it, the signal said."""
    host = VixHost(env={**os.environ, **DEADLINE_ENV})
    source = SIGNAL_THE_RUNTIME.format(name="SIGINT").replace(
        "os.kill", "while True:\n    try:\n        time.sleep(0.001)\n        os.kill") + (
        "\n    except KeyboardInterrupt:\n        pass")
    result = host.run_cell(source)
    assert result.error["code"] == "interrupted"
    assert "the runtime received SIGINT" in result.response["error"]["message"]


def test_lines_kernel_takes_the_cells_sigint_as_an_interrupt() -> None:
    tab = Host()
    try:
        tab.ping()
        tab.execute("kept = 'yes'")
        response = tab.execute(SIGNAL_THE_RUNTIME.format(name="SIGINT") + "time.sleep(30)")
        assert response["error"].startswith("KeyboardInterrupt"), response
        assert tab.execute("print(kept)")["stdout"] == "yes\n"
    finally:
        status = tab.close()
    assert status == 0


def test_lines_kernel_ends_on_the_cells_sigterm() -> None:
    tab = Host()
    try:
        tab.ping()
        tab.send("execute", SIGNAL_THE_RUNTIME.format(name="SIGTERM") + "time.sleep(30)")
        assert tab.proc.wait(timeout=60) == 0
    finally:
        tab.kill()


def test_rpc_kernel_takes_the_cells_sigint_as_an_interrupt() -> None:
    kernel = PipeHost()
    try:
        assert kernel.receive()["event"] == "kernel.ready"
        kernel.run("kept = 'yes'")
        done = kernel.run(SIGNAL_THE_RUNTIME.format(name="SIGINT") + "time.sleep(30)")[-1]
        assert done["data"]["status"] == "error"
        assert done["data"]["ename"] == "KeyboardInterrupt"
        assert "yes" in "".join(e["data"].get("text", "") for e in kernel.run("print(kept)"))
    finally:
        status = kernel.close()
    assert status == 0


def test_rpc_kernel_ends_on_the_cells_sigterm() -> None:
    kernel = PipeHost()
    try:
        assert kernel.receive()["event"] == "kernel.ready"
        kernel.call("execute.cell", {"cell_id": "t", "source":
                                     SIGNAL_THE_RUNTIME.format(name="SIGTERM") + "time.sleep(30)"})
        assert kernel.process.wait(timeout=60) == 0
    finally:
        kernel.process.kill()
