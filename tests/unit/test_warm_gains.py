"""Which cells the launcher hands to the warm process: those that may use a preloaded module.

A cell that imports nothing beyond the standard library is faster cold.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pyrelune.warm import reach
from pyrelune.warm.gate import DEFAULT_PRELOAD, gains


@pytest.fixture(autouse=True)
def no_published_plain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A runtime folder of the test's own: what a warm process of an earlier test in this
    session published as gaining nothing (requests, yaml) is not read here."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))


@pytest.mark.parametrize("source", [
    "import seaborn",
    "import os, requests",
    "import json as j, yaml",
    "from mypackage.tools import clean",
    "from . import sibling",
    "x = 1\\nif x: import mymodule",
    "try:\\n\\timport polars\\nexcept ImportError: pass",
    "__import__('json')",
    "import importlib; importlib.import_module('sea' + 'born')",
    "%pylab inline",
    "%run script.py",
    "df = pandas",
    "numpy.zeros(3)",
    "matplotlib",
])
def test_a_cell_that_may_import_a_preloaded_module_gains(source: str) -> None:
    assert gains(f'{{"source": "{source}"}}'.encode(), DEFAULT_PRELOAD)


@pytest.mark.parametrize("source", [
    "print(2 + 3)", "x = 1\\nx + 1", "", "raise ValueError",
    "import math\\nmath.pi", "import os.path as p, json", "from collections import Counter",
    "from __future__ import annotations\\r\\nimport typing; import re as regex",
])
def test_a_cell_that_imports_only_the_stdlib_and_names_none_does_not(source: str) -> None:
    assert not gains(f'{{"source": "{source}"}}'.encode(), DEFAULT_PRELOAD)


def test_the_names_are_those_preloaded_top_level_ones() -> None:
    assert gains(b'{"source": "scipy.linalg"}', "scipy.linalg,numpy")
    assert not gains(b'{"source": "pandas"}', "numpy")
    assert not gains(b'{"source": "x"}', "")


@pytest.mark.parametrize(("source", "expected"), [
    ("import pygments", False), ("import pygments as p, json", False),
    ("from pygments.lexers import PythonLexer", False),
    ("import pygments, seaborn", True), ("import mymodule", True)])
def test_a_cell_that_imports_only_modules_that_gain_nothing_does_not(
        source: str, expected: bool) -> None:
    raw = f'{{"source": "{source}"}}'.encode()
    assert gains(raw, DEFAULT_PRELOAD, plain=frozenset({b"pygments", b"attr"})) is expected


def test_what_gains_nothing_is_what_neither_is_loaded_nor_requires_what_is() -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("pygments")
    plain = reach.plain_modules(["numpy", "numpy.random", "colorsys"])
    assert "pygments" in plain
    assert "pandas" not in plain  # it requires numpy
    assert "numpy" not in plain  # loaded
    assert "pygments" not in reach.plain_modules(["pygments"])
