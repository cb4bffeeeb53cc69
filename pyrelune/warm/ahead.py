"""The next cell's worker, forked by the spare before any cell comes.

Forking a copy of the warm process takes milliseconds (its page tables),
and a cold runtime forks a small one: on a cell's way, that made a warm
cell that imports something not preloaded slower than cold. So the spare
forks the worker while it waits; the worker waits in turn, on a socket at
its fd 0, for what a freshly forked one would have: the launcher's
environment, umask, argv, sys.path, stdin and current directory (the
working directory, entered), and the cell, with the MIME types its host
shows. What can be set from outside (resource limits, niceness, CPU
affinity) the runtime sets on it before it accepts the cell. The spare's
death kills it (the worker's lifeline), so a spare that never takes a cell
leaves none behind.
"""

from __future__ import annotations

import os
import socket
from typing import NoReturn

from pyrelune.supervisor.process import WorkerProcess
from pyrelune.warm import become, frames
from pyrelune.wire import WorkerFds

_SECTIONS = 9


class Ahead:
    """A worker forked ahead of its cell, and the runtime's end of the socket it waits on."""

    def __init__(self) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        saved = os.dup(0)
        os.dup2(theirs.fileno(), 0)  # the worker's fd 0 until it takes the launcher's stdin
        try:
            self.worker = WorkerProcess(_wait)
        finally:
            os.dup2(saved, 0)
            os.close(saved)
            theirs.close()
        self.channel = mine

    def start(self, source: str, filename: str, folders: tuple[str, ...], cap: int,
              shown: tuple[str, ...], launcher: tuple[bytes, int, bytes, list[str]]
              ) -> WorkerProcess:
        """Hand the cell to the worker (`oneshot.StartWorker`, with the launcher's
        environment, umask, argv[0] and sys.path); from this process's stdin and
        current directory."""
        environ, umask, argv0, path = launcher
        here = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            message = frames.pack(
                environ, str(umask).encode(), argv0, frames.paths_bytes(path),
                source.encode("utf-8", "surrogatepass"),
                filename.encode("utf-8", "surrogateescape"), frames.paths_bytes(list(folders)),
                str(cap).encode(), ",".join(shown).encode())
            socket.send_fds(self.channel, [message[:1]], [0, here])
            self.channel.sendall(message[1:])
        finally:
            os.close(here)
            self.channel.close()
        return self.worker


def _wait(fds: WorkerFds) -> NoReturn:
    """In the worker: wait for the cell, become what a cold worker is, run it."""
    try:
        become.reseed()  # while it waits: each worker is a fork of its own
        channel = socket.socket(fileno=0)
        first, passed, _, _ = socket.recv_fds(channel, 1, 2)
        data = bytearray(first)
        sections = None
        while first and (sections := frames.unpack(data, _SECTIONS)) is None:
            chunk = channel.recv(1 << 20)
            if not chunk:
                break
            data += chunk
        channel.detach()
        if sections is None or len(passed) != 2:
            os._exit(0)  # the spare went without a cell: nothing to run
        environ, umask, argv0, path, source, filename, folders, cap, shown = sections
        os.dup2(passed[0], 0)
        os.fchdir(passed[1])
        for fd in passed:
            os.close(fd)
        become.take_on(frames.environ_of(environ), int(umask), argv0, frames.paths_of(path))
        from pyrelune.worker.oneshot import run_oneshot
        from pyrelune.worker.runtime import Cell

        run_oneshot(Cell(source.decode("utf-8", "surrogatepass"),
                         filename.decode("utf-8", "surrogateescape")),
                    fds, tuple(frames.paths_of(folders)), int(cap),
                    tuple(shown.decode().split(",")))
    finally:
        os._exit(0)
