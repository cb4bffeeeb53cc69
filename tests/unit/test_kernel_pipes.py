"""A kernel's capture pipes are widened, so a batching session never stalls a cell."""

from __future__ import annotations

import fcntl
import sys

import pytest

from pyrelune.shaping import LINES_MAX_OUTPUT
from pyrelune.supervisor.kernel import CAPTURE_PIPE_SIZE, Kernel
from pyrelune.wire.profile import HostProfile


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_GETPIPE_SZ is Linux's")
def test_capture_pipes_hold_a_mebibyte() -> None:
    kernel = Kernel(HostProfile(LINES_MAX_OUTPUT))
    try:
        worker = kernel.worker
        for stream in (worker.stdout, worker.stderr):
            assert fcntl.fcntl(stream.fd, fcntl.F_GETPIPE_SZ) >= CAPTURE_PIPE_SIZE
    finally:
        kernel.close()
