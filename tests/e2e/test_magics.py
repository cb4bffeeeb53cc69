"""IPython syntax that notebooks are full of, in every mode: magics, `!cmd`, `obj?`."""

from __future__ import annotations

import os
import re
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
from support.modes import Runner
from support.vixhost import VixHost

#: A duration as IPython writes it (`%.3g`): 999.7 μs is `1e+03 μs`.
DURATION = r"[\d.]+(?:e\+03)? (?:s|ms|μs|ns)"
TIME_LINES = re.compile(
    rf"CPU times: user {DURATION}, sys: {DURATION}, total: {DURATION}\nWall time: {DURATION}\n"
)
#: IPython's line, after the warning it prints when one run was much slower (a busy machine).
TIMEIT_LINE = (r"(?:The slowest run took [\d.]+ times longer than the fastest\. This could mean "
               r"that an intermediate result is being cached\.\n)?"
               rf"{DURATION} ± {DURATION} per loop "
               r"\(mean ± std\. dev\. of {runs} runs?, {loops} loops? each\)\n")


def test_matplotlib_magics_are_accepted_and_plots_shown(run: Runner) -> None:
    seen = run("%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 2]);")
    assert seen.error is None, seen
    if run.mode == "lines":
        assert seen.stdout.startswith("<Figure size"), seen
    else:
        assert seen.texts == ["image/svg+xml" if run.mode == "oneshot" else "<image>"], seen
    for form in ("%matplotlib notebook", "%matplotlib qt", "%matplotlib widget"):
        seen = run(f"{form}\nimport matplotlib.pyplot as plt\nplt.plot([3, 4]);\nprint('x')")
        assert seen.error is None and "x\n" in seen.stdout, (form, seen)
        assert seen.everything.count("svg") + seen.everything.count("<image>") + \
            seen.everything.count("<Figure") == 1, (form, seen)
    seen = run("%matplotlib")
    assert seen.stdout == "Using matplotlib backend: module://pyrelune.worker.mplbackend\n"


def test_shell_commands_run_and_give_their_lines(run: Runner) -> None:
    seen = run("n = 2\n!echo first $n {n * 21}\nfor i in range(2):\n    !echo loop $i\n"
               "print('status', _exit_code)\n!exit 3\nprint('status', _exit_code)")
    assert seen.error is None, seen
    assert seen.stdout == "first 2 42\nloop 0\nloop 1\nstatus 0\nstatus 3\n"
    seen = run("lines = !printf 'a b\\nc\\n'; echo err >&2\n"
               "print(type(lines).__name__, list(lines), lines.l)\n"
               "print(repr(lines.s), repr(lines.n), lines.grep('^c'))")
    assert seen.error is None, seen
    assert seen.stdout == ("SList ['a b', 'c', 'err'] ['a b', 'c', 'err']\n"
                           "'a b c err' 'a b\\nc\\nerr' ['c']\n")
    seen = run("!!echo twice")
    assert seen.everything.endswith("['twice']\n"), seen


def test_time_magics_print_ipythons_times(run: Runner) -> None:
    seen = run("%time total = sum(range(1000))\nprint(total)")
    assert seen.error is None, seen
    assert TIME_LINES.fullmatch(seen.stdout.replace("499500\n", "")), seen
    assert seen.stdout.endswith("499500\n")
    seen = run("%%time\nprint('body')\n6 * 7")
    assert seen.stdout.startswith("body\nCPU times: user "), seen
    assert seen.everything.endswith("42\n"), seen  # the final expression is the cell's
    seen = run("%time 6 * 7")
    assert seen.everything.endswith("42\n"), seen


def test_timeit_magics_print_ipythons_line(run: Runner) -> None:
    seen = run("%timeit -n 3 -r 2 sum(range(10))")
    assert seen.error is None, seen
    assert re.fullmatch(TIMEIT_LINE.format(runs=2, loops=3), seen.stdout), seen
    seen = run("%%timeit -r 1 -n 1000 x = list(range(50))\nx.reverse()")
    assert re.fullmatch(TIMEIT_LINE.format(runs=1, loops="1,000"), seen.stdout), seen
    seen = run("result = %timeit -o -q -n 2 -r 3 pass\n"
               "print(result.loops, result.repeat, len(result.all_runs), result.best > 0)")
    assert seen.stdout == "2 3 3 True\n", seen
    seen = run("%timeit pass")  # IPython's autorange: loops enough for 0.2 s, 7 runs
    assert re.fullmatch(TIMEIT_LINE.format(runs=7, loops=r"[\d,]+0"), seen.stdout), seen


