"""A oneshot worker: one cell in a fresh namespace, reported, and the process ends.

Apart from `runtime` (which the kernels' workers share) because a oneshot
cell may ask for IPython's shell (`PYRELUNE_SHELL=ipython`), which itself
stands on `runtime`.
"""

from __future__ import annotations

import os
import sys

from pyrelune.worker.channel import Channel
from pyrelune.worker.display import host_shows
from pyrelune.worker.mainmodule import fresh_namespace
from pyrelune.worker.runtime import ONESHOT_NO_INPUT, Cell, become_worker, run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

    from pyrelune.wire import WorkerFds


def run_oneshot(cell: Cell, fds: WorkerFds, folders: tuple[str, ...], cap: int,
                shown: tuple[str, ...]) -> NoReturn:
    """Run one cell in a fresh namespace, report it, and end the process.

    `folders` (the note's, then the working directory) go first on sys.path,
    as a script's own folder does: the cell imports the modules beside it,
    the runtime does not (see `import_own`). `cap` is the response's output
    cap, which no event exceeds; `shown`, the MIME types the host shows (see
    `display.host_shows`). The shell is pyrelune's, unless PYRELUNE_SHELL (checked
    by the mode) asks for IPython's (see `ipyshell.shell.run_script`).
    """
    try:
        become_worker(fds.stdout, fds.stderr, ONESHOT_NO_INPUT)
        host_shows(shown)
        sys.path[0:0] = folders
        channel = Channel(fds.events, fds.control, cap, fds.key)
        if _ipython():
            from pyrelune.worker.ipyshell.shell import run_script

            run_script(cell, channel)
        else:
            run(cell, fresh_namespace(), channel, script=True)
    finally:
        os._exit(0)


def _ipython() -> bool:
    """Whether PYRELUNE_SHELL asks for IPython's shell, by the setting's one rule (the mode
    checked it); its parser is loaded only where the setting is given."""
    if not os.environ.get("PYRELUNE_SHELL"):
        return False
    from pyrelune import settings

    return settings.shell(settings.PLAIN) == settings.IPYTHON
