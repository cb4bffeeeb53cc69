"""The runtime's side of the import system it shares with user code in a worker.

Hooks run a function right after a module is first imported (or right
before its code runs), at no cost to other imports. The worker imports as
little as it can up front, yet some modules need a word from pyrelune the
moment a cell (or a library) imports them: IPython's `display` is replaced
by ours, pandas learns it shows its frames in a notebook, `linecache` learns the
cells' sources so that warnings and tracebacks printed by user code quote
them. A meta path finder answers only for the watched names and lets the
real finder load the module; its loader is wrapped so that the callbacks run
right after the module's code, before anything else can use it. Other
imports cost one dictionary lookup.

The runtime's own late imports (`traceback` to report an error, say) look
only where the runtime did at start-up: a cell's folder, first on sys.path
as a script's is, may hold a `select.py` or a `tokenize.py` of its own.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any

_callbacks: dict[str, list[Callable[[ModuleType], None]]] = {}
_before: dict[str, list[Callable[[ModuleType], None]]] = {}  # run before the module's code
#: sys.path before any cell's folder or a cell's own change: where `import_own` looks.
_RUNTIME_PATH = list(sys.path)


def import_own(name: str) -> ModuleType:
    """The module `name` for the runtime's own use, as its start-up sys.path finds it.

    A module already imported is taken as it is (the cell may have imported
    one of its own under that name: the caller must cope). While the import
    runs, the cell's other threads see the runtime's sys.path too.
    """
    module = sys.modules.get(name)
    if module is not None:
        return module
    cells_path, sys.path = sys.path, list(_RUNTIME_PATH)
    try:
        __import__(name)
    finally:
        sys.path = cells_path
    return sys.modules[name]


def after_import(name: str, callback: Callable[[ModuleType], None]) -> None:
    """Call `callback(module)` once `name` is imported: now, if it already is."""
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    _wait(_callbacks, name, callback)


def before_import(name: str, callback: Callable[[ModuleType], None]) -> None:
    """Call `callback(module)` when `name` is imported, before its code runs; never if it was."""
    if name not in sys.modules:
        _wait(_before, name, callback)


def _wait(table: dict[str, list[Callable[[ModuleType], None]]], name: str,
          callback: Callable[[ModuleType], None]) -> None:
    waiting = table.setdefault(name, [])
    if callback not in waiting:
        waiting.append(callback)
    if not any(isinstance(finder, _Watch) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Watch())


class _Watch:
    """The meta path finder that wraps the loader of each watched module."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in _callbacks and fullname not in _before:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec: ModuleSpec | None = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _Loader(spec.loader)  # type: ignore[assignment]
                return spec
        return None


class _Loader:
    """Runs a module with its own loader, then the callbacks waiting for it."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        for callback in _before.pop(module.__name__, []):
            callback(module)
        self._loader.exec_module(module)
        for callback in _callbacks.pop(module.__name__, []):
            callback(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_resource_reader, ...
        return getattr(self._loader, name)
