"""The command itself: `python -m pyrelune`, a terminal on stdin, a lean hot path."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from support.launch import SCRIPT
from support.vixhost import PROTOCOL

REQUEST = b'{"source": "print(2 + 3)"}'


def test_python_m_pyrelune(tmp_path: Path) -> None:
    # Not from the checkout: `-m` and `-c` put the current directory first on sys.path.
    proc = subprocess.run([sys.executable, "-m", "pyrelune"], input=REQUEST,
                          capture_output=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    response = json.loads(proc.stdout)
    assert (response["protocol"], response["ok"], response["stdout"]) == (PROTOCOL, True, "5\n")


def test_no_arguments_on_a_terminal_prints_a_usage_hint() -> None:
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.run([SCRIPT], stdin=terminal, capture_output=True,
                              timeout=60)
    finally:
        os.close(terminal)
        os.close(controller)
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"echo '{\"source\": \"print(2 + 3)\"}' | pyrelune" in proc.stderr


# Runs the console script's entry point after dropping every module the hot path
# must not import (the interpreter's own start-up, e.g. an editable install's
# import hook, may have loaded some), then lists what pyrelune imported.
WATCH = """
import os, sys
FORBIDDEN = {"typer", "jsonschema", "json", "re", "enum", "dataclasses", "typing", "inspect",
             "asyncio", "traceback", "linecache", "ast", "click", "pathlib", "contextlib",
             "subprocess", "threading", "collections", "functools", "importlib.metadata"}
for name in list(sys.modules):
    if name in FORBIDDEN or name.split(".")[0] in FORBIDDEN:
        del sys.modules[name]
before = set(sys.modules)
sys.argv = ["pyrelune"]
from pyrelune.__main__ import main
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
os.write(2, repr(sorted(set(sys.modules) - before)).encode())
"""


HEAVY = {"typer", "jsonschema", "json", "re", "enum", "dataclasses", "typing", "inspect",
         "asyncio", "traceback", "linecache", "ast", "_ast"}


def test_the_hot_path_imports_only_what_it_needs(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", WATCH], input=REQUEST, capture_output=True,
                          timeout=60, cwd=tmp_path)
    assert json.loads(proc.stdout)["stdout"] == "5\n", proc.stderr
    imported = set(eval(proc.stderr))
    assert not imported & HEAVY, sorted(imported & HEAVY)
    assert {"pyrelune.modes.oneshot", "pyrelune.supervisor.session"} <= imported  # it did run
    assert "pyrelune.cli" not in imported  # the full command line's package (see __main__)
    # The worker side loads in the worker only.
    assert not {"pyrelune.worker.runtime", "pyrelune.worker.kernelloop"} & imported


def test_the_worker_imports_only_what_the_cell_needs(tmp_path: Path) -> None:
    names = ", ".join(repr(m) for m in sorted(HEAVY))
    # One expression, as a plain cell often is: such a cell needs no syntax tree.
    cell = (f"print(sorted(m for m in __import__('sys').modules "
            f"if m.split('.')[0] in {{{names}}}))")
    request = json.dumps({"source": cell}).encode()
    proc = subprocess.run([sys.executable, "-c", WATCH], input=request, capture_output=True,
                          timeout=60, cwd=tmp_path)
    assert json.loads(proc.stdout)["stdout"] == "[]\n", proc.stdout
