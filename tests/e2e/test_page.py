"""What a Vix Note user sees in the page: each case met when the real server ran pyrelune.

Through the host harness, which shows what the page shows: for a failure only
`error.message` (`failure`), for a success the `stdout` and `stderr` strings,
then the outputs, all as raw text.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.launch import SCRIPT
from support.vixhost import DEADLINE, DEADLINE_ENV, VixHost, encode_request, project_folder

ESC = "\x1b"


def kinds(result: object) -> list[str]:
    return [kind for kind, _ in result.shown]  # type: ignore[attr-defined]


# -- plots under a backend without windows ---------------------------------------------------


def test_a_plot_after_use_agg_is_shown(host: VixHost) -> None:
    source = ('import matplotlib; matplotlib.use("Agg"); import matplotlib.pyplot as plt\n'
              "plt.plot([1, 2, 3]);")
    result = host.run_cell(source)
    assert kinds(result) == ["image/svg+xml"], result


def test_plt_show_after_use_agg_shows_in_place_and_closes(host: VixHost) -> None:
    source = """\
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
print("before")
plt.plot([1, 2])
plt.show()
print("after", plt.get_fignums())
"""
    result = host.run_cell(source)
    assert result.shown[0] == ("stdout", "before\n")
    assert kinds(result) == ["stdout", "image/svg+xml", "stdout"], result
    assert result.shown[2] == ("stdout", "after []\n")


@pytest.mark.parametrize("backend", ["Agg", "svg", "pdf"])
def test_figures_show_when_the_environment_chose_a_backend_without_windows(
    host: VixHost, backend: str
) -> None:
    source = "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([3, 1])\n"
    source += "fig.show()"
    result = host.run_cell(source, env={"MPLBACKEND": backend})
    assert kinds(result) == ["image/svg+xml"], result


def test_a_saved_figure_is_shown_and_a_closed_one_is_not(host: VixHost, tmp_path: Path) -> None:
    """As ipykernel's inline backend: saving a figure does not hide it; closing it does."""
    saved = tmp_path / "plot.png"
    source = f"""\
import matplotlib.pyplot as plt
plt.plot([1, 2])
plt.savefig({str(saved)!r})
plt.figure()
plt.plot([2, 1])
plt.close()
"""
    result = host.run_cell(source, env={"MPLBACKEND": "Agg"})
    assert kinds(result) == ["image/svg+xml"], result
    assert saved.read_bytes().startswith(b"\x89PNG")


def test_doctor_warns_of_a_backend_that_hides_plots(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "VIX_GLOBAL_PREFIX": str(tmp_path / "prefix")}
    run = [SCRIPT, "vix"]
    assert subprocess.run([*run, "install"], env=env, capture_output=True).returncode == 0
    windows = subprocess.run([*run, "doctor"], env={**env, "MPLBACKEND": "TkAgg"},
                             capture_output=True, text=True)
    assert windows.returncode == 0, windows.stdout
    assert "warn plots: MPLBACKEND=TkAgg" in windows.stdout
    assert "fix: unset MPLBACKEND" in windows.stdout
    agg = subprocess.run([*run, "doctor"], env={**env, "MPLBACKEND": "Agg"},
                         capture_output=True, text=True)
    assert "ok   plots: MPLBACKEND=Agg" in agg.stdout, agg.stdout


# -- modules beside the note -------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A HOME where something is installed globally: `~/.vix` makes HOME the project."""
    home = tmp_path / "home"
    (home / ".vix").mkdir(parents=True)
    (home / "notes").mkdir()
    (home / "work").mkdir()
    (home / "notes" / "analysis.vixnote").write_text("{}")
    (home / "notes" / "helper.py").write_text("VALUE = 'beside the note'\n")
    yield home


def test_a_module_beside_the_note_imports(host: VixHost, home: Path) -> None:
    source = "import helper, os\nprint(helper.VALUE)\nprint(os.getcwd())"
    # `vix note ../notes/analysis.vixnote`, started in ~/work.
    result = host.run_cell(source, note="../notes/analysis.vixnote", cwd=home / "work")
    assert result.response["stdout"] == f"beside the note\n{home}\n", result


