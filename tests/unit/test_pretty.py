"""Containers wrapped without IPython give the very text IPython's printer gives."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyrelune.worker.pretty import pretty

ipython_pretty = pytest.importorskip("IPython.lib.pretty")

class Plain:
    """A class that keeps `object`'s repr: IPython words it `<module.Plain at 0x..>`."""


leaves = st.one_of(st.integers(), st.text(max_size=40), st.none(), st.booleans(),
                   st.floats(allow_nan=False),
                   st.sampled_from([int, str, Plain, OrderedDict, ValueError]),
                   st.builds(Plain), st.builds(object))
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=8), st.lists(inner, max_size=8).map(tuple),
        st.dictionaries(st.text(min_size=1, max_size=12), inner, max_size=6),
        st.frozensets(st.integers(), max_size=12), st.sets(st.text(max_size=10), max_size=8),
    ),
    max_leaves=30,
)


def ipython(value: Any) -> str:
    return str(ipython_pretty.pretty(value, max_width=79, max_seq_length=1000))


@settings(max_examples=150, deadline=None)
@given(values)
def test_the_text_is_ipythons(value: Any) -> None:
    assert pretty(value) == ipython(value)


@pytest.mark.parametrize("value", [
    list(range(1500)), (1,), [(1,)] * 40, frozenset(range(-40, 0)), {"a": list(range(40))},
    set(range(30)),
    [list(range(12)) for _ in range(4)], {"k" * 40: "v" * 40, "x": {"y": list(range(30))}},
    Plain(), [Plain(), Plain()], int, [int, Plain, OrderedDict], {"type": Plain},
])
def test_known_shapes(value: Any) -> None:
    assert pretty(value) == ipython(value)
