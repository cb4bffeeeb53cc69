"""Jupyter's wire format: signed multipart messages, as plain values (no sockets).

A message on the wire is a list of frames: the routing identities, the
`<IDS|MSG>` delimiter, the HMAC signature of the next four frames, then the
header, parent header, metadata and content as JSON, and any binary buffers.
`Signer` signs and checks with the connection file's key and scheme; `parse`
turns frames into a `Message` or raises `BadMessage` saying why it must be
dropped (a wrong or replayed signature among them); `Builder` makes the
kernel's messages, with the headers the messaging spec asks for. The kernel's
state machine (`protocols.jupyter`) and its driver (`modes.jupyter`) use them.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections import OrderedDict
from datetime import datetime, timezone

from pyrelune import PyreluneError, fastjson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

#: The messaging spec's version this kernel speaks.
PROTOCOL_VERSION = "5.3"
DELIMITER = b"<IDS|MSG>"
#: The header fields every message must carry.
HEADER_FIELDS = ("msg_id", "msg_type", "session", "username", "version", "date")
#: Signatures remembered to refuse a replayed message (as jupyter_client does).
REPLAY_MEMORY = 1 << 16


class BadMessage(PyreluneError):
    """Frames that are not a message this kernel may act on; the text says why."""


class Signer:
    """HMAC signatures of a connection's messages (`signature_scheme` `hmac-<digest>`).

    An empty key signs nothing (the signature frame is empty) and accepts
    anything: the connection file asked for no authentication.
    """

    def __init__(self, key: bytes, scheme: str = "hmac-sha256") -> None:
        kind, _, digest = scheme.partition("-")
        if kind != "hmac" or not _signs(digest):
            raise ValueError(f"unsupported signature_scheme {scheme!r} "
                             "(expected hmac-<digest>, such as hmac-sha256)")
        self.key = key
        self._digest = digest
        self._seen: OrderedDict[bytes, None] = OrderedDict()

    def sign(self, parts: Sequence[bytes]) -> bytes:
        if not self.key:
            return b""
        mac = hmac.new(self.key, digestmod=self._digest)
        for part in parts:
            mac.update(part)
        return mac.hexdigest().encode()

    def check(self, signature: bytes, parts: Sequence[bytes]) -> None:
        """Raise `BadMessage` unless `signature` is right for `parts` and new."""
        if not self.key:
            return
        if not hmac.compare_digest(signature, self.sign(parts)):
            raise BadMessage("invalid signature")
        if signature in self._seen:
            raise BadMessage("duplicate signature (a replayed message)")
        self._seen[signature] = None
        if len(self._seen) > REPLAY_MEMORY:
            self._seen.popitem(last=False)


def _signs(digest: str) -> bool:
    """Whether HMAC can use `digest`: hashlib offers some it cannot (shake_128's length is
    the caller's to choose), which would fail at the first signature, not here."""
    if digest not in hashlib.algorithms_available:
        return False
    try:
        hmac.new(b"key", b"", digestmod=digest)
    except (ValueError, TypeError):
        return False
    return True


class Message:
    """One message, as received or about to be sent."""

    __slots__ = ("buffers", "content", "header", "identities", "metadata", "parent_header")

    def __init__(self, header: dict[str, Any], parent_header: dict[str, Any],
                 metadata: dict[str, Any], content: dict[str, Any],
                 identities: Sequence[bytes] = (), buffers: Sequence[bytes] = ()) -> None:
        self.header = header
        self.parent_header = parent_header
        self.metadata = metadata
        self.content = content
        self.identities = list(identities)
        self.buffers = list(buffers)

    @property
    def msg_type(self) -> str:
        return str(self.header.get("msg_type", ""))

    @property
    def msg_id(self) -> str:
        return str(self.header.get("msg_id", ""))

    def __repr__(self) -> str:
        return f"Message({self.msg_type!r}, {self.msg_id!r})"


def parse(frames: Sequence[bytes], signer: Signer) -> Message:
    """The message in `frames`, its signature checked; `BadMessage` if it is not one."""
    try:
        at = list(frames).index(DELIMITER)
    except ValueError:
        raise BadMessage("no <IDS|MSG> delimiter") from None
    parts = list(frames[at + 1:])
    if len(parts) < 5:
        raise BadMessage(f"{len(parts)} frames after the delimiter, at least 5 expected")
    signer.check(parts[0], parts[1:5])
    header, parent, metadata, content = (_json_object(part, name) for part, name in zip(
        parts[1:5], ("header", "parent_header", "metadata", "content"), strict=True))
    for field in ("msg_id", "msg_type"):
        if not isinstance(header.get(field), str) or not header[field]:
            raise BadMessage(f"header without a {field}")
    return Message(header, parent, metadata, content, frames[:at], parts[5:])


def _json_object(frame: bytes, name: str) -> dict[str, Any]:
    try:
        value = fastjson.loads(frame.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadMessage(f"{name} is not JSON ({str(exc)[:100]})") from None
    if not isinstance(value, dict):
        raise BadMessage(f"{name} is not a JSON object")
    return value


def serialize(message: Message, signer: Signer) -> list[bytes]:
    """The frames of `message`, signed."""
    parts = [encode(message.header), encode(message.parent_header), encode(message.metadata),
             encode(message.content)]
    return [*message.identities, DELIMITER, signer.sign(parts), *parts, *message.buffers]


def encode(value: dict[str, Any]) -> bytes:
    """Strict UTF-8 JSON: NaN and infinities (a user's JSON output) become null."""
    try:
        return fastjson.dumps(value, ensure_ascii=False, allow_nan=False).encode(
            "utf-8", "replace")
    except ValueError:
        return fastjson.dumps(_finite(value), ensure_ascii=False).encode("utf-8", "replace")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and value - value != 0:  # NaN or an infinity
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def now() -> str:
    """The header's `date`: ISO 8601 in UTC."""
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class Builder:
    """Makes the kernel's messages: one session id, a fresh msg_id each."""

    def __init__(self, session: str, username: str) -> None:
        self.session = session
        self.username = username

    def header(self, msg_type: str) -> dict[str, Any]:
        return {"msg_id": os.urandom(16).hex(), "msg_type": msg_type, "session": self.session,
                "username": self.username, "version": PROTOCOL_VERSION, "date": now()}

    def reply(self, request: Message, content: dict[str, Any],
              msg_type: str | None = None) -> Message:
        """The reply to `request`, routed back to its sender."""
        kind = msg_type or request.msg_type.replace("_request", "_reply")
        return Message(self.header(kind), request.header, {}, content, request.identities)

    def publish(self, msg_type: str, content: dict[str, Any],
                parent: Message | None, metadata: dict[str, Any] | None = None,
                buffers: Sequence[bytes] = (), topic: bytes = b"") -> Message:
        """A message on IOPub: topic `kernel.<session>.<msg_type>` (as ipykernel names it),
        unless `topic` is given."""
        topic = topic or f"kernel.{self.session}.{msg_type}".encode()
        return Message(self.header(msg_type), parent.header if parent is not None else {},
                       metadata or {}, content, [topic], buffers)

    def to(self, request: Message, msg_type: str, content: dict[str, Any]) -> Message:
        """A request of the kernel's own (stdin's input_request) to the sender of `request`."""
        return Message(self.header(msg_type), request.header, {}, content, request.identities)
