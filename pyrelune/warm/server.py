"""The warm process: the data stack imported once, then one forked oneshot runtime per cell.

Started detached by the first warm cell (`client.start`) or by `pyrelune
warm start`. It holds the lock for its whole life (one warm process per
socket), preloads, listens on a socket only its user can reach, and for each
request of the same user forks a child that becomes the cold runtime
(`served`). It never touches the descriptors a request brings beyond
closing them once the child has them. It exits after an idle timeout, when
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

from pyrelune.warm import frames, place, served

#: The lock's descriptor, as `client.start` passes it.
LOCK_FD = 3
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
    """`argv`: the preload names, the pid of the cell to let finish first (0: none).

    `cold`: the modules loaded before this one, as a cold runtime has them.
    """
    preload, wait_for = argv[0], int(argv[1])
    _wait_for(wait_for)
    baseline = served.relevant(dict(os.environb))
    loaded = preload_modules(preload)
    shadowable = served.shadowable(sys.modules, cold)
    gc.collect()
    gc.freeze()  # the children's garbage collections leave the preloaded objects' pages shared
    socket_path, _ = place.paths(preload)
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


def _wait_for(pid: int) -> None:
    """Let the cell that started this process finish before preloading competes with it."""
    if pid <= 0:
        return
    import select

    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return  # gone already (or no pidfd): nothing to wait for
    try:
        select.select([handle], [], [], 15.0)
    finally:
        os.close(handle)


def preload_modules(names: str) -> list[str]:
    """Import each named module (with what its first use loads), skipping missing ones.

    matplotlib is imported with pyrelune's backend selected as a cold worker
    selects it (`display.connect`), unless MPLBACKEND chose another.
    """
    import importlib

    from pyrelune.worker.display import MATPLOTLIB_BACKEND

    for module in OWN:
        importlib.import_module(module)
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
    """The accept loop."""

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
        while True:
            waited = time.monotonic() - self.last
            if self.idle and waited >= self.idle:
                return
            self.listener.settimeout(self.idle - waited if self.idle else None)
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            with conn:
                if not self._answer(conn):
                    return

    def _answer(self, conn: socket.socket) -> bool:
        """Handle one connection; False: time to go."""
        pid, uid, _ = struct.unpack("3i", conn.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        if uid != os.getuid():
            return True  # another user's: nothing is read, nothing is answered
        conn.settimeout(2.0)
        try:
            kind, fds, _, _ = socket.recv_fds(conn, frames.KIND_SIZE, frames.FDS)
        except OSError:
            return True
        try:
            if kind == frames.RUN and len(fds) == frames.FDS:
                return self._run(conn, fds, pid)
            if kind == frames.STATUS:
                conn.sendall(json.dumps(self.status()).encode())
            elif kind == frames.STOP:
                conn.sendall(b"stopping")
                return False
            return True
        finally:
            for fd in fds:
                os.close(fd)  # the host's pipes: the child has its copies, this process none

    def _run(self, conn: socket.socket, fds: list[int], pid: int) -> bool:
        child = os.fork()
        if child == 0:
            served.serve(conn, fds, pid, self.baseline, (self.listener.fileno(), LOCK_FD))
        self.served += 1
        self.last = time.monotonic()
        return True

    def status(self) -> dict[str, Any]:
        memory = _memory()
        return {
            "pid": os.getpid(), "preload": self.preload, "preloaded": self.loaded,
            "python": sys.executable, "rss": memory.get("Rss", 0),
            "private": memory.get("Private_Clean", 0) + memory.get("Private_Dirty", 0),
            "idle": round(time.monotonic() - self.last, 1), "idle_timeout": self.idle,
            "uptime": round(time.monotonic() - self.started, 1), "served": self.served,
        }


def _memory() -> dict[str, int]:
    """This process's memory in bytes, from /proc/self/smaps_rollup (Linux)."""
    found = {}
    try:
        with open("/proc/self/smaps_rollup", encoding="ascii") as rollup:
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


