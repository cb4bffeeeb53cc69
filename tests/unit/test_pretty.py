"""Containers wrapped without IPython give the very text IPython's printer gives."""

from __future__ import annotations

import re
import types
from collections import Counter, OrderedDict, UserList, defaultdict, deque
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.profiles import examples

from pyrelune.worker.pretty import pretty

ipython_pretty = pytest.importorskip("IPython.lib.pretty")

class Plain:
    """A class that keeps `object`'s repr: IPython words it `<module.Plain at 0x..>`."""


class Failure(ValueError):
    """An exception of a module's own: IPython names it with its module."""


class Items(list[int]):
    """A list subclass without a repr of its own: written as a list."""


def function(x: int, *rest: str, key: str = "k") -> None:
    """A function: IPython writes its dotted name and signature."""


leaves = st.one_of(st.integers(), st.text(max_size=40), st.none(), st.booleans(),
                   st.floats(allow_nan=False),
                   st.sampled_from([int, str, Plain, OrderedDict, ValueError, function, len,
                                    print, Failure("bad", 2), KeyError("k"),
                                    re.compile(r"a\d+"), re.compile(b"x", re.I),
                                    types.SimpleNamespace(a=1, b="two"), Items([1, 2])]),
                   st.builds(Plain), st.builds(object))
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=8), st.lists(inner, max_size=8).map(tuple),
        st.dictionaries(st.text(min_size=1, max_size=12), inner, max_size=6),
        st.frozensets(st.integers(), max_size=12), st.sets(st.text(max_size=10), max_size=8),
        st.dictionaries(st.text(min_size=1, max_size=12), st.integers(), max_size=12).map(
            Counter),
        st.dictionaries(st.text(max_size=8), inner, max_size=6).map(
            lambda d: defaultdict(list, d)),
        st.dictionaries(st.text(max_size=8), inner, max_size=6).map(OrderedDict),
        st.lists(inner, max_size=8).map(deque), st.lists(inner, max_size=8).map(UserList),
    ),
    max_leaves=30,
)


def ipython(value: Any) -> str:
    return str(ipython_pretty.pretty(value, max_width=79, max_seq_length=1000))


@settings(max_examples=examples(1.5))
@given(values)
def test_the_text_is_ipythons(value: Any) -> None:
    assert pretty(value) == ipython(value)


@pytest.mark.parametrize("value", [
    list(range(1500)), (1,), [(1,)] * 40, frozenset(range(-40, 0)), {"a": list(range(40))},
    set(range(30)),
    [list(range(12)) for _ in range(4)], {"k" * 40: "v" * 40, "x": {"y": list(range(30))}},
    Plain(), [Plain(), Plain()], int, [int, Plain, OrderedDict], {"type": Plain},
    Counter({str(i) * 4: i for i in range(12)}), Counter(), OrderedDict(), deque(maxlen=3),
    deque(range(40), maxlen=50), defaultdict(list, {"k" * 30: list(range(20))}), function,
    print, len, Failure("x" * 90), types.SimpleNamespace(a=list(range(30)), b=2),
    re.compile("a", re.I | re.M), [function] * 3, {Failure: Failure("why")},
])
def test_known_shapes(value: Any) -> None:
    assert pretty(value) == ipython(value)


def test_cycles_are_written_as_ipython_writes_them() -> None:
    nested: list[Any] = [1]
    nested.append(nested)
    mapping: dict[str, Any] = {}
    mapping["self"] = mapping
    assert pretty(nested) == ipython(nested)
    assert pretty(mapping) == ipython(mapping)


def test_an_object_printing_itself_needs_ipython() -> None:
    from pyrelune.worker.pretty import NeedsIPython

    class Own:
        def _repr_pretty_(self, p: Any, cycle: bool) -> None:
            p.text("own")

    with pytest.raises(NeedsIPython):
        pretty([Own()])
