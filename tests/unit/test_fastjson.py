"""fastjson is json, without importing it on the hot path."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import any_text, json_values

from pyrelune import fastjson


@given(json_values, st.booleans())
def test_dumps_equals_json(value: Any, ensure_ascii: bool) -> None:
    assert fastjson.dumps(value, ensure_ascii=ensure_ascii) == json.dumps(
        value, ensure_ascii=ensure_ascii
    )


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
