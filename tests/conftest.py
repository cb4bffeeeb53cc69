"""Shared fixtures: a Vix Note host that checks every response, kernels as their hosts start
them, a raised recursion limit; each session's own runtime folder; the suite's markers, its
Hypothesis profile and its xdist groups."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import profiles, warmhost
from support.lines_host import Host as LinesHost
from support.lines_host import default_env
from support.modes import MODES, Runner, runner
from support.rpc_host import PipeHost
from support.vixhost import VixHost

from pyrelune.vix import fonts


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--warm", action="store_true",
                     help="run every Vix Note cell through a warm process (PYRELUNE_WARM=1)")
    parser.addoption("--full", action="store_true",
                     help="also run the long tests (marked `long`: whole notebooks compared "
                          "with ipykernel's, JupyterLab and voila in a browser)")


profiles.load()
#: Why a long test is skipped, and how to run it.
FULL_RUN = "a long test, of the full run: add --full (`pytest -q -n 4 --full`)"
_RUNTIME_DIR = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cold_start: checks what a cold start loads (not with "
                            "--warm, whose cells find the preloaded modules)")
    config.addinivalue_line("markers", "slow: waits out a real deadline or bound (seconds of "
                            "wall time each); `-m 'not slow'` leaves them out")
    config.addinivalue_line("markers", "long: part of the full run only (`--full`): whole "
                            "notebooks compared with ipykernel's, a browser")
    # Each session (each xdist worker) its own XDG_RUNTIME_DIR: warm sockets, and whatever else
    # a runtime keeps there, are never shared between workers. Short (/tmp/prl-XXXXXXXX):
    # a warm socket's path under it must fit AF_UNIX's 107 bytes.
    folder = tempfile.mkdtemp(prefix="prl-", dir="/tmp")
    config.stash[_RUNTIME_DIR] = folder
    os.environ["XDG_RUNTIME_DIR"] = folder
    if not hasattr(config, "workerinput"):  # once, before xdist starts the workers
        # On a fresh machine the first plot builds matplotlib's font cache: seconds of a
        # cell's 8.5 s on a busy machine, several cells building it at once, and past 5 s
        # matplotlib's warning on the cell's stderr. Built first, as `vix install` does.
        cache = fonts.prepare()
        if cache is not None and cache.problem:
            config.issue_config_time_warning(pytest.PytestWarning(
                f"matplotlib's font cache was not built ({cache.problem}): the first plots "
                "build it, and tests that compare a plot cell's stderr may fail"), stacklevel=2)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker's session is over: its last clean-up (pytest's final garbage collection
    among it) is not to be interrupted. execnet sends the worker a SIGINT when the worker is
    still busy 5 s after it was asked to exit, which a loaded machine makes happen; the
    KeyboardInterrupt then lands wherever the clean-up is (a garbage collector callback) and
    prints a stray traceback after the run's summary."""
    if hasattr(session.config, "workerinput"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Say what a run without --full left out, where a newcomer looks: the last lines."""
    skipped = [report for report in terminalreporter.stats.get("skipped", [])
               if FULL_RUN in str(report.longrepr)]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} long tests (whole notebooks against ipykernel, JupyterLab and "
            "voila in a browser) were skipped: `pytest -q -n 4 --full` runs everything, as "
            "CI does (docs/development.md)")


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_RUNTIME_DIR, None)
    if folder is not None:
        # A test whose launcher or `vix doctor` started the default warm process (on by
        # default) leaves it in this folder: it goes with the folder, not 10 idle minutes later.
        warmhost.stop_all(Path(folder))
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)  # before xdist's loadgroup reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--warm"):
        skip = pytest.mark.skip(reason="what a cold start loads: a warm cell differs by design")
        for item in items:
            if item.get_closest_marker("cold_start"):
                item.add_marker(skip)
    if not config.getoption("--full"):
        later = pytest.mark.skip(reason=FULL_RUN)
        for item in items:
            if item.get_closest_marker("long"):
                item.add_marker(later)
    for item in items:
        module = item.getparent(pytest.Module)
        if module and item.get_closest_marker("xdist_group") is None and _shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(module.nodeid))


def _shares_a_fixture(item: pytest.Item) -> bool:
    """Whether `item` uses a module-scoped fixture of its own module (a kernel, a server):
    its module's tests then run on one xdist worker, which starts that fixture once."""
    module = item.getparent(pytest.Module)
    if not isinstance(item, pytest.Function) or module is None:
        return False
    return any(definition.scope != "function" and definition.baseid == module.nodeid
               for definitions in item._fixtureinfo.name2fixturedefs.values()
               for definition in definitions)


@pytest.fixture(scope="session", autouse=True)
def warm_everywhere(request: pytest.FixtureRequest) -> Iterator[None]:
    """With --warm, one warm process serves the session's cells (those whose host keeps the
    environment: the others run cold, as they must); stopped at the end, having served."""
    if not request.config.getoption("--warm"):
        yield
        return
    folder = warmhost.runtime_folder()
    # Every cell, even one that would run cold for speed (no import: see warm.gate.gains).
    with warmhost.environment(XDG_RUNTIME_DIR=str(folder), PYRELUNE_WARM="1",
                              PYRELUNE_WARM_EVERY="1"):
        try:
            status = warmhost.start()
            yield
            served = warmhost.status()
            assert served is not None and served["served"] > 0, served
            if served["pid"] != status["pid"]:
                # Seen in 3 of 7 runs (Dec 2026), once, just after the start: the first warm
                # process ended and a cell started the next, which served the rest. Not
                # explained yet: said here, not hidden (see docs/development.md).
                warnings.warn(f"the session's warm process {status['pid']} was replaced by "
                              f"{served['pid']}, which served {served['served']} cells",
                              stacklevel=1)
        finally:
            warmhost.stop_all(folder)


@pytest.fixture(params=MODES)
def run(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Runner]:
    """A runner for each mode in turn, its cells started in the test's folder."""
    with runner(request.param, cwd=tmp_path) as each:
        yield each


@pytest.fixture
def host() -> VixHost:
    """Runs cells as Vix Note does; every run must be handled cleanly by the host.

    Neither deadline applies: the runtime's (8.5 s) and Vix Note's 10 s wall
    clock, which also counts a start-up that a busy machine slows, are tested
    on their own (test_limits); here they would only fail a slow machine, as
    a matplotlib cell once did with two busy loops and another suite running.
    """
    return VixHost.roomy()


@pytest.fixture
def kernel_env() -> dict[str, str]:
    """What the kernels of `lines_kernel` and `rpc_kernel` change in their environment:
    nothing; a test module overrides this fixture to start them otherwise."""
    return {}


@pytest.fixture
def lines_kernel(kernel_env: dict[str, str]) -> Iterator[LinesHost]:
    """A lines kernel after the host's start-up handshake; closed after the test."""
    kernel = LinesHost(env=default_env(**kernel_env))
    try:
        kernel.ping()
        yield kernel
    finally:
        kernel.close()


@pytest.fixture
def rpc_kernel(kernel_env: dict[str, str]) -> Iterator[PipeHost]:
    """An rpc kernel over a pipe, its `kernel.ready` read; closed after the test."""
    kernel = PipeHost(env=kernel_env)
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
