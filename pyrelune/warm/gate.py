"""Warm start's gate: its settings, its socket's name, and whether a cell may gain.

Imported on the oneshot path whenever a warm setting is given, before anything
else of warm start: with a warm process running, a cell that cannot gain from
the preload (`print(2 + 3)`) goes cold from what this module says, at what a
cold start costs (see `pyrelune.__main__`). So it imports nothing but `os`
and `sys` (and `pyrelune.settings` for a bad value, to refuse it); `route`
and the rest of warm start import it, never the reverse.

It has the rules of the variables start-up reads (`settings` has the others):
PYRELUNE_WARM (or the launcher's setting, see `vix install`) by `preload_names`,
PYRELUNE_WARM_EVERY and PYRELUNE_WARM_DEBUG by `flag`.
"""

from __future__ import annotations

import os
import sys

from pyrelune import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

#: The words of a switch (PYRELUNE_WARM, a `flag`), in any case, spaces around ignored.
OFF = ("", "0", "off", "no", "false")
ON = ("1", "on", "yes", "true")
#: What PYRELUNE_WARM=1 (or `vix install` without `--preload`) preloads: what is installed.
DEFAULT_PRELOAD = "numpy,pandas,matplotlib"
#: 2**64 - 59: what names a warm process's socket (see `warm_paths`).
_NAME_PRIME = 0xFFFFFFFFFFFFFFC5
#: The longest socket path: `sun_path` holds 108 bytes, its NUL included on some systems.
SOCKET_PATH_MAX = 107
#: What `warm_paths` adds to the folder for the socket's name.
_SOCKET_NAME = len("/warm-0123456789abcdef.sock")
#: What a cell may hold that imports a preloaded module without naming it: an
#: IPython magic (`%pylab`, `%run script.py`), an import by a name computed at run
#: time; and, checked statement by statement (`_imports_beyond_stdlib`), an import
#: of anything but the standard library (seaborn, the user's own module).
_IMPORTING = (b"%", b"__import__", b"import_module")
#: Where a statement may start in the request's JSON text: a line, a `;`, the
#: string, a compound statement's `:`.
_STATEMENT_STARTS = (b"\\n", b";", b'"', b":")


def launcher_settings(setting: str) -> tuple[str | None, bool, str | None]:
    """What the launcher reads before a cell: the preload list `setting` names (None:
    warm start is off), PYRELUNE_WARM_EVERY, and why the cell is refused, if a
    warm-start variable breaks its rule (oneshot answers `invalid_configuration`).

    PYRELUNE_WARM_IDLE is the warm process's, checked here too (when set) so
    that a bad one is said to the cell rather than left to the warm process.
    """
    try:
        preload = preload_names(setting)
        if preload is None:
            return None, False, None
        every = flag("PYRELUNE_WARM_EVERY")
        flag("PYRELUNE_WARM_DEBUG")
        if os.environ.get("PYRELUNE_WARM_IDLE", "").strip():
            from pyrelune import settings

            settings.warm_idle()
    except ValueError as refusal:  # settings.SettingError: nothing else parses here
        return None, False, str(refusal)
    return preload, every, None


def preload_names(setting: str, name: str = "PYRELUNE_WARM") -> str | None:
    """The comma-separated module names a warm setting (PYRELUNE_WARM, the launcher's)
    preloads; None: warm start is off.

    A switch (`OFF`; `ON`: `DEFAULT_PRELOAD`), else module names, comma-separated,
    spaces around ignored; else SettingError, which names the setting: `name`.
    """
    word = setting.strip().lower()
    if word in OFF:
        return None
    if word in ON:
        return DEFAULT_PRELOAD
    names = [part.strip() for part in setting.split(",") if part.strip()]
    if not names or not all(part.isidentifier() for module in names
                            for part in module.split(".")):
        _refuse(name, f"0 (off), 1 ({DEFAULT_PRELOAD}) or module names, comma-separated",
                setting)
    return ",".join(names)


def flag(name: str) -> bool:
    """The switch $`name` (PYRELUNE_WARM_EVERY, PYRELUNE_WARM_DEBUG), off when unset."""
    value = os.environ.get(name, "")
    word = value.strip().lower()
    if word not in ON and word not in OFF:
        _refuse(name, "1 or 0 (or on/off, yes/no, true/false)", value)
    return word in ON


def _refuse(name: str, rule: str, text: str) -> NoReturn:
    from pyrelune import settings

    raise settings.broken(name, rule, text)


def cold(reason: str) -> int | None:
    """None (run it cold), said on stderr with PYRELUNE_WARM_DEBUG."""
    if flag("PYRELUNE_WARM_DEBUG"):
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

    Else too when $XDG_RUNTIME_DIR is so long that a socket's path in it
    would not fit `sun_path` (`SOCKET_PATH_MAX`): binding it would fail.
    Created 0700 when missing, and checked before use (the user's own, no
    one else let in), by pyrelune.warm.place.
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    folder = os.path.join(runtime, "pyrelune")
    if runtime.startswith("/") and len(os.fsencode(folder)) + _SOCKET_NAME <= SOCKET_PATH_MAX:
        return folder
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
