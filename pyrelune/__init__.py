"""pyrelune runs Python notebook cells for host applications.

The package is imported on every oneshot request, so it imports nothing here;
`from pyrelune import display` (or `update_display`, `clear_output`,
`DisplayHandle`, as IPython.display has them) loads the display machinery
only when asked. `PyreluneError`, the base of its errors, is defined here,
where it costs no module of its own, and so is `MAX_REQUEST`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__version__ = "0.2.0"
_DISPLAY_NAMES = ("display", "update_display", "clear_output", "DisplayHandle")
#: The largest oneshot request: 2 MiB, far more than any cell's source, and
#: bounded memory (compiling 1 MiB of statements takes about 300 MB). The rule
#: is the vix-note-extension-1 codec's (`protocols.vixnote` refuses a larger
#: request as request_too_large); it is here because the launcher reads stdin
#: with it before it imports any codec (warm start's front door,
#: `pyrelune.__main__`). A larger one is read to its end and dropped, unheld.
MAX_REQUEST = 2 << 20


class PyreluneError(Exception):
    """What pyrelune refuses, worded for whoever must act on it; the base of all its errors.

    PyreluneError
    ├── settings.SettingError (also ValueError)  a setting's value breaks its rule
    ├── protocols.Rejected                       a request no cell runs for, and its code
    ├── protocols.dap.DapError                   bytes from the debugger's adapter that are not
    │                                            the Debug Adapter Protocol (also ValueError)
    ├── protocols.jupytermessages.BadMessage     frames the Jupyter kernel may not act on
    ├── NotAllowed                               an event a state table has no row for (the
    │                                            rpc codec's, a worker session's)
    ├── modes.ConfigError                        what a kernel refuses to start with (rpc
    │                                            options, closed streams, a connection file)
    ├── supervisor.kernel.NoWorker               no worker could start (no descriptor, no
    │                                            process): the request fails, the kernel lives
    ├── cli.rpcargs.Usage                        rpc options that break a rule
    ├── cli.notebook.NotANotebook                a file `pyrelune run` cannot run
    ├── vix.install.InstallError                 why `vix install` changed nothing
    ├── vix.jsonfile.Malformed                   a Vix Note file that is not the JSON expected
    ├── vix.descriptor.InvalidDescriptor (also ValueError)  a bad extension descriptor
    ├── jupyter.kernelspec.KernelspecError       why `jupyter install` changed nothing
    ├── jupyter.remote.LaunchError               why the remote launcher cannot start a kernel
    ├── warm.place.Unsafe                        a socket folder not the user's alone
    ├── warm.route.NoStart                       why no warm process starts (or one is busy)
    ├── warm.control.NotStarted                  a warm process a person asked for that failed
    ├── worker.magicbase.UsageError              a magic used in a way pyrelune does not run
    └── worker.kernelloop.StdinNotImplementedError (also NotImplementedError)  input() no
                                                 front end can answer

    Not errors, so not here: `modes.lines.Terminated` and `HostGone` (how the
    lines kernel ends), `worker.pretty.NeedsIPython` (a printer's hand-over).
    """


class NotAllowed(PyreluneError):
    """`event` happened in a state that does not allow it: its table has no row for it."""

    def __init__(self, state: str, event: str) -> None:
        super().__init__(f"{event} is not allowed in state {state}")
        self.state = state
        self.event = event


def transition(table: Mapping[tuple[str, str], str], state: str, event: str) -> str:
    """The state `event` moves `state` to in `table` (h11's way: `(state, event) -> next`).

    Defined here, beside the errors, so that the session on the oneshot path
    pays no module for it.
    """
    try:
        return table[state, event]
    except KeyError:
        raise NotAllowed(state, event) from None


def __getattr__(name: str) -> Any:
    if name in _DISPLAY_NAMES:
        from pyrelune.worker import display

        return getattr(display, name)
    raise AttributeError(f"module 'pyrelune' has no attribute {name!r}")
