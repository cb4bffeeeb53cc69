"""The import graph keeps the two processes apart, as the folders say, and has no circles.

`pyrelune/worker/` runs only in the forked worker; everything else runs in
the supervisor too. A supervisor-side module that imported worker code would
load it (and its state) into the runtime's own process, where a cell's
`sys.path` does not apply: only fork targets, which run in the child, may.

Within the supervisor side, the layers of the flow depend one way: a
protocol codec is sans-I/O, so it imports no transport (the mode joins the
two); and each mode is a driver of its own, so it imports no other mode
(what two share lives below them: a transport, a codec, the `modes` package).

A circle of imports (at the top or in a function: either may run first) makes
a module's names depend on which of the circle was imported first, and ties
layers together that should depend one way: none is allowed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
from pathlib import Path

import pytest

import pyrelune

PACKAGE = Path(pyrelune.__file__).parent
#: Functions that run in the child only, after the fork (or, for the package's
#: `__getattr__`, in whatever process a cell asks for `pyrelune.display`).
FORK_TARGETS = {
    ("supervisor/kernel.py", "_serve"),
    ("modes/oneshot.py", "work"),
    ("warm/ahead.py", "_wait"),  # the worker forked ahead of its cell
    ("__init__.py", "__getattr__"),
}
#: The warm process imports the worker's modules on purpose, before it serves any
#: cell: with the runtime's sys.path, so that the workers forked from it have them.
PRELOADS = {("warm/server.py", "preload_modules")}


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, package: str, modules: Collection[str] = (),
             typing: bool = False) -> list[tuple[str, str | None]]:
    """(imported module, enclosing function or None) for every run-time import.

    `from x import y` gives x.y and x; with `modules` (the package's), only the
    module it loads: x.y if that is one, else x. With `typing`, the imports
    for type checking only (`if TYPE_CHECKING:`) too.
    """
    found: list[tuple[str, str | None]] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if (isinstance(child, ast.If) and not typing
                    and getattr(child.test, "id", "") == "TYPE_CHECKING"):
                for other in child.orelse:
                    visit(other, function)
                continue  # typing only: never imported at run time
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
                continue
            if isinstance(child, ast.Import):
                found.extend((alias.name, function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - child.level + 1]
                                    + ([base] if base else []))
                names = [f"{base}.{alias.name}" for alias in child.names]
                if modules:
                    found.extend((name if name in modules else base, function) for name in names)
                else:
                    found.extend((name, function) for name in names)
                    found.append((base, function))
            visit(child, function)

    visit(tree, None)
    return found


def _graph(resolved: bool = False, typing: bool = False
           ) -> dict[str, list[tuple[str, str | None]]]:
    """Each module's imports (`_imports`, with `typing`); `resolved`: each to the module
    it loads."""
    paths = {_module(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = _imports(ast.parse(path.read_text()), package,
                               paths.keys() if resolved else (), typing)
    return graph


def _is_worker(module: str) -> bool:
    return module == "pyrelune.worker" or module.startswith("pyrelune.worker.")


def _relative(module: str) -> str:
    path = module.removeprefix("pyrelune").lstrip(".").replace(".", "/")
    return f"{path}.py" if (PACKAGE / f"{path}.py").exists() else f"{path}/__init__.py".lstrip("/")


def test_the_supervisor_side_imports_worker_code_only_in_fork_targets() -> None:
    offences = [
        f"{module} imports {imported}" + (f" in {function}()" if function else " at the top")
        for module, imports in _graph().items() if not _is_worker(module)
        for imported, function in imports
        if _is_worker(imported) and (_relative(module), function) not in FORK_TARGETS | PRELOADS
    ]
    assert offences == []


def test_nothing_the_supervisor_loads_at_import_reaches_worker_code() -> None:
    """Transitively, through every module-level import of every supervisor-side module."""
    graph = _graph()
    top = {module: {i for i, function in imports if function is None and i in graph}
           for module, imports in graph.items()}
    for start in (m for m in graph if not _is_worker(m)):
        seen, todo = {start}, [start]
        while todo:
            for imported in top[todo.pop()] - seen:
                assert not _is_worker(imported), f"{start} loads {imported}"
                seen.add(imported)
                todo.append(imported)


def test_the_wire_is_shared_and_depends_on_neither_side() -> None:
    for module, imports in _graph().items():
        if module.startswith("pyrelune.wire"):
            sides = [i for i, _ in imports
                     if i.startswith(("pyrelune.worker", "pyrelune.supervisor"))]
            assert sides == [], f"{module} imports {sides}"


def test_transports_are_the_hosts_edge_only() -> None:
    """What the supervisor and its worker share of their pipes is the wire's, not a transport's."""
    offences = [f"{module} imports {imported}" for module, imports in _graph().items()
                if module.startswith(("pyrelune.worker", "pyrelune.supervisor", "pyrelune.wire"))
                for imported, _ in imports if imported.startswith("pyrelune.transports")]
    assert offences == []


def _layer_offences(graph: dict[str, list[tuple[str, str | None]]]) -> list[str]:
    """Each import of a transport by a codec, and of a mode by another mode, said."""
    offences = []
    for module, imports in graph.items():
        for imported, function in imports:
            codec_to_transport = (module.startswith("pyrelune.protocols.")
                                  and imported.startswith("pyrelune.transports"))
            mode_to_mode = (module.startswith("pyrelune.modes.")
                            and imported.startswith("pyrelune.modes.") and imported != module)
            if codec_to_transport or mode_to_mode:
                where = f" in {function}()" if function else " at the top"
                offences.append(f"{module} imports {imported}{where}")
    return offences


def test_codecs_import_no_transport_and_modes_no_other_mode() -> None:
    """At the top, in functions, and for type checking only."""
    assert _layer_offences(_graph(resolved=True, typing=True)) == []


def test_the_layer_check_sees_each_kind_of_import() -> None:
    modules = {"pyrelune.modes", "pyrelune.modes.rpc", "pyrelune.modes.jupyter",
               "pyrelune.transports.stdio", "pyrelune.protocols.vixnote"}
    mode = ast.parse("from pyrelune.modes import ConfigError\n"  # the package: shared
                     "def check():\n    from .rpc import is_loopback\n")
    codec = ast.parse("if TYPE_CHECKING:\n    from pyrelune.transports import stdio\n")
    graph = {"pyrelune.modes.jupyter": _imports(mode, "pyrelune.modes", modules),
             "pyrelune.protocols.vixnote": _imports(codec, "pyrelune.protocols", modules,
                                                    typing=True)}
    assert _layer_offences(graph) == [
        "pyrelune.modes.jupyter imports pyrelune.modes.rpc in check()",
        "pyrelune.protocols.vixnote imports pyrelune.transports.stdio at the top",
    ]


def test_the_check_sees_a_forbidden_import() -> None:
    """The walk above finds imports at the top, in functions, and relative ones."""
    tree = ast.parse("from pyrelune.worker import cell\n"
                     "def f():\n    from .display import display\n"
                     "if TYPE_CHECKING:\n    import pyrelune.worker.runtime\n")
    assert _imports(tree, "pyrelune.worker") == [
        ("pyrelune.worker.cell", None), ("pyrelune.worker", None),
        ("pyrelune.worker.display.display", "f"), ("pyrelune.worker.display", "f"),
    ]


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The modules of each circle (a strongly connected group of two or more), sorted."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for imported in sorted(edges[module]):
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            group = stack[stack.index(module):]
            del stack[stack.index(module):]
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(edges):
        if module not in order:
            visit(module)
    return sorted(found)


def _import_edges(typing: bool = False) -> dict[str, set[str]]:
    """Every import, in functions too (with `typing`, for type checking too), and every
    module named in a string (`import_own("pyrelune...")`: a module imported when first
    used)."""
    graph = _graph(resolved=True, typing=typing)
    edges = {module: {i for i, _ in imports} for module, imports in graph.items()}
    for path in PACKAGE.rglob("*.py"):
        edges[_module(path)] |= set(re.findall(r"\"(pyrelune(?:\.\w+)+)\"", path.read_text()))
    return {module: {i for i in imported if i in graph and i != module}
            for module, imported in edges.items()}


@pytest.mark.parametrize("typing", [False, True], ids=["run time", "type checking too"])
def test_no_module_imports_itself_back_through_others(typing: bool) -> None:
    """Not even through imports for type checking only: two modules that name each
    other's types belong in one, or the type in a third. But a package may name its own
    submodules' types (`wire.WorkerFds.ring` is a `wire.ring.OutputRing`): a submodule
    always loads its package first, so that tie is Python's."""
    edges = _import_edges(typing)
    if typing:
        run_time = _import_edges()
        edges = {module: {i for i in imported
                          if i in run_time[module] or not i.startswith(f"{module}.")}
                 for module, imported in edges.items()}
    circles = _circles(edges)
    described = [" ; ".join(f"{m} -> {', '.join(sorted(edges[m] & set(c)))}" for m in c)
                 for c in circles]
    assert described == [], "import circles:\n" + "\n".join(described)


def test_the_circle_check_finds_a_circle_through_a_function_level_import() -> None:
    tree = ast.parse("import pyrelune.b\n")
    late = ast.parse("def f():\n    from pyrelune import a\n")
    modules = {"pyrelune.a", "pyrelune.b", "pyrelune.c"}
    edges = {"pyrelune.a": {i for i, _ in _imports(tree, "pyrelune", modules)},
             "pyrelune.b": {i for i, _ in _imports(late, "pyrelune", modules)},
             "pyrelune.c": {"pyrelune.a"}}
    assert _circles(edges) == [["pyrelune.a", "pyrelune.b"]]