def test_the_notes_folder_comes_before_the_project(host: VixHost, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "analysis").mkdir()
    (repo / "analysis" / "note.vixnote").write_text("{}")
    (repo / "analysis" / "shared.py").write_text("WHERE = 'analysis'\n")
    (repo / "shared.py").write_text("WHERE = 'repo'\n")
    (repo / "toplevel.py").write_text("WHERE = 'repo'\n")
    source = "import shared, toplevel, sys\nprint(shared.WHERE, toplevel.WHERE, sys.path[:2])"
    result = host.run_cell(source, note=str(repo / "analysis" / "note.vixnote"))
    assert project_folder(repo / "analysis" / "note.vixnote") == repo
    expected = f"analysis repo {[str(repo / 'analysis'), str(repo)]}\n"
    assert result.response["stdout"] == expected, result


@pytest.mark.parametrize("path", ["", None, "missing.vixnote", ".", "a\0b", "\udc80.vixnote"])
def test_a_document_path_that_names_no_file_changes_nothing(
    host: VixHost, home: Path, path: str | None
) -> None:
    source = "import sys, os\nprint(sys.path[0] == os.getcwd())"
    raw = encode_request({"source": source, "workingDirectory": str(home), "documentPath": path})
    # A lone surrogate cannot be UTF-8: a host can only send it as an escape.
    raw = raw.replace("\udc80".encode("utf-8", "surrogatepass"), b"\\udc80")
    result = host.run(raw, cwd=home / "notes")
    assert result.response["stdout"] == "True\n", result


def test_a_document_path_that_is_not_a_string_is_a_clear_error(host: VixHost) -> None:
    result = host.run_cell("print(1)", documentPath=["a"])
    assert result.error["code"] == "invalid_request"
    assert result.failure == ('Invalid request: "documentPath" must be a string or null, not '
                              '["a"]\nA valid request: {"source": "print(2 + 3)"}')


# -- what a failed cell shows: error.message alone ---------------------------------------------


def test_output_before_an_error_is_shown_with_the_traceback(host: VixHost) -> None:
    result = host.run_cell('print("step 1 done")\n1/0')
    assert result.failure is not None
    head, *rest = result.failure.split("\n")
    assert head == "ZeroDivisionError: division by zero (line 2)"
    assert "step 1 done" in rest
    assert "    1/0" in rest and rest[-1] == "ZeroDivisionError: division by zero"
    assert result.failure.index("step 1 done") < result.failure.index("Traceback")
    # What other hosts read stays as it was.
    assert result.response["stdout"] == "step 1 done\n"
    assert result.response["diagnostics"][0]["message"] == head
    assert result.error["details"].startswith("Traceback (most recent call last):")


def test_both_streams_come_before_the_error(host: VixHost) -> None:
    result = host.run_cell('import sys\nprint("out")\nprint("err", file=sys.stderr)\n'
                           "raise KeyError('k')")
    assert result.failure is not None
    lines = result.failure.split("\n")
    assert lines[0] == "KeyError: 'k' (line 4)"
    assert {"out", "err"} <= set(lines[:5])


def test_the_whole_exception_message_is_shown(host: VixHost) -> None:
    result = host.run_cell('raise ValueError("line1\\nline2")')
    assert result.headline == "ValueError: line1 (line 1)"
    assert result.failure is not None and result.failure.endswith("ValueError: line1\nline2")


@pytest.mark.slow  # waits out the runtime's deadline
def test_a_timeout_shows_the_progress_printed(host: VixHost) -> None:
    result = host.run_cell("print('progress 1', flush=True)\nwhile True: pass",
                           env=DEADLINE_ENV)
    assert result.error["code"] == "timeout"
    assert result.failure is not None
    assert result.failure.startswith(f"Cell timed out after {DEADLINE} s")
    # The interrupt's traceback follows the output when the cell answered it within the
    # grace; on a loaded machine it may be killed first, and the output is the message's end.
    assert re.search(r"\nprogress 1(\n|$)", result.failure), result.failure


