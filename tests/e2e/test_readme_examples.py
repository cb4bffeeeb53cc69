"""The README's examples, run as a reader would paste them into a shell: each prints what
the README says it prints."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

README = (Path(__file__).resolve().parent.parent.parent / "README.md").read_text("utf-8")
#: A `sh` block, then at once the `json` block that shows what it prints (neither crosses a fence).
EXAMPLE = re.compile(r"```sh\n((?:(?!```).)*)```\s*```json\n((?:(?!```).)*)```", re.S)


def examples() -> list[tuple[str, str]]:
    return [(command, shown) for command, shown in EXAMPLE.findall(README)
            if "pyrelune" in command]


def messages(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_the_readme_shows_an_example_of_each_mode() -> None:
    commands = [command for command, _ in examples()]
    assert len(commands) == 3
    assert "--mode lines" in commands[1] and "--mode rpc" in commands[2]


@pytest.mark.parametrize(("command", "shown"), examples(), ids=["oneshot", "lines", "rpc"])
def test_an_example_prints_what_the_readme_shows(command: str, shown: str,
                                                 tmp_path: Path) -> None:
    assert "pip" not in command  # these examples only run pyrelune
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "PATH": path}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    got, want = messages(result.stdout), messages(shown)
    # The kernel's response to a request and a cell's events come from two processes:
    # their mutual order may vary, what was sent may not.
    key = json.dumps
    assert sorted(map(key, got)) == sorted(map(key, want)), result.stdout
    assert got[-1] == want[-1]
