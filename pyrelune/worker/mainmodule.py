"""The cells' `__main__`: a real module, kept as IPython keeps a notebook's.

`pickle` finds a function or class by its module and name, and a cell's say
`__main__`: so that pickling them works (and with it `multiprocessing`,
`concurrent.futures` and joblib), the cells run in the very dictionary of
the module `sys.modules["__main__"]` holds. The final expression's value goes
into `_` (and the one before into `__`, then `___`) until the user makes one
of them theirs or `gettext.install()` makes `_` a builtin, as in IPython.
"""

from __future__ import annotations

import builtins
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType
    from typing import Any

#: Nothing stored yet: unlike None or "", never a value of the user's.
_NOTHING: Any = object()
#: What this worker last put in `_`, `__` and `___`.
_kept: list[Any] = [_NOTHING] * 3
#: Where `drop` leaves what it drops, for the moment it takes.
_DROPPED = "__pyrelune_dropped__"
#: Compiled on first use: a process's first compile() costs milliseconds, paid
#: by the cell's own compile before any drop.
_drop_code: CodeType | None = None
#: Types whose end runs no code (`object`: `_NOTHING`), so nothing to drop as the cell.
_QUIET = frozenset({int, float, complex, bool, str, bytes, type(None), object})


def fresh_namespace() -> dict[str, Any]:
    """A new, empty `__main__` module, from now on `sys.modules["__main__"]`; its globals."""
    module = type(sys)("__main__")
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = module
    _kept[:] = [_NOTHING] * 3
    return module.__dict__


def begin_cell(namespace: dict[str, Any]) -> None:
    """What IPython clears before each cell.

    The cells share one module and their line numbers overlap: a warning
    seen at line 1 of one cell would be hidden at line 1 of every later one.
    A `_` that `gettext.install()` made a builtin is not hidden by a result.
    """
    namespace.pop("__warningregistry__", None)
    if "_" in builtins.__dict__ and "_" in namespace and namespace["_"] is _kept[0]:
        del namespace["_"]


def keep_result(namespace: dict[str, Any], value: Any) -> list[Any]:
    """Keep `value` in `_`, moving `_` to `__` and `__` to `___`, unless they are the user's.

    They are once the user assigned one of them, or `_` is a builtin. Returns
    what this let go of (`value` itself, or what `___` held), for the caller
    to drop as the cell (see `drop`).
    """
    get = namespace.get
    kept, older, oldest = _kept
    if (
        "_" in builtins.__dict__
        or get("_", kept) is not kept
        or get("__", older) is not older
        or get("___", oldest) is not oldest
    ):
        return [value]  # the user's: nothing kept
    _kept[:] = value, kept, older
    namespace["_"] = value
    if kept is not _NOTHING:
        namespace["__"] = kept
    if older is not _NOTHING:
        namespace["___"] = older
    return [oldest]


def drop(references: list[Any], namespace: dict[str, Any], filename: str, source: str) -> None:
    """Let go of `references` while a frame of the cell's runs, at its last line.

    A warning raised as an object ends (a coroutine never awaited, a file
    never closed) is located in the frame running then: a frame of the cell
    here, so it names the cell, and meets the filters and registry of the
    cell's own warnings (module `__main__`), not the runtime's.
    """
    if _QUIET.issuperset(map(type, references)):
        return  # nothing there can warn as it ends
    global _drop_code
    if _drop_code is None:
        _drop_code = compile(f"{_DROPPED}.clear()", "<cell>", "exec")
    namespace[_DROPPED] = references
    try:
        line = source.rstrip().count("\n") + 1
        exec(_drop_code.replace(co_filename=filename, co_firstlineno=line), namespace)
    finally:
        namespace.pop(_DROPPED, None)
