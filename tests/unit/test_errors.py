"""One hierarchy of errors, as `PyreluneError`'s docstring draws it."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pyrelune
from pyrelune import PyreluneError

PACKAGE = Path(pyrelune.__file__).parent
#: Exceptions that are not errors (see the docstring's last paragraph).
NOT_ERRORS = {"modes.lines.Terminated", "modes.lines.HostGone", "worker.pretty.NeedsIPython"}


def drawn() -> list[str]:
    """The classes the tree names, as `module.Class` below pyrelune."""
    doc = PyreluneError.__doc__ or ""
    return re.findall(r"[├└]── ([\w.]+)", doc)


def defined() -> set[str]:
    """Every class of the package that derives from an exception by name (as the source says)."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.parse(path.read_text()).body:
            bases = {getattr(base, "id", getattr(base, "attr", "")) for base in
                     getattr(node, "bases", ())}
            if isinstance(node, ast.ClassDef) and any(
                    name.endswith(("Exception", "Error")) for name in bases):
                found.add(f"{module}.{node.name}".lstrip("."))
    return found


def test_every_class_the_tree_draws_is_a_pyrelune_error() -> None:
    for name in drawn():
        module, _, cls = name.rpartition(".")
        found = getattr(importlib.import_module(f"pyrelune.{module}".rstrip(".")), cls)
        assert issubclass(found, PyreluneError), name


def test_the_tree_draws_every_error_of_the_package() -> None:
    assert sorted(defined() - NOT_ERRORS - {"PyreluneError"}) == sorted(drawn())


def test_an_error_that_was_a_value_error_still_is_one() -> None:
    from pyrelune.settings import SettingError
    from pyrelune.vix.descriptor import InvalidDescriptor

    assert issubclass(SettingError, ValueError) and issubclass(InvalidDescriptor, ValueError)
