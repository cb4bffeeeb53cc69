"""The Jupyter debugger through jupyter_client, as JupyterLab drives it: debug_request on
control, debug_reply, debug_event on IOPub, with debugpy in the worker and the supervisor as
its client (see protocols/debugger.py); and IPython's own debugger (`%debug`, `%pdb`) over
the stdin channel.

Each test has a kernel of its own: a debug session is the kernel's state.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from support import jupyter_host
from support.jupyter_host import TIMEOUT, Kernel, collect, execute

#: What JupyterLab's debugger sends as `initialize`'s arguments.
INITIALIZE = {"clientID": "test-client", "clientName": "testClient", "adapterID": "",
              "pathFormat": "path", "linesStartAt1": True, "columnsStartAt1": True,
              "supportsVariableType": True, "supportsVariablePaging": True,
              "supportsRunInTerminalRequest": True, "locale": "en"}
CELL = "def f(a):\n    b = a * 2\n    return b\n\nvalue = f(21)\nprint(value)\n"


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    with jupyter_host.started(tmp_path, "message") as started:
        yield started


class Debugger:
    """A front end's debugger: numbered requests, their replies, and the events seen."""

    def __init__(self, client: BlockingKernelClient) -> None:
        self.client = client
        self.seq = 0
        self.events: list[dict[str, Any]] = []

    def __call__(self, command: str, **arguments: Any) -> dict[str, Any]:
        """The reply's content (a DAP response) to `command`."""
        self.seq += 1
        message = self.client.session.msg("debug_request", {
            "type": "request", "seq": self.seq, "command": command, "arguments": arguments})
        self.client.control_channel.send(message)
        msg_id = message["header"]["msg_id"]
        while True:
            reply = self.client.control_channel.get_msg(timeout=TIMEOUT)
            if reply["parent_header"].get("msg_id") == msg_id:
                # (the spec's schemas, jupyter_kernel_test's, have none for debug messages)
                assert reply["msg_type"] == "debug_reply"
                content: dict[str, Any] = reply["content"]
                # (ipykernel's modules reply is a body alone)
                assert content.get("request_seq", self.seq) == self.seq, content
                return content

    def event(self, name: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next debug_event `name` on IOPub (those before it are kept in `events`)."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if message["msg_type"] == "debug_event":
                self.events.append(message["content"])
                if message["content"]["event"] == name:
                    return message["content"]  # type: ignore[no-any-return]

    def start(self) -> None:
        """initialize and attach, then the configuration JupyterLab ends with."""
        for command, arguments in (("initialize", INITIALIZE), ("attach", {}),
                                   ("configurationDone", {})):
            reply = self(command, **arguments)
            assert reply["success"], json.dumps(reply)

    def breakpoint_in(self, code: str, line: int) -> str:
        """The cell `code` dumped, with a breakpoint at `line`; its path."""
        dumped = self("dumpCell", code=code)
        assert dumped["success"], dumped
        path: str = dumped["body"]["sourcePath"]
        reply = self("setBreakpoints", source={"path": path}, breakpoints=[{"line": line}],
                     sourceModified=False)
        assert reply["success"] and reply["body"]["breakpoints"][0]["verified"], reply
        return path

    def stopped(self, code: str) -> tuple[str, int]:
        """Run `code`; its msg_id and the thread stopped at its breakpoint."""
        msg_id = str(self.client.execute(code))
        stopped = self.event("stopped")
        assert stopped["body"]["reason"] == "breakpoint"
        return msg_id, stopped["body"]["threadId"]


def reply_to(client: BlockingKernelClient, msg_id: str) -> dict[str, Any]:
    """The content of the shell reply to `msg_id`."""
    while True:
        reply = client.get_shell_msg(timeout=TIMEOUT)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]  # type: ignore[no-any-return]


