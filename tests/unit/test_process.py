"""WorkerProcess: a real forked worker running a small target, seen from the supervisor's side.

Waits are bounded by PATIENCE only so that a broken build fails instead of
hanging; nothing here depends on how fast the machine is.
"""

from __future__ import annotations

import json
import os
import select
import signal
import time
from collections.abc import Callable, Iterator
from typing import NoReturn

import pytest

from pyrelune.supervisor.process import WorkerProcess, describe_exit
from pyrelune.wire import WorkerFds

PATIENCE = 60.0

Body = Callable[[WorkerFds], int]
Start = Callable[[Body], WorkerProcess]


def wait_readable(fd: int) -> None:
    ready, _, _ = select.select([fd], [], [], PATIENCE)
    assert ready, f"descriptor {fd} not readable after {PATIENCE} s"


def read_to_end(fd: int) -> bytes:
    """All of a pipe: returns once every process holding its write end has closed it."""
    data = b""
    while True:
        wait_readable(fd)
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            continue
        if not chunk:
            return data
        data += chunk


def first_message(fd: int) -> bytes:
    """The first thing written to a pipe whose writer keeps it open."""
    wait_readable(fd)
    return os.read(fd, 100)


def write_to(fd: int, text: str) -> None:
    os.write(fd, text.encode())


def sleep_in_group(fds: WorkerFds) -> int:
    """A child of the worker in its process group, holding the worker's stdout and stderr."""
    if os.fork() == 0:
        time.sleep(10 * PATIENCE)  # outlives any wait for it: only a signal ends it in time
        os._exit(0)
    write_to(fds.events, "forked")
    time.sleep(PATIENCE)
    return 0


@pytest.fixture
def start() -> Iterator[Start]:
    """Fork workers running a body; each waits for the go-ahead (its group is set by then)."""
    started: list[WorkerProcess] = []

    def start(body: Body) -> WorkerProcess:
        def target(fds: WorkerFds) -> NoReturn:
            code = 70
            try:
                os.read(fds.control, 1)
                code = body(fds)
            finally:
                os._exit(code)

        worker = WorkerProcess(target)
        started.append(worker)
        os.write(worker.control_fd, b"g")
        return worker

    yield start
    for worker in started:
        if worker.event_fd >= 0:
            worker.close()


def report_group(fds: WorkerFds) -> int:
    write_to(fds.events, str(os.getpgid(0)))
    return 0


def test_the_worker_leads_a_process_group_of_its_own(start: Start) -> None:
    worker = start(report_group)
    assert int(read_to_end(worker.event_fd)) == worker.pid != os.getpgid(0)


def test_each_pipe_joins_the_two_sides(start: Start) -> None:
    def body(fds: WorkerFds) -> int:
        os.write(fds.stdout, b"out")
        os.write(fds.stderr, "é".encode())
        write_to(fds.events, os.read(fds.control, 100).decode().upper())
        return 0

    worker = start(body)
    os.write(worker.control_fd, b"ping")
    assert read_to_end(worker.event_fd) == b"PING"
    for stream, text in ((worker.stdout, "out"), (worker.stderr, "é")):
        wait_readable(stream.fd)
        got = stream.read_available()
        assert got is not None and (got.name, got.text) == (stream.name, text)


def exit_3_when_told(fds: WorkerFds) -> int:
    os.read(fds.control, 1)
    return 3


def test_reap_gives_the_wait_status_once_the_worker_has_exited(start: Start) -> None:
    worker = start(exit_3_when_told)
    assert worker.reap(block=False) is None
    os.write(worker.control_fd, b"x")
    status = worker.reap(block=True)
    assert status is not None and os.waitstatus_to_exitcode(status) == 3
    assert worker.reap(block=False) == status  # kept: the pid is not waited for twice


def test_signal_group_reaches_the_workers_children(start: Start) -> None:
    worker = start(sleep_in_group)
    assert first_message(worker.event_fd) == b"forked"
    worker.signal_group(signal.SIGTERM)
    status = worker.reap(block=True)
    assert status is not None and os.WTERMSIG(status) == signal.SIGTERM
    # EOF on stdout: the worker's child, which held it too, is gone as well.
    assert read_to_end(worker.stdout.fd) == b""


def open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def test_close_kills_the_group_and_releases_every_descriptor(start: Start) -> None:
    before = open_fds()
    worker = start(sleep_in_group)
    assert first_message(worker.event_fd) == b"forked"
    watch = os.dup(worker.stderr.fd)
    try:
        worker.close()
        status = worker.status
        assert status is not None and os.WTERMSIG(status) == signal.SIGKILL
        assert read_to_end(watch) == b""  # the worker's child is dead too
    finally:
        os.close(watch)
    assert open_fds() == before


def test_closing_the_lifeline_kills_the_group(start: Start) -> None:
    # What happens when the supervisor dies, however it dies: the kernel sees
    # its end of the lifeline close and kills the worker's group.
    worker = start(sleep_in_group)
    assert first_message(worker.event_fd) == b"forked"
    os.close(worker.lifeline_fd)
    worker.lifeline_fd = -1
    status = worker.reap(block=True)
    assert status is not None and os.WTERMSIG(status) == signal.SIGKILL
    assert read_to_end(worker.stdout.fd) == b""


def test_the_worker_keeps_only_its_own_descriptors(start: Start) -> None:
    other_r, other_w = os.pipe()  # the supervisor's, like a socket or another worker's pipe

    def body(fds: WorkerFds) -> int:
        kept = []
        for fd in range(3, 1024):
            try:
                os.fstat(fd)
            except OSError:
                continue
            kept.append(fd)
        own = [fds.stdout, fds.stderr, fds.events, fds.control, fds.lifeline]
        write_to(fds.events, json.dumps({"kept": kept, "own": own}))
        return 0

    try:
        worker = start(body)
        found = json.loads(read_to_end(worker.event_fd))
    finally:
        os.close(other_r)
        os.close(other_w)
    assert sorted(found["kept"]) == sorted(found["own"])


def exit_status_of(start: Start, body: Body) -> int:
    status = start(body).reap(block=True)
    assert status is not None
    return status


@pytest.mark.parametrize(
    ("how", "words"),
    [
        (lambda: 3, "worker exited with status 3"),
        (lambda: 0, "worker exited with status 0"),
        (lambda: os.kill(os.getpid(), signal.SIGKILL), "worker killed by SIGKILL (killed)"),
        (lambda: os.kill(os.getpid(), signal.SIGTERM), "worker killed by SIGTERM (terminated)"),
        # A real-time signal has a number but no name of its own.
        (lambda: os.kill(os.getpid(), signal.SIGRTMIN + 6),
         f"worker killed by signal {signal.SIGRTMIN + 6} (real-time signal 6)"),
    ],
)
def test_describe_exit_words(start: Start, how: Callable[[], int | None], words: str) -> None:
    assert describe_exit(exit_status_of(start, lambda fds: how() or 0)) == words
