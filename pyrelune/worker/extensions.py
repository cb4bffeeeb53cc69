"""`%load_ext`, `%reload_ext`, `%unload_ext`: IPython extensions, loaded without IPython's shell.

An extension is a module with `load_ipython_extension(ip)`. pyrelune calls
it with a `Shell` that offers what extensions commonly use of IPython's:
`register_magic_function`, `register_magics` (a `Magics` class or
instance), `magics_manager.register`, `user_ns`, `push`, `run_line_magic`,
`run_cell_magic`, `ev`, `ex`. Anything else it asks for (IPython's events,
its formatters, its configuration) is a UsageError that names it.
The magics it registers are run as pyrelune's own (see `magics`).
`autoreload` is accepted as it always was: each cell imports what it
imports.
"""

from __future__ import annotations

import sys

from pyrelune.worker.magicbase import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType, ModuleType
    from typing import Any

#: Magics registered by extensions, by kind ("line", "cell") and name.
registered: dict[str, dict[str, Callable[..., Any]]] = {"line": {}, "cell": {}}
_loaded: dict[str, ModuleType] = {}
#: What IPython's own classes look for with `hasattr` (a Magics' configuration).
_PROBED = frozenset({"config", "parent"})
#: Accepted without loading anything (it needs IPython's shell, and a cell imports anew).
_ACCEPTED = ("autoreload", "IPython.extensions.autoreload")


def load(line: str, frame: FrameType, magics: ModuleType) -> Any:
    """`%load_ext name`: import the module and call its `load_ipython_extension`.

    `magics` is the module whose tables ran this: the extension's shell runs
    magics through it (given, not imported: `magics` imports this module).
    """
    for name in line.split():
        if name in _ACCEPTED or name in _loaded:
            continue
        module = _imported(name)
        _call(module, "load_ipython_extension", name, frame, magics)
        _loaded[name] = module
    return None


def unload(line: str, frame: FrameType, magics: ModuleType) -> None:
    """`%unload_ext name`: its `unload_ipython_extension`, if it has one."""
    for name in line.split():
        module = _loaded.pop(name, None)
        if module is not None and hasattr(module, "unload_ipython_extension"):
            _call(module, "unload_ipython_extension", name, frame, magics)


def reload(line: str, frame: FrameType, magics: ModuleType) -> None:
    """`%reload_ext name`: unloaded, its module reloaded, loaded again."""
    import importlib

    for name in line.split():
        if name in _ACCEPTED:
            continue
        if name in _loaded:
            unload(name, frame, magics)
            importlib.reload(sys.modules[name])
        load(name, frame, magics)


def _imported(name: str) -> ModuleType:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise UsageError(f"%load_ext {name}: {exc}") from None


def _call(module: ModuleType, function: str, name: str, frame: FrameType,
          magics: ModuleType) -> None:
    entry = getattr(module, function, None)
    if not callable(entry):
        raise UsageError(f"%load_ext {name}: the module has no {function}(ipython) function: "
                         "it is not an IPython extension")
    entry(Shell(frame.f_globals, name, magics))


class Shell:
    """The part of IPython's InteractiveShell that extensions use, over the cell's namespace."""

    def __init__(self, namespace: dict[str, Any], extension: str, magics: ModuleType) -> None:
        self.user_ns = namespace
        self.user_global_ns = namespace
        self._extension = extension
        self._magics = magics
        self.magics_manager = _MagicsManager(self)
        self.configurables: list[Any] = []  # where IPython's Magics put themselves
        self.shell = self

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in _PROBED:
            raise AttributeError(name)
        raise UsageError(f"%load_ext {self._extension}: the extension uses IPython's "
                         f"shell.{name}, which pyrelune does not offer")

    def register_magic_function(self, func: Callable[..., Any], magic_kind: str = "line",
                                magic_name: str | None = None) -> None:
        """A function as a line, cell or line_cell magic, named as it is unless told."""
        _register(magic_kind, magic_name or func.__name__, func, self._extension)

    def register_magics(self, *classes: Any) -> None:
        """Each `Magics` subclass (or instance): its decorated methods become magics."""
        for given in classes:
            instance = given(shell=self) if isinstance(given, type) else given
            table = getattr(instance, "magics", None)
            if not isinstance(table, dict):
                raise UsageError(f"%load_ext {self._extension}: {given!r} is not a Magics "
                                 "class (no magics table)")
            for kind in ("line", "cell"):
                for magic, method in table.get(kind, {}).items():
                    function = method if callable(method) else getattr(instance, method)
                    _register(kind, magic, function, self._extension)

    define_magic = register_magic_function

    def push(self, variables: dict[str, Any] | str, interactive: bool = True) -> None:
        """Names put into the cell's namespace (a dict, or names of the caller's)."""
        if isinstance(variables, str):
            caller = sys._getframe(1)
            variables = {name: eval(name, caller.f_globals, caller.f_locals)
                         for name in variables.replace(",", " ").split()}
        self.user_ns.update(variables)

    def ev(self, expression: str) -> Any:
        return eval(expression, self.user_ns)

    def ex(self, statement: str) -> None:
        exec(statement, self.user_ns)

    def run_line_magic(self, name: str, line: str, _stack_depth: int = 1) -> Any:
        return self._magics.run_line_magic(name, line, sys._getframe(1))

    def run_cell_magic(self, name: str, line: str, cell: str) -> Any:
        return self._magics.run_cell_magic(name, line, cell, sys._getframe(1))


class _MagicsManager:
    def __init__(self, shell: Shell) -> None:
        self._shell = shell

    def register(self, *classes: Any) -> None:
        self._shell.register_magics(*classes)

    def register_function(self, func: Callable[..., Any], magic_kind: str = "line",
                          magic_name: str | None = None) -> None:
        self._shell.register_magic_function(func, magic_kind, magic_name)


def _register(kind: str, name: str, function: Callable[..., Any], extension: str) -> None:
    kinds = ("line", "cell") if kind == "line_cell" else (kind,)
    for each in kinds:
        if each not in registered:
            raise UsageError(f"%load_ext {extension}: unknown magic kind {kind!r}")
        registered[each][name] = function
