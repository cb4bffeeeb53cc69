"""A kernel whose fresh worker cannot start (fork's EAGAIN at the process limit, a pipe's
EMFILE at the descriptor limit): the cell fails saying so, nothing leaks, the kernel
lives on, and the next request starts a worker once one can start."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from typing import Any

import pytest

from pyrelune.shaping import LINES_MAX_OUTPUT
from pyrelune.supervisor.kernel import Kernel
from pyrelune.wire.commands import Execute
from pyrelune.wire.events import WORKER_DIED, Done
from pyrelune.wire.profile import HostProfile

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="counts descriptors in /proc/self/fd")


def _descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _run(kernel: Kernel, source: str) -> Done:
    kernel.apply(Execute(source, "<cell>"))
    return [event for event in kernel.events() if isinstance(event, Done)][-1]


def _failing(real: Callable[..., Any], after: int, code: int) -> Callable[..., Any]:
    """`real`, failing with `code` from its `after`+1-th call on."""
    calls = [0]

    def call(*args: Any) -> Any:
        calls[0] += 1
        if calls[0] > after:
            raise OSError(code, os.strerror(code))
        return real(*args)

    return call


@pytest.mark.parametrize(("name", "after", "code"), [
    ("fork", 0, errno.EAGAIN),  # the process limit
    ("pipe", 3, errno.EMFILE),  # three pipes open, then no descriptor left
])
def test_a_worker_that_cannot_start_fails_the_cell_and_the_kernel_recovers(
        monkeypatch: pytest.MonkeyPatch, name: str, after: int, code: int) -> None:
    kernel = Kernel(HostProfile(LINES_MAX_OUTPUT, interactive=True))
    try:
        assert _run(kernel, "x = 1").error is None
        with_worker = _descriptors()
        monkeypatch.setattr(os, name, _failing(getattr(os, name), after, code))
        crashed = _run(kernel, "import os; os._exit(1)")
        assert crashed.error is not None and crashed.error.code == WORKER_DIED
        assert "no fresh worker could start" in crashed.error.evalue
        assert os.strerror(code) in crashed.error.evalue
        assert _descriptors() < with_worker  # the dead worker's are closed, no new one's kept
        still = _run(kernel, "1")  # still none: the request ends at once, saying why
        assert still.error is not None and "no fresh worker could start" in still.error.evalue
        monkeypatch.undo()
        assert _run(kernel, "y = 2").error is None
        assert _descriptors() == with_worker  # nothing leaked by the failed starts
    finally:
        kernel.close()
