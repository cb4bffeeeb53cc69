"""The warm process: the data stack imported once, then one forked oneshot runtime per cell.

Started detached once the first warm cell has answered (`route.Start`) or by `pyrelune
warm start`. It holds the lock for its whole life (one warm process per
socket), preloads, listens on a socket only its user can reach, and for each
request of the same user a child forked ahead of time becomes the cold
runtime (`served`). It never holds the descriptors a request brings: the
child receives them. It exits after an idle timeout, when
the installed packages change, on `pyrelune warm stop` or SIGTERM, and
removes its socket as it goes.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Iterable
from typing import Any

from pyrelune.cli.entry import warm_paths
from pyrelune.warm import frames, place, served
from pyrelune.warm.route import LOCK_FD

DEFAULT_IDLE = 600.0
#: What each preload name imports: the modules a first cell would otherwise load lazily too.
EXTRA = {
    "numpy": ("numpy.random",),
    "pandas": ("pandas.io.formats.format", "pandas.io.formats.html",
               "pandas.io.formats.printing"),
    "matplotlib": ("matplotlib.pyplot", "matplotlib.backends.backend_svg",
                   "pyrelune.worker.mplbackend"),
}
#: The runtime's own modules that a cold cell loads after its fork.
OWN = ("pyrelune.modes.oneshot", "pyrelune.worker.runtime", "pyrelune.supervisor.blocking",
       "pyrelune.supervisor.limits", "pyrelune.supervisor.presentation",
       "pyrelune.supervisor.capture", "pyrelune.protocols.vixnote_outputs", "pyrelune.spin",
       "fcntl", "resource")


def main(argv: list[str], cold: Iterable[str]) -> None:
    """`argv`: the preload names. `cold`: the modules loaded before this one, as in cold."""
    preload = argv[0]
    baseline = served.relevant(dict(os.environb))
    loaded = preload_modules(preload)
    shadowable = served.shadowable(sys.modules, cold)
    gc.collect()
    gc.freeze()  # the children's garbage collections leave the preloaded objects' pages shared
    socket_path, _ = warm_paths(preload)
    place.check_folder(os.path.dirname(socket_path), create=True)
    listener, identity = _listen(socket_path)
    warm = Warm(listener, preload, loaded,
                served.Baseline(baseline, shadowable, served.Stamp()), idle_timeout())
    signal.signal(signal.SIGTERM, _leave)
    signal.signal(signal.SIGHUP, _leave)
    signal.signal(signal.SIGINT, _leave)
    signal.signal(signal.SIGCHLD, _reap)
    try:
        warm.serve()
    finally:
        _unlink_if_ours(socket_path, identity)


def idle_timeout() -> float:
    """PYRELUNE_WARM_IDLE seconds (0: never idle out), default 10 minutes."""
    try:
        value = float(os.environ.get("PYRELUNE_WARM_IDLE", DEFAULT_IDLE))
    except ValueError:
        return DEFAULT_IDLE
    return value if 0 <= value < float("inf") else DEFAULT_IDLE


def preload_modules(names: str) -> list[str]:
    """Import each named module (with what its first use loads), skipping missing ones.

    matplotlib is imported with pyrelune's backend selected as a cold worker
    selects it (`display.connect`), unless MPLBACKEND chose another, and
    pandas with the worker's import hooks (`display.watch_imports`).
    """
    import importlib

    from pyrelune.worker.display import MATPLOTLIB_BACKEND, watch_imports

    for module in OWN:
        importlib.import_module(module)
    watch_imports()  # pandas then answers as it does in a cold cell
    chose = "MPLBACKEND" in os.environ and os.environ["MPLBACKEND"] != ""
    if not chose:
        os.environ["MPLBACKEND"] = MATPLOTLIB_BACKEND
    loaded = []
    try:
        for name in filter(None, names.split(",")):
            try:
                importlib.import_module(name)
                for extra in EXTRA.get(name, ()):
                    importlib.import_module(extra)
            except Exception:  # missing or broken: a cell that imports it fails as in cold
                continue
            loaded.append(name)
    finally:
        if not chose:
            del os.environ["MPLBACKEND"]
    return loaded


class Warm:
    """A spare child waits in accept(), forked ahead: a cell never waits for that fork.

    The spare takes one connection: a cell's (it tells this process, which
    forks the next spare, and becomes that cell's runtime), a status (it
    answers and waits on), a stop (it tells this process to go). This
    process itself never accepts, so it never holds a request's descriptors.
    """

    #: What a spare tells this process on the pipe between them.
    TOOK_A_CELL = b"R"
    STOP_ALL = b"Q"

    def __init__(self, listener: socket.socket, preload: str, loaded: list[str],
                 baseline: served.Baseline, idle: float) -> None:
        self.listener = listener
        self.preload = preload
        self.loaded = loaded
        self.baseline = baseline
        self.idle = idle
        self.started = self.last = time.monotonic()
        self.served = 0

    def serve(self) -> None:
        import select

        notes, self._notify = os.pipe()
        self._notes = notes
        self._lifeline, self._alive = os.pipe()  # a spare dies with this process (see _spare)
        spare, exited = self._fork_spare()
        try:
            while True:
                wait = self.idle - (time.monotonic() - self.last) if self.idle else None
                if wait is not None and wait <= 0:
                    return
                ready, _, _ = select.select([notes, exited], [], [], wait)
                if notes in ready:
                    note = os.read(notes, 1)
                    if note == self.STOP_ALL:
                        return
                    self.served += 1
                    self.last = time.monotonic()
                elif exited not in ready:
                    continue  # idle so far: measured again above
                os.close(exited)  # the spare took a cell, or died: another one waits
                spare, exited = self._fork_spare()
        finally:
            try:
                os.kill(spare, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _fork_spare(self) -> tuple[int, int]:
        """A new spare child, and a descriptor readable once it has exited."""
        pid = os.fork()
        if pid == 0:
            try:
                os.close(self._notes)
                os.close(self._alive)
                _die_with_parent(self._lifeline)
                for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGCHLD):
                    signal.signal(signum, signal.SIG_DFL)
                self._spare()
            finally:
                os._exit(0)
        return pid, os.pidfd_open(pid)

    def _spare(self) -> None:
        """In the spare: serve connections until one brings a cell (or a stop)."""
        while True:
            conn, _ = self.listener.accept()
            with conn:
                pid, uid, _ = struct.unpack("3i", conn.getsockopt(
                    socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
                if uid != os.getuid():
                    continue  # another user's: nothing is read, nothing is answered
                conn.settimeout(2.0)
                try:
                    kind, fds, _, _ = socket.recv_fds(conn, frames.KIND_SIZE, frames.FDS)
                except OSError:
                    continue
                if kind == frames.RUN and len(fds) == frames.FDS:
                    os.write(self._notify, self.TOOK_A_CELL)
                    os.close(self._notify)
                    os.close(self._lifeline)  # a cell's runtime outlives a warm process that goes
                    served.serve(conn, fds, pid, self.baseline,
                                 (self.listener.fileno(), LOCK_FD))
                for fd in fds:
                    os.close(fd)
                try:
                    if kind == frames.STATUS:
                        conn.sendall(json.dumps(self.status()).encode())
                    elif kind == frames.STOP:
                        conn.sendall(b"stopping")
                        os.write(self._notify, self.STOP_ALL)
                        return
                except OSError:
                    continue

    def status(self) -> dict[str, Any]:
        """The warm process's status (asked in the spare, forked since the last cell)."""
        warm, spare = _memory(os.getppid()), _memory(os.getpid())
        return {
            "pid": os.getppid(), "preload": self.preload, "preloaded": self.loaded,
            "python": sys.executable, "rss": warm.get("Rss", 0),
            # What the two cost together: their own pages, and those they share counted
            # once between them (PSS; the spare shares nearly all of the warm process's).
            "private": warm.get("Pss", 0) + spare.get("Pss", 0),
            "idle": round(time.monotonic() - self.last, 1), "idle_timeout": self.idle,
            "uptime": round(time.monotonic() - self.started, 1), "served": self.served,
        }


