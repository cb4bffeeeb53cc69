"""The IPython shell's wiring to the worker's events, on plain values: what a cell's failure
says to the session, and what displays, results and a library's messages become."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.events import EventManager, available_events
from IPython.core.interactiveshell import ExecutionInfo, ExecutionResult, InteractiveShellABC

from pyrelune.wire.events import (
    INTERRUPTED,
    PYTHON_EXIT,
    PYTHON_RUNTIME_ERROR,
    PYTHON_SYNTAX_ERROR,
    TRACEBACK_PARTS,
    Clear,
    Comm,
    Display,
)
from pyrelune.worker.ipyshell.kernel import Kernel
from pyrelune.worker.ipyshell.publish import EventDisplayHook, EventPublisher
from pyrelune.worker.ipyshell.shell import cell_error


def failed(error: BaseException, before: bool = False) -> ExecutionResult:
    result = ExecutionResult(ExecutionInfo("x", False, False, True, None))
    if before:
        result.error_before_exec = error  # type: ignore[assignment]  # IPython 8 says bool
    else:
        result.error_in_exec = error
    return result


def test_a_cell_that_succeeded_has_no_error() -> None:
    assert cell_error(ExecutionResult(ExecutionInfo("x", False, False, True, None)), None,
                      frozenset()) is None


@pytest.mark.parametrize(("error", "code"), [
    (KeyboardInterrupt(), INTERRUPTED), (SystemExit(3), PYTHON_EXIT),
    (ValueError("bad"), PYTHON_RUNTIME_ERROR), (SyntaxError("no"), PYTHON_SYNTAX_ERROR),
])
def test_each_failure_has_its_code(error: BaseException, code: str) -> None:
    shown = (type(error).__name__, str(error), ["head", "body\nlines", "Name: value"])
    found = cell_error(failed(error), shown, frozenset())
    assert found is not None and found.code == code and found.ename == type(error).__name__
    # IPython's formatted traceback goes whole, as its parts (see colourtb).
    assert found.traceback.split(TRACEBACK_PARTS) == ["", "head", "body\nlines", "Name: value"]


def test_for_a_text_host_the_traceback_is_plain_text() -> None:
    parts = ["\x1b[31m-----\x1b[39m", "Cell In[1], line 1\n", "ValueError: bad"]
    shown = ("ValueError", "bad", parts)
    found = cell_error(failed(ValueError("bad")), shown, frozenset(), as_parts=False)
    assert found is not None and found.traceback == "-----\nCell In[1], line 1\n\nValueError: bad"


def test_a_failure_ipython_did_not_show_is_named_by_its_exception() -> None:
    # IPython said it its own way (a UsageError, on stderr): no parts for a front end.
    found = cell_error(failed(NameError("name 'y' is not defined")), None, frozenset())
    assert found is not None and (found.ename, found.evalue) == (
        "NameError", "name 'y' is not defined") and found.traceback == TRACEBACK_PARTS
    plain = cell_error(failed(NameError("y")), None, frozenset(), as_parts=False)
    assert plain is not None and plain.traceback == ""


def test_a_syntax_error_points_into_the_cell() -> None:
    error = SyntaxError("invalid syntax", ("<cell>", 2, 7, "print(2 2)"))
    found = cell_error(failed(error, before=True), None, frozenset())
    assert found is not None and (found.line, found.column) == (2, 7)
    error.lineno, error.offset = "two", float("nan")  # type: ignore[assignment]
    found = cell_error(failed(error, before=True), None, frozenset())
    assert found is not None and (found.line, found.column) == (None, None)


def test_the_line_is_the_cells_last_frame() -> None:
    def inner() -> None:
        raise ValueError("deep")

    try:
        inner()
    except ValueError as exc:
        caught = exc
    here = __file__
    found = cell_error(failed(caught), None, frozenset({here}))
    assert found is not None and found.line == inner.__code__.co_firstlineno + 1
    assert cell_error(failed(caught), None, frozenset()).line is None  # type: ignore[union-attr]


class Channel:
    """What the publishers hand on, in order; `origin_of` as the worker's channel has it
    (the cell a thread's output belongs to, when not the running one)."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.elsewhere: str | None = None
        self.origin_of = lambda: self.elsewhere

    def publish(self, event: Any) -> None:
        self.events.append(event)

    send = notify = publish


class Shell:
    """The parts of the shell the publishers and the kernel object use."""

    def __init__(self) -> None:
        self.channel = Channel()
        self.events = EventManager(self, available_events)  # type: ignore[arg-type]
        self.kernel = Kernel(self, self.channel)  # type: ignore[arg-type]
        self.display_pub = EventPublisher(shell=self)
        self.execution_count = 3
        self.user_ns: dict[str, Any] = {}


InteractiveShellABC.register(Shell)  # as IPython's traits expect of a shell


def test_displays_updates_and_clears_become_their_events() -> None:
    shell = Shell()
    shell.display_pub.publish({"text/plain": "a", "image/png": b"\x89PNG"}, {"k": 1},
                              transient={"display_id": "d"})
    shell.display_pub.publish({"text/plain": "b"}, transient={"display_id": "d"}, update=True)
    shell.display_pub.clear_output(wait=True)
    first, update, clear = shell.channel.events
    assert isinstance(first, Display) and first.display_id == "d" and not first.update
    assert first.data == {"text/plain": "a", "image/png": "iVBORw=="}  # bytes as base64
    assert first.metadata == {"k": 1}
    assert isinstance(update, Display) and update.update and update.data == {"text/plain": "b"}
    assert isinstance(clear, Clear) and clear.wait


def test_a_hook_sees_the_message_and_may_change_or_keep_it() -> None:
    shell = Shell()
    shell.kernel.serve({"msg_id": "request", "msg_type": "execute_request"})
    seen: list[dict[str, Any]] = []

    def hook(message: dict[str, Any]) -> dict[str, Any] | None:
        seen.append(message)
        if message["content"]["data"]["text/plain"] == "keep":
            return None
        message["content"]["data"]["text/plain"] += "!"
        return message

    shell.display_pub.register_hook(hook)
    shell.display_pub.publish({"text/plain": "keep"})
    shell.display_pub.publish({"text/plain": "changed"})
    assert [m["parent_header"]["msg_id"] for m in seen] == ["request", "request"]
    assert seen[0]["msg_type"] == "display_data"
    ((shown),) = shell.channel.events
    assert shown.data == {"text/plain": "changed!"}
    assert shell.display_pub.unregister_hook(hook) and not shell.display_pub.unregister_hook(hook)


def test_the_result_is_sent_once_formatted() -> None:
    shell = Shell()
    hook = EventDisplayHook(shell=shell)
    hook.start_displayhook()
    hook.write_format_data({"text/plain": "42"}, {})
    hook.finish_displayhook()
    hook.start_displayhook()
    hook.finish_displayhook()  # nothing formatted: nothing sent
    ((result),) = shell.channel.events
    assert isinstance(result, Display) and result.is_result and result.data == {
        "text/plain": "42"}


def test_the_kernel_names_the_request_it_serves() -> None:
    shell = Shell()
    assert shell.kernel.get_parent() == {}
    shell.kernel.serve({"msg_id": "m1", "msg_type": "comm_msg"})
    parent = shell.kernel.get_parent()
    assert parent["header"]["msg_id"] == "m1" and parent["msg_type"] == "comm_msg"
    assert shell.kernel.get_parent("control") == {}
    assert shell.kernel._parent_header is parent
    assert shell.kernel.execution_count == 3
    # From a thread of another cell: that cell's request, where its output goes.
    shell.channel.elsewhere = '{"msg_id": "m0", "msg_type": "execute_request"}'
    assert shell.kernel.get_parent()["header"]["msg_id"] == "m0"
    shell.channel.elsewhere = None
    assert shell.kernel.get_parent()["header"]["msg_id"] == "m1"


def test_what_a_library_sends_through_the_session_becomes_its_event(
        capsys: pytest.CaptureFixture[str]) -> None:
    shell = Shell()
    session = shell.kernel.session
    session.send(shell.kernel.iopub_socket, "display_data", {"data": {"text/plain": "x"},
                                                             "metadata": {}})
    session.send(shell.kernel.iopub_socket, "execute_result", {
        "data": {"text/plain": "7", "image/png": b"\x89PNG"}, "metadata": {},
        "execution_count": 1})
    session.send(shell.kernel.iopub_socket, "clear_output", {"wait": False})
    session.send(shell.kernel.iopub_socket, "comm_msg", {"comm_id": "c", "data": {}},
                 buffers=[b"raw"])
    session.send(shell.kernel.iopub_socket, "stream", {"name": "stdout", "text": "said\n"})
    session.send(shell.kernel.iopub_socket, "debug_event", {"event": "stopped"})
    display, result, clear, comm = shell.channel.events
    assert isinstance(display, Display) and display.data == {"text/plain": "x"}
    # JSON-safe as a display is: bytes as base64.
    assert isinstance(result, Display) and result.is_result and result.data == {
        "text/plain": "7", "image/png": "iVBORw=="}
    assert isinstance(clear, Clear) and not clear.wait
    assert isinstance(comm, Comm) and comm.buffers == [b"raw"] and comm.msg_type == "comm_msg"
    out, err = capsys.readouterr()
    assert out == "said\n"
    assert "'debug_event' message from the cell was not sent" in err
