"""The warm process: the data stack imported once, then one forked oneshot runtime per cell.

Started detached once the first warm cell has answered (`route.Start`) or by `pyrelune
warm start`. It holds the lock for its whole life (one warm process per
socket), preloads, listens on a socket only its user can reach, and for each
request of the same user a child forked ahead of time (with the worker of
its cell: `ahead`) becomes the cold runtime (`served`). It never holds the
descriptors a request brings: the child receives them. It exits after an
idle timeout, when the installed packages or the settings files it read
change, on `pyrelune warm stop` or SIGTERM, and removes its socket as it
goes; its starts are recorded in its lock file (`starts`).
"""

from __future__ import annotations

import gc
import json
import mmap
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Iterable
from typing import Any, NoReturn

from pyrelune import settings
from pyrelune.warm import ahead, frames, place, reach, sandbox, served, starts
from pyrelune.warm.gate import plain_path, warm_paths
from pyrelune.warm.route import LOCK_FD

#: The counts the warm process shares with its spares: cells served, the last one's time.
_COUNTS = struct.Struct("Qd")
#: Seconds a connected client has to name its request's kind (a launcher does at once).
KIND_WAIT = 0.25
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
       "pyrelune.shaping", "pyrelune.shaping.terminal",
       "pyrelune.supervisor.capture", "pyrelune.protocols.vixnote_outputs", "pyrelune.spin",
       "fcntl", "resource")


def main(argv: list[str], cold: Iterable[str]) -> None:
    """`argv`: the preload names. `cold`: the modules loaded before this one, as in cold."""
    preload = argv[0]
    idle = settings.warm_idle()  # checked by its starter too: see route.Start
    environ = served.relevant(dict(os.environb))
    path = list(sys.path)
    loaded = preload_modules(preload)
    shadowable = served.shadowable(sys.modules, cold)
    matplotlibrc = served.matplotlibrc()
    stamp = served.Stamp(() if matplotlibrc is None else (matplotlibrc,))
    socket_path, _ = warm_paths(preload)
    place.check_folder(os.path.dirname(socket_path), create=True)
    plain = plain_path(preload)
    reach.publish(plain, list(sys.modules))  # before the socket: launchers read it once there
    gc.collect()
    gc.freeze()  # the children's garbage collections leave the preloaded objects' pages shared
    listener, identity = _listen(socket_path)
    baseline = served.Baseline(environ, shadowable, stamp, path, sandbox.identity(), matplotlibrc)
    warm = Warm(listener, preload, loaded, baseline, idle)
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, warm.leave)
    signal.signal(signal.SIGCHLD, _reap)
    started = starts.Record.read(LOCK_FD)  # as the starter wrote it
    starts.Record(starts.SERVING, started.failures, started.last).write(LOCK_FD)
    clean = False
    try:
        warm.serve()
        clean = True
    finally:
        _unlink_if_ours(socket_path, identity)
        try:
            os.unlink(plain)
        except OSError:
            pass
        if clean:
            starts.Record(starts.ENDED, 0, started.last).write(LOCK_FD)


