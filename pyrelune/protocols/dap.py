"""The Debug Adapter Protocol's framing and numbering, sans I/O: bytes in, messages out.

A DAP message is a JSON object after a `Content-Length: N` header and a blank
line (the header is ASCII, the body N bytes of UTF-8). The supervisor is a client
of debugpy's adapter (see `supervisor.debugrelay`): it numbers what it sends
itself (`Numbering`), so that the front end's numbers (which it keeps in its own
replies) and the kernel's own requests (a `configurationDone` after `attach`, an
`evaluate` for a rich view) never collide, and pairs each response with what the
request was for.
"""

from __future__ import annotations

from pyrelune import PyreluneError, fastjson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_HEADER = b"Content-Length:"
_END = b"\r\n\r\n"
#: A header longer than this without its blank line is not DAP.
MAX_HEADER = 1024


class DapError(PyreluneError, ValueError):
    """The stream is not DAP: the connection is to be dropped."""


def frame(message: dict[str, Any]) -> bytes:
    """`message` as the wire carries it."""
    body = fastjson.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Reader:
    """Messages out of a byte stream, whatever its chunks (`feed`)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """The messages `data` completes, in order; DapError if the stream is not DAP."""
        self._buffer += data
        messages: list[dict[str, Any]] = []
        while True:
            end = self._buffer.find(_END)
            if end < 0:
                if len(self._buffer) > MAX_HEADER and _END not in self._buffer[:MAX_HEADER]:
                    raise DapError("a DAP header without its end")
                return messages
            length = -1
            for line in bytes(self._buffer[:end]).split(b"\r\n"):
                if line[:len(_HEADER)].lower() == _HEADER.lower():
                    try:
                        length = int(line[len(_HEADER):].strip())
                    except ValueError:
                        raise DapError(f"a bad Content-Length: {line!r}") from None
            if length < 0:
                raise DapError("a DAP header without Content-Length")
            start = end + len(_END)
            if len(self._buffer) < start + length:
                return messages
            body = bytes(self._buffer[start:start + length])
            del self._buffer[:start + length]
            try:
                message = fastjson.loads(body.decode())
            except (UnicodeDecodeError, ValueError) as exc:
                raise DapError(f"a DAP body that is not JSON: {exc}") from None
            if not isinstance(message, dict):
                raise DapError("a DAP body that is not an object")
            messages.append(message)


class Numbering:
    """The client's side of the request numbers: each request sent gets the next `seq`;
    its response (`request_seq`) gives back what it was sent for."""

    def __init__(self) -> None:
        self._seq = 0
        self._waiting: dict[int, Any] = {}

    def request(self, command: str, arguments: dict[str, Any] | None, purpose: Any) -> bytes:
        """A request framed for the wire, numbered; `purpose` comes back with its response."""
        self._seq += 1
        message: dict[str, Any] = {"seq": self._seq, "type": "request", "command": command}
        if arguments is not None:
            message["arguments"] = arguments
        self._waiting[self._seq] = purpose
        return frame(message)

    def answered(self, response: dict[str, Any]) -> tuple[bool, Any]:
        """(whether a request waited for `response`, that request's purpose)."""
        seq = response.get("request_seq")
        if not isinstance(seq, int) or seq not in self._waiting:
            return False, None
        return True, self._waiting.pop(seq)

    def forget(self, purpose: Any) -> bool:
        """Stop waiting for the request sent for `purpose` (its answer came another way)."""
        for seq, waiting in list(self._waiting.items()):
            if waiting is purpose:
                del self._waiting[seq]
                return True
        return False

    def waiting(self) -> list[Any]:
        """What every unanswered request was sent for, oldest first; all are forgotten."""
        purposes = list(self._waiting.values())
        self._waiting.clear()
        return purposes
