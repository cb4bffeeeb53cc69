"""run_cell on plain values: final expression, `;`, await, errors and their tracebacks."""

from __future__ import annotations

from typing import Any

import pytest

from pyrelune import fastjson
from pyrelune.wire.events import CellError, Done, to_wire
from pyrelune.worker.cell import run_cell
from pyrelune.worker.mainmodule import fresh_namespace
from pyrelune.worker.runtime import NoInput


def run(source: str, namespace: dict[str, Any] | None = None) -> tuple[CellError | None, list[Any]]:
    shown: list[Any] = []
    error = run_cell(source, "<cell t>", namespace or fresh_namespace(), shown.append)
    return error, shown


def test_final_expression_is_split_off_and_shown() -> None:
    namespace = fresh_namespace()
    assert run("x = 6\nx * 7", namespace) == (None, [42])
    assert namespace["_"] == 42


def test_none_and_semicolon_show_nothing() -> None:
    assert run("None") == (None, [])
    assert run("'é';") == (None, [])
    assert run("1 ;  # note") == (None, [])
    assert run("x = 1; x") == (None, [1])
    assert run("';'") == (None, [";"])
    assert run("(1,\n 2)") == (None, [(1, 2)])
    # characters str.splitlines() breaks at, which Python's lines do not
    assert run('t = "a\u2028x;"\nt') == (None, ["a\u2028x;"])
    assert run('t = "a\x0cx;"\nt') == (None, ["a\x0cx;"])
    assert run("x = 5\r\nx;") == (None, [])
    assert run("x = 5\rx") == (None, [5])


def test_statements_only() -> None:
    namespace = fresh_namespace()
    assert run("y = 3\nfor i in range(2): y += i", namespace) == (None, [])
    assert namespace["y"] == 4


def test_top_level_await() -> None:
    source = "import asyncio\nawait asyncio.sleep(0)\nawait asyncio.sleep(0, 'v')"
    assert run(source) == (None, ["v"])


def test_runtime_error_traceback_is_trimmed_to_the_cell() -> None:
    error, _ = run("a = 1\ndef f():\n    return 1 / 0\nf()")
    assert error is not None
    assert (error.code, error.ename, error.evalue, error.line) == (
        "python_runtime_error", "ZeroDivisionError", "division by zero", 3)
    assert without_carets(error.traceback) == (
        "Traceback (most recent call last):\n"
        '  File "<cell t>", line 4, in <module>\n'
        "    f()\n"
        '  File "<cell t>", line 3, in f\n'
        "    return 1 / 0\n"
        "ZeroDivisionError: division by zero\n"
    )
    assert error.summary == "ZeroDivisionError: division by zero (line 3)"


def without_carets(traceback: str) -> str:
    """The traceback without the position markers (`~~^~~`) newer Pythons add."""
    lines = traceback.splitlines(keepends=True)
    return "".join(line for line in lines if line.strip(" ~^\n"))


def test_the_runtimes_own_frames_after_the_cell_are_dropped() -> None:
    namespace = fresh_namespace()
    namespace["ask"] = NoInput("no input here")
    error, _ = run("ask('?')", namespace)
    assert error is not None and error.ename == "EOFError"
    assert "pyrelune" not in error.traceback
    assert error.traceback.count("File ") == 1


def test_the_runtimes_frames_are_dropped_from_chained_exceptions_too() -> None:
    namespace = fresh_namespace()
    namespace["ask"] = NoInput("no input here")
    for raised in ("raise ValueError('no input')", "raise ValueError('no input') from e"):
        error, _ = run(f"try:\n    ask('?')\nexcept EOFError as e:\n    {raised}", namespace)
        assert error is not None and error.ename == "ValueError"
        assert "EOFError" in error.traceback
        assert "pyrelune" not in error.traceback, error.traceback


def test_library_frames_are_kept() -> None:
    error, _ = run("import json\njson.loads('[')")
    assert error is not None and error.line == 2
    assert "json" in error.traceback and "decoder.py" in error.traceback


def test_syntax_error_position() -> None:
    error, _ = run("x = 1\nif x\n    pass")
    assert error is not None
    assert (error.code, error.ename, error.line, error.column) == (
        "python_syntax_error", "SyntaxError", 2, 5)
    assert "if x" in error.traceback



@pytest.mark.parametrize("offset", [float("nan"), -5, "abc", 10**5000, 1 << 53, True, None],
                         ids=["nan", "negative", "str", "too many digits", "huge", "bool", "none"])
def test_a_raised_syntax_error_with_an_odd_offset_has_no_column(offset: object) -> None:
    namespace = fresh_namespace()
    namespace["offset"] = offset
    error, _ = run("raise SyntaxError('bad', ('f.py', 3, offset, 'x'))", namespace)
    assert error is not None
    assert (error.code, error.summary, error.line, error.column) == (
        "python_syntax_error", "SyntaxError: bad (f.py, line 3) (line 1)", 1, None)
    assert error.traceback.startswith("Traceback (most recent call last):\n")
    assert error.traceback.endswith("SyntaxError: bad\n") or error.traceback.endswith(
        "SyntaxError: bad (f.py, line 3)\n")  # "abc" defeats traceback's own formatting
    fastjson.dumps(to_wire(Done(error)), allow_nan=False)  # what crosses to the session


def test_a_raised_syntax_error_keeps_a_usable_offset() -> None:
    error, _ = run("raise SyntaxError('bad', ('f.py', 3, 7, 'x = 1'))")
    assert error is not None and error.column == 7


def test_an_exception_whose_str_fails_is_still_named() -> None:
    source = "class Odd(Exception):\n    def __str__(self):\n        raise ValueError\nraise Odd()"
    error, _ = run(source)
    assert error is not None
    assert (error.code, error.summary) == (
        "python_runtime_error", "Odd: <exception str() failed> (line 4)")
    assert error.traceback.endswith("Odd: <exception str() failed>\n")

def test_system_exit() -> None:
    assert run("raise SystemExit(0)") == (None, [])
    assert run("raise SystemExit") == (None, [])
    error, _ = run("raise SystemExit(4)")
    assert error is not None and (error.code, error.summary) == (
        "python_exit", "SystemExit: exit status 4 (line 1)")


def test_keyboard_interrupt_is_interrupted() -> None:
    error, _ = run("raise KeyboardInterrupt")
    assert error is not None and (error.code, error.line) == ("interrupted", 1)


def test_error_in_final_expression() -> None:
    error, shown = run("x = 1\nx + undefined_name")
    assert shown == [] and error is not None and error.line == 2


def test_one_line_cells_behave_the_same_whichever_way_they_compile() -> None:
    # One expression is compiled as such; a backslash, a `;` or a statement
    # sends the line through the syntax tree instead: the results agree.
    namespace = fresh_namespace()
    assert run("'a\\\\d'", namespace) == (None, ["a\\d"])
    assert run("x = 6", namespace) == (None, [])
    assert run("x * 7  # a comment", namespace) == (None, [42])
    assert run("x * 7;", namespace) == (None, [])
    assert run("print", namespace) == (None, [print])
    assert namespace["_"] is print


def test_one_expression_may_await() -> None:
    assert run("await __import__('asyncio').sleep(0, 'slept')") == (None, ["slept"])