def _die_with_parent(lifeline: int) -> None:
    """SIGKILL this spare when the warm process is gone (even SIGKILLed): no orphan accepts.

    `lifeline` is the read end of a pipe whose only write end the warm
    process holds; O_ASYNC has the kernel signal this process when it closes.
    """
    import fcntl
    import select

    fcntl.fcntl(lifeline, fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(lifeline, fcntl.F_SETSIG, signal.SIGKILL)
    fcntl.fcntl(lifeline, fcntl.F_SETFL, fcntl.fcntl(lifeline, fcntl.F_GETFL) | os.O_ASYNC)
    if select.select([lifeline], [], [], 0)[0]:
        os._exit(0)  # gone before the signal was armed


def _memory(pid: int) -> dict[str, int]:
    """A process's memory in bytes, from /proc/PID/smaps_rollup (Linux)."""
    found = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                key, _, rest = line.partition(":")
                words = rest.split()
                if len(words) == 2 and words[1] == "kB":
                    found[key] = int(words[0]) * 1024
    except OSError:
        pass
    return found


def _listen(path: str) -> tuple[socket.socket, tuple[int, int]]:
    """Bind `path` (the lock is ours, so a socket already there is stale) and listen."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(mask)
    listener.listen(64)
    st = os.lstat(path)
    return listener, (st.st_dev, st.st_ino)


def _unlink_if_ours(path: str, identity: tuple[int, int]) -> None:
    try:
        st = os.lstat(path)
        if (st.st_dev, st.st_ino) == identity:
            os.unlink(path)
    except OSError:
        pass


def _leave(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _reap(signum: int, frame: object) -> None:
    """Children (the runtimes of finished cells) are reaped as they end."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


