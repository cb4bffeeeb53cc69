"""Hypothesis strategies for JSON values and vix-note-extension-1 messages."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from pyrelune.protocols import validation
from pyrelune.warm import frames

#: Every code point, lone surrogates included: cells print them.
any_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()))

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | any_text
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=12,
)

#: Values that look like what a host may send for each documented field.
_field_values = (
    json_values
    | st.sampled_from(["vix-note-extension-1", "vix-note-extension-2", "", "print(1)"])
    | st.integers(min_value=-2, max_value=3)
    | st.sampled_from([0.0, 1.0, -0.0, 2.5, True, False])
)
FIELDS = ["protocol", "requestId", "cellId", "cellType", "source", "executionCount",
          "workingDirectory", "documentPath", "extensionId", "extensionVersion"]


@st.composite
def requests(draw: st.DrawFn) -> Any:
    """Mostly request-shaped objects, some valid, many invalid in one field or more."""
    message: dict[str, Any] = {}
    for field in draw(st.lists(st.sampled_from(FIELDS), unique=True)):
        message[field] = draw(_field_values)
    if draw(st.booleans()):
        message["source"] = draw(any_text)
    message.update(draw(st.dictionaries(any_text, json_values, max_size=2)))
    return draw(st.just(message) | json_values)


_RESPONSE = validation.schema("vix-note-extension-1.response")["properties"]
_text = any_text
_output = st.fixed_dictionaries(
    {"mime": st.sampled_from(_RESPONSE["outputs"]["items"]["properties"]["mime"]["enum"]),
     "data": _text})
_error = st.fixed_dictionaries(
    {"code": st.sampled_from(_RESPONSE["error"]["properties"]["code"]["enum"]),
     "message": st.text(min_size=1), "details": _text})
_position = st.none() | st.integers(min_value=1)
_diagnostic = st.fixed_dictionaries(
    {"severity": st.sampled_from(["error", "warning", "info"]), "message": _text,
     "line": _position, "column": st.none() | st.integers(min_value=0)})

#: Responses as pyrelune writes them (whether `error` goes with `ok` aside).
well_formed_responses = st.fixed_dictionaries(
    {"protocol": st.just("vix-note-extension-1"), "ok": st.booleans(), "stdout": _text,
     "stderr": _text, "outputs": st.lists(_output, max_size=3)},
    optional={"requestId": _text, "error": _error,
              "diagnostics": st.lists(_diagnostic, max_size=2)},
)


#: A request as Vix Note sends it, before `near_valid_requests` breaks it.
VALID_REQUEST: dict[str, Any] = {
    "protocol": "vix-note-extension-1", "requestId": ":cell-python", "cellId": "cell-python",
    "cellType": "python", "source": "print(2 + 3)", "executionCount": 0,
    "workingDirectory": "", "documentPath": "", "extensionId": "softadastra/pyrelune",
    "extensionVersion": "0.2.0",
}


def encode(value: Any) -> bytes:
    """Compact JSON in UTF-8 as Vix Note writes it (lone surrogates kept as such)."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True,
                      ensure_ascii=False).encode("utf-8", "surrogatepass")


@st.composite
def near_valid_requests(draw: st.DrawFn) -> bytes:
    """The real host's request with a field or two changed or gone, then maybe its bytes cut,
    changed, wrapped or nested."""
    message = dict(VALID_REQUEST)
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=3, unique=True)):
        if draw(st.booleans()):
            del message[field]
        else:
            message[field] = draw(_field_values)
    raw = encode(message)
    edit = draw(st.sampled_from(["none", "cut", "byte", "insert", "bom", "trail", "nest",
                                 "twice"]))
    at = draw(st.integers(0, len(raw)))
    if edit == "cut":
        raw = raw[:at]
    elif edit == "byte" and at < len(raw):
        raw = raw[:at] + bytes([draw(st.integers(0, 255))]) + raw[at + 1:]
    elif edit == "insert":
        raw = raw[:at] + draw(st.binary(min_size=1, max_size=8)) + raw[at:]
    elif edit == "bom":
        raw = b"\xef\xbb\xbf" + raw
    elif edit == "trail":
        raw += draw(st.sampled_from([b"\n", b" {}", b"x", b"\x00", b"]"]))
    elif edit == "nest":
        depth = draw(st.integers(1, 5000))
        raw = raw[:-1] + b',"deep":' + b"[" * depth + b"]" * depth + b"}"
    elif edit == "twice":
        raw = raw[:-1] + b"," + raw[1:]  # every key twice
    return raw


#: Anything a host may write as a request: JSON values, request-shaped objects, bytes.
request_bytes = (json_values.map(encode) | requests().map(encode) | near_valid_requests()
                 | st.binary(max_size=300))


#: What a client of the warm process's socket may send for each of a run's sections
#: (argv[0], umask, environment, sys.path, the request), given the values a real
#: launcher would send (`real`): those, or anything.
_UMASKS = st.sampled_from([b"18", b"0", b"", b"abc", b"-1", b"1" * 40, b"\xff"])


@st.composite
def warm_socket_messages(draw: st.DrawFn, real: tuple[bytes, ...]) -> tuple[bytes, bytes | None]:
    """Bytes a client sends on connecting, and the GO byte it may send after an ACCEPT
    (b"": it closes instead; None: it half-closes at once).

    Mostly a run's frames with some sections real (so that the warm process
    goes deep) and others anything, cut anywhere or with lengths that lie;
    some any bytes, some a status. Never a stop (a user's client may stop
    it: that is no fault).
    """
    kind = draw(st.sampled_from(["run", "run", "run", "lying", "bytes", "status"]))
    if kind == "bytes":
        data = draw(st.binary(max_size=200))
    elif kind == "status":
        data = frames.STATUS + draw(st.binary(max_size=16))
    elif kind == "lying":
        data = (frames.RUN + draw(st.integers(0, 2**64 - 1)).to_bytes(8, "big")
                + draw(st.binary(max_size=32)))
    else:
        sections = [value if draw(st.integers(0, 3)) else draw(other) for value, other in
                    zip(real, (st.binary(max_size=40), _UMASKS, st.binary(max_size=200),
                               st.binary(max_size=200), request_bytes), strict=True)]
        count = draw(st.sampled_from([frames.SECTIONS] * 6 + [0, 1, 4, 6]))
        data = frames.RUN + frames.pack(*[*sections, b"extra"][:count])
        if draw(st.integers(0, 3)) == 0:
            data = data[:draw(st.integers(0, len(data)))]
    if data.startswith(frames.STOP):
        data = b"x" + data
    go = draw(st.sampled_from([frames.GO, frames.GO, b"X", b"", None]))
    return data, go
