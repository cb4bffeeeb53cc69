"""The quick validator never accepts what jsonschema rejects; errors are jsonschema's."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from strategies import json_values, requests

from pyrelune.protocols import validation

REQUEST = "vix-note-extension-1.request"
RESPONSE = "vix-note-extension-1.response"


def authority(instance: Any, name: str) -> bool:
    return jsonschema.Draft202012Validator(validation.schema(name)).is_valid(instance)


@settings(max_examples=400)
@given(requests())
def test_quick_valid_agrees_with_jsonschema_on_requests(instance: Any) -> None:
    valid = authority(instance, REQUEST)
    if validation.quick_valid(instance, validation.schema(REQUEST)):
        assert valid
    assert (validation.errors(instance, REQUEST) == []) == valid


@given(json_values)
def test_quick_valid_never_accepts_an_invalid_response(instance: Any) -> None:
    if validation.quick_valid(instance, validation.schema(RESPONSE)):
        assert authority(instance, RESPONSE)


TYPICAL = {
    "protocol": "vix-note-extension-1", "requestId": "doc:cell", "cellId": "cell",
    "cellType": "python", "source": "print(2 + 3)", "executionCount": 0,
    "workingDirectory": "/project", "documentPath": "/project/lesson.vixnote",
    "extensionId": "softadastra/pyrelune", "extensionVersion": "0.1.1",
}
CORPUS: list[tuple[dict[str, Any], bool]] = [
    (TYPICAL, True),
    ({"source": ""}, True),
    ({**TYPICAL, "documentPath": None}, True),
    ({**TYPICAL, "unknown": {"nested": [1, 2]}}, True),
    ({**TYPICAL, "executionCount": 1.0}, True),  # an integer to JSON Schema
    ({**TYPICAL, "executionCount": True}, False),
    ({**TYPICAL, "executionCount": -1}, False),
    ({**TYPICAL, "executionCount": 2.5}, False),
    ({**TYPICAL, "protocol": "vix-note-extension-2"}, False),
    ({**TYPICAL, "protocol": None}, False),
    ({**TYPICAL, "source": 1}, False),
    ({**TYPICAL, "cellId": None}, False),
    ({**TYPICAL, "documentPath": 3}, False),
    ({"protocol": "vix-note-extension-1"}, False),
]


@pytest.mark.parametrize(("instance", "valid"), CORPUS)
def test_hand_corpus(instance: dict[str, Any], valid: bool) -> None:
    assert authority(instance, REQUEST) == valid
    assert (validation.errors(instance, REQUEST) == []) == valid
    if validation.quick_valid(instance, validation.schema(REQUEST)):
        assert valid


@pytest.mark.parametrize("instance", [TYPICAL, {"source": "x"}, {**TYPICAL, "documentPath": None}])
def test_well_formed_requests_take_the_fast_path(instance: dict[str, Any]) -> None:
    # What Vix Note sends must not need jsonschema (the start-up budget).
    assert validation.quick_valid(instance, validation.schema(REQUEST))


def test_errors_name_the_field_path() -> None:
    assert validation.errors({"source": 42}, REQUEST) == ["source: 42 is not of type 'string'"]
    assert validation.errors({}, REQUEST) == ["(message): 'source' is a required property"]
    nested = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}
    assert validation.authoritative_errors({"a": ["x", 1]}, nested) == [
        "a[1]: 1 is not of type 'string'"
    ]


def test_unknown_keywords_defer_to_jsonschema() -> None:
    assert not validation.quick_valid("abc", {"pattern": "^a"})
    assert not validation.quick_valid({}, {"type": "object", "patternProperties": {}})
