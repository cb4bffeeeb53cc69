"""The examples in README.md and docs/, run as a reader would paste them: each prints what
the page shows it printing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: A `sh` or `python` block, then at once the `json` block that shows what it prints (no
#: block crosses a fence).
EXAMPLE = re.compile(r"```(sh|python)\n((?:(?!```).)*)```\s*(?:prints\s*)?```json\n"
                     r"((?:(?!```).)*)```", re.S)


def examples(page: Path) -> list[tuple[str, str, str]]:
    """(language, code, what it prints) of each example of `page` that runs pyrelune."""
    return [(language, code, shown) for language, code, shown
            in EXAMPLE.findall(page.read_text(encoding="utf-8")) if "pyrelune" in code]


EXAMPLES = [pytest.param(*example, id=f"{page.name}-{number}")
            for page in PAGES for number, example in enumerate(examples(page), 1)]


def messages(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_the_readme_shows_an_example_of_each_mode() -> None:
    codes = [code for _, code, _ in examples(REPO / "README.md")]
    assert len(codes) == 3
    assert "--mode lines" in codes[1] and '"--mode", "rpc"' in codes[2]
    assert "execute.input_reply" in codes[2] and "kernel.auth" in codes[2]
    assert len(EXAMPLES) > len(codes)  # the mode pages have theirs


@pytest.mark.parametrize(("language", "code", "shown"), EXAMPLES)
def test_an_example_prints_what_its_page_shows(language: str, code: str, shown: str,
                                               tmp_path: Path) -> None:
    assert "pip install" not in code and "venv" not in code  # these only run pyrelune
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    run = ["bash", "-c", code] if language == "sh" else [sys.executable, "-c", code]
    result = subprocess.run(run, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PATH": path}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    got, want = messages(result.stdout), messages(shown)
    # The kernel's response to a request and a cell's events come from two processes:
    # their mutual order may vary, what was sent may not.
    assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, want)), result.stdout
    assert got[-1] == want[-1]
