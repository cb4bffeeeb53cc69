"""Shared fixtures: a Vix Note host that checks every response, kernels as their hosts start
them, a raised recursion limit."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from lines_host import Host as LinesHost
from rpc_host import PipeHost
from vixhost import VixHost


@pytest.fixture
def host() -> VixHost:
    """Runs cells as Vix Note does; every run must be handled cleanly by the host."""
    return VixHost()


@pytest.fixture
def roomy_host() -> VixHost:
    """The same host for tests of size or memory: no deadline a busy machine could reach."""
    return VixHost.roomy()


@pytest.fixture
def lines_kernel() -> Iterator[LinesHost]:
    """A lines kernel after the host's start-up handshake; closed after the test."""
    kernel = LinesHost()
    try:
        kernel.ping()
        yield kernel
    finally:
        kernel.close()


@pytest.fixture
def rpc_kernel() -> Iterator[PipeHost]:
    """An rpc kernel over a pipe, its `kernel.ready` read; closed after the test."""
    kernel = PipeHost()
    try:
        assert kernel.receive()["event"] == "kernel.ready"
        yield kernel
    finally:
        kernel.close()


@pytest.fixture
def deep_recursion() -> Iterator[None]:
    """A recursion limit raised as a cell may raise it: deep values then encode."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    yield
    sys.setrecursionlimit(limit)
