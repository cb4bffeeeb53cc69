"""The notes saying what was left out: each worded in one place, loaded only when needed."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pyrelune
from pyrelune.shaping import Omitted

PACKAGE = Path(pyrelune.__file__).parent
#: Pieces only a note's wording has (a plain "omitted" is also the CLI's help).
WORDINGS = ("omitted ...]", "omitted: ", "displays were not shown", "were dropped while")


def test_every_omitted_note_is_worded_in_notes_only() -> None:
    elsewhere = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "shaping" / "notes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and any(
                    wording in node.value for wording in WORDINGS):
                elsewhere.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert elsewhere == []


def test_the_check_sees_a_note_in_an_f_string() -> None:
    tree = ast.parse('f"[... {n:,} displayed outputs omitted ...]"')
    assert any(isinstance(node, ast.Constant) and "omitted ...]" in str(node.value)
               for node in ast.walk(tree))


def test_an_omitted_marker_words_its_displays_and_streams() -> None:
    marker = Omitted()
    assert marker.displays_text() is None and marker.text("stdout") is None
    marker.displays = 1200
    marker.bytes["stderr"] = 5
    assert marker.displays_text() == "[... 1,200 displayed outputs omitted ...]\n"
    assert marker.text("stderr") == "\n[... 5 bytes of stderr omitted ...]\n"


# Output that fits, through the cap and every codec's rendering of it, in a fresh
# interpreter; then output over the cap.
LOADS = """
import sys
from pyrelune.protocols import lines, vixnote
from pyrelune.shaping import OutputBudget, clip
from pyrelune.wire.events import Display, Stream

def render(budget):
    lines.cell_response("1", budget, None)
    vixnote.respond(budget, None, "1")
    clip("short", 100)

budget = OutputBudget(1 << 16)
budget.add(Stream("stdout", "fits\\n"))
budget.add(Display({"text/plain": "'x'"}, {}))
render(budget)
print("pyrelune.shaping.notes" in sys.modules)
for _ in range(100):
    budget.add(Display({"text/plain": "x" * 1000}, {}))
    budget.add(Stream("stdout", "y" * 1000))
render(budget)
print("pyrelune.shaping.notes" in sys.modules)
"""


def test_output_that_fits_never_loads_the_notes() -> None:
    done = subprocess.run([sys.executable, "-c", LOADS], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.split() == ["False", "True"], done.stderr
