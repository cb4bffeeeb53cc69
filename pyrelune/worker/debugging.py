"""The worker's side of the Jupyter debugger: debugpy, and what only the namespace can answer.

debugpy is imported on the first debug session's start, never before: cells
of a kernel nobody debugs do not pay for it. The start is asked with a signal
(`wire.debugstart`), so that it comes while a cell runs too, as ipykernel's
control thread starts it: the handler starts debugpy on a thread of its own
and tells the supervisor where its adapter listens (a Reply, sent from that
thread). debugpy listens on loopback, through its adapter (a process of its
own); the supervisor connects to the adapter as a DAP client
(`supervisor.debugrelay`). The Query actions answer, between cells, what the
supervisor cannot: the namespace's variables, a variable's rich views, the
loaded modules (`protocols.debugger` asks for them).
"""

from __future__ import annotations

import _thread
import sys

from pyrelune.wire import debugstart
from pyrelune.wire.events import Reply

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pyrelune.worker.channel import Channel
    from pyrelune.worker.ipyshell.shell import ZMQInteractiveShell

#: The longest value a variable shows in the panel.
MAX_VALUE = 1000
_listening: tuple[str, int] | None = None
_starting = _thread.allocate_lock()  # two signals, two threads: debugpy listens once


def watch(channel: Channel, shell: ZMQInteractiveShell) -> None:
    """Start debugpy whenever the supervisor's signal comes (see `wire.debugstart`)."""
    if debugstart.SIGNAL is None:
        return
    import _signal

    _signal.signal(debugstart.SIGNAL, lambda signum, frame: _thread.start_new_thread(
        _start_and_tell, (channel, shell)))
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {debugstart.SIGNAL})  # blocked across the fork


def _start_and_tell(channel: Channel, shell: ZMQInteractiveShell) -> None:
    content: dict[str, Any]
    try:
        content = {"address": list(start(shell))}
    except Exception as exc:  # debugpy missing, its adapter failing to start
        content = {"error": f"debugpy could not start: {exc}"}
    channel.notify(Reply(content, debugstart.KIND))


def answer(shell: ZMQInteractiveShell, args: dict[str, Any]) -> dict[str, Any]:
    """The Reply's content for the debug question `args` (see the module's docstring)."""
    action = args.get("action")
    content: dict[str, Any] = {"request": args.get("request")}
    if action == "variables":
        content["variables"] = (variables(shell.user_ns) if _listening is None
                                else _explore(shell.user_ns))
    elif action == "children":
        content["variables"] = _children(args.get("reference"))
    elif action == "rich":
        result = shell.user_expressions({args["name"]: args["name"]})[  # type: ignore[no-untyped-call]
            args["name"]]
        if result.get("status") == "ok":
            content["data"], content["metadata"] = result["data"], result["metadata"]
    elif action == "modules":
        content["modules"], content["total"] = modules()
    return content


def start(shell: ZMQInteractiveShell) -> tuple[str, int]:
    """debugpy listening for the supervisor (once per worker): where its adapter is."""
    global _listening
    with _starting:
        if _listening is None:
            _listening = _listen(shell)
    return _listening


def _listen(shell: ZMQInteractiveShell) -> tuple[str, int]:
    import os

    # Its warning that frozen modules may hide breakpoints is for the standard library's
    # frozen modules, never a cell's: as in ipykernel's kernels, it is not printed.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    import debugpy

    host, port = debugpy.listen(("127.0.0.1", 0))
    # As ipykernel: a cell's leading blank lines stay, or its breakpoints would move.
    from IPython.core.inputtransformer2 import leading_empty_lines

    cleanup = shell.input_transformer_manager.cleanup_transforms
    if leading_empty_lines in cleanup:
        cleanup.remove(leading_empty_lines)
    return str(host), int(port)


class _Code:
    """What pydevd's variable explorer reads of a frame's code."""

    co_filename = "<namespace>"
    co_name = "<module>"


class _Frame:
    """The namespace as a frame of its own, for pydevd's variable explorer."""

    f_code = _Code()
    f_back = None

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.f_globals = self.f_locals = namespace


class _PyDB:
    """What pydevd's variable explorer reads of its debugger."""

    def __init__(self) -> None:
        from _pydevd_bundle.pydevd_api import PyDevdAPI  # type: ignore[import-not-found]

        self.variable_presentation = PyDevdAPI.VariablePresentation()


_explorer: Any = None  # (the frames' manager, the namespace's frame) since the last look


def _explore(namespace: dict[str, Any]) -> list[dict[str, Any]]:
    """The namespace's variables as debugpy gives a stopped frame's, expandable (their
    `variablesReference` opens them: `_children`) until the next look, as in ipykernel."""
    global _explorer
    from _pydevd_bundle import pydevd_frame_utils  # type: ignore[import-not-found]
    from _pydevd_bundle.pydevd_suspended_frames import (  # type: ignore[import-not-found]
        SuspendedFramesManager,
        _FramesTracker,
    )

    if _explorer is not None:
        _explorer[2].untrack_all()
    manager = SuspendedFramesManager()
    frame = _Frame(namespace)
    tracker = _FramesTracker(manager, _PyDB())
    tracker.track("thread1", pydevd_frame_utils.create_frames_list_from_frame(frame))
    _explorer = (manager, frame, tracker)
    return _children(id(frame))


def _children(reference: Any) -> list[dict[str, Any]]:
    """The variables inside the one `reference` names (as `_explore` last listed them)."""
    if _explorer is None or not isinstance(reference, int):
        return []
    try:
        found = _explorer[0].get_variable(reference)
    except KeyError:  # from a look before the last: gone
        return []
    return [child.get_var_data() for child in found.get_children_variables()]


def variables(namespace: dict[str, Any]) -> list[dict[str, Any]]:
    """The namespace's variables as DAP's `variables` gives them (not expandable: debugpy
    is not started, and its explorer with it)."""
    found = []
    for name, value in list(namespace.items()):
        try:
            text = repr(value)
        except Exception as exc:  # a broken __repr__ is the user's, not the panel's
            text = f"<repr failed: {type(exc).__name__}>"
        found.append({"name": name, "value": text[:MAX_VALUE], "type": type(value).__name__,
                      "evaluateName": name, "variablesReference": 0})
    return found


def modules() -> tuple[list[dict[str, Any]], int]:
    """The loaded modules with a Python source, as ipykernel lists them; and how many are loaded."""
    loaded = list(sys.modules.values())
    found = []
    for number, module in enumerate(loaded):
        origin = getattr(getattr(module, "__spec__", None), "origin", None)
        if isinstance(origin, str) and origin.endswith(".py"):
            found.append({"id": number, "name": module.__name__, "path": origin})
    return found, len(loaded)
