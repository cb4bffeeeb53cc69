"""Which cells the launcher hands to the warm process: those that may use a preloaded module."""

from __future__ import annotations

import pytest

from pyrelune.cli.entry import DEFAULT_PRELOAD, gains


@pytest.mark.parametrize("source", [
    "import os",
    "from collections import Counter",
    "__import__('json')",
    "import importlib; importlib.import_module('sea' + 'born')",
    "%pylab inline",
    "%run script.py",
    "df = pandas",
    "numpy.zeros(3)",
    "matplotlib",
])
def test_a_cell_that_imports_or_names_a_preloaded_module_gains(source: str) -> None:
    assert gains(f'{{"source": "{source}"}}'.encode(), DEFAULT_PRELOAD)


@pytest.mark.parametrize("source", ["print(2 + 3)", "x = 1\\nx + 1", "", "raise ValueError"])
def test_a_cell_that_neither_imports_nor_names_one_does_not(source: str) -> None:
    assert not gains(f'{{"source": "{source}"}}'.encode(), DEFAULT_PRELOAD)


def test_the_names_are_those_preloaded_top_level_ones() -> None:
    assert gains(b'{"source": "scipy.linalg"}', "scipy.linalg,numpy")
    assert not gains(b'{"source": "pandas"}', "numpy")
    assert not gains(b'{"source": "x"}', "")
