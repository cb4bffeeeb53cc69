"""Jupyter comms in a worker: the `comm` package's Comm and CommManager, as ipykernel wires them.

ipywidgets, anywidget and the other libraries that talk to a front end's
JavaScript make their comms with `comm.create_comm()` and find the handlers
of the front end's with `comm.get_comm_manager()`; a kernel overrides both.
Here a comm's messages become `wire.events.Comm` events (the session hands
them to the Jupyter codec, which publishes them on IOPub), and what the
front end sends comes back as a `Query` of kind `comm`, served between
cells as ipykernel serves its shell messages. Only the Jupyter mode has a
front end to talk to: its workers install this (`kernelloop.serve`'s `comms`).
"""

from __future__ import annotations

import sys

from pyrelune.wire.events import Comm, Done
from pyrelune.worker import importhooks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

    from pyrelune.wire.commands import Query
    from pyrelune.worker.channel import Channel

_manager: Any = None  # the comm package's CommManager, once it is imported


def install(channel: Channel) -> None:
    """Once `comm` is imported (by a widget library, or the first comm the front end opens),
    its comms are this kernel's; ipywidgets' targets are registered once it is imported."""
    importhooks.after_import("comm", lambda module: _override(module, channel))
    importhooks.after_import("ipywidgets", _register_widgets)


def _override(module: ModuleType, channel: Channel) -> None:
    global _manager
    from comm.base_comm import BaseComm, CommManager

    class KernelComm(BaseComm):
        """A comm whose messages go to the front end through the session."""

        def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None,
                        buffers: Any = None, **keys: Any) -> None:
            content = {"data": {} if data is None else data, "comm_id": self.comm_id, **keys}
            channel.notify(Comm(msg_type, content, metadata or {},
                                [bytes(buffer) for buffer in buffers or ()]))

    _manager = CommManager()
    module.create_comm = KernelComm  # type: ignore[attr-defined]
    module.get_comm_manager = lambda: _manager  # type: ignore[attr-defined]
    import logging

    # A front end opens comms for targets that are not there yet (JupyterLab's widget
    # manager asks for `jupyter.widget.control` as it connects): the comm is closed, as
    # ipykernel closes it, but that is no error of the user's cell to show.
    logging.getLogger("Comm").addFilter(
        lambda record: not record.getMessage().startswith("No such comm target registered"))


def _register_widgets(module: ModuleType) -> None:
    """ipywidgets registers its targets only where IPython runs a kernel: here, as it would."""
    register = getattr(module, "register_comm_target", None)
    if callable(register) and "comm" in sys.modules:
        register()


def receive(query: Query, channel: Channel) -> None:
    """A comm message from the front end, handled by the comm's own handler; then a Done.

    A handler that raises is reported on stderr (the front end shows it), as
    ipykernel logs it: the comm stays open and the kernel goes on.
    """
    from pyrelune.worker.runtime import interrupt_guard

    try:
        interrupt_guard.start(query.cell)
        try:
            dispatch(query.args, channel)
        finally:
            interrupt_guard.running = False
    except (Exception, KeyboardInterrupt):
        report(query.args)
    channel.send(Done())


def report(args: dict[str, Any]) -> None:
    """The comm message `args`'s handler raised (the exception being handled): said on
    stderr, under the message."""
    import traceback

    sys.stderr.write(f"error in the {args.get('msg_type')} handler of comm "
                     f"{args.get('content', {}).get('comm_id')}:\n")
    traceback.print_exc()


def dispatch(args: dict[str, Any], channel: Channel) -> None:
    from base64 import b64decode

    if _manager is None:
        import comm  # noqa: F401  (imported: `_override` makes the manager)
    msg_type = args["msg_type"]
    message = {"header": args.get("header", {}), "parent_header": args.get("parent_header", {}),
               "msg_type": msg_type, "content": args["content"],
               "metadata": args.get("metadata", {}),
               "buffers": [memoryview(b64decode(b)) for b in args.get("buffers", [])]}
    comm_id = args["content"].get("comm_id")
    if msg_type != "comm_open" and comm_id not in _manager.comms:
        # Not in this worker: the one that had it was lost, and the snapshot that took its
        # place was taken before it opened (a fresh worker has none). The front end is told
        # that it is closed, instead of talking to nothing.
        if msg_type == "comm_msg":
            channel.notify(Comm("comm_close", {"comm_id": comm_id, "data": {}}, {}, []))
        return
    getattr(_manager, msg_type)(None, None, message)
