"""IPython's display publisher and display hook, as the worker's Display and Clear events.

ipykernel's send their messages on IOPub; these hand the same content to the
channel, which bounds it and orders it with the cell's prints. Both take
ipykernel's transform hooks (`register_hook`): a hook gets the message a
front end would get and returns it (changed or not), or None to keep it.
"""

from __future__ import annotations

import sys
import uuid
from datetime import datetime, timezone

from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher

from pyrelune import fastjson
from pyrelune.wire.events import Clear, Display
from pyrelune.worker.display import json_safe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias

    from pyrelune.worker.channel import Channel

    Hook: TypeAlias = Callable[[dict[str, Any]], dict[str, Any] | None]


def sendable(bundle: Any, metadata: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A bundle and its metadata as they travel, as ipykernel sends them: bytes as base64
    (text types as text), every other value as it is if JSON takes it. What JSON cannot
    carry is left out and said on stderr, as IPython's formatters say a failing repr."""
    data: dict[str, Any] = {}
    for mime, value in (bundle.items() if isinstance(bundle, dict) else ()):
        if isinstance(value, (bytes, bytearray, memoryview)) and isinstance(mime, str):
            value = json_safe(mime, value)
        if isinstance(mime, str) and fastjson.encodable(value):
            data[mime] = value
        else:
            sys.stderr.write(f"pyrelune: a display's {mime!r} value is not JSON "
                             f"({type(value).__name__}); skipped\n")
    return data, metadata if isinstance(metadata, dict) and fastjson.encodable(metadata) else {}


def message(msg_type: str, content: dict[str, Any], parent: dict[str, Any]) -> dict[str, Any]:
    """A Jupyter message as the front end would get it, for hooks and libraries that read one."""
    header = {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "username": "kernel",
              "session": "", "date": datetime.now(timezone.utc).isoformat(), "version": "5.3"}
    return {"header": header, "msg_id": header["msg_id"], "msg_type": msg_type,
            "parent_header": parent.get("header", {}), "metadata": {}, "content": content,
            "buffers": []}


class _Hooked:
    """The transform hooks of a publisher; the channel and parent come from the shell."""

    shell: Any

    @property
    def _hooks(self) -> list[Hook]:
        hooks: list[Hook] = self.__dict__.setdefault("_pyrelune_hooks", [])
        return hooks

    def register_hook(self, hook: Hook) -> None:
        """`hook(message)` sees every message before it goes, and may keep it (None)."""
        self._hooks.append(hook)

    def unregister_hook(self, hook: Hook) -> bool:
        try:
            self._hooks.remove(hook)
        except ValueError:
            return False
        return True

    def _through_hooks(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any] | None:
        """The message's content once every hook has passed it, None if one kept it."""
        if not self._hooks:
            return content
        msg: dict[str, Any] | None = message(msg_type, content, self.shell.kernel.get_parent())
        for hook in list(self._hooks):
            msg = hook(msg) if msg is not None else None
        return None if msg is None else msg["content"]

    @property
    def _channel(self) -> Channel:
        channel: Channel = self.shell.channel
        return channel


class EventPublisher(_Hooked, DisplayPublisher):
    """`display()`, `update_display`, `clear_output` as Display and Clear events."""

    def publish(self, data: dict[str, Any], metadata: dict[str, Any] | None = None,
                source: object = None, *, transient: dict[str, Any] | None = None,
                update: bool = False, **kwargs: Any) -> None:
        msg_type = "update_display_data" if update else "display_data"
        content = self._through_hooks(msg_type, {"data": data, "metadata": metadata or {},
                                                 "transient": transient or {}})
        if content is None:
            return
        bundle, meta = sendable(content.get("data"), content.get("metadata"))
        shown_as = (content.get("transient") or {}).get("display_id")
        display_id = str(shown_as) if shown_as is not None and shown_as != "" else None
        self._channel.publish(Display(bundle, meta, False, display_id,
                                      update and display_id is not None))

    def clear_output(self, wait: bool = False) -> None:
        if self._through_hooks("clear_output", {"wait": wait}) is not None:
            self._channel.publish(Clear(bool(wait)))


class EventDisplayHook(_Hooked, DisplayHook):
    """The final expression's value (IPython's `Out[N]`) as the cell's result Display."""

    _bundle: tuple[dict[str, Any], dict[str, Any]] | None = None

    def start_displayhook(self) -> None:
        self._bundle = None

    def write_output_prompt(self) -> None:
        """Nothing: the execution count goes with the result (the Jupyter codec adds it)."""

    def write_format_data(self, format_dict: dict[str, Any],
                          md_dict: dict[str, Any] | None = None) -> None:
        self._bundle = (format_dict, md_dict or {})

    def finish_displayhook(self) -> None:
        bundle, self._bundle = self._bundle, None
        if bundle is None or not bundle[0]:
            return
        content = self._through_hooks("execute_result", {"data": bundle[0],
                                                         "metadata": bundle[1]})
        if content is None:
            return
        data, meta = sendable(content.get("data"), content.get("metadata"))
        # Sent, not posted as pyrelune's own result is: IPython's post_execute hooks
        # (matplotlib-inline's figures) show more after it.
        self._channel.send(Display(data, meta, True))
