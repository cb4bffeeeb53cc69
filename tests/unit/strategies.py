"""Hypothesis strategies for JSON values and vix-note-extension-1 requests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

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