def test_the_message_is_bounded_and_says_what_it_cut(host: VixHost) -> None:
    source = "print('x' * 2_000_000)\nprint('last words')\nraise ValueError('y' * 2_000_000)"
    result = host.run_cell(source)
    assert result.failure is not None
    assert result.headline is not None and result.headline.startswith("ValueError: yyy")
    assert "bytes of earlier output omitted ...]" in result.failure
    assert "last words" in result.failure
    assert len(result.failure.encode()) < 40_000
    assert len(result.stdout) <= 128 * 1024


# -- where a syntax error is ---------------------------------------------------------------------


def test_a_syntax_error_shows_line_column_and_caret(host: VixHost) -> None:
    result = host.run_cell("x = 1\ndef f(:\n    pass")
    assert result.headline == "SyntaxError: invalid syntax (line 2, column 7)"
    assert result.failure is not None
    assert "    def f(:\n          ^" in result.failure
    assert result.response["diagnostics"][0]["column"] == 7


# -- terminal colours ------------------------------------------------------------------------------


def test_colours_are_taken_out_and_the_text_kept(host: VixHost) -> None:
    source = r"""
import sys, time
print("\x1b[31mred\x1b[0m and \x1b[1;4mbold\x1b[m")
print("\x1b]8;;https://example.org\x1b\\a link\x1b]8;;\x1b\\ \x1b]0;title\x07done")
sys.stdout.write("\x1b[3"); sys.stdout.flush(); time.sleep(0.05)
sys.stdout.write("2mgreen\x1b[0m\n")
print("\x1b[33mwarning\x1b[0m", file=sys.stderr)
for i in range(3):
    print(f"\r\x1b[2K\x1b[36m{i}/2\x1b[0m", end="")
print()
display(type("Coloured", (), {"__repr__": lambda self: "\x1b[35mrepr\x1b[0m"})())
"""
    result = host.run_cell(source)
    assert result.shown == [
        ("stdout", "red and bold\na link done\ngreen\n2/2\n"), ("stderr", "warning\n"),
        ("stdout", "repr"),
    ], result


def test_colours_are_taken_out_of_a_failure(host: VixHost) -> None:
    result = host.run_cell('print("\\x1b[31mfailing\\x1b[0m")\nraise RuntimeError("\\x1b[1mboom")')
    assert result.failure is not None and ESC not in result.failure
    assert "\nfailing\n" in result.failure and result.failure.endswith("RuntimeError: boom")


# -- the deadline margin ---------------------------------------------------------------------------


@pytest.fixture
def two_busy_processes() -> Iterator[None]:
    """Two processes that compete for the machine's two cores, as others' work does."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()


@pytest.mark.usefixtures("two_busy_processes")
def test_a_cell_that_ignores_the_interrupt_is_answered_by_9_5_s() -> None:
    source = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('started')\n"
    source += "time.sleep(60)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYRELUNE_")}
    start = time.monotonic()
    result = VixHost(env=env).run_cell(source)
    elapsed = time.monotonic() - start
    assert result.error["code"] == "timeout"
    assert result.failure is not None and "started" in result.failure
    assert elapsed < 9.5, elapsed


# -- the output cap --------------------------------------------------------------------------------


def test_a_capped_cell_keeps_the_page_responsive(host: VixHost) -> None:
    result = host.run_cell("for i in range(200_000):\n    print(f'line {i:06}')",
                           env={"PYRELUNE_MAX_OUTPUT": ""})
    stdout = result.response["stdout"]
    assert stdout.startswith("line 000000\n") and stdout.endswith("line 199999\n")
    assert " bytes of stdout omitted ...]" in stdout
    assert len(result.stdout) <= 128 * 1024


def test_the_cap_can_be_raised(host: VixHost) -> None:
    result = host.run_cell("print('x' * 500_000)", env={"PYRELUNE_MAX_OUTPUT": "600000"})
    assert result.response["stdout"] == "x" * 500_000 + "\n"


# -- objects that only have HTML -------------------------------------------------------------------


def test_an_html_only_object_shows_as_readable_text(host: VixHost) -> None:
    source = """\
