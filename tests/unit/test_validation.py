"""The quick validator never accepts what jsonschema rejects; errors are jsonschema's."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from support.profiles import examples
from support.rpc_fuzz import requests as rpc_requests
from support.strategies import requests, well_formed_responses

from pyrelune.protocols import validation
from pyrelune.protocols.rpcmessages import METHODS

REQUEST = "vix-note-extension-1.request"
RESPONSE = "vix-note-extension-1.response"


def authority(instance: Any, spec: str | dict[str, Any]) -> bool:
    """jsonschema's verdict on `instance` against a schema file's name or a schema."""
    schema = validation.schema(spec) if isinstance(spec, str) else spec
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


@settings(max_examples=examples(4))
@given(requests())
def test_quick_valid_agrees_with_jsonschema_on_requests(instance: Any) -> None:
    valid = authority(instance, REQUEST)
    if validation.quick_valid(instance, validation.schema(REQUEST)):
        assert valid
    assert (validation.errors(instance, REQUEST) == []) == valid


#: The response schema less its if/then/else, which the quick check leaves to
#: jsonschema: on the whole schema it is never sure, so no instance would test
#: it. Every other keyword (nested objects, enums, minimum, minLength) it decides.
DECIDABLE_RESPONSE = {
    k: v for k, v in validation.schema(RESPONSE).items() if k not in {"if", "then", "else"}
}


#: Values next to the edges of the keywords the response schema uses: the wrong
#: type, empty, zero, an integral float, a bool that Python counts as an int.
NEAR = ["", "x", 0, -1, 1, 1.0, 2.5, True, None, [], {}]


def one_change(value: Any) -> Iterator[Any]:
    """Every copy of `value` with one change: a key dropped or added, a value replaced."""
    if isinstance(value, dict):
        yield {**value, "unknown": 1}
        for key, inner in value.items():
            yield {k: v for k, v in value.items() if k != key}
            for changed in one_change(inner):
                yield {**value, key: changed}
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            for changed in one_change(inner):
                yield [*value[:index], changed, *value[index + 1:]]
    yield from NEAR


@settings(max_examples=examples(0.6))
@given(well_formed_responses)
def test_quick_valid_never_accepts_an_invalid_response(response: Any) -> None:
    # Sure of what pyrelune writes, so the changed copies below reach both verdicts.
    assert validation.quick_valid(response, DECIDABLE_RESPONSE)
    authority = jsonschema.Draft202012Validator(DECIDABLE_RESPONSE)
    assert authority.is_valid(response)
    wrongly_accepted = [
        changed for changed in one_change(response)
        if validation.quick_valid(changed, DECIDABLE_RESPONSE) and not authority.is_valid(changed)
    ]
    assert wrongly_accepted == []


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


def test_errors_name_the_field_as_the_message_writes_it() -> None:
    assert validation.errors({"source": 42}, REQUEST) == ['"source" must be a string, not 42']
    assert validation.errors({}, REQUEST) == ['the request has no "source" field']
    assert validation.errors({"source": "", "documentPath": [1]}, REQUEST) == [
        '"documentPath" must be a string or null, not [1]']
    assert validation.errors({"source": "", "executionCount": -1}, REQUEST) == [
        '"executionCount" must be at least 0, not -1']
    assert validation.errors({"source": "", "protocol": 2}, REQUEST) == [
        '"protocol" must be "vix-note-extension-1", not 2']
    assert validation.errors({"source": "x" * 100}, "lines-kernel.request") == [
        'the request has no "type" field']
    assert validation.errors({"type": "x", "code": ["y" * 100]}, "lines-kernel.request") == [
        f'"code" must be a string, not ["{"y" * 54} ...']
    # Each missing field is named once, in the schema's order; a nested one by its path.
    assert validation.errors({"params": {}}, "rpc-kernel.request.execute.cell") == [
        '"params" has no "source" field', 'the request has no "kind" field',
        'the request has no "id" field', 'the request has no "method" field']


def test_authoritative_errors_name_the_field_path() -> None:
    nested = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}
    assert validation.authoritative_errors({"a": ["x", 1]}, nested) == [
        "a[1]: 1 is not of type 'string'"
    ]
    assert validation.authoritative_errors({}, {"required": ["b"]}) == [
        "(message): 'b' is a required property"]


KERNEL_REQUESTS = ["rpc-kernel.request", *(f"rpc-kernel.request.{m}" for m in METHODS),
                   "lines-kernel.request"]


@settings(max_examples=examples(3))
@given(rpc_requests())
def test_quick_valid_never_accepts_a_kernel_request_jsonschema_rejects(instance: Any) -> None:
    for name in KERNEL_REQUESTS:
        if validation.certainly_valid(instance, name):
            assert authority(instance, name), name


def test_properties_checked_in_the_loop_keep_json_schemas_types() -> None:
    # A property that is only a type or only a constant is checked without a call of its own.
    spec = {"type": "object", "properties": {
        "n": {"type": "integer"}, "b": {"type": ["boolean", "null"]}, "k": {"const": 1},
        "s": {"const": "x", "description": "annotations aside"}, "o": {"type": "object"}}}
    assert validation.quick_valid({"n": 1, "b": True, "k": 1, "s": "x", "o": {}}, spec)
    assert validation.quick_valid({"b": None}, spec)
    wrongs: list[dict[str, Any]] = [{"n": True}, {"n": "1"}, {"b": 0}, {"k": True}, {"k": "1"},
                                    {"s": "y"}, {"s": None}, {"o": []}]
    for wrong in wrongs:
        assert not validation.quick_valid(wrong, spec), wrong
        assert not authority(wrong, spec), wrong


def test_unknown_keywords_defer_to_jsonschema() -> None:
    assert not validation.quick_valid("abc", {"pattern": "^a"})
    assert not validation.quick_valid({}, {"type": "object", "patternProperties": {}})


def test_jsonschema_loads_without_the_iri_grammar_which_still_imports_after() -> None:
    """jsonschema is imported in a fresh interpreter as a rejected message imports it:
    without rfc3987_syntax (whose grammar took 1.2 s), which a cell can import later."""
    pytest.importorskip("rfc3987_syntax", reason="only Jupyter environments have it")
    code = (
        "import sys\n"
        "from pyrelune.protocols import validation\n"
        "spec = validation.schema('vix-note-extension-1.request')\n"
        "print(validation.authoritative_errors({'source': 1}, spec))\n"
        "print('jsonschema' in sys.modules, 'rfc3987_syntax' in sys.modules)\n"
        "import rfc3987_syntax\n"
        "print(rfc3987_syntax.is_valid_syntax('iri', 'http://example.com/ä'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.splitlines() == ["[\"source: 1 is not of type 'string'\"]",
                                        "True False", "True"]
