"""The launcher Vix Note executes for every cell: `<bin>/pyrelune`.

Vix Note `execl`s it with no arguments, no shell and no PATH lookup, so it
names this installation's interpreter by absolute path (a virtual
environment works without being activated: its `bin/python` finds its own
site-packages). It imports nothing but pyrelune's oneshot entry point; the
console script pip writes would also import `re`.

Two forms, chosen by the interpreter's path:
- a Python script with the interpreter as its shebang: one exec, no shell;
- a `/bin/sh` script that `exec`s the interpreter, when the path has
  whitespace (a shebang cannot quote) or is longer than 127 bytes (kernels
  before Linux 5.1 cut the shebang line at 128 bytes).
Measured with `bench/launcher_startup.py` (a whole `print(2 + 3)` cell): the
shell adds about 0.5 ms to some 27 ms, and pip's console script takes about
35 ms because of `re`.
"""

from __future__ import annotations

import shlex

MARKER = "# pyrelune launcher for Vix Note, written by `pyrelune vix install`."
SHEBANG_LIMIT = 127

# Python's first sys.path entry would be this launcher's folder (shared with
# other packages' commands) or, for `-c`, the current directory: neither may
# shadow pyrelune or the standard library.
_PROGRAM = """\
import sys
if not getattr(sys.flags, "safe_path", False):
    del sys.path[0]
from pyrelune.__main__ import main
sys.exit(main({warm}))
"""
#: How a launcher passes its warm-start setting: `main(warm='1')` (`vix install`'s default),
#: `main(warm='0')` (`--cold`), `main(warm='numpy,pandas')` (`--preload`).
_WARM = "warm="


def fits_shebang(interpreter: str) -> bool:
    """Whether `#!<interpreter>` works on every Unix kernel Vix Note runs on."""
    return (
        interpreter.startswith("/")
        and len(("#!" + interpreter).encode()) <= SHEBANG_LIMIT
        and not any(c.isspace() for c in interpreter)
    )


def render(interpreter: str, warm: str) -> str:
    """The launcher's text for an absolute interpreter path.

    `warm` (a preload list, "1" for the default one, "0" for off) is warm
    start's setting for every cell it runs, unless PYRELUNE_WARM says otherwise.
    """
    if not interpreter.startswith("/"):
        raise ValueError(f"interpreter path must be absolute: {interpreter!r}")
    if not warm or not all(c.isalnum() or c in "._,-" for c in warm):
        raise ValueError(f"warm start is 0, 1 or module names, not {warm!r}")
    program = _PROGRAM.format(warm=f"{_WARM}{warm!r}")
    if fits_shebang(interpreter):
        return f"#!{interpreter}\n{MARKER}\n{program}"
    return (
        f"#!/bin/sh\n{MARKER}\n"
        f"exec {shlex.quote(interpreter)} -c {shlex.quote(program)} \"$@\"\n"
    )


def warm_of(text: str) -> str:
    """The warm-start setting a launcher passes ("" when it has none: one written before
    warm start was on by default, which ran cells cold)."""
    at = text.find(f"main({_WARM}")
    if not is_launcher(text) or at < 0:
        return ""
    quoted = text[at + len(_WARM) + 5 :].split(")", 1)[0]
    return quoted.strip("'\"")


def is_launcher(text: str) -> bool:
    """Whether a file is a launcher this command wrote (and may replace or remove)."""
    return text.split("\n", 2)[1:2] == [MARKER]


def interpreter_of(text: str) -> str | None:
    """The interpreter a launcher starts, or None if `text` is not a launcher."""
    if not is_launcher(text):
        return None
    first, _, command = text.split("\n", 2)
    if first != "#!/bin/sh":
        return first[2:]
    words = shlex.split(command)
    return words[1] if words[:1] == ["exec"] else None
