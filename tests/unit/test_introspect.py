"""The worker's answers about its namespace (completion, help, expressions, completeness)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from pyrelune.worker import introspect
from pyrelune.worker.completeness import completeness
from pyrelune.worker.introspect import complete, describe, expressions, inspect_object, name_at


@pytest.fixture(params=["jedi", "own"])
def completer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test of completion runs with jedi and with the namespace's own completer."""
    if request.param == "own":
        monkeypatch.setattr(introspect, "_with_jedi", lambda *args: None)
    return str(request.param)


def matches(code: str, namespace: dict[str, Any], cursor: int | None = None) -> dict[str, Any]:
    return complete({"code": code, "cursor_pos": len(code) if cursor is None else cursor},
                    namespace)


def test_names_of_the_namespace_and_builtins(completer: str) -> None:
    found = matches("some_v", {"some_value": 1, "other": 2})
    assert found["matches"] == ["some_value"]
    assert (found["cursor_start"], found["cursor_end"]) == (0, 6)
    assert "zip" in matches("zi", {})["matches"]


def test_attributes_of_a_dotted_name(completer: str) -> None:
    class Thing:
        alpha = 1
        alps = 2
        _hidden = 3

    found = matches("x = thing.al", {"thing": Thing()})
    assert set(found["matches"]) == {"alpha", "alps"}
    assert found["cursor_start"] == len("x = thing.")


def test_module_names_after_import(completer: str) -> None:
    assert "json" in matches("import jso", {})["matches"]
    assert "path" in matches("from os import pa", {})["matches"]


def test_paths_inside_a_string(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("x")
    (tmp_path / "folder").mkdir()
    code = f"open('{tmp_path}/"
    found = introspect._own_matches(code, {})
    assert found[1] == [f"{tmp_path}/data.csv", f"{tmp_path}/folder/"]


def test_a_completion_that_fails_is_no_match_not_an_error(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    class Hostile:
        def __dir__(self) -> list[str]:
            raise RuntimeError("no")

    monkeypatch.setattr(introspect, "_with_jedi", lambda *args: None)
    assert matches("h.x", {"h": Hostile()})["matches"] == []


def test_the_name_at_the_cursor_or_the_call_it_is_in() -> None:
    assert name_at("os.path.join", 5) == "os.path"
    assert name_at("os.path.join", 12) == "os.path.join"
    assert name_at("print(1, ", 9) == "print"
    assert name_at("f(g(1), ", 8) == "f"
    assert name_at("1 + 2", 5) == ""


def test_inspection_gives_signature_docstring_and_source_at_level_one() -> None:
    def helper(a: int, b: int = 2) -> int:
        """Adds two numbers."""
        return a + b

    plain = re.sub(r"\x1b\[[0-9;]*m", "", describe("helper", helper, 0))
    assert "helper(a: int, b: int = 2) -> int" in plain and "Adds two numbers." in plain
    assert "return a + b" in describe("helper", helper, 1)
    found = inspect_object({"code": "helper", "cursor_pos": 3, "detail_level": 0},
                           {"helper": helper})
    assert found["found"] and "text/plain" in found["data"]
    missing = inspect_object({"code": "nothing_here", "cursor_pos": 3}, {})
    assert missing == {"found": False, "data": {}, "metadata": {}}


def test_expressions_become_bundles_or_errors() -> None:
    values = expressions({"expressions": {"ok": "n * 2", "bad": "1/0"}}, {"n": 21})
    assert values["ok"] == {"status": "ok", "data": {"text/plain": "42"}, "metadata": {}}
    assert values["bad"]["status"] == "error" and values["bad"]["ename"] == "ZeroDivisionError"


@pytest.mark.parametrize(("code", "expected"), [
    ("1 + 1", ("complete", "")),
    ("", ("complete", "")),
    ("for i in x:", ("incomplete", "    ")),
    ("if x:\n    for y in z:", ("incomplete", "        ")),
    ("def f(x):\n  x*2", ("incomplete", "  ")),
    ("def f(x):\n  return x*2\n\n\n", ("complete", "")),
    ("x = (1,", ("incomplete", "")),
    ("print('''hello", ("incomplete", "")),
    ("total = 1 + \\", ("incomplete", "")),
    ("import = 7q", ("invalid", "")),
    ("await something()", ("complete", "")),
    ("%timeit x", ("complete", "")),
    ("!ls", ("complete", "")),
    ("%%timeit", ("incomplete", "")),
    ("%%timeit\nx = 1\n", ("complete", "")),
])
def test_completeness_as_a_console_decides_it(code: str, expected: tuple[str, str]) -> None:
    assert completeness(code) == expected


def test_no_module_of_the_cells_folder_is_taken_for_jedi(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "jedi.py").write_text("raise SystemExit('the cell folder was imported')")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(os.fspath(tmp_path))
    assert "zip" in matches("zi", {})["matches"]


class _Sent:
    """What `introspect.answer` sends, in place of the worker's channel."""

    def __init__(self) -> None:
        self.events: list[object] = []

    def send(self, event: object) -> None:
        self.events.append(event)


def test_a_shell_answers_what_it_knows_and_pyrelune_the_rest() -> None:
    from pyrelune.wire.commands import Query
    from pyrelune.wire.events import Done, Reply

    sent = _Sent()
    own = {"complete": lambda args, namespace: {"matches": ["the shell's"]}}
    for kind, args in (("complete", {"code": "x", "cursor_pos": 1}), ("is_complete",
                                                                       {"code": "for x in y:"})):
        introspect.answer(Query(kind, args), {}, sent, own)  # type: ignore[arg-type]
    first, done, second, _ = sent.events
    assert isinstance(first, Reply) and first.content == {"matches": ["the shell's"]}
    assert isinstance(done, Done)
    assert isinstance(second, Reply) and second.kind == "is_complete"
    assert second.content["status"] == "incomplete"  # pyrelune's own answer
