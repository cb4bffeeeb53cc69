"""Shared fixtures: a Vix Note host that checks every response, kernels as their hosts start
them, a raised recursion limit."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import warmhost
from support.lines_host import Host as LinesHost
from support.modes import MODES, Runner, runner
from support.rpc_host import PipeHost
from support.vixhost import VixHost


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--warm", action="store_true",
                     help="run every Vix Note cell through a warm process (PYRELUNE_WARM=1)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cold_start: checks what a cold start loads (not with "
                            "--warm, whose cells find the preloaded modules)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--warm"):
        skip = pytest.mark.skip(reason="what a cold start loads: a warm cell differs by design")
        for item in items:
            if item.get_closest_marker("cold_start"):
                item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def warm_everywhere(request: pytest.FixtureRequest,
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """With --warm, one warm process serves the session's cells (those whose host keeps the
    environment: the others run cold, as they must); stopped at the end, having served."""
    if not request.config.getoption("--warm"):
        yield
        return
    folder = tmp_path_factory.mktemp("runtime")
    folder.chmod(0o700)
    # Every cell, even one that would run cold for speed (no import: see entry.gains).
    with warmhost.environment(XDG_RUNTIME_DIR=str(folder), PYRELUNE_WARM="1",
                              PYRELUNE_WARM_EVERY="1"):
        try:
            status = warmhost.start()
            yield
            served = warmhost.status()
            assert served is not None and served["pid"] == status["pid"], served
            assert served["served"] > 0, served
        finally:
            warmhost.stop_all(folder)


@pytest.fixture(params=MODES)
def run(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Runner]:
    """A runner for each mode in turn, its cells started in the test's folder."""
    with runner(request.param, cwd=tmp_path) as each:
        yield each


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
