"""What real notebooks do that IPython allows, in every mode: `__future__` anywhere, pasted
prompts, script cells, a terminal for `!cmd`, IPython's pretty text, and the magics."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from modes import MODES, Runner, runner


@pytest.fixture(params=MODES)
def run(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Runner]:
    with runner(request.param, cwd=tmp_path) as each:
        yield each


def test_a_future_import_after_other_code_applies_to_what_follows(run: Runner) -> None:
    seen = run("x = 1\nfrom __future__ import division\nprint(x)")
    assert seen.error is None and seen.stdout == "1\n", seen
    seen = run("def before(a: int): pass\nfrom __future__ import annotations\n"
               "def after(a: int): pass\n"
               "print(before.__annotations__, after.__annotations__)\n"
               "'last'")
    assert seen.error is None, seen
    assert seen.everything == "{'a': <class 'int'>} {'a': 'int'}\n'last'\n", seen
    seen = run("y = 2\nfrom __future__ import braces")
    assert seen.error is not None and "not a chance" in seen.error, seen


def test_cells_annotations_are_evaluated_unless_the_cell_asks(run: Runner) -> None:
    """pyrelune's own `from __future__ import annotations` must not leak into cells."""
    seen = run("def f(a: int): pass\nprint(f.__annotations__)")
    assert seen.stdout == "{'a': <class 'int'>}\n", seen


def test_pasted_console_prompts_are_stripped(run: Runner) -> None:
    seen = run(">>> x = 2\n>>> for i in range(x):\n...     print(i)\n")
    assert seen.error is None and seen.stdout == "0\n1\n", seen
    seen = run("In [3]: y = 5\n\nIn [4]: def f():\n   ...:     return y * 2\n   ...: \n"
               "In [5]: f()")
    assert seen.error is None and seen.everything == "10\n", seen
    seen = run('def g():\n    """\n    >>> g()\n    """\n    return ">>> kept"\ng()')
    assert seen.everything == "'>>> kept'\n", seen


def test_time_units_are_ipythons(run: Runner) -> None:
    seen = run("%time x = 1")
    assert seen.error is None, seen
    units = re.findall(r"[\d.]+ ([^\s,]+)", seen.stdout)
    assert len(units) == 4 and set(units) <= {"s", "ms", "\u03bcs", "ns"}, seen
    assert "\u00b5" not in seen.stdout, seen


def test_file_is_writefiles_alias(run: Runner, tmp_path: Path) -> None:
    seen = run("%%file mod1.py\nX = 1")
    assert seen.error is None and seen.stdout == "Writing mod1.py\n", seen
    assert (tmp_path / "mod1.py").read_text() == "X = 1\n"


def test_timeit_with_a_bad_count_is_a_usage_error(run: Runner) -> None:
    seen = run("%timeit -n -5 sum(range(10))")
    assert seen.error is not None and "UsageError" in seen.error, seen
    assert "-n takes a whole number of loops, not '-5'" in seen.error, seen
    assert "timeit-src" not in seen.error, seen
    seen = run("%timeit -z pass")
    assert seen.error is not None and "option -z not recognized" in seen.error, seen


def test_an_update_of_a_display_id_never_shown_shows_nothing(run: Runner) -> None:
    seen = run("from IPython.display import update_display\n"
               "update_display('ghost', display_id='never-shown')\nprint('after')")
    assert seen.error is None, seen
    assert (seen.stdout, seen.displays) == ("after\n", []), seen
    seen = run("h = display('first', display_id='kept')\nh.update('second')")
    assert seen.everything == "'second'\n", seen
