"""What a new user meets first, through the real `pyrelune` process: its help, `run`,
a request meant for another mode, `vix install` and `vix doctor` at a terminal. (What the
Vix Note page then shows is tests/e2e/test_page.py's.)"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import warmhost
from support.launch import SCRIPT

from pyrelune.vix import doctor

TIMEOUT = 120
#: What typer and pydantic print when the help is not written for people.
NOISE = ("<bool>", "{file}", "<list[str]>", "Value error", "╭", "│", "[default: no-")
HELPS = [[], ["run"], ["validate"], ["vix"], ["vix", "install"], ["vix", "uninstall"],
         ["vix", "doctor"], ["warm"], ["warm", "start"], ["warm", "status"], ["warm", "stop"],
         ["jupyter"], ["jupyter", "install"], ["jupyter", "uninstall"]]


def pyrelune(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
             stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, *args], input=stdin.decode(), capture_output=True,
                          text=True, timeout=TIMEOUT, env=env, cwd=cwd)


@pytest.mark.parametrize("command", HELPS, ids=" ".join)
def test_help_reads_as_plain_text(command: list[str]) -> None:
    result = pyrelune(*command, "--help", env={**os.environ, "COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Usage: pyrelune {' '.join(command)}".rstrip())
    assert not [word for word in NOISE if word in result.stdout], result.stdout
    cut = [line for line in result.stdout.splitlines() if line.endswith("...")
           and not line.endswith("]...")]  # a usage's `[ARGS]...` is not a summary cut short
    assert cut == [], result.stdout
    _, _, arguments = result.stdout.partition("\nArguments:\n")
    entries = [line for line in arguments.split("\n\n")[0].splitlines()
               if not line.startswith("   ")]  # not an entry's wrapped line
    for entry in entries:  # each says what it is
        name, _, said = entry.strip().partition("  ")
        assert said.strip().removesuffix("[required]").strip(), (name, result.stdout)


def test_each_jupyter_command_says_what_it_does_itself() -> None:
    """uninstall's --sys-prefix removes: it starts no kernel sooner, as install's says."""
    text = pyrelune("jupyter", "uninstall", "--help", env={**os.environ, "COLUMNS": "80"}).stdout
    assert "90 ms" not in text and "Print what would be removed" in text


def test_the_help_gives_the_real_defaults_and_every_command() -> None:
    text = pyrelune("--help", env={**os.environ, "COLUMNS": "200"}).stdout
    assert "Default: $PYRELUNE_TIMEOUT, else 8.5." in text
    assert "or 9" not in text
    for command in ("run", "validate", "vix", "warm"):
        assert f"\n  {command} " in text, text


def test_a_bad_option_value_is_a_usage_error_in_words() -> None:
    result = pyrelune("--mode", "foo")
    assert result.returncode == 2
    assert "Invalid value for '--mode': 'foo' is not one of" in result.stderr, result.stderr
    assert not [word for word in NOISE if word in result.stderr]


@pytest.mark.parametrize(("typed", "meant"), [(["jupytr", "install"], "'jupyter'"),
                                               (["warm", "stat"], "'status'")])
def test_a_mistyped_command_gets_one_suggestion(typed: list[str], meant: str) -> None:
    """click (8.4 on) and typer (0.20 on) each suggest a close name; it is said once."""
    result = pyrelune(*typed)
    assert result.returncode == 2
    assert result.stderr.count("Did you mean") == 1 and meant in result.stderr, result.stderr


def test_the_oneshot_response_ends_with_a_newline() -> None:
    result = pyrelune(stdin=b'{"source": "print(2 + 3)"}')
    assert result.stdout.endswith("}\n") and result.stdout.count("\n") == 1
    assert json.loads(result.stdout)["stdout"] == "5\n"


@pytest.mark.parametrize(("request_text", "mode"), [
    ('{"id": "1", "type": "execute", "code": "1 + 1"}', "lines"),
    ('{"kind": "request", "id": 1, "method": "execute.cell", "params": {"source": "1"}}', "rpc"),
])
def test_a_request_for_another_mode_says_which_mode_reads_it(request_text: str,
                                                              mode: str) -> None:
    response = json.loads(pyrelune(stdin=request_text.encode()).stdout)
    assert response["error"]["code"] == "invalid_request"
    message = response["error"]["message"]
    assert f"this is a request for the {mode} kernel" in message, message
    assert f"`pyrelune --mode {mode}` reads" in message
    assert '{"source": "print(2 + 3)"}' in message


# -- pyrelune run ------------------------------------------------------------------------------


def test_run_gives_the_file_its_own_argv_and_folder(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("import os, sys\nprint(sys.argv)\nprint(os.getcwd())\n")
    result = pyrelune("run", str(script), "a", "-x", "--flag", cwd=Path("/"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{['script.py', 'a', '-x', '--flag']}\n{tmp_path}\n"


def test_run_prints_a_files_output_as_text_and_its_response_with_json(tmp_path: Path) -> None:
    """As `run` prints a notebook's: output on stdout, the traceback on stderr, status 1."""
    script = tmp_path / "fails.py"
    script.write_text("import sys\nprint('before')\nprint('warned', file=sys.stderr)\n"
                      "display({'k': 1})\n1 / 0\n")
    result = pyrelune("run", str(script))
    assert result.returncode == 1
    assert result.stdout == "before\n{'k': 1}\n"
    assert result.stderr.startswith("warned\nTraceback (most recent call last):\n")
    assert result.stderr.endswith("ZeroDivisionError: division by zero\n")
    machine = pyrelune("run", "--json", str(script))
    assert machine.returncode == 1
    response = json.loads(machine.stdout)
    assert response["protocol"] == "vix-note-extension-1" and response["ok"] is False
    assert response["error"]["code"] == "python_runtime_error"


