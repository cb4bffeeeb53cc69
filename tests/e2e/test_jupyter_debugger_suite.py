"""ipykernel's own debugger suite, scenario by scenario, against pyrelune's kernel.

jupyter_kernel_test (0.7) has no debugger tests; ipykernel's test suite is where the
debugger's expected answers are written down (its tests/test_debugger.py). Each test here
is one of its scenarios, as a front end sees it through jupyter_client, with ipykernel's
expected answers: a kernel with the debugger initialized and attached, then the request.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from support import jupyter_host
from support.jupyter_host import TIMEOUT, execute

pytest.importorskip("debugpy", reason="the debugger is debugpy (the jupyter extra)")

#: ipykernel's suite's initialize, as JupyterLab sends it.
INITIALIZE = {"clientID": "test-client", "clientName": "testClient", "adapterID": "",
              "pathFormat": "path", "linesStartAt1": True, "columnsStartAt1": True,
              "supportsVariableType": True, "supportsVariablePaging": True,
              "supportsRunInTerminalRequest": True, "locale": "en"}
ADD = "def f(a, b):\n    c = a + b\n    return c\n\nf(2, 3)"


class Front:
    """A front end's debugger requests, numbered, and the replies' contents."""

    def __init__(self, client: BlockingKernelClient) -> None:
        self.client = client
        self.seq = 0

    def __call__(self, command: str, **arguments: Any) -> dict[str, Any]:
        self.seq += 1
        message = self.client.session.msg("debug_request", {
            "type": "request", "seq": self.seq, "command": command, "arguments": arguments})
        self.client.control_channel.send(message)
        while True:
            reply = self.client.control_channel.get_msg(timeout=TIMEOUT)
            if reply["parent_header"].get("msg_id") == message["header"]["msg_id"]:
                assert reply["msg_type"] == "debug_reply"
                return reply["content"]  # type: ignore[no-any-return]

    def stopped(self) -> dict[str, Any]:
        """The next `stopped` debug_event on IOPub."""
        while True:
            message = self.client.get_iopub_msg(timeout=TIMEOUT)
            if (message["msg_type"] == "debug_event"
                    and message["content"].get("event") == "stopped"):
                return message["content"]  # type: ignore[no-any-return]

    def break_at(self, code: str, line: int) -> str:
        """`code` dumped, a breakpoint at `line`, debugInfo, configurationDone; its path."""
        source: str = self("dumpCell", code=code)["body"]["sourcePath"]
        self("setBreakpoints", breakpoints=[{"line": line}], source={"path": source},
             sourceModified=False)
        self("debugInfo")
        assert self("configurationDone")["success"]
        return source

    def frame_and_scopes(self) -> tuple[int, dict[str, int]]:
        """The top frame of the stopped thread, and its scopes' references by name."""
        frames = self("stackTrace", threadId=1)["body"]["stackFrames"]
        scopes = self("scopes", frameId=frames[0]["id"])["body"]["scopes"]
        return frames[0]["id"], {s["name"]: s["variablesReference"] for s in scopes}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[BlockingKernelClient]:
    with jupyter_host.started(tmp_path) as (_, started):
        yield started


@pytest.fixture
def front(client: BlockingKernelClient) -> Iterator[Front]:
    """ipykernel's kernel_with_debug: initialized and attached, disconnected at the end."""
    debugger = Front(client)
    assert debugger("initialize", **INITIALIZE)["success"]
    assert debugger("attach")["success"]
    yield debugger
    debugger("disconnect", restart=False, terminateDebuggee=True)  # as ipykernel's: unchecked


def test_initialize(client: BlockingKernelClient) -> None:
    assert Front(client)("initialize", **INITIALIZE)["success"]


def test_supported_features(front: Front) -> None:
    front.client.kernel_info()
    reply = front.client.get_shell_msg(timeout=TIMEOUT)
    assert "debugger" in reply["content"]["supported_features"]
    assert reply["content"]["debugger"] is True


def test_attach_then_evaluate_in_the_repl(front: Front) -> None:
    """ipykernel's result is empty here; pyrelune's is the value (see docs/jupyter.md)."""
    reply = front("evaluate", expression="'a' + 'b'", context="repl")
    assert reply["success"] and reply["body"]["result"] in ("ab", "'ab'")


def test_set_breakpoints(front: Front) -> None:
    source = front("dumpCell", code=ADD)["body"]["sourcePath"]
    reply = front("setBreakpoints", breakpoints=[{"line": 2}], source={"path": source},
                  sourceModified=False)
    assert reply["success"]
    (placed,) = reply["body"]["breakpoints"]
    assert placed["verified"] and placed["source"]["path"] == source
    assert source in [b["source"] for b in front("debugInfo")["body"]["breakpoints"]]
    assert front("configurationDone")["success"]


def test_stop_on_breakpoint(front: Front) -> None:
    front.break_at(ADD, 2)
    front.client.execute(ADD)
    assert front.stopped()["body"]["reason"] == "breakpoint"


def test_breakpoint_in_a_cell_with_leading_empty_lines(front: Front) -> None:
    code = f"\n{ADD}"
    front.break_at(code, 6)
    front.client.execute(code)
    assert front.stopped()["body"]["reason"] == "breakpoint"


def test_rich_inspect_not_at_a_breakpoint(front: Front) -> None:
    assert execute(front.client, "text = 'Hello the world'\nprint(text)\n").stdout() == (
        "Hello the world\n")
    names = [v["name"] for v in front("inspectVariables")["body"]["variables"]]
    assert "text" in names
    reply = front("richInspectVariables", variableName="text")
    assert reply["body"]["data"] == {"text/plain": "'Hello the world'"}


def test_rich_inspect_at_a_breakpoint(front: Front) -> None:
    front.break_at(ADD, 2)
    front.client.execute(ADD)
    front.stopped()
    frame, scopes = front.frame_and_scopes()
    first = front("variables", variablesReference=scopes["Locals"])["body"]["variables"][0]
    reply = front("richInspectVariables", variableName=first["name"], frameId=frame)
    assert reply["body"]["data"] == {"text/plain": first["value"]}


def test_copy_to_globals(front: Front) -> None:
    code = ("from IPython.core.display import HTML\ndef my_test():\n"
            "    var = HTML('<p>test content</p>')\n    pass\na = 2\nmy_test()")
    front.break_at(code, 4)
    front.client.execute(code)
    front.stopped()
    frame, _ = front.frame_and_scopes()
    front("copyToGlobals", srcVariableName="var", dstVariableName="var_copy", srcFrameId=frame)
    _, scopes = front.frame_and_scopes()
    local = [v for v in front("variables", variablesReference=scopes["Locals"])["body"][
        "variables"] if "var" in v["evaluateName"]]
    copied = [v for v in front("variables", variablesReference=scopes["Globals"])["body"][
        "variables"] if "var_copy" in v["evaluateName"]]
    assert local and copied
    assert (copied[0]["value"], copied[0]["type"]) == (local[0]["value"], local[0]["type"])


def test_turning_the_debugger_off_keeps_the_namespace(front: Front) -> None:
    """JupyterLab turns its debugger off with terminateDebuggee: the worker is the kernel's,
    not the debugger's to end (ipykernel's process survives it too)."""
    assert execute(front.client, "kept = 41").reply["content"]["status"] == "ok"
    bye = front("disconnect", restart=False, terminateDebuggee=True)
    assert bye["success"], bye.get("message")
    after = execute(front.client, "print(kept + 1)")
    assert after.stdout() == "42\n", after.iopub
    assert front("initialize", **INITIALIZE)["success"]  # and it can be turned on again
    assert front("attach")["success"]
