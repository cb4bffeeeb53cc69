"""matplotlib's font cache, built by `vix install` and `vix doctor` rather than by a first plot.

matplotlib builds the cache on its first use in an environment, which on a
busy machine took most of a cell's 8.5 s: a user's first plot would time
out. Built in a child process of this environment's Python, so that a broken
matplotlib cannot take the command down with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

#: Prints what happened as one JSON object; `built`: the cache file is new or was rewritten.
_SCRIPT = """
import glob, json, os, time
start = time.monotonic()
try:
    import matplotlib
except ImportError:
    print(json.dumps(None))
    raise SystemExit
pattern = os.path.join(matplotlib.get_cachedir(), "fontlist-*.json")
before = {name: os.stat(name).st_mtime_ns for name in glob.glob(pattern)}
import matplotlib.font_manager as fm
path = os.path.join(matplotlib.get_cachedir(), f"fontlist-v{fm.FontManager.__version__}.json")
saved = os.path.isfile(path)
print(json.dumps({"version": matplotlib.__version__, "path": path, "saved": saved,
                  "built": saved and before.get(path) != os.stat(path).st_mtime_ns,
                  "seconds": time.monotonic() - start}))
"""
#: A font cache takes seconds to build, minutes on a very slow disk.
_PATIENCE = 600.0


@dataclass(frozen=True)
class FontCache:
    """What preparing the cache found; `problem` is set when it could not be made."""

    version: str = ""
    path: str = ""
    built: bool = False
    seconds: float = 0.0
    problem: str = ""

    def describe(self) -> str:
        """One line for the user: where the cache is, and whether it was built now."""
        if self.problem:
            return f"matplotlib's font cache could not be prepared ({self.problem})"
        when = f"built now, in {self.seconds:.1f} s" if self.built else "already built"
        return f"matplotlib {self.version}'s font cache is ready ({when}: {self.path})"


def prepare(python: str = sys.executable) -> FontCache | None:
    """Build the font cache of the matplotlib `python` imports; None when it has none."""
    try:
        done = subprocess.run([python, "-c", _SCRIPT], capture_output=True, text=True,
                              timeout=_PATIENCE, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return FontCache(problem=str(exc))
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        reason = (done.stderr.strip().splitlines() or [f"status {done.returncode}"])[-1]
        return FontCache(problem=reason)
    found = json.loads(lines[-1])
    if found is None:
        return None
    if not found["saved"]:
        return FontCache(found["version"], found["path"], problem=f"{found['path']} could not "
                         "be written: each cell's first plot builds it again")
    return FontCache(found["version"], found["path"], found["built"], found["seconds"])
