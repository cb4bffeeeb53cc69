"""The signal that has the worker read its subshells' commands while its main shell runs a cell.

The worker's main thread reads the control pipe only between cells, until a
thread takes the subshells' commands off it (`worker.subshells`); a subshell
made while a long cell runs would wait for that cell before its thread
starts. So the supervisor sends this signal with each subshell it makes, and
the worker's handler starts that thread at once. A real-time signal (Linux),
which no library uses; where there is none, a subshell made during a cell
waits for it. The supervisor blocks it before it forks (`block`): a worker
still starting keeps it pending until its handler is in place, instead of
dying of its default action.
"""

from __future__ import annotations

import _signal

#: The signal, or None where the platform has no real-time signals.
SIGNAL: int | None = _signal.SIGRTMIN + 3 if hasattr(_signal, "SIGRTMIN") else None


def block() -> None:
    """Keep `SIGNAL` pending in this process and the workers it forks (the supervisor's)."""
    if SIGNAL is not None:
        _signal.pthread_sigmask(_signal.SIG_BLOCK, {SIGNAL})
