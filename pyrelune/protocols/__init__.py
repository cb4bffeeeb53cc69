"""Sans-I/O codecs, one per host protocol: bytes and values in, bytes out.

What every codec does first with a host's message lives here: read one
strict JSON object, or refuse it. A refusal is a `Rejected`, the same type
for every protocol: a `wire.events` reason, the one-line message for the
host and what else is known (the request's id, details). Each codec renders
it its own way; only the wording of the message is the protocol's own,
since hosts and tests match on it. (Here rather than in a module of its
own: the package is loaded anyway, and a module more costs every oneshot
cell an import before its worker starts.)
"""


from __future__ import annotations

from pyrelune import PyreluneError, fastjson
from pyrelune.wire.events import INVALID_JSON, INVALID_REQUEST

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_KINDS = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}


class Rejected(PyreluneError):
    """A message no cell runs for, with the reason (a `wire.events` name) and what to answer."""

    def __init__(
        self, code: str, message: str, details: str = "", request_id: str | int | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details  # all the problems, where the protocol has room for more than one
        self.request_id = request_id  # once the message is known to carry a usable one


class Wording:
    """A protocol's own words for each way a message is not a JSON object.

    `str.format` templates: `not_utf8` gets `byte`, `offset` and `reason` (the
    first bad byte, where it is, the decoder's word for it), `not_json` gets
    `error`, `not_object` gets `got` ("an array", "null", ...).
    """

    __slots__ = ("not_json", "not_object", "not_utf8", "too_deep")

    def __init__(self, not_utf8: str, not_json: str, too_deep: str, not_object: str) -> None:
        self.not_utf8 = not_utf8
        self.not_json = not_json
        self.too_deep = too_deep
        self.not_object = not_object


def read_object(raw: bytes | str, wording: Wording) -> dict[str, Any]:
    """`raw` as a JSON object held to the standard (no NaN); raises `Rejected` saying why not.

    Bytes that are not UTF-8, text that is not JSON and JSON nested past the
    recursion limit are INVALID_JSON; JSON that is not an object is INVALID_REQUEST.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        where = {"byte": exc.object[exc.start], "offset": exc.start, "reason": exc.reason}
        raise Rejected(INVALID_JSON, wording.not_utf8.format(**where)) from None
    try:
        message = fastjson.loads(text, allow_nan=False)
    except ValueError as exc:  # json.JSONDecodeError
        raise Rejected(INVALID_JSON, wording.not_json.format(error=exc)) from None
    except RecursionError:
        raise Rejected(INVALID_JSON, wording.too_deep) from None
    if not isinstance(message, dict):
        got = _KINDS.get(type(message), "a number")
        raise Rejected(INVALID_REQUEST, wording.not_object.format(got=got))
    return message