def test_run_says_when_a_file_ran_out_of_time(tmp_path: Path) -> None:
    script = tmp_path / "slow.py"
    script.write_text("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    result = pyrelune("run", "--timeout", "0.5", str(script))
    assert result.returncode == 1
    assert result.stdout == "started\n"
    assert result.stderr.rstrip().endswith(
        "(line 3) (--timeout SECONDS allows more; 0: no limit)"), result.stderr


def test_run_reads_a_file_as_python_reads_a_script(tmp_path: Path) -> None:
    script = tmp_path / "bom.py"
    script.write_bytes(b"\xef\xbb\xbfprint('with a BOM')\n")
    assert pyrelune("run", str(script)).stdout == "with a BOM\n"
    script.write_bytes(b"print('\xff')\n")
    result = pyrelune("run", str(script))
    assert result.returncode == 2
    assert f"{script} is not UTF-8 text (invalid start byte at byte 7)" in result.stderr


NOTEBOOK = {
    "nbformat": 4, "nbformat_minor": 5, "metadata": {},
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "not code"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["import sys\n", "x = 6\n", "print(sys.argv[1:])\n", "x * 7"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "%time y = x + 1\nprint('y is', y)\nopen('data.txt').read()"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "print(y)\n1 / 0"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "print('never')"},
    ],
}


def test_run_runs_a_notebooks_code_cells_in_one_namespace(tmp_path: Path) -> None:
    notebook = tmp_path / "analysis.ipynb"
    notebook.write_text(json.dumps(NOTEBOOK))
    (tmp_path / "data.txt").write_text("beside the notebook")
    result = pyrelune("run", str(notebook), "one", cwd=Path("/"))
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["['one']", "42"]
    assert "y is 7" in lines and "'beside the notebook'" in lines and "7" in lines
    assert "never" not in result.stdout
    assert "ZeroDivisionError: division by zero" in result.stderr
    assert result.stderr.rstrip().endswith("(in code cell 3 of 4: the cells after it did not run)")


def test_run_json_is_for_a_python_file(tmp_path: Path) -> None:
    notebook = tmp_path / "analysis.ipynb"
    notebook.write_text(json.dumps(NOTEBOOK))
    result = pyrelune("run", "--json", str(notebook))
    assert result.returncode == 2
    assert "applies to a Python file" in result.stderr


def test_run_refuses_a_notebook_it_cannot_read(tmp_path: Path) -> None:
    notebook = tmp_path / "broken.ipynb"
    notebook.write_text("null")
    result = pyrelune("run", str(notebook))
    assert result.returncode == 2
    assert result.stderr == f'error: {notebook}: not a notebook: no list of "cells" ' \
                            "(nbformat 4 is read)\n"


