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
        raw = start = started = None
        setting = os.environ.get("PYRELUNE_WARM", warm or "")
        if setting.lower() not in WARM_OFF and not os.isatty(0):
            from pyrelune.transports import stdio

            # A closed stream, or a request too large, is oneshot's to answer.
            if not (stdio.closed(0) or stdio.closed(1)):
                raw = stdio.read_all(0, stdio.MAX_REQUEST)
                if len(raw) <= stdio.MAX_REQUEST:
                    served, start, started = _warm(raw, preload_names(setting))
                    if served is not None:
                        os._exit(served)  # answered by the warm runtime: nothing of ours left
        from pyrelune.modes import oneshot

        status = oneshot.main(raw=raw, started=started)
        # The response is out and the worker's group is gone: once the exit
        # begins, nothing is left to do, and the interpreter's teardown of
        # its modules (about 4 ms, a tenth of a cell's run) would only delay
        # the host's EOF. The std streams are flushed first, as it would.
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the host started us with it closed
                stream.flush()
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


def _warm(raw: bytes, preload: str) -> tuple[int | None, Start | None, float | None]:
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
            return None, None, None  # a warm process's (or one route refuses): nothing to start
        except OSError:
            pass  # none there (first use), or an error: route starts one, or says why not
    from pyrelune.warm import route

    return route.run(raw, preload, handed)


def preload_names(setting: str) -> str:
    """The comma-separated module names a setting (PYRELUNE_WARM, the launcher's) preloads."""
    return DEFAULT_PRELOAD if setting.strip().lower() in ("1", "on", "yes", "true") else ",".join(
        name.strip() for name in setting.split(",") if name.strip())


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