def test_kernel_info_offers_the_debugger_which_costs_nothing_unused(kernel: Kernel) -> None:
    client = kernel[1]
    client.kernel_info()
    info = client.get_shell_msg(timeout=TIMEOUT)["content"]
    assert info["debugger"] is True and "debugger" in info["supported_features"]
    # debugpy waits for the debugger to be turned on: cells do not pay for it.
    assert execute(client, "import sys\nprint('debugpy' in sys.modules)").stdout() == "False\n"


def test_debug_info_and_dump_cell_are_ipykernels(kernel: Kernel) -> None:
    debug = Debugger(kernel[1])
    before = debug("debugInfo")["body"]
    assert before["isStarted"] is False and before["hashMethod"] == "Murmur2"
    debug.start()
    info = debug("debugInfo")["body"]
    assert info["isStarted"] is True
    dumped = debug("dumpCell", code=CELL)["body"]["sourcePath"]
    from pyrelune.wire.cellnames import murmur2

    assert dumped == f"{info['tmpFilePrefix']}{murmur2(CELL.encode())}{info['tmpFileSuffix']}"
    assert Path(dumped).read_text(encoding="utf-8") == CELL
    assert debug("source", source={"path": dumped})["body"]["content"] == CELL
    debug("setBreakpoints", source={"path": dumped}, breakpoints=[{"line": 2}])
    assert debug("debugInfo")["body"]["breakpoints"] == [
        {"source": dumped, "breakpoints": [{"line": 2}]}]


def test_a_breakpoint_stops_the_cell_and_its_frame_is_inspected(kernel: Kernel) -> None:
    client = kernel[1]
    debug = Debugger(client)
    debug.start()
    path = debug.breakpoint_in(CELL, 2)
    msg_id, thread = debug.stopped(CELL)
    assert debug("debugInfo")["body"]["stoppedThreads"] == [thread]
    # The supervisor answers while the worker is stopped.
    frames = debug("stackTrace", threadId=thread)["body"]["stackFrames"]
    assert [(f["name"], f["source"]["path"]) for f in frames] == [("f", path), ("<module>", path)]
    frame = frames[0]["id"]
    scopes = debug("scopes", frameId=frame)["body"]["scopes"]
    local = debug("variables", variablesReference=scopes[0]["variablesReference"])
    assert {"a": "21"}.items() <= {v["name"]: v["value"] for v in local["body"]["variables"]
                                   }.items()
    assert debug("evaluate", expression="a + 1", frameId=frame,
                 context="watch")["body"]["result"] == "22"
    rich = debug("richInspectVariables", variableName="a", frameId=frame)
    assert rich["body"]["data"] == {"text/plain": "21"}
    assert debug("copyToGlobals", srcVariableName="a", dstVariableName="copied",
                 srcFrameId=frame)["success"]
    assert debug("next", threadId=thread)["success"]
    assert debug.event("stopped")["body"]["reason"] == "step"
    assert debug("continue", threadId=thread)["success"]
    run = collect(client, msg_id)
    assert run.content["status"] == "ok" and run.stdout() == "42\n"
    variables = {v["name"]: v["value"] for v in debug("inspectVariables")["body"]["variables"]}
    assert variables["value"] == "42" and variables["copied"] == "21"
    assert "In" not in variables and "_i1" not in variables
    assert debug("richInspectVariables", variableName="value")["body"]["data"] == {
        "text/plain": "42"}
    modules = debug("modules")["body"]
    assert modules["totalModules"] > 0 and any(m["name"] == "IPython" for m in modules["modules"])


