"""How a fork of the warm process becomes what a cold runtime would be for its launcher.

Both the served copy (`served`) and a worker forked ahead of its cell
(`ahead`) take on the launcher's environment, umask, argv and sys.path; a
worker also gets the fresh random state a new process has.
"""

from __future__ import annotations

import os
import sys


def take_on(environ: dict[bytes, bytes], umask: int, argv0: bytes, path: list[str]) -> None:
    """Become the launcher, as a cold runtime (and its worker) is it: its environment, umask,
    argv and sys.path."""
    os.environb.clear()
    os.environb.update(environ)
    os.umask(umask)
    sys.argv = [argv0.decode("utf-8", "surrogateescape")]
    sys.path[:] = path + [p for p in sys.path if p not in path]  # and what the preload added


def reseed() -> None:
    """Fresh random state, as a new process has (Python's `random` reseeds itself at fork)."""
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()
