"""Warm start's gate: its settings, its socket's name, and whether a cell may gain.

Imported on the oneshot path whenever a warm setting is given, before anything
else of warm start: with a warm process running, a cell that cannot gain from
the preload (`print(2 + 3)`) goes cold from what this module says, at what a
cold start costs (see `pyrelune.cli.entry`). So it imports nothing but `os`
and `sys`; `route` and the rest of warm start import it, never the reverse.
"""

from __future__ import annotations

import os
import sys

from pyrelune import __version__

#: PYRELUNE_WARM values that leave warm start off.
WARM_OFF = ("", "0", "off", "no", "false")
#: What PYRELUNE_WARM=1 (or a bare `--warm`) preloads: as much of these as is installed.
DEFAULT_PRELOAD = "numpy,pandas,matplotlib"
#: 2**64 - 59: what names a warm process's socket (see `warm_paths`).
_NAME_PRIME = 0xFFFFFFFFFFFFFFC5
#: What a cell may hold that imports a preloaded module without naming it: an
#: IPython magic (`%pylab`, `%run script.py`), an import by a name computed at run
#: time; and, checked statement by statement (`_imports_beyond_stdlib`), an import
#: of anything but the standard library (seaborn, the user's own module).
_IMPORTING = (b"%", b"__import__", b"import_module")
#: Where a statement may start in the request's JSON text: a line, a `;`, the
#: string, a compound statement's `:`.
_STATEMENT_STARTS = (b"\\n", b";", b'"', b":")


def preload_names(setting: str) -> str:
    """The comma-separated module names a setting (PYRELUNE_WARM, the launcher's) preloads."""
    return DEFAULT_PRELOAD if setting.strip().lower() in ("1", "on", "yes", "true") else ",".join(
        name.strip() for name in setting.split(",") if name.strip())


def cold(reason: str) -> int | None:
    """None (run it cold), said on stderr with PYRELUNE_WARM_DEBUG."""
    if os.environ.get("PYRELUNE_WARM_DEBUG"):
        os.write(2, f"pyrelune warm: cold ({reason})\n".encode("utf-8", "replace"))
    return None


def gains(raw: bytes, preload: str, plain: frozenset[bytes] | None = None) -> bool:
    """Whether the request `raw` may use a preloaded module, so that warm can be faster.

    Yes when its bytes hold the name of a preloaded module, a `%` (a magic),
    a computed import, or an import statement of a module outside the
    standard library that is not known to import nothing preloaded (`plain`:
    as the warm process published them, see `warm.reach`; read when None);
    a cell without any (`print(2 + 3)`, `import math`, `import pygments`) is
    faster cold, where no copy of a big process is on its way. Tests on the
    request as it came, without JSON decoding: a false yes costs only speed.
    """
    names = (name.partition(".")[0].encode() for name in preload.split(","))
    if any(n in raw for n in names if n) or any(word in raw for word in _IMPORTING):
        return True
    beyond = _imports_beyond_stdlib(raw) if b"import" in raw else set()
    if not beyond:
        return False
    return not beyond <= (_published_plain(preload) if plain is None else plain)


def _imports_beyond_stdlib(raw: bytes) -> set[bytes]:
    """The top-level names of the modules outside the stdlib that an `import x` or
    `from x import y` in `raw` names.

    Statements are found where they may start (see `_STATEMENT_STARTS`), so
    `import` inside other text is not one; an odd one (`import x\\`) counts.
    """
    pieces = [raw]
    for start in _STATEMENT_STARTS:
        pieces = [part for piece in pieces for part in piece.split(start)]
    stdlib = sys.stdlib_module_names
    found = set()
    for piece in pieces:
        words = piece.replace(b"\\t", b" ").replace(b"\\r", b" ").replace(b",", b" ").split()
        if len(words) < 2 or words[0] not in (b"import", b"from"):
            continue
        modules = words[1:2] if words[0] == b"from" else [  # not `as` nor what follows it
            word for i, word in enumerate(words[1:], 1) if b"as" not in (word, words[i - 1])]
        for module in modules:
            top = module.partition(b".")[0]
            if top.decode("ascii", "replace") not in stdlib:
                found.add(top)
    return found


def _published_plain(preload: str) -> frozenset[bytes]:
    """The modules the warm process of `preload` found to gain nothing (none if unknown)."""
    try:
        with open(plain_path(preload), "rb") as published:
            return frozenset(published.read(1 << 20).split())
    except OSError:
        return frozenset()


def plain_path(preload: str) -> str:
    """Where the warm process of `preload` publishes the modules that gain nothing from it."""
    return warm_paths(preload)[0].removesuffix(".sock") + ".plain"


def warm_folder() -> str:
    """Where warm sockets live: $XDG_RUNTIME_DIR/pyrelune, else /tmp/pyrelune-<uid>.

    Created 0700 when missing, and checked before use, by pyrelune.warm.place.
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        return os.path.join(runtime, "pyrelune")
    return f"/tmp/pyrelune-{os.getuid()}"


def warm_paths(preload: str) -> tuple[str, str]:
    """The warm process's socket and lock: one per environment, Python, pyrelune and preloads.

    Two environments (or two preload lists) never share a warm process. Named
    by those read as one number, modulo the largest 64-bit prime: one step
    in C, on the path of every cell (no hashlib import, no loop per byte).
    """
    key = f"{sys.prefix}\0{sys.version}\0{__version__}\0{preload}".encode("utf-8",
                                                                             "surrogateescape")
    value = int.from_bytes(key, "little") % _NAME_PRIME
    base = os.path.join(warm_folder(), f"warm-{value:016x}")
    return base + ".sock", base + ".lock"
