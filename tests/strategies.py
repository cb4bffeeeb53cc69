"""Hypothesis strategies for JSON values and vix-note-extension-1 messages."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from pyrelune.protocols import validation

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

