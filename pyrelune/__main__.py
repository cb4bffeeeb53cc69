"""The `pyrelune` command, and `python -m pyrelune`.

With no arguments it is Vix Note's oneshot runtime, and nothing but that
path is imported. Any argument hands over to the full command line (typer,
`cli/app.py`). It lives here, not in `cli/`, so that a oneshot cell does not
load the `cli` package (about 0.4 M instructions, 1% of its start).
"""

from __future__ import annotations

import atexit
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pyrelune.warm.route import Start

#: The lines kernel is started without the full command line: its host waits
#: for the first answer, and typer alone takes about 100 ms to import.
_LINES = {("--mode", "lines"), ("--mode=lines",)}


def main(warm: str | None = None) -> None:
    """`warm`: the launcher's warm-start setting (`vix install`: "1", or "0" with `--cold`);
    $PYRELUNE_WARM wins."""
    if len(sys.argv) == 1:
        raw = start = started = refusal = None
        setting = os.environ.get("PYRELUNE_WARM", warm or "")
        # Unset, or "0" (a `--cold` launcher's), warm start is off without a look at its
        # gate (see pyrelune.warm.gate): a cold launcher imports what `main()` does.
        if setting not in ("", "0") and not os.isatty(0):
            from pyrelune.warm import gate

            preload, every, refusal = gate.launcher_settings(setting)
            if preload is not None:
                from pyrelune import MAX_REQUEST
                from pyrelune.transports import stdio

                # A closed stream, or a request too large, is oneshot's to answer.
                if not (stdio.closed(0) or stdio.closed(1)):
                    raw = stdio.read_all(0, MAX_REQUEST)
                    if len(raw) <= MAX_REQUEST:
                        served, start, started = _warm(raw, preload, every)
                        if served is not None:
                            os._exit(served)  # answered by the warm runtime: nothing of ours left
        from pyrelune.modes import oneshot

        status = oneshot.main(raw=raw, started=started, refusal=refusal)
        # The response is out and the worker's group is gone: once the exit
        # begins, nothing is left to do, and the interpreter's teardown of
        # its modules (about 4 ms, a tenth of a cell's run) would only delay
        # the host's EOF. The std streams are flushed first, as it would.
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the host started us with it closed
                stream.flush()
        if start is not None:  # first use: the cell has answered, so nothing competes with it
            from pyrelune.warm import route

            try:
                start.spawn()
            except route.NoStart:
                pass  # none started: the next cell tries again
        atexit.register(os._exit, status)
        sys.exit(status)
    if tuple(sys.argv[1:]) in _LINES:
        _ignore_interrupts()
        from pyrelune.modes import lines

        sys.exit(lines.main())
    from pyrelune.cli import jupyterargs

    if (kernel := jupyterargs.read(sys.argv[1:])) is not None:
        _ignore_interrupts()
        from pyrelune.transports import prebound

        connection_file, shell = kernel
        # Before any import that takes time: the front end is connecting already.
        prebound.listen(connection_file)
        from pyrelune.modes import jupyter

        sys.exit(jupyter.main(connection_file, shell))
    from pyrelune.cli import rpcargs

    # The rpc kernel's host waits for `kernel.ready` too: its options are read
    # without typer unless they need typer's judgement (see `rpcargs.parse`).
    if (served := rpcargs.start(sys.argv[1:])) is not None:
        sys.exit(served)
    from pyrelune.cli.app import run_app

    run_app()


def _ignore_interrupts() -> None:
    """SIGINT ignored until the kernel's loop takes it: a kernel's host sends it to
    interrupt a cell, and a click may come before the kernel has started (the
    lines host's; a Jupyter front end's as soon as the ports listen)."""
    import _signal

    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)


# Warm start's front door. A cell that cannot gain from the preload runs cold,
# and when a warm process runs, that is decided here, before anything of
# pyrelune.warm but its gate is imported: such a cell (`print(2 + 3)`) costs
# what a cold start costs. Everything else goes on to pyrelune.warm.route.


def _warm(raw: bytes, preload: str, every: bool
          ) -> tuple[int | None, Start | None, float | None]:
    """What `route.run` answers for the request `raw`; a cell that cannot gain (`gains`)
    with the warm process's socket in place is cold without asking it.

    `every` (PYRELUNE_WARM_EVERY) hands every cell to the warm process; with
    PYRELUNE_WARM_DEBUG, route makes all its checks, to say why a cell ran cold.
    """
    from pyrelune.warm import gate

    handed = every or gate.gains(raw, preload)
    if not handed and not gate.flag("PYRELUNE_WARM_DEBUG"):
        try:
            os.lstat(gate.warm_paths(preload)[0])
            return None, None, None  # a warm process's (or one route refuses): nothing to start
        except OSError:
            pass  # none there (first use), or an error: route starts one, or says why not
    from pyrelune.warm import route

    return route.run(raw, preload, handed)


if __name__ == "__main__":
    main()