# -- pyrelune vix install / doctor at a terminal -----------------------------------------------


@pytest.fixture
def user(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of a user whose HOME, Vix prefix and runtime folder are fresh: the
    warm process the doctor starts (warm start is on by default) is ended after the test."""
    home = tmp_path / "home"
    home.mkdir()
    with warmhost.own_runtime() as runtime:
        yield {**os.environ, "HOME": str(home), "VIX_GLOBAL_PREFIX": str(tmp_path / "prefix"),
               "XDG_RUNTIME_DIR": str(runtime)}


def test_a_dry_run_into_a_closed_pipe_ends_quietly(user: dict[str, str]) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # as `| head` does once it has read enough
    try:
        result = subprocess.run([SCRIPT, "vix", "install", "--dry-run"], env=user,
                                stdout=writer, stderr=subprocess.PIPE, timeout=TIMEOUT)
    finally:
        os.close(writer)
    assert result.returncode == 1
    assert result.stderr == b""


def test_install_without_home_refuses_to_guess(user: dict[str, str], tmp_path: Path) -> None:
    env = {k: v for k, v in user.items() if k not in ("HOME", "VIX_GLOBAL_PREFIX")}
    result = pyrelune("vix", "install", env=env, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("error: HOME is not set"), result.stderr
    assert "--prefix" in result.stderr
    assert not (tmp_path / ".vix").exists()
    enabled = pyrelune("vix", "install", "--enable", "--prefix", str(tmp_path / "p"), env=env,
                       cwd=tmp_path)
    assert enabled.returncode == 1 and "HOME is not set" in enabled.stderr
    assert not (tmp_path / "p").exists() and not (tmp_path / ".vix").exists()


def test_a_preload_that_cannot_be_imported_is_refused(user: dict[str, str]) -> None:
    result = pyrelune("vix", "install", "--warm", "--preload", "colorsys,nosuchmodule", env=user)
    assert result.returncode == 1
    assert result.stderr.startswith("error: --preload: nosuchmodule cannot be imported by "), \
        result.stderr
    assert not Path(user["VIX_GLOBAL_PREFIX"]).exists()


def test_install_and_doctor_build_matplotlibs_font_cache(user: dict[str, str]) -> None:
    pytest.importorskip("matplotlib")
    env = {k: v for k, v in user.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME")}
    installed = pyrelune("vix", "install", env=env)
    assert installed.returncode == 0, installed.stderr
    assert "font cache is ready (built now, in " in installed.stdout, installed.stdout
    cache = Path(env["HOME"]) / ".cache" / "matplotlib"
    assert list(cache.glob("fontlist-*.json")), list(cache.iterdir())
    doctor = pyrelune("vix", "doctor", env=env)
    assert doctor.returncode == 0, doctor.stdout
    plots = next(line for line in doctor.stdout.splitlines() if line.startswith("ok   plots"))
    assert "font cache is ready (already built" in plots
    if not os.environ.get("PYRELUNE_WARM") and all(
            importlib.util.find_spec(name) for name in ("numpy", "pandas")):
        # Warm start is on by default: the doctor's cell was served by its process.
        assert "ok   warm start: on (the launcher): warm process " in doctor.stdout, \
            doctor.stdout


def test_doctor_says_that_cells_cannot_plot_without_matplotlib() -> None:
    check = doctor.plots_check("", None)
    assert (check.passed, check.warning) == (True, True)
    assert check.line().startswith("warn plots: matplotlib is not installed in this "
                                   "environment: cells cannot plot\n      fix: pip install "
                                   "matplotlib")


def test_install_and_doctor_say_what_the_page_shows_until_it_reloads(
        user: dict[str, str]) -> None:
    said = pyrelune("vix", "install", env=user).stdout
    steps = ["until then Python cells have no Run button, and the page does not say why",
             "Reload them from the page's extension panel (or /api/extensions/reload)",
             "the menu then offers Python cells, but a cell's Run button appears only after "
             "the page itself is reloaded",
             "reloading the page reopens the note from disk, so outputs not yet saved are lost"]
    doctor = pyrelune("vix", "doctor", env=user).stdout
    for text in (said, doctor):
        at = [text.find(step) for step in steps]
        assert -1 not in at and at == sorted(at), text
