"""A kernel's first worker that stalls before it reads anything: a starved worker, on cue.

On a busy machine a freshly forked worker can take longer to read its first
cell than an interrupt's grace; a test stops it (SIGSTOP, which only SIGKILL
or SIGCONT ends) to get that case every time instead of once in many runs.
"""

from __future__ import annotations

import os
import signal
from typing import Any, NoReturn

import pytest

from pyrelune.supervisor import kernel
from pyrelune.supervisor.link import WorkerLink


def stall_first_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next `Kernel`'s first worker stops itself at once; the workers after it start."""
    serve = kernel._serve

    def stalled(*args: Any) -> NoReturn:
        os.kill(os.getpid(), signal.SIGSTOP)
        serve(*args)

    spawn = kernel.Kernel._spawn

    def spawn_once(self: kernel.Kernel) -> WorkerLink:
        link = spawn(self)
        monkeypatch.setattr(kernel, "_serve", serve)
        return link

    monkeypatch.setattr(kernel, "_serve", stalled)
    monkeypatch.setattr(kernel.Kernel, "_spawn", spawn_once)