class Report:
    def _repr_html_(self):
        return ("<h3>Sales &amp; costs</h3><table><tr><th>city</th><th>total</th></tr>"
                "<tr><td>Oslo</td><td>1,200</td></tr><tr><td>Lima</td><td>80</td></tr></table>")
class Both:
    def __repr__(self):
        return "Both(plain)"
    def _repr_html_(self):
        return "<b>html</b>"
display(Report())
Both()
"""
    result = host.run_cell(source)
    assert result.shown == [
        ("stdout", "Sales & costs\n\ncity  total\nOslo  1,200\nLima  80"),
        ("stdout", "Both(plain)"),
    ], result


# -- a note under HOME, a timeout, sympy -------------------------------------------------------


@pytest.fixture
def vix_home(tmp_path: Path) -> Path:
    """A HOME where pyrelune is installed into Vix Note's global prefix, and a note in it."""
    home = tmp_path / "home"
    (home / ".vix" / "global" / "bin").mkdir(parents=True)
    (home / "notes").mkdir()
    (home / "notes" / "analysis.vixnote").write_text("{}")
    (home / "notes" / "data.csv").write_text("a,b\n1,2\n")
    return home


READ = "import os\nprint(os.getcwd())\nprint(open('data.csv').read().split()[0])"


def test_a_note_under_home_runs_beside_its_data(host: VixHost, vix_home: Path) -> None:
    note = vix_home / "notes" / "analysis.vixnote"
    result = host.run_cell(READ, note=str(note), env={"HOME": str(vix_home)})
    assert project_folder(note) == vix_home  # what `vix note` sends as workingDirectory
    assert result.response["stdout"] == f"{vix_home / 'notes'}\na,b\n", result


@pytest.mark.parametrize("marker", [".git", "vix.json"])
def test_a_home_that_is_a_project_of_its_own_is_honoured(
        host: VixHost, vix_home: Path, marker: str) -> None:
    (vix_home / marker).mkdir()
    source = "import os\nprint(os.getcwd())"
    result = host.run_cell(source, note=str(vix_home / "notes" / "analysis.vixnote"),
                           env={"HOME": str(vix_home)})
    assert result.response["stdout"] == f"{vix_home}\n", result


def test_a_prefix_outside_home_leaves_home_as_sent(host: VixHost, vix_home: Path,
                                                   tmp_path: Path) -> None:
    source = "import os\nprint(os.getcwd())"
    result = host.run_cell(source, note=str(vix_home / "notes" / "analysis.vixnote"),
                           env={"HOME": str(vix_home), "VIX_GLOBAL_PREFIX": str(tmp_path)})
    assert result.response["stdout"] == f"{vix_home}\n", result


@pytest.mark.slow  # waits out the runtime's deadline
def test_a_timeout_says_how_to_allow_more(host: VixHost) -> None:
    result = host.run_cell("import time\ntime.sleep(60)", env=DEADLINE_ENV)
    assert result.failure is not None
    head, _, advice = result.failure.partition("\n\n")
    # Where the cell was is said when its interrupt's traceback came within the grace, which a
    # loaded machine may not give it (how the line is kept: tests/unit/test_session.py).
    assert re.fullmatch(rf"Cell timed out after {DEADLINE} s( \(line 2\))?", head), head
    assert advice.startswith("To allow a cell more time, set PYRELUNE_TIMEOUT (seconds; 0: no "
                             "limit) where `vix note` is started. Vix Note itself stops every "
                             "cell after 10 s"), advice


def test_sympy_pretty_printing_is_jupyters_unicode_text(host: VixHost) -> None:
    pytest.importorskip("sympy")
    source = "from sympy import init_printing, sqrt, symbols\ninit_printing()\n" \
             "x = symbols('x')\nx**2 + sqrt(x)"
    for env in ({}, {"PYTHONIOENCODING": "ascii", "LC_ALL": "C"}):
        result = host.run_cell(source, env=env)
        # ipykernel's text/plain of the same cell (sympy 1.14), where the output is UTF-8
        assert result.response["outputs"] == [{"mime": "text/plain",
                                               "data": "      2\n√x + x "}], result
