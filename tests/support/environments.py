"""A fresh virtual environment for an install test, pyrelune asked of no index for its
dependencies: it holds links to this environment's packages (pip among them), pyrelune's
excepted, so that pip finds them installed and installs only pyrelune."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

#: Making the environment, on a busy 2-core machine.
TIMEOUT = 240


def fresh_environment(folder: Path) -> Path:
    """A new virtual environment in `folder` holding this one's packages but pyrelune; its
    Python. Links, not copies: pip finds them installed, so it asks no index for them."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True,
                   timeout=TIMEOUT, cwd=folder.parent, capture_output=True)
    python = folder / "bin" / "python"
    target = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, timeout=TIMEOUT, cwd=folder, capture_output=True, text=True).stdout.strip())
    for here in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        for entry in Path(here).iterdir():
            if "pyrelune" not in entry.name.lower() and not (target / entry.name).exists():
                (target / entry.name).symlink_to(entry)
    return python
