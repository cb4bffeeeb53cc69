"""The `pyrelune` console script.

With no arguments it is Vix Note's oneshot runtime, and nothing but that
path is imported. Any argument hands over to the full command line (typer).
"""

from __future__ import annotations

import atexit
import os
import sys

from pyrelune import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pyrelune.warm.route import Start

#: The lines kernel is started without the full command line: its host waits
#: for the first answer, and typer alone takes about 100 ms to import.
_LINES = {("--mode", "lines"), ("--mode=lines",)}
#: PYRELUNE_WARM values that leave warm start off; here, where a cold start reads it
#: before it imports anything of warm start's.
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


def main(warm: str | None = None) -> None:
    """`warm`: the launcher's warm-start setting (`vix install --warm`); $PYRELUNE_WARM wins."""
    if len(sys.argv) == 1:
        raw = start = None
        setting = os.environ.get("PYRELUNE_WARM", warm or "")
        if setting.lower() not in WARM_OFF and not os.isatty(0):
            from pyrelune.transports.stdio import read_all

            raw = read_all(0)
            served, start = _warm(raw, preload_names(setting))
            if served is not None:
                os._exit(served)  # answered by the warm runtime: nothing of ours to tear down
        from pyrelune.modes import oneshot

        status = oneshot.main(raw=raw)
        # The response is out and the worker's group is gone: once the exit
        # begins, nothing is left to do, and the interpreter's teardown of
        # its modules (about 4 ms, a tenth of a cell's run) would only delay
        # the host's EOF. The std streams are flushed first, as it would.
        sys.stdout.flush()
        sys.stderr.flush()
        if start is not None:
            start.spawn()  # first use: the cell has answered, so nothing competes with it
        atexit.register(os._exit, status)
        sys.exit(status)
    if tuple(sys.argv[1:]) in _LINES:
        import _signal

        # Its host sends SIGINT to interrupt a cell, and a click may come
        # before the kernel has started: ignored until there is a cell.
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        from pyrelune.modes import lines

        sys.exit(lines.main())
    from pyrelune.cli import jupyterargs

    if (connection_file := jupyterargs.connection_file(sys.argv[1:])) is not None:
        from pyrelune.modes import jupyter

        sys.exit(jupyter.main(connection_file))
    from pyrelune.cli import rpcargs

    # The rpc kernel's host waits for `kernel.ready` too: its options are read
    # without typer unless they need typer's judgement (see `rpcargs.parse`).
    if (served := rpcargs.start(sys.argv[1:])) is not None:
        sys.exit(served)
    from pyrelune.cli.app import run_app

    run_app()


# Warm start's front door. A cell that cannot gain from the preload runs cold,
# and when a warm process runs, that is decided here, before anything of
# pyrelune.warm is imported: such a cell (`print(2 + 3)`) costs what a cold
# start costs. Everything else goes on to pyrelune.warm.route.


def _warm(raw: bytes, preload: str) -> tuple[int | None, Start | None]:
    """What `route.run` answers for the request `raw`; a cell that cannot gain (`gains`)
    with the warm process's socket in place is cold without asking it.

    PYRELUNE_WARM_EVERY hands every cell to the warm process; with
    PYRELUNE_WARM_DEBUG, route makes all its checks, to say why a cell ran cold.
    """
    handed = (os.environ.get("PYRELUNE_WARM_EVERY", "").lower() not in WARM_OFF
              or gains(raw, preload))
    if not handed and not os.environ.get("PYRELUNE_WARM_DEBUG"):
        try:
            os.lstat(warm_paths(preload)[0])
            return None, None  # a warm process's (or one route refuses): nothing to start
        except OSError:
            pass  # none there (first use), or an error: route starts one, or says why not
    from pyrelune.warm import route

    return route.run(raw, preload, handed)


def preload_names(setting: str) -> str:
    """The comma-separated module names a setting (PYRELUNE_WARM, the launcher's) preloads."""
    return DEFAULT_PRELOAD if setting.strip().lower() in ("1", "on", "yes", "true") else ",".join(
        name.strip() for name in setting.split(",") if name.strip())


def gains(raw: bytes, preload: str) -> bool:
    """Whether the request `raw` may use a preloaded module, so that warm can be faster.

    Yes when its bytes hold the name of a preloaded module, a `%` (a magic),
    a computed import, or an import statement of a module outside the
    standard library; a cell without any (`print(2 + 3)`, `import math`) is
    faster cold, where no fork of a big process is on its way. Tests on the
    request as it came, without JSON decoding: a false yes costs only speed.
    """
    names = (name.partition(".")[0].encode() for name in preload.split(","))
    return (any(n in raw for n in names if n) or any(word in raw for word in _IMPORTING)
            or (b"import" in raw and _imports_beyond_stdlib(raw)))


def _imports_beyond_stdlib(raw: bytes) -> bool:
    """Whether an `import x` or `from x import y` in `raw` names a module outside the stdlib.

    Statements are found where they may start (see `_STATEMENT_STARTS`), so
    `import` inside other text is not one; an odd one (`import x\\`) counts.
    """
    pieces = [raw]
    for start in _STATEMENT_STARTS:
        pieces = [part for piece in pieces for part in piece.split(start)]
    stdlib = sys.stdlib_module_names
    for piece in pieces:
        words = piece.replace(b"\\t", b" ").replace(b"\\r", b" ").replace(b",", b" ").split()
        if len(words) < 2 or words[0] not in (b"import", b"from"):
            continue
        modules = words[1:2] if words[0] == b"from" else [  # not `as` nor what follows it
            word for i, word in enumerate(words[1:], 1) if b"as" not in (word, words[i - 1])]
        for module in modules:
            if module.partition(b".")[0].decode("ascii", "replace") not in stdlib:
                return True
    return False


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