def test_directory_magics(run: Runner, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    seen = run(f"%cd {tmp_path}\nimport os\nprint(os.getcwd())\n%pwd")
    assert seen.error is None, seen
    assert seen.everything == f"{tmp_path}\n{tmp_path}\n'{tmp_path}'\n", seen
    seen = run(f"%cd -q {tmp_path / 'sub'}\n%cd -\n%cd nowhere\nprint(os.getcwd())"
               if run.mode != "oneshot" else
               "import os\n%cd -q sub\n%cd -\n%cd nowhere\nprint(os.getcwd())")
    assert seen.stdout == (f"{tmp_path}\n[Errno 2] No such file or directory: 'nowhere'\n"
                           f"{tmp_path}\n"), seen


def test_env_magic_lists_gets_and_sets(run: Runner) -> None:
    seen = run("%env PYRELUNE_DEMO=one two\n%env PYRELUNE_API_KEY secret\n"
               "import os\nprint(os.environ['PYRELUNE_DEMO'])\n"
               "listed = %env\nprint(listed['PYRELUNE_DEMO'], listed['PYRELUNE_API_KEY'])\n"
               "%env PYRELUNE_DEMO")
    assert seen.error is None, seen
    assert seen.everything == ("env: PYRELUNE_DEMO=one two\nenv: PYRELUNE_API_KEY=secret\n"
                               "one two\none two <hidden>\n'one two'\n"), seen
    seen = run("%env PYRELUNE_NOT_SET")
    assert seen.error is not None and "Environment does not have key: PYRELUNE_NOT_SET" \
        in seen.error, seen


def _wheel(folder: Path) -> Path:
    """A one-module wheel built by hand: pip installs it with no network and no build."""
    wheel = folder / "pyrelune_demo-1.0-py3-none-any.whl"
    info = "pyrelune_demo-1.0.dist-info"
    files = {
        "pyrelune_demo.py": "ANSWER = 42\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: pyrelune-demo\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in {**files, f"{info}/RECORD": record}.items():
            archive.writestr(name, text)
    return wheel


def test_pip_runs_the_cells_own_interpreter(run: Runner, tmp_path: Path) -> None:
    seen = run("%pip --version")
    assert seen.error is None, seen
    prefix = str(Path(sys.executable).parent.parent)  # the tests' venv runs every mode
    assert seen.stdout.startswith("pip "), seen
    assert prefix in seen.stdout.split("\n")[0], seen
    assert seen.stdout.endswith(
        "Note: you may need to restart the kernel to use updated packages.\n"), seen
    seen = run("!pip --version")
    assert seen.stdout.startswith("pip ") and prefix in seen.stdout, seen
    wheel, target = _wheel(tmp_path), tmp_path / "target"
    seen = run(f"wheel, target = {str(wheel)!r}, {str(target)!r}\n"
               "%pip install -q --no-index --no-deps --target {target} {wheel}\n"
               "import sys\nsys.path.insert(0, target)\nimport pyrelune_demo\n"
               "print(pyrelune_demo.ANSWER)")
    assert seen.error is None, seen
    assert seen.stdout.endswith("packages.\n42\n"), seen


def test_writefile_writes_and_appends(run: Runner, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    seen = run(f"%%writefile {path}\nfirst # not a comment\n%not a magic")
    assert seen.error is None and seen.stdout == f"Writing {path}\n", seen
    assert path.read_text() == "first # not a comment\n%not a magic\n"
    seen = run(f"%%writefile -a {path}\nsecond\n")
    assert seen.stdout == f"Appending to {path}\n", seen
    seen = run(f"%%writefile {path}\nthird")
    assert seen.stdout == f"Overwriting {path}\n", seen
    assert path.read_text() == "third\n"


def test_capture_keeps_everything_the_cell_shows(run: Runner) -> None:
    cell = ("%%capture kept\nimport sys\nprint('out')\nprint('err', file=sys.stderr)\n"
            "!echo shell\ndisplay(7)\n6 * 7")
    seen = run(cell)
    assert seen.error is None, seen
    assert (seen.stdout, seen.stderr, seen.displays) == ("", "", []), seen
    if run.mode == "oneshot":
        return  # the captured value is for the next cell
    seen = run("print(repr(kept.stdout), repr(kept.stderr))\n"
               "print([o.data['text/plain'] for o in kept.outputs])")
    assert seen.stdout == "'out\\nshell\\n' 'err\\n'\n['7', '42']\n", seen
    seen = run("kept.show()")
    assert seen.everything == "out\nshell\n7\n42\n" and seen.stderr == "err\n", seen
    seen = run("%%capture --no-stdout\nprint('shown')\n!echo shell too\n1")
    assert seen.everything == "shown\nshell too\n", seen
    seen = run("%%capture moved\nfrom IPython.display import clear_output\n"
               "h = display(1, display_id=True)\ndisplay(3)\nh.update(2)")
    assert seen.displays == [], seen
    seen = run("print([o.data['text/plain'] for o in moved.outputs])")
    assert seen.stdout == "['2', '3']\n", seen  # updated in place, as the host would show it
    seen = run("%%capture gone\nfrom IPython.display import clear_output\n"
               "display(1)\nclear_output()\ndisplay(4)")
    assert seen.displays == [], seen
    seen = run("print([o.data['text/plain'] for o in gone.outputs])")
    assert seen.stdout == "['4']\n", seen


def test_accepted_magics_say_what_ipython_says(run: Runner) -> None:
    seen = run("%load_ext autoreload\n%autoreload 2\n%aimport os\n%xmode Plain\nprint('ok')")
    assert seen.error is None, seen
    assert seen.stdout == "Exception reporting mode: Plain\nok\n", seen
    seen = run("%load_ext rpy2.ipython")
    assert seen.error is not None and "%load_ext rpy2.ipython" in seen.error, seen


def test_question_marks_print_the_objects_help(run: Runner) -> None:
    cell = ("def area(r):\n    '''The area of a disc of radius r.'''\n    return 3 * r * r\n"
            "area?\n?area\narea??\nmissing?")
    seen = run(cell)
    assert seen.error is None, seen
    assert seen.stdout.count("Help on function area in module __main__:\n") == 3, seen
    assert seen.stdout.count("    The area of a disc of radius r.\n") == 3, seen
    assert seen.stdout.endswith("Object `missing` not found.\n"), seen


def test_an_unsupported_magic_is_a_one_line_error_naming_it(run: Runner) -> None:
    seen = run("print('before')\n%qtconsole\nprint('after')")
    assert seen.stdout == "before\n", seen
    assert seen.error is not None
    assert "UsageError: Line magic function `%qtconsole` is not supported by pyrelune" \
        in seen.error
    if run.mode == "oneshot":
        assert seen.error.endswith("(line 2)"), seen
    seen = run("%%cython\ncdef int x")
    assert seen.error is not None and "Cell magic `%%cython` is not supported" in seen.error


def test_strings_and_comments_are_never_translated(run: Runner) -> None:
    cell = ('%matplotlib inline\ntext = """\n%not a magic\n!nor this\nobj?\n"""\n'
            "# %who in a comment\nx = (1,\n     2)  # ! or ?\nprint(text, x, '%d!' % 5, 'ok?')")
    seen = run(cell)
    assert seen.error is None, seen
    assert seen.stdout == "\n%not a magic\n!nor this\nobj?\n (1, 2) 5! ok?\n", seen


def test_a_real_syntax_error_beside_a_magic_keeps_its_line(run: Runner) -> None:
    seen = run("%matplotlib inline\nx = 1\ny = (2\n")
    assert seen.error is not None and "SyntaxError" in seen.error, seen
    assert "'(' was never closed" in seen.error, seen
    if run.mode == "oneshot":
        assert seen.error.startswith("SyntaxError: '(' was never closed (line 3"), seen


@pytest.mark.cold_start  # a warm cell finds the preloaded modules (re among them) loaded
def test_a_plain_cell_never_loads_the_translator(run: Runner) -> None:
    seen = run("import sys\nsorted({'pyrelune.worker.ipysyntax', 'pyrelune.worker.magics'}"
               " & set(sys.modules))")
    assert seen.everything == "[]\n", seen
    if run.mode == "oneshot":  # the lean start-up: neither `re` nor `tokenize` (rpc loads both)
        seen = run("import sys\nprint(sorted({'re', 'tokenize'} & set(sys.modules)))")
        assert seen.stdout == "[]\n", seen
    seen = run("%pwd")
    assert seen.error is None, seen
    if run.mode != "oneshot":
        assert run("'pyrelune.worker.magics' in sys.modules").everything.endswith("True\n")


def test_the_parsers_warnings_come_once_in_a_translated_cell(host: VixHost) -> None:
    """The cell is compiled twice (as it is, then translated): each warning is shown once."""
    result = host.run_cell('a = "\\d"\n%pwd\nb = "\\q"',
                           env={**os.environ, "PYTHONWARNINGS": "always"})
    stderr = result.response["stderr"]
    assert result.response["ok"], result
    # Before the magic, what Python's own failed compile shows (twice on 3.10, whose
    # parser reruns on an error), and no more; after it, once.
    assert stderr.count("invalid escape sequence '\\d'") == _shown_by_a_failed_compile(
        'a = "\\d"\n%pwd\n'), stderr
    assert stderr.count("invalid escape sequence '\\q'") == 1, stderr


def _shown_by_a_failed_compile(source: str) -> int:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(SyntaxError):
            compile(source, "<cell>", "exec")
    return len(caught)
