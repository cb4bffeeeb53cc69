"""Execution semantics, seen through the host: what a cell's code does and shows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.launch import SCRIPT
from support.vixhost import VixHost, encode_request


def test_final_expression_is_shown_after_stdout(host: VixHost) -> None:
    result = host.run_cell("x = 6\nprint(x)\nx * 7")
    assert result.ok, result
    assert result.response["stdout"] == "6\n"
    assert result.response["outputs"] == [{"mime": "text/plain", "data": "42"}]
    assert result.shown == [("stdout", "6\n"), ("stdout", "42")]


def test_final_expression_none_shows_nothing(host: VixHost) -> None:
    result = host.run_cell("print('a')\nNone")
    assert result.shown == [("stdout", "a\n")]
    assert result.response["outputs"] == []


def test_semicolon_hides_the_final_expression(host: VixHost) -> None:
    assert host.run_cell("x = 'é'\n'é' * 2;").response["outputs"] == []
    assert host.run_cell("1 + 1 ;  # hidden").response["outputs"] == []


def test_semicolon_elsewhere_does_not_hide(host: VixHost) -> None:
    result = host.run_cell("x = 2; x * 3")
    assert result.response["outputs"] == [{"mime": "text/plain", "data": "6"}]
    result = host.run_cell("'a;b'  # ; in a comment")
    assert result.response["outputs"] == [{"mime": "text/plain", "data": "'a;b'"}]


def test_fresh_namespace_like_a_script(host: VixHost) -> None:
    result = host.run_cell(
        "import builtins\n"
        "print(__name__, __builtins__ is builtins)\n"
        "print(sorted(k for k in globals() if k not in ('builtins',)))"
    )
    lines = result.response["stdout"].splitlines()
    assert lines[0] == "__main__ True"
    assert all(name.startswith("__") for name in eval(lines[1]))


def test_no_state_survives_between_requests(host: VixHost) -> None:
    host.run_cell("leftover = 1")
    result = host.run_cell("leftover")
    assert result.headline == "NameError: name 'leftover' is not defined (line 1)"


def test_top_level_await(host: VixHost) -> None:
    result = host.run_cell(
        "import asyncio\nawait asyncio.sleep(0)\nprint('slept')\nawait asyncio.sleep(0, 'done')"
    )
    assert result.ok, result
    assert result.shown == [("stdout", "slept\n"), ("stdout", "'done'")]


def test_asyncio_run_works(host: VixHost) -> None:
    result = host.run_cell("import asyncio\nasync def f():\n    return 7\nasyncio.run(f())")
    assert result.ok, result
    assert result.response["outputs"] == [{"mime": "text/plain", "data": "7"}]


def test_traceback_shows_cell_lines_and_no_runtime_frames(host: VixHost) -> None:
    result = host.run_cell("a = 1\ndef f():\n    return value\n\nf()", cellId="c7")
    assert result.headline == "NameError: name 'value' is not defined (line 3)"
    error = result.error
    assert error["code"] == "python_runtime_error"
    details = error["details"]
    assert details.startswith("Traceback (most recent call last):\n")
    assert 'File "<cell c7>", line 5, in <module>\n    f()\n' in details
    assert 'File "<cell c7>", line 3, in f\n    return value\n' in details
    assert details.splitlines()[-1].startswith("NameError: name 'value' is not defined")
    assert "pyrelune" not in details and "runpy" not in details
    assert result.response["diagnostics"] == [
        {"severity": "error", "message": result.headline, "line": 3, "column": None}
    ]


def test_library_frames_are_kept(host: VixHost) -> None:
    result = host.run_cell("import json\n\njson.loads('{')")
    assert result.failure is not None and result.failure.startswith("JSONDecodeError: ")
    assert result.headline is not None and result.headline.endswith("(line 3)")
    assert "json" + os.sep + "decoder.py" in result.error["details"]


def test_syntax_error_has_line_and_column(host: VixHost) -> None:
    result = host.run_cell("x = 1\ny = (2 +\n")
    assert result.error["code"] == "python_syntax_error"
    assert result.failure is not None and result.failure.startswith("SyntaxError: ")
    assert result.headline is not None and result.headline.endswith("(line 2, column 5)")
    (diagnostic,) = result.response["diagnostics"]
    assert diagnostic["line"] == 2 and diagnostic["column"] == 5
    assert "y = (2 +" in result.error["details"]



ODD = "SyntaxError: bad (f, line 3) (line 1)"


@pytest.mark.parametrize(
    ("source", "failure"),
    [("raise SyntaxError('bad', ('f', 3, float('nan'), 'x'))", ODD),
     ("raise SyntaxError('bad', ('f', 3, 'abc', 'x'))", ODD),
     ("class Odd(Exception):\n    __str__ = None\nraise Odd",
      "Odd: <exception str() failed> (line 3)")],
)
def test_exceptions_with_odd_attributes_are_reported(
    host: VixHost, source: str, failure: str
) -> None:
    result = host.run_cell(source)
    assert result.headline == failure
    assert result.response["diagnostics"][0]["column"] is None

def test_output_before_an_error_is_kept_in_the_response(host: VixHost) -> None:
    result = host.run_cell("import sys\nprint('out')\nprint('err', file=sys.stderr)\n1 / 0")
    assert result.headline == "ZeroDivisionError: division by zero (line 4)"
    assert result.response["stdout"] == "out\n"
    assert result.response["stderr"] == "err\n"


def test_working_directory_absolute(host: VixHost, tmp_path: Path) -> None:
    result = host.run_cell("import os\nos.getcwd()", workingDirectory=str(tmp_path))
    assert result.response["outputs"][0]["data"] == repr(str(tmp_path))


def test_working_directory_relative_to_the_runtime(tmp_path: Path) -> None:
    (tmp_path / "project" / "notes").mkdir(parents=True)
    request = {"source": "import os\nos.getcwd()", "workingDirectory": "project/notes"}
    result = VixHost().run(encode_request(request), cwd=tmp_path)
    expected = str((tmp_path / "project" / "notes").resolve())
    assert result.response["outputs"][0]["data"] == repr(expected)


def test_working_directory_empty_means_stay(tmp_path: Path) -> None:
    request = {"source": "import os\nos.getcwd()", "workingDirectory": ""}
    result = VixHost().run(encode_request(request), cwd=tmp_path)
    assert result.response["outputs"][0]["data"] == repr(str(tmp_path.resolve()))


def test_working_directory_missing(host: VixHost, tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    result = host.run_cell("print('never')", workingDirectory=str(missing))
    assert result.error["code"] == "invalid_working_directory"
    assert str(missing) in result.error["message"]
    assert result.response["stdout"] == ""


def test_working_directory_not_a_directory(host: VixHost, tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("x")
    result = host.run_cell("print('never')", workingDirectory=str(file))
    assert result.error["code"] == "invalid_working_directory"
    assert str(file) in result.error["message"]


@pytest.mark.parametrize(
    ("escaped", "reason"),
    [("a\\u0000b", "a NUL character cannot be part of a file name"),
     ("a\\ud800b", "'\\ud800' cannot be part of a file name")],
)
def test_working_directory_no_file_name_can_hold(host: VixHost, escaped: str, reason: str) -> None:
    raw = ('{"source": "print(1)", "workingDirectory": "' + escaped + '"}').encode()
    result = host.run(raw)
    assert result.error["code"] == "invalid_working_directory"
    assert result.failure is not None and result.failure.endswith(reason), result.failure


def test_current_directory_deleted(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    runtime = tmp_path / "runtime"
    runtime.write_text(f'#!/bin/sh\ncd "{gone}" && rmdir "{gone}" && exec "{SCRIPT}"\n')
    runtime.chmod(0o755)
    result = VixHost(command=str(runtime)).run(encode_request({"source": "print('never')"}))
    assert result.error["code"] == "invalid_working_directory"
    assert result.failure == "Cannot use the current directory: No such file or directory"


def test_a_nul_in_the_cell_id_is_no_syntax_error(host: VixHost) -> None:
    result = host.run_cell("6 * 7\n", cellId="a\0b")
    assert result.response["outputs"] == [{"mime": "text/plain", "data": "42"}]
    result = host.run_cell("1 / 0", cellId="a\0b")
    assert 'File "<cell a\\x00b>", line 1' in result.error["details"]


def test_modules_beside_the_notebook_import(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "helper_mod.py").write_text("VALUE = 'from beside'\n")
    request = {"source": "import helper_mod\nhelper_mod.VALUE", "workingDirectory": "notes"}
    result = VixHost().run(encode_request(request), cwd=tmp_path)
    assert result.response["outputs"] == [{"mime": "text/plain", "data": "'from beside'"}]



#: Modules the runtime imports after the cell's folder is first on sys.path.
RUNTIMES_LATE_IMPORTS = ("select", "traceback", "linecache", "tokenize", "token", "textwrap",
                         "json", "binascii")


def test_files_named_like_the_runtimes_modules_stand_in_only_for_the_cells(
    host: VixHost, tmp_path: Path
) -> None:
    for name in RUNTIMES_LATE_IMPORTS:
        (tmp_path / f"{name}.py").write_text(f"print('{name}.py ran')\nmine = True\n")
    folder = str(tmp_path)
    assert host.run_cell("print(1)", workingDirectory=folder).shown == [("stdout", "1\n")]
    odd = ("class Odd:\n    def _repr_png_(self):\n        return b'png'\n"  # base64: binascii
           "    def _repr_mimebundle_(self, **kwargs):\n"
           "        return {'application/json': 'not json'}\n"  # refused: json says why
           "display(1)\nOdd()")
    shown = host.run_cell(odd, workingDirectory=folder)
    assert shown.ok and shown.response["outputs"][0] == {"mime": "text/plain", "data": "1"}
    assert "unusable 'application/json' value" in shown.response["stderr"]
    assert "ran" not in str(shown.response)
    failed = host.run_cell("x = 1\n1 / 0", workingDirectory=folder)
    assert failed.headline == "ZeroDivisionError: division by zero (line 2)"
    assert "    1 / 0\n" in failed.error["details"] and failed.response["stdout"] == ""
    failed = host.run_cell("if x", workingDirectory=folder)
    assert failed.headline == "SyntaxError: expected ':' (line 1, column 5)"
    own = host.run_cell("import select\nselect.mine", workingDirectory=folder)
    assert own.shown == [("stdout", "select.py ran\n"), ("stdout", "True")]


def test_a_cell_that_imported_its_own_token_module_still_gets_its_error(
    host: VixHost, tmp_path: Path
) -> None:
    (tmp_path / "token.py").write_text("NAME = 'mine'\n")
    failed = host.run_cell("import token\n1 / 0", workingDirectory=str(tmp_path))
    assert failed.headline == "ZeroDivisionError: division by zero (line 2)"
    assert 'File "<cell cell-python>", line 2, in <module>\n' in failed.error["details"]

def test_input_raises_eoferror(host: VixHost) -> None:
    result = host.run_cell("name = input('name? ')")
    assert result.failure is not None
    assert result.failure.startswith("EOFError: input() cannot be answered here: Vix Note "
                                     "cells cannot ask for input while they run. Set the "
                                     'value in the cell instead (name = "Ada")')
    assert "oneshot" not in result.failure
    assert result.headline is not None and result.headline.endswith("(line 1)")
    assert result.response["stdout"] == "name? "


def test_stdin_is_empty(host: VixHost) -> None:
    result = host.run_cell("import sys\nsys.stdin.read()")
    assert result.response["outputs"] == [{"mime": "text/plain", "data": "''"}]


def test_sys_exit_zero_ends_the_cell_normally(host: VixHost) -> None:
    result = host.run_cell("import sys\nprint('a')\nsys.exit(0)\nprint('b')")
    assert result.ok, result
    assert result.shown == [("stdout", "a\n")]
    assert host.run_cell("raise SystemExit").ok


def test_sys_exit_nonzero_is_an_error(host: VixHost) -> None:
    result = host.run_cell("import sys\nprint('a')\nsys.exit(3)")
    assert result.error["code"] == "python_exit"
    assert result.headline == "SystemExit: exit status 3 (line 3)"
    assert result.response["stdout"] == "a\n"
    message = host.run_cell("import sys\nsys.exit('bad things')").headline
    assert message == "SystemExit: bad things (line 2)"


def test_warnings_and_printed_tracebacks_quote_the_cell(host: VixHost) -> None:
    result = host.run_cell(
        "import warnings\nwarnings.warn('careful')\n"
        "import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.print_exc()"
    )
    stderr = result.response["stderr"]
    assert "<cell cell-python>:2: UserWarning: careful\n  warnings.warn('careful')\n" in stderr
    assert 'File "<cell cell-python>", line 5, in <module>\n    1 / 0\n' in stderr
