"""`%who`, `%whos`, `%who_ls`: what the cell's namespace holds, in IPython's words.

The names listed are the user's: none that starts with `_`, in sorted
order, optionally only those whose type's name is among the arguments
(`%who int function`). The texts are IPython's, column for column.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Types whose `%whos` line gives their length rather than their text.
_SEQUENCES = ("dict", "list", "tuple")
_KIB, _MIB = 1024, 1024 * 1024


def who_ls(namespace: dict[str, Any], line: str) -> list[str]:
    """The user's names, sorted; only those of the types named in `line`, if any."""
    names = [name for name in namespace if not name.startswith("_")]
    kinds = set(line.split())
    if kinds:
        names = [name for name in names if type(namespace[name]).__name__ in kinds]
    return sorted(names)


def who(namespace: dict[str, Any], line: str) -> None:
    """`%who`: the names, nine a line, each followed by a tab, as IPython prints them."""
    names = who_ls(namespace, line)
    if not names:
        print(_nothing(line))
        return
    for count, name in enumerate(names, 1):
        print(f"{name}\t", end=" ")
        if count % 9 == 0:
            print()
    print()


def whos(namespace: dict[str, Any], line: str) -> None:
    """`%whos`: a table of each name, its type's name and a short account of its value."""
    names = who_ls(namespace, line)
    if not names:
        print(_nothing(line))
        return
    values = [namespace[name] for name in names]
    kinds = [type(value).__name__ for value in values]
    name_width = max(*map(len, names), len("Variable")) + 3
    kind_width = max(*map(len, kinds), len("Type")) + 3
    print(f"{'Variable'.ljust(name_width)}{'Type'.ljust(kind_width)} Data/Info")
    print("-" * (name_width + kind_width + len("Data/Info") + 1))
    for name, value, kind in zip(names, values, kinds, strict=True):
        print(f"{name:<{name_width}}{kind:<{kind_width}}", end=" ")
        print(_info(value, kind))


def _nothing(line: str) -> str:
    return "No variables match your requested type." if line.strip() else (
        "Interactive namespace is empty.")


def _info(value: Any, kind: str) -> str:
    if kind in _SEQUENCES:
        return f"n={len(value)}"
    numpy = sys.modules.get("numpy")
    if numpy is not None and type(value) is numpy.ndarray:
        shape = str(value.shape).replace(",", "").replace(" ", "x")[1:-1]
        size = value.size * value.itemsize
        text = f"{shape}: {value.size} elems, type `{value.dtype}`, {size} bytes"
        if size < 100000:
            return text
        return f"{text} ({size / _KIB} kb)" if size < _MIB else f"{text} ({size / _MIB} Mb)"
    if kind in ("DataFrame", "Series"):
        try:
            return f"Shape: {value.shape}"
        except Exception:
            pass
    try:
        text = str(value)
    except Exception:
        text = f"<object with id {id(value)} (str() failed)>"
    text = text.replace("\n", "\\n")
    return text if len(text) < 50 else f"{text[:25]}<...>{text[-25:]}"
