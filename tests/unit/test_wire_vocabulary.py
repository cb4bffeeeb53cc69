"""One wire vocabulary: each codec stands alone, and each error code is spelled once.

Read from the installed package's source with `ast`, so an import inside a
function or under TYPE_CHECKING counts too, and a code used as a dict key
(a protocol's field name, as rpc's `"interrupted": true`) does not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pyrelune
from pyrelune.wire.events import CODES

PACKAGE = Path(pyrelune.__file__).parent
PROTOCOLS = PACKAGE / "protocols"
#: The codec modules, each of a family named by its prefix: a helper such as
#: vixnote_outputs or vixnote_folders belongs to its codec. Other modules there are shared.
CODECS = {"vixnote", "vixnote_outputs", "vixnote_folders", "lines", "rpc"}
CODE_VALUES = set(CODES)


def imported(tree: ast.Module) -> set[str]:
    """Every module `tree` imports, `from a import b` counted as `a` and `a.b`."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # `from . import x`, `from .x import y`: within protocols/
                base = f"pyrelune.protocols.{base}".rstrip(".")
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("path", sorted(PROTOCOLS.glob("*.py")), ids=lambda p: p.stem)
def test_no_codec_imports_another_or_the_worker(path: Path) -> None:
    own = path.stem.split("_")[0] if path.stem in CODECS else None
    names = imported(ast.parse(path.read_text(encoding="utf-8")))
    codecs = {name.split(".")[2] for name in names
              if name.startswith("pyrelune.protocols.")} & CODECS
    assert {codec for codec in codecs if codec.split("_")[0] != own} == set()
    assert not {name for name in names
                if name == "pyrelune.worker" or name.startswith("pyrelune.worker.")}


def test_error_codes_are_spelled_only_in_wire_codes() -> None:
    expected = {"python_syntax_error", "python_runtime_error", "python_exit", "interrupted",
                "timeout", "worker_died", "invalid_request", "invalid_json",
                "unsupported_protocol", "invalid_working_directory", "invalid_configuration"}
    assert expected <= CODE_VALUES
    spelled = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where == "wire/events.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        keys = {id(key) for node in ast.walk(tree) if isinstance(node, ast.Dict)
                for key in node.keys if key is not None}
        spelled += [f"{where}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and node.value in CODE_VALUES
                    and id(node) not in keys]
    assert spelled == []
