"""The import graph keeps the two processes apart, as the folders say.

`pyrelune/worker/` runs only in the forked worker; everything else runs in
the supervisor too. A supervisor-side module that imported worker code would
load it (and its state) into the runtime's own process, where a cell's
`sys.path` does not apply: only fork targets, which run in the child, may.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

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


def _imports(tree: ast.AST, package: str) -> list[tuple[str, str | None]]:
    """(imported module, enclosing function or None) for every run-time import."""
    found: list[tuple[str, str | None]] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", "") == "TYPE_CHECKING":
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
                found.extend((f"{base}.{alias.name}", function) for alias in child.names)
                found.append((base, function))
            visit(child, function)

    visit(tree, None)
    return found


def _graph() -> dict[str, list[tuple[str, str | None]]]:
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = _imports(ast.parse(path.read_text()), package)
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


def _reached(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for imported in graph.get(todo.pop(), set()) - seen:
            seen.add(imported)
            todo.append(imported)
    return seen


def test_no_magic_module_is_in_an_import_circle() -> None:
    """The translator, the magics' table and the modules of magics import one way only.

    Every import counts, in functions too, and every module named in a string
    (`import_own("pyrelune...")`, a magic imported when first used). A
    translated line's call of `magics` is the cell's code, not the runtime's.
    """
    graph = {module: {i for i, _ in imports} for module, imports in _graph().items()}
    for path in PACKAGE.rglob("*.py"):
        graph[_module(path)] |= set(re.findall(r"\"(pyrelune(?:\.\w+)+)\"", path.read_text()))
    magic = [m for m in graph if m.startswith("pyrelune.worker.")
             and ("magic" in m or m.endswith(("ipysyntax", "extensions")))]
    assert "pyrelune.worker.magics" in magic and "pyrelune.worker.ipysyntax" in magic
    assert [m for m in magic if m in _reached(graph, m)] == []


def test_the_check_sees_a_forbidden_import() -> None:
    """The walk above finds imports at the top, in functions, and relative ones."""
    tree = ast.parse("from pyrelune.worker import cell\n"
                     "def f():\n    from .display import display\n"
                     "if TYPE_CHECKING:\n    import pyrelune.worker.runtime\n")
    assert _imports(tree, "pyrelune.worker") == [
        ("pyrelune.worker.cell", None), ("pyrelune.worker", None),
        ("pyrelune.worker.display.display", "f"), ("pyrelune.worker.display", "f"),
    ]
