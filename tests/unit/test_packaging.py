"""pyproject.toml names every package of the tree, and only those.

setuptools installs only the packages listed, and CI installs the wheel (not
an editable checkout): a folder left out of the list would be missing from
every installation while each test run from the checkout still found it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def test_the_package_list_is_the_tree() -> None:
    tomllib = pytest.importorskip("tomllib")  # 3.11 on; the list is the same on every version
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    moved = setuptools["package-dir"]  # those that live elsewhere: schemas/ (linked into the tree)
    tree = {".".join(folder.relative_to(ROOT).parts)
            for folder in [ROOT / "pyrelune", *(ROOT / "pyrelune").rglob("*")]
            if folder.is_dir() and not folder.is_symlink() and any(folder.glob("*.py"))}
    assert listed - set(moved) == tree
    assert all((ROOT / folder).is_dir() for folder in moved.values())
