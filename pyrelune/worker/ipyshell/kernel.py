"""What libraries use of ipykernel's kernel object (`get_ipython().kernel`), in a worker.

ipywidgets' `Output` asks `kernel.get_parent()` for the request being served
and names its msg_id, so that the front end puts that request's output in
the widget: from a cell, the execute_request; from a widget's callback, the
comm message that called it. Others reach for the kernel's session, its IOPub
socket, its comm manager, its shell and its execution count. The worker has
no socket: what a library sends through `session.send` becomes the event
the same message would be, and a message no event carries is refused on
stderr, never dropped in silence.
"""

from __future__ import annotations

import sys

from pyrelune.wire.events import Clear, Comm, Display
from pyrelune.worker.ipyshell.publish import message, sendable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pyrelune.worker.channel import Channel


class _Socket:
    """Where a library addresses what it sends: the kernel's sockets are the supervisor's."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<pyrelune's {self.name} channel>"


class Session:
    """`kernel.session`: `msg()` builds a message, `send()` hands it to the channel."""

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self.session = ""
        self.username = "kernel"

    def msg(self, msg_type: str, content: dict[str, Any] | None = None,
            parent: dict[str, Any] | None = None, header: dict[str, Any] | None = None,
            metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        built = message(msg_type, content or {}, parent or self._kernel.get_parent())
        if header:
            built["header"].update(header)
        if metadata:
            built["metadata"] = metadata
        return built

    def send(self, stream: object, msg_or_type: dict[str, Any] | str,
             content: dict[str, Any] | None = None, parent: dict[str, Any] | None = None,
             ident: object = None, buffers: list[bytes] | None = None, track: bool = False,
             header: dict[str, Any] | None = None,
             metadata: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Send what a front end would get on IOPub; other channels' messages are refused."""
        msg = (msg_or_type if isinstance(msg_or_type, dict)
               else self.msg(msg_or_type, content, parent, header, metadata))
        self._kernel.forward(msg, [bytes(b) for b in buffers or msg.get("buffers") or ()])
        return msg


class Kernel:
    """`get_ipython().kernel` in a worker: the request served, the session, the comms."""

    implementation = "pyrelune"

    def __init__(self, shell: Any, channel: Channel) -> None:
        self.shell = shell
        self._channel = channel
        self._parent: dict[str, Any] = {}
        self.session = Session(self)
        self.iopub_socket = _Socket("iopub")
        self.shell_handlers: dict[str, Any] = {}
        self.control_handlers: dict[str, Any] = {}

    @property
    def execution_count(self) -> int:
        count: int = self.shell.execution_count
        return count

    @property
    def comm_manager(self) -> Any:
        from comm import get_comm_manager

        return get_comm_manager()

    @property
    def _parent_header(self) -> dict[str, Any]:
        """ipykernel 5's name for the request served, which older libraries read."""
        return self._parent

    def get_parent(self, channel: str = "shell") -> dict[str, Any]:
        """The request being served on `channel`: a cell's, or a comm message's (shell).

        Asked from a thread or task of another cell than the one running, it is that
        cell's, whose output it is (see `worker.origin`): an `Output` widget it enters
        captures what it prints, however many cells ran since.
        """
        if channel != "shell":
            return {}
        origin_of = self._channel.origin_of
        origin = origin_of() if origin_of is not None else None
        return self._parent if origin is None else _request(header(origin))

    def set_parent(self, ident: object, parent: dict[str, Any], channel: str = "shell") -> None:
        if channel == "shell":
            self._parent = parent

    def serve(self, header: dict[str, Any] | None) -> None:
        """From now on the worker serves the request whose header this is."""
        self._parent = _request(header)

    def forward(self, msg: dict[str, Any], buffers: list[bytes]) -> None:
        """A message a library built, as the event that carries it."""
        msg_type = msg.get("msg_type") or msg.get("header", {}).get("msg_type")
        content = msg.get("content") or {}
        if msg_type in ("display_data", "update_display_data"):
            self.shell.display_pub.publish(content.get("data", {}), content.get("metadata"),
                                           transient=content.get("transient"),
                                           update=msg_type == "update_display_data")
        elif msg_type == "execute_result":  # as the display hook sends one
            self._channel.publish(Display(*sendable(content.get("data"),
                                                    content.get("metadata")), True))
        elif msg_type == "clear_output":
            self._channel.publish(Clear(bool(content.get("wait", False))))
        elif msg_type == "stream" and content.get("name") in ("stdout", "stderr"):
            stream = sys.stdout if content["name"] == "stdout" else sys.stderr
            stream.write(str(content.get("text", "")))
        elif msg_type in ("comm_open", "comm_msg", "comm_close"):
            self._channel.notify(Comm(msg_type, content, msg.get("metadata") or {}, buffers))
        else:
            sys.stderr.write(f"pyrelune: a {msg_type!r} message from the cell was not sent: "
                             "a kernel's worker sends only displays, streams and comms\n")


def _request(header: dict[str, Any] | None) -> dict[str, Any]:
    """A request as `get_parent()` gives it, from its header (none: `{}`)."""
    return {} if not header else {
        "header": header, "msg_id": header.get("msg_id"), "msg_type": header.get("msg_type"),
        "parent_header": {}, "metadata": {}, "content": {}}


def header(origin: str | None) -> dict[str, Any] | None:
    """The request's header the supervisor named a cell by (`Execute.origin`), if any."""
    if origin is None:
        return None
    from pyrelune import fastjson

    try:
        found = fastjson.loads(origin)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None



def stand_in_for_ipykernel(kernel: Kernel) -> None:
    """Once ipykernel's comms are imported, its kernel singleton is one that relays to `kernel`.

    bokeh (`show(..., notebook_handle=True)`), panel, holoviews and matplotlib's
    nbagg build their comms from `ipykernel.comm.Comm`, which sends through
    `ipykernel.kernelbase.Kernel.instance()` and, when there is none, drops
    every message without a word. Where ipykernel is installed and such a
    library imports it, that instance is made here: it serves the same request
    and sends through the same session as `kernel`.
    """
    from ipykernel.kernelbase import Kernel as IPyKernel
    from jupyter_client.session import Session as ClientSession

    class RelayedSession(ClientSession):
        def send(self, stream: object, msg_or_type: dict[str, Any] | str,
                 content: dict[str, Any] | None = None, parent: dict[str, Any] | None = None,
                 ident: object = None, buffers: Any = None,
                 track: bool = False, header: dict[str, Any] | None = None,
                 metadata: dict[str, Any] | None = None) -> dict[str, Any] | None:
            return kernel.session.send(stream, msg_or_type, content, parent, ident, buffers,
                                       track, header, metadata)

    class StandIn(IPyKernel):
        def get_parent(self, channel: str | None = None) -> dict[str, Any]:
            return kernel.get_parent(channel or "shell")

    if not IPyKernel.initialized():
        StandIn.instance(session=RelayedSession(), iopub_socket=kernel.iopub_socket,
                         shell=kernel.shell)