def preload_modules(names: str) -> list[str]:
    """Import each named module (with what its first use loads), skipping missing ones.

    matplotlib is imported with pyrelune's backend selected as a cold worker
    selects it (`libraries.hook`), unless MPLBACKEND chose another, and
    pandas with the worker's import hooks (`libraries.watch_imports`).
    """
    import importlib

    from pyrelune.worker.libraries import MATPLOTLIB_BACKEND, watch_imports

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

    #: What a spare (or a runtime it became) tells this process on the pipe between them.
    TOOK_A_CELL = b"R"  # it no longer accepts: fork the next spare
    SERVED = b"S"  # the client committed its cell to it
    STOP_ALL = b"Q"

    def __init__(self, listener: socket.socket, preload: str, loaded: list[str],
                 baseline: served.Baseline, idle: float) -> None:
        self.listener = listener
        self.preload = preload
        self.loaded = loaded
        self.baseline = baseline
        self.idle = idle
        self.started = time.monotonic()
        self._notes, self._notify = os.pipe()
        # The cells served and when the last one came: written by this process as
        # runtimes tell it, read by the spare that answers a status (it was forked before).
        self._counts = mmap.mmap(-1, _COUNTS.size)
        self._count(0, self.started)

    def _count(self, served: int, last: float) -> None:
        _COUNTS.pack_into(self._counts, 0, served, last)

    @property
    def served(self) -> int:
        served: int = _COUNTS.unpack_from(self._counts)[0]
        return served

    @property
    def last(self) -> float:
        last: float = _COUNTS.unpack_from(self._counts)[1]
        return last

    def serve(self) -> None:
        """Keep one spare waiting until idle, stopped or signalled.

        Each spare has a lifeline of its own: the kernel SIGKILLs it when
        this process is gone, until it takes a cell (see `_take`). Leaving
        kills no one: a spare that has taken a cell is its runtime, and
        answers it whatever becomes of this process.

        Once a spare has taken a cell, the next one is forked when another
        client waits (the listening socket is readable) or that cell's
        runtime has ended: not while the cell runs beside it for nothing
        (a fork of this process, and the spare's of its worker, take the
        processors for milliseconds).
        """
        import select

        notes, listening = self._notes, self.listener.fileno()
        exited, alive = self._fork_spare()
        busy = False  # the spare took a cell: it runs it, and accepts no more
        try:
            while True:
                wait = self.idle - (time.monotonic() - self.last) if self.idle else None
                if wait is not None and wait <= 0:
                    return
                watched = [notes, exited, listening] if busy else [notes, exited]
                ready, _, _ = select.select(watched, [], [], wait)
                replace = exited in ready or listening in ready
                if notes in ready:
                    for note in os.read(notes, 512):
                        if note == self.STOP_ALL[0]:
                            return
                        if note == self.SERVED[0]:
                            if not self.served:  # it works: no longer a start that fails
                                starts.Record(starts.SERVING, 0, time.time()).write(LOCK_FD)
                            self._count(self.served + 1, time.monotonic())
                        busy = busy or note == self.TOOK_A_CELL[0]
                if replace:  # another cell waits, or the spare (or the cell it took) ended
                    os.close(exited)
                    os.close(alive)
                    exited, alive = self._fork_spare()
                    busy = False
        finally:
            os.close(alive)  # the spare dies now, unless it has taken a cell

    def leave(self, signum: int, frame: object) -> None:
        """A signal's handler: `serve` returns, as for a stop.

        It raises nothing: an exception raised in a handler that runs inside
        an at-fork hook (logging's, say) is printed and lost.
        """
        _tell(self._notify, self.STOP_ALL)

    def _fork_spare(self) -> tuple[int, int]:
        """A new spare child: a descriptor readable once it has exited, and its lifeline."""
        lifeline, alive = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(self._notes)
                os.close(alive)
                _die_with_parent(lifeline)
                for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGCHLD):
                    signal.signal(signum, signal.SIG_DFL)
                self._spare(lifeline)
            finally:
                os._exit(0)
        os.close(lifeline)
        return os.pidfd_open(pid), alive

    def _spare(self, lifeline: int) -> None:
        """In the spare: fork the next cell's worker, then serve connections until one
        brings a cell (or a stop)."""
        self._ahead = ahead.Ahead()
        while True:
            conn, _ = self.listener.accept()
            with conn:
                pid, uid, _ = struct.unpack("3i", conn.getsockopt(
                    socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
                if uid != os.getuid():
                    continue  # another user's: nothing is read, nothing is answered
                conn.settimeout(KIND_WAIT)
                kind = _receive_kind(conn)
                if kind == frames.RUN:
                    self._take(conn, pid, lifeline)
                try:
                    if kind == frames.STATUS:
                        conn.sendall(json.dumps(self.status()).encode())
                    elif kind == frames.STOP:
                        conn.sendall(b"stopping")
                        _tell(self._notify, self.STOP_ALL)
                        return
                except OSError:
                    continue

    def _take(self, conn: socket.socket, peer: int, lifeline: int) -> NoReturn:
        """Become the runtime of the cell on `conn`: cut loose from this warm process first.

        Clearing O_ASYNC is atomic: either the warm process was gone before
        (this spare is SIGKILLed, and its client, answered nothing, runs the
        cell cold) or this process no longer dies with it.
        """
        import fcntl

        fcntl.fcntl(lifeline, fcntl.F_SETFL, fcntl.fcntl(lifeline, fcntl.F_GETFL) & ~os.O_ASYNC)
        os.close(lifeline)
        _tell(self._notify, self.TOOK_A_CELL)
        notify = self._notify

        def committed() -> None:
            _tell(notify, self.SERVED)
            os.close(notify)

        served.serve(conn, peer, self.baseline, (self.listener.fileno(), LOCK_FD), committed,
                     self._ahead)

    def status(self) -> dict[str, Any]:
        """The warm process's status (asked in the spare, forked since the last cell)."""
        warm, spare = _memory(os.getppid()), _memory(os.getpid())
        worker = _memory(self._ahead.worker.pid)
        return {
            "pid": os.getppid(), "preload": self.preload, "preloaded": self.loaded,
            "python": sys.executable, "rss": warm.get("Rss", 0),
            # What the three cost together (it, its spare, the spare's worker): their own
            # pages, and those they share counted once between them (PSS: the spare and
            # the worker share nearly all of the warm process's).
            "private": warm.get("Pss", 0) + spare.get("Pss", 0) + worker.get("Pss", 0),
            "idle": round(time.monotonic() - self.last, 1), "idle_timeout": self.idle,
            "uptime": round(time.monotonic() - self.started, 1), "served": self.served,
        }


def _receive_kind(conn: socket.socket) -> bytes:
    """The request's kind (KIND_SIZE bytes), or less if the client sent less in time."""
    kind = b""
    try:
        while len(kind) < frames.KIND_SIZE:
            chunk = conn.recv(frames.KIND_SIZE - len(kind))
            if not chunk:
                break
            kind += chunk
    except OSError:
        pass
    return kind


def _tell(notify: int, note: bytes) -> None:
    """A note to the warm process, unless it is gone."""
    try:
        os.write(notify, note)
    except OSError:
        pass


def _die_with_parent(lifeline: int) -> None:
    """SIGKILL this spare when the warm process is gone (even SIGKILLed): no orphan accepts.

    `lifeline` is the read end of a pipe of this spare's own, whose only
    write end the warm process holds; O_ASYNC has the kernel signal this
    process when it closes.
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


def _reap(signum: int, frame: object) -> None:
    """Children (the runtimes of finished cells) are reaped as they end."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


