"""The `pyrelune` console script.

With no arguments it is Vix Note's oneshot runtime, and nothing but that
path is imported. Any argument hands over to the full command line (typer).
"""

from __future__ import annotations

import atexit
import os
import sys

#: The lines kernel is started without the full command line: its host waits
#: for the first answer, and typer alone takes about 100 ms to import.
_LINES = {("--mode", "lines"), ("--mode=lines",)}
#: PYRELUNE_WARM values that leave warm start off (see pyrelune.warm.place); here, where
#: a cold start reads it before it imports anything of warm start's.
WARM_OFF = ("", "0", "off", "no", "false")


def main(warm: str | None = None) -> None:
    """`warm`: the launcher's warm-start setting (`vix install --warm`); $PYRELUNE_WARM wins."""
    if len(sys.argv) == 1:
        raw = start = None
        setting = os.environ.get("PYRELUNE_WARM", warm or "")
        if setting.lower() not in WARM_OFF and not os.isatty(0):
            from pyrelune.transports.stdio import read_all
            from pyrelune.warm import place, route

            raw = read_all(0)
            every = os.environ.get("PYRELUNE_WARM_EVERY", "").lower() not in WARM_OFF
            served, start = route.run(raw, place.preload_names(setting), every)
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
    from pyrelune.cli import rpcargs

    # The rpc kernel's host waits for `kernel.ready` too: its options are read
    # without typer unless they need typer's judgement (see `rpcargs.parse`).
    if (served := rpcargs.start(sys.argv[1:])) is not None:
        sys.exit(served)
    from pyrelune.cli.app import run_app

    run_app()
