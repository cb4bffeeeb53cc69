"""docs/internals.md's map names every module under pyrelune/ and none that is gone, and
every file path the docs name (`supervisor/link.py`) is a file of the repository.

Read from the filesystem and the doc alone, so that a module added, moved or removed
fails here until the map says so, and the message says which line to add or remove.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
PACKAGE = REPO / "pyrelune"
DOC = REPO / "docs" / "internals.md"
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: The map is the first code block of this section.
SECTION = "## Layout\n"
#: A folder's line in the map: `pyrelune/` or `pyrelune/<folder>/`, at the start of the line.
FOLDER = re.compile(r"(pyrelune/(?:\w+/)*)(?:\s|$)")
#: A module's line in the map: two spaces, its file's name, then its job.
MODULE = re.compile(r"  (\w+\.py)(?:\s|$)")
#: A file path in prose or code: at least one folder, then a Python file's name.
PATH = re.compile(r"(?<![\w./*-])((?:[\w.-]+/)+\w+\.py)\b")


def holds_code(path: Path) -> bool:
    """Whether a module has more than its docstring and `from __future__` imports."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return any(not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
               for node in body)


def modules() -> set[str]:
    """Every module the map must name, by its path from the repository: each file, and a
    package's `__init__.py` where it holds code."""
    return {path.relative_to(REPO).as_posix() for path in PACKAGE.rglob("*.py")
            if path.name != "__init__.py" or holds_code(path)}


def the_map(text: str) -> str:
    """The map's code block in `text` (docs/internals.md)."""
    assert SECTION in text, f"docs/internals.md has no {SECTION.strip()!r} section"
    section = text.split(SECTION, 1)[1]
    assert "```\n" in section, "the Layout section has no code block (the map)"
    return section.split("```\n", 1)[1].split("```", 1)[0]


def named(block: str) -> list[str]:
    """The modules a map names, by their paths from the repository, in its order.

    A line that starts with a folder of the package opens it; each line under it that
    starts with two spaces and a file's name names that file in it. Any other line at
    the start of a line (`bench/`, `tests/`) closes it.
    """
    folder: str | None = None
    paths = []
    for line in block.splitlines():
        if not line.startswith(" "):
            opened = FOLDER.match(line)
            folder = opened.group(1) if opened else None
        elif folder is not None and (module := MODULE.match(line)) is not None:
            paths.append(folder + module.group(1))
    return paths


def mapped() -> list[str]:
    return named(the_map(DOC.read_text(encoding="utf-8")))


def test_the_map_is_read_by_its_rule() -> None:
    block = ("pyrelune/                    the command\n"
             "  __main__.py                the `pyrelune` command: no arguments ->\n"
             "                             oneshot, else cli/app.py\n"
             "pyrelune/worker/ipyshell/    IPython's shell\n"
             "  shell.py                   the shell\n"
             "bench/oneshot.py             start-up\n"
             "  stray.py                   under no folder of the package\n")
    assert named(block) == ["pyrelune/__main__.py", "pyrelune/worker/ipyshell/shell.py"]


def test_a_package_without_code_needs_no_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.py"
    empty.write_text('"""Only a docstring."""\n\nfrom __future__ import annotations\n')
    full = tmp_path / "full.py"
    full.write_text('"""A docstring."""\n\nclass Error(Exception):\n    pass\n')
    assert not holds_code(empty)
    assert holds_code(full)


def test_the_map_names_every_module() -> None:
    missing = sorted(modules() - set(mapped()))
    lines = [f"  add `  {Path(path).name}  <its one job>` under `{Path(path).parent.as_posix()}/`"
             for path in missing]
    assert not missing, "docs/internals.md's map does not name these modules:\n" + "\n".join(
        lines)


def test_the_map_names_no_module_that_is_gone() -> None:
    gone = [path for path in mapped() if not (REPO / path).is_file()]
    lines = [f"  remove the line of `{Path(path).name}` under `{Path(path).parent.as_posix()}/`"
             for path in gone]
    assert not gone, "docs/internals.md's map names modules that do not exist:\n" + "\n".join(
        lines)


def test_the_map_names_each_module_once() -> None:
    paths = mapped()
    twice = sorted({path for path in paths if paths.count(path) > 1})
    assert not twice, f"docs/internals.md's map names these modules more than once: {twice}"


def python_files() -> list[str]:
    """The repository's Python files, by their paths from it (hidden folders left out)."""
    return [path.relative_to(REPO).as_posix() for path in REPO.rglob("*.py")
            if not any(part.startswith(".") for part in path.relative_to(REPO).parts)]


def test_every_path_the_docs_name_is_a_file() -> None:
    files = python_files()
    # A path is named from the repository (`bench/oneshot.py`), from the package
    # (`supervisor/link.py`) or from a folder the sentence is about (`ipyshell/answers.py`).
    wrong = [f"  {page.relative_to(REPO).as_posix()}: `{path}`"
             for page in PAGES
             for path in sorted(set(PATH.findall(page.read_text(encoding="utf-8"))))
             if not any(file == path or file.endswith("/" + path) for file in files)]
    assert not wrong, ("these paths name no file of the repository: correct them or take "
                       "them out\n" + "\n".join(wrong))
