"""Shared fixtures: a Vix Note host that checks every response, a raised recursion limit."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
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
def deep_recursion() -> Iterator[None]:
    """A recursion limit raised as a cell may raise it: deep values then encode."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    yield
    sys.setrecursionlimit(limit)