def test_turning_the_debugger_off_and_on_again_as_jupyterlab_does(kernel: Kernel) -> None:
    """JupyterLab's bug icon, pressed again and again: `disconnect` with terminateDebuggee
    (here once while a cell is stopped at a breakpoint), and the cells after it run in the
    same worker, stopped again once the debugger is back on."""
    client = kernel[1]
    debug = Debugger(client)
    assert execute(client, "rounds = 0").content["status"] == "ok"
    for stopped_when_off in (False, True, False):
        debug.start()
        debug.breakpoint_in(CELL, 2)
        msg_id, thread = debug.stopped(CELL)
        if not stopped_when_off:
            assert debug("continue", threadId=thread)["success"]
            assert collect(client, msg_id).stdout() == "42\n"
        bye = debug("disconnect", restart=False, terminateDebuggee=True)
        assert bye["success"], bye
        if stopped_when_off:  # the cell goes on, undebugged
            assert collect(client, msg_id).stdout() == "42\n"
        assert debug("debugInfo")["body"]["isStarted"] is False
        run = execute(client, "rounds += 1\nprint(rounds, value)")
        assert run.content["status"] == "ok", run.iopub
    assert run.stdout() == "3 42\n"  # one worker all along


def test_variables_between_cells_are_expandable_as_in_ipykernel(kernel: Kernel) -> None:
    client = kernel[1]
    debug = Debugger(client)
    debug.start()
    assert execute(client, "nested = {'inner': [1, 2, 3]}").content["status"] == "ok"
    listed = {v["name"]: v for v in debug("inspectVariables")["body"]["variables"]}
    reference = listed["nested"]["variablesReference"]
    assert reference > 0 and listed["nested"]["type"] == "dict"
    inside = {v["name"]: v for v in debug("variables", variablesReference=reference)[
        "body"]["variables"]}
    inner = inside["'inner'"]
    assert inner["value"] == "[1, 2, 3]" and inner["variablesReference"] > 0
    items = debug("variables", variablesReference=inner["variablesReference"])["body"]
    assert [v["value"] for v in items["variables"] if v["name"] in ("0", "1", "2")] == [
        "1", "2", "3"]


def test_an_interrupt_ends_a_cell_stopped_at_a_breakpoint(kernel: Kernel) -> None:
    client = kernel[1]
    debug = Debugger(client)
    debug.start()
    debug.breakpoint_in(CELL, 2)
    msg_id, _ = debug.stopped(CELL)
    client.control_channel.send(client.session.msg("interrupt_request", {}))
    run = collect(client, msg_id)
    assert run.content["status"] == "error"
    assert debug("debugInfo")["body"]["stoppedThreads"] == []
    assert execute(client, "print(6 * 7)").stdout() == "42\n"


def test_the_supervisor_answers_while_the_worker_is_in_c_code(kernel: Kernel) -> None:
    client = kernel[1]
    debug = Debugger(client)
    debug.start()
    msg_id = str(client.execute("import time\nprint('started', flush=True)\n"
                                "sum(range(10 ** 12))"))
    while "started" not in "".join(
            m["content"].get("text", "") for m in [client.get_iopub_msg(timeout=TIMEOUT)]
            if m["msg_type"] == "stream"):
        pass
    began = time.monotonic()
    assert debug("debugInfo")["body"]["isStarted"]
    assert debug("inspectVariables")["success"]  # the namespace as last seen
    assert time.monotonic() - began < TIMEOUT
    client.control_channel.send(client.session.msg("interrupt_request", {}))
    assert collect(client, msg_id).content["status"] == "error"


