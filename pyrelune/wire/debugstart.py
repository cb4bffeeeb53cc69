"""The signal that starts the Jupyter debugger in the worker, whatever its cell is doing.

JupyterLab turns its debugger on whenever the user presses the bug icon, a
long cell running or not, and waits for the reply to `initialize`. The
worker reads the control pipe only between cells, so the supervisor asks
with a signal instead: the worker's handler (`worker.debugging.watch`)
starts debugpy on a thread of its own and says where its adapter listens
with a Reply event of kind `KIND`, which the supervisor reads whenever it
comes. A real-time signal (Linux), which no library uses; SIGINFO elsewhere
(macOS, the BSDs), whose default is to be ignored. The supervisor blocks it
before it forks (`block`): a worker still making its shell keeps it pending
until its handler is in place, instead of dying of its default action.
"""

from __future__ import annotations

import _signal

#: The signal, or None where the platform has neither (the debugger cannot start there).
SIGNAL: int | None = (_signal.SIGRTMIN + 2 if hasattr(_signal, "SIGRTMIN")
                      else getattr(_signal, "SIGINFO", None))
#: The Reply's kind: `{"address": [host, port]}`, or `{"error": why}`.
KIND = "debugger"


def block() -> None:
    """Keep `SIGNAL` pending in this process and the workers it forks (the supervisor's)."""
    if SIGNAL is not None:
        _signal.pthread_sigmask(_signal.SIG_BLOCK, {SIGNAL})
