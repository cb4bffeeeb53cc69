"""The one way tests start the runtime: the installed `pyrelune` console script.

Beside this interpreter, as a host finds it. Not `python -m pyrelune`, which puts the current
directory first on sys.path and so, started in the checkout, runs the checkout's code rather
than what is installed (the two differ in CI, which installs the package non-editable).
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The console script pip wrote for this environment.
SCRIPT = str(Path(sys.executable).parent / "pyrelune")


def runtime(*args: str) -> list[str]:
    """The command line that runs `pyrelune ARGS...` as installed."""
    return [SCRIPT, *args]