def test_a_worker_that_dies_ends_the_debug_session_and_the_next_attaches_anew(
        kernel: Kernel) -> None:
    client = kernel[1]
    debug = Debugger(client)
    debug.start()
    debug.breakpoint_in(CELL, 2)
    msg_id, _ = debug.stopped(CELL)
    worker = int(debug("evaluate", expression="__import__('os').getpid()",
                       frameId=debug("stackTrace", threadId=1)["body"]["stackFrames"][0]["id"],
                       context="repl")["body"]["result"])
    os.kill(worker, 9)
    debug.event("terminated")
    after = [e["event"] for e in debug.events]
    # (debugpy's own `terminated`, or the kernel's `exited` and `terminated` when the worker's
    # death is seen first)
    since = after[after.index("stopped"):]
    assert "continued" in since and since[-1] == "terminated", after
    assert debug("debugInfo")["body"]["stoppedThreads"] == []
    assert reply_to(client, msg_id)["status"] == "error"  # its idle went by with the events
    # The fresh worker is debugged as the last was before its next cell, unasked: the
    # breakpoint set before the crash stops it.
    msg_id, thread = debug.stopped(CELL)
    assert debug("stackTrace", threadId=thread)["body"]["stackFrames"][0]["line"] == 2
    assert debug("continue", threadId=thread)["success"]
    run = collect(client, msg_id)
    assert run.content["status"] == "ok" and run.stdout().endswith("42\n")


def test_the_debugger_starts_while_a_cell_runs_and_its_next_calls_stop(kernel: Kernel) -> None:
    """The bug icon pressed during a long cell: initialize is answered while it runs, and a
    breakpoint set then stops the code the cell runs next."""
    client = kernel[1]
    debug = Debugger(client)
    code = ("import time\ndef g(n):\n    m = n + 1\n    return m\n"
            "print('waiting', flush=True)\n"
            "while not __import__('os').path.exists(FLAG):\n    time.sleep(0.05)\n"
            "print(g(41))\n")
    flag = Path(os.environ.get("TMPDIR", "/tmp")) / f"pyrelune-debug-flag-{os.getpid()}"
    flag.unlink(missing_ok=True)
    assert execute(client, f"FLAG = {str(flag)!r}").content["status"] == "ok"
    msg_id = str(client.execute(code))
    while not any(m["msg_type"] == "stream" and "waiting" in m["content"]["text"]
                  for m in [client.get_iopub_msg(timeout=TIMEOUT)]):
        pass
    debug.start()
    debug.breakpoint_in(code, 3)
    flag.touch()
    try:
        stopped = debug.event("stopped")
        assert stopped["body"]["reason"] == "breakpoint"
        thread = stopped["body"]["threadId"]
        frames = debug("stackTrace", threadId=thread)["body"]["stackFrames"]
        assert (frames[0]["name"], frames[0]["line"]) == ("g", 3)
        assert debug("continue", threadId=thread)["success"]
        run = collect(client, msg_id)
        assert run.content["status"] == "ok" and run.stdout().endswith("42\n")
    finally:
        flag.unlink(missing_ok=True)


def _debugged(client: BlockingKernelClient, code: str) -> tuple[dict[str, Any], list[str], str]:
    """Run `code`, answering IPython's debugger prompts `p x` then `q`: the reply, the
    prompts asked on stdin, and what the cell printed."""
    answers = iter(["p x"])
    prompts: list[str] = []
    printed: list[str] = []

    def stdin_hook(message: dict[str, Any]) -> None:
        prompts.append(message["content"]["prompt"])
        client.input(next(answers, "q"))

    def output_hook(message: dict[str, Any]) -> None:
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])

    reply = client.execute_interactive(code, allow_stdin=True, stdin_hook=stdin_hook,
                                       output_hook=output_hook, timeout=TIMEOUT)
    return reply, prompts, "".join(printed)


def test_post_mortem_debug_and_pdb_on_ask_through_stdin(kernel: Kernel) -> None:
    client = kernel[1]
    assert execute(client, "def g(x):\n    return 1 / x\ng(0)").content["status"] == "error"
    reply, prompts, printed = _debugged(client, "%debug")
    assert reply["content"]["status"] == "ok"
    assert len(prompts) == 2 and "ipdb>" in prompts[0]
    assert "return" in printed and "\n0\n" in printed
    assert execute(client, "%pdb on").content["status"] == "ok"
    reply, prompts, printed = _debugged(client, "g(0)")
    assert reply["content"]["status"] == "error"
    assert len(prompts) == 2 and "\n0\n" in printed
