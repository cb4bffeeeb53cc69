"""fastjson is json, without importing it on the hot path."""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.strategies import any_text, json_values

from pyrelune import fastjson


@given(json_values, st.booleans())
def test_dumps_equals_json(value: Any, ensure_ascii: bool) -> None:
    assert fastjson.dumps(value, ensure_ascii=ensure_ascii) == json.dumps(
        value, ensure_ascii=ensure_ascii
    )


@given(json_values)
def test_dumps_utf8_equals_strict_json_in_utf8(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    expected = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode()
    assert fastjson.dumps_utf8(value) == expected


@pytest.mark.parametrize("value", [float("nan"), [float("inf")], {"x": -float("inf")}])
def test_dumps_utf8_refuses_nan_and_infinities(value: Any) -> None:
    with pytest.raises(ValueError):
        fastjson.dumps_utf8(value)


@given(st.floats(), st.booleans())
def test_dumps_floats_and_nan_policy(value: float, allow_nan: bool) -> None:
    try:
        expected: str | type[Exception] = json.dumps([value], allow_nan=allow_nan)
    except ValueError:
        expected = ValueError
    if expected is ValueError:
        with pytest.raises(ValueError):
            fastjson.dumps([value], allow_nan=allow_nan)
    else:
        assert fastjson.dumps([value], allow_nan=allow_nan) == expected


@given(json_values, st.sampled_from(["", " ", "\n\t", " \r\n "]))
def test_loads_equals_json(value: Any, pad: str) -> None:
    text = pad + json.dumps(value, ensure_ascii=False) + pad
    assert json.dumps(fastjson.loads(text)) == json.dumps(json.loads(text))


@given(any_text)
def test_loads_rejects_like_json(text: str) -> None:
    try:
        expected = json.loads(text)
    except json.JSONDecodeError as exc:
        with pytest.raises(json.JSONDecodeError) as caught:
            fastjson.loads(text)
        assert str(caught.value) == str(exc)
    else:
        assert json.dumps(fastjson.loads(text)) == json.dumps(expected)


@pytest.mark.parametrize(
    "text", ['{"a" 1}', '{"a": 1', "[1, 2", '{"a": 1,}', "[1,]", '"\\x"', "nul", "", "  ", "{} x"]
)
def test_malformed(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        fastjson.loads(text)
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    assert str(caught.value) == str(expected.value)


@pytest.mark.parametrize("name", ["NaN", "Infinity", "-Infinity"])
def test_strict_loads_refuses_what_only_python_calls_json(name: str) -> None:
    text = f'{{"a": [1, {name}]}}'
    assert fastjson.loads(text)["a"][1] != 0  # Python's json takes it
    with pytest.raises(ValueError, match=f"^{name} is not a JSON value"):
        fastjson.loads(text, allow_nan=False)
    assert fastjson.loads('{"a": "NaN"}', allow_nan=False) == {"a": "NaN"}


def nested(depth: int) -> list[Any]:
    """A list `depth` levels deep: [[[]]] is 3."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return 1 + max(map(depth_of, value), default=0)
    return 0


@given(json_values | st.tuples(json_values, st.tuples(json_values)))
def test_shallow_measures_nesting(value: Any) -> None:
    with mock.patch.object(fastjson, "MAX_DEPTH", 2):  # small: the walk, not only the count
        assert fastjson.shallow(fastjson.dumps(value), value) == (depth_of(value) <= 2)


@pytest.mark.usefixtures("deep_recursion")
def test_encodable_refuses_json_nested_deeper_than_readers_take() -> None:
    """Whatever limit the cell set, the session and hosts parse with Python's default."""
    assert fastjson.encodable(nested(fastjson.MAX_DEPTH))
    assert not fastjson.encodable(nested(fastjson.MAX_DEPTH + 1))
    assert not fastjson.encodable({"a": nested(5000)})
    wide = [[i] for i in range(10 * fastjson.MAX_DEPTH)]  # many brackets, 2 deep
    assert fastjson.encodable(wide)
