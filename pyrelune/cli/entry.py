"""What launchers that `pyrelune vix install` wrote before the command moved to
`pyrelune.__main__` import (they still run; a new `vix install` rewrites them)."""

from pyrelune.__main__ import main

__all__ = ["main"]
