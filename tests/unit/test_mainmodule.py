"""The cells' `__main__` on plain values: the module, `_` and its neighbours, drops as the cell."""

from __future__ import annotations

import builtins
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from pyrelune.worker.mainmodule import begin_cell, drop, fresh_namespace, keep_result


@pytest.fixture
def namespace() -> Iterator[dict[str, Any]]:
    """A fresh cells' module; pytest's own `__main__` is put back after."""
    main = sys.modules["__main__"]
    try:
        yield fresh_namespace()
    finally:
        sys.modules["__main__"] = main


def test_the_namespace_is_the_main_modules(namespace: dict[str, Any]) -> None:
    assert sys.modules["__main__"].__dict__ is namespace
    assert namespace["__name__"] == "__main__" and namespace["__builtins__"] is builtins
    again = fresh_namespace()
    assert again is not namespace and sys.modules["__main__"].__dict__ is again


def test_results_move_down_the_underscores(namespace: dict[str, Any]) -> None:
    for value in (1, 2, 3, 4):
        keep_result(namespace, value)
    assert (namespace["_"], namespace["__"], namespace["___"]) == (4, 3, 2)


def test_an_underscore_the_user_assigned_stops_them(namespace: dict[str, Any]) -> None:
    keep_result(namespace, 1)
    namespace["__"] = "mine"
    assert keep_result(namespace, 2) == [2]
    assert (namespace["_"], namespace["__"]) == (1, "mine")
    del namespace["__"]
    keep_result(namespace, 3)
    assert (namespace["_"], namespace["__"]) == (3, 1)


def test_none_assigned_is_the_users_too(namespace: dict[str, Any]) -> None:
    namespace["_"] = None
    keep_result(namespace, 5)
    assert namespace["_"] is None


def test_a_builtin_underscore_is_left_visible(namespace: dict[str, Any]) -> None:
    keep_result(namespace, 1)
    builtins._ = str  # type: ignore[attr-defined]  # what gettext.install() does
    try:
        begin_cell(namespace)
        assert "_" not in namespace
        keep_result(namespace, 2)
        assert "_" not in namespace
    finally:
        del builtins._  # type: ignore[attr-defined]


def test_a_builtin_underscore_before_any_result(namespace: dict[str, Any]) -> None:
    builtins._ = str  # type: ignore[attr-defined]
    try:
        begin_cell(namespace)
        assert keep_result(namespace, 1) == [1] and "_" not in namespace
    finally:
        del builtins._  # type: ignore[attr-defined]


def test_a_reset_forgets_the_results(namespace: dict[str, Any]) -> None:
    keep_result(namespace, 1)
    fresh = fresh_namespace()
    keep_result(fresh, 2)
    assert (fresh["_"], "__" in fresh) == (2, False)


def test_the_warning_registry_is_cleared_before_each_cell(namespace: dict[str, Any]) -> None:
    namespace["__warningregistry__"] = {"version": 0}
    begin_cell(namespace)
    assert "__warningregistry__" not in namespace


class Warns:
    def __del__(self) -> None:
        warnings.warn("ended", RuntimeWarning, stacklevel=2)


def test_what_is_dropped_warns_as_the_cell(namespace: dict[str, Any]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        drop([Warns()], namespace, "<cell 9>", "a = 1\n\nWarns()\n")
    assert [(w.filename, w.lineno, str(w.message)) for w in caught] == [("<cell 9>", 3, "ended")]
    assert "__pyrelune_dropped__" not in namespace
