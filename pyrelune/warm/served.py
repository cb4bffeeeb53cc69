"""The warm process's child: one request, run by the cold oneshot runtime itself.

A spare that took a cell. Before it accepts, it checks all that could make
the cell's answer differ from a cold one (the environment the preloaded
modules read at import, the installed packages and settings files, sys.path
and a module of the cell's folders that would stand in for a preloaded one,
a matplotlibrc, the launcher's sandbox and memory limits) and takes on the
launcher's limits and scheduling; a refusal means the launcher runs the
cell cold, nothing having run. Once the launcher commits, it takes the
launcher's descriptors, current directory, environment, umask, argv and
sys.path, and `oneshot.handle` runs as in a freshly started runtime, its
worker forked ahead (`ahead`). A host that SIGKILLs the launcher SIGKILLs
this process too (O_ASYNC on the socket), and with it, as in cold, the
cell's process group.
"""

from __future__ import annotations

import _signal
import os
import socket
import sys
import traceback
from collections.abc import Callable, Iterable
from typing import NoReturn

from pyrelune.warm import become, frames, sandbox
from pyrelune.warm.started import started

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pyrelune.supervisor.process import WorkerProcess
    from pyrelune.warm.ahead import Ahead

#: Environment variables that modules read at import (or the interpreter at start-up):
#: by prefix, by suffix and by name. A request whose values differ runs cold.
_PREFIXES = (b"PYTHON", b"MPL", b"MATPLOTLIB", b"LC_", b"OMP_", b"MKL_", b"OPENBLAS_", b"GOTO",
             b"BLIS_", b"KMP_", b"NUMEXPR_", b"NUMBA_", b"NUMPY_", b"PANDAS_", b"VECLIB_",
             b"ARROW_", b"LD_", b"MALLOC_", b"GLIBC_", b"XDG_CONFIG", b"XDG_CACHE", b"XDG_DATA")
_SUFFIXES = (b"_NUM_THREADS",)
_NAMES = frozenset((b"LANG", b"LANGUAGE", b"PATH", b"HOME", b"TZ", b"TZDIR", b"TMPDIR",
                    b"TEMP", b"TMP"))
#: The limits a child takes from its caller.
_RLIMITS = tuple(n for n in ("RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA",
                             "RLIMIT_FSIZE", "RLIMIT_MEMLOCK", "RLIMIT_MSGQUEUE", "RLIMIT_NICE",
                             "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_RSS", "RLIMIT_RTPRIO",
                             "RLIMIT_RTTIME", "RLIMIT_SIGPENDING", "RLIMIT_STACK"))
#: The limits on memory: set, they send the cell cold (see `_limits`).
_MEMORY = ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_RSS")
#: Seconds a client has to send its request once connected (it sends it at once).
REQUEST_WAIT = 10.0


class Baseline:
    """What the warm process was made with: the requests it can serve warm.

    `environ`: the variables its modules may have read (`relevant`);
    `shadowable`: see `shadowable`; `path`: sys.path before the preload;
    `sandbox`: its `sandbox.identity`; `matplotlibrc`: the settings file its
    matplotlib read, if it preloaded matplotlib.
    """

    def __init__(self, environ: dict[bytes, bytes], shadowable: frozenset[str],
                 stamp: Stamp, path: list[str], sandbox_identity: dict[str, str],
                 matplotlibrc: str | None) -> None:
        self.environ = environ
        self.shadowable = shadowable
        self.stamp = stamp
        self.path = path
        self.sandbox = sandbox_identity
        self.matplotlibrc = matplotlibrc


class Stamp:
    """A cheap sign of the installed packages and of the settings files the preload read.

    Installing, upgrading or removing a distribution adds or removes entries
    (its `.dist-info` folder, at least) in a sys.path folder, which changes
    that folder's mtime; editing a settings file (`files`: matplotlibrc)
    changes its own. A few `stat` calls per request.
    """

    def __init__(self, files: tuple[str, ...] = ()) -> None:
        self.folders = tuple(p for p in sys.path if p)
        self.files = files
        self.value = self.now()

    def now(self) -> tuple[tuple[int, int, int] | None, ...]:
        stamps: list[tuple[int, int, int] | None] = []
        for path in self.folders + self.files:
            try:
                st = os.stat(path)
                stamps.append((st.st_mtime_ns, st.st_ino, st.st_size))
            except OSError:
                stamps.append(None)
        return tuple(stamps)

    def changed(self) -> str | None:
        """What changed since the preload, if anything."""
        now = self.now()
        if now == self.value:
            return None
        for path, was, is_now in zip(self.folders + self.files, self.value, now, strict=True):
            if was != is_now and path in self.files:
                return f"{path} changed"
        return "installed packages changed"


def relevant(environ: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """The variables of `environ` that the preloaded modules may have read at import."""
    return {k: v for k, v in environ.items()
            if k in _NAMES or k.startswith(_PREFIXES) or k.endswith(_SUFFIXES)}


def shadowable(modules: Iterable[str], cold: Iterable[str]) -> frozenset[str]:
    """Top-level names a file in a cell's folders could stand in for in a cold cell.

    Not those a cold runtime imported before the cell (`cold`: they are
    taken from sys.modules then too), nor builtins (found before sys.path).
    """
    def top(names: Iterable[str]) -> set[str]:
        return {name.partition(".")[0] for name in names}

    return frozenset(top(modules) - top(cold) - set(sys.builtin_module_names)
                     - {"__main__", "__mp_main__", "pyrelune"})


def serve(conn: socket.socket, peer: int, baseline: Baseline, inherited: tuple[int, ...],
          served: Callable[[], None], ahead: Ahead) -> NoReturn:
    """Run one request in this forked child, then exit; never returns.

    `inherited`: the warm process's descriptors to close (its listening
    socket, its lock); `served`: tells the warm process once the cell is ours;
    `ahead`: the cell's worker, forked already.
    """
    status = 1
    try:
        for signum in (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGCHLD):
            _signal.signal(signum, _signal.SIG_DFL)
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        for fd in inherited:
            os.close(fd)  # the listening socket and the lock are the warm process's alone
        status = _serve(conn, peer, baseline, served, ahead)
    except BaseException:  # an uncaught error ends a cold runtime so too
        try:
            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:
            pass
    finally:
        os._exit(status)


def _serve(conn: socket.socket, peer: int, baseline: Baseline, served: Callable[[], None],
           ahead: Ahead) -> int:
    """The handshake (see `frames`), then the cell as the cold runtime runs it."""
    try:
        taken = _handshake(conn, peer, baseline, ahead.worker.pid)
    except OSError:
        return 0  # the client went before it committed: it runs the cell cold
    if taken is None:
        return 0
    fds, (argv0, umask, environ_data, path_data, raw) = taken
    served()
    _die_with(conn)
    environ, path = frames.environ_of(environ_data), frames.paths_of(path_data)
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    os.fchdir(fds[3])
    for fd in fds:
        os.close(fd)
    become.take_on(environ, int(umask), argv0, path)
    from pyrelune.modes import oneshot
    from pyrelune.transports import stdio

    def start_worker(source: str, filename: str, folders: tuple[str, ...], cap: int,
                     shown: tuple[str, ...]) -> WorkerProcess:
        return ahead.start(source, filename, folders, cap, shown,
                           (environ_data, int(umask), argv0, path))

    stdio.write_all(oneshot.handle(raw, None, started(peer), start_worker))
    status = 0
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    _release_std_fds()
    conn.sendall(bytes((status,)))
    return status


def _handshake(conn: socket.socket, peer: int, baseline: Baseline, worker: int
               ) -> tuple[list[int], list[bytes]] | None:
    """The launcher's descriptors and request once it committed; None if it did not.

    Every check comes before the accept, and the launcher's limits and
    scheduling are taken on (by this process and its `worker`) meanwhile.
    """
    conn.settimeout(REQUEST_WAIT)
    sections = _receive_sections(conn)
    if sections is None:
        return None  # the client gave up (it runs the cell cold), or it is no client of ours
    _, umask, environ_data, path_data, raw = sections
    stale = baseline.stamp.changed()
    if stale:
        conn.sendall(frames.COLD + stale.encode("utf-8", "replace"))
        os.kill(os.getppid(), _signal.SIGTERM)  # the warm process: its modules are stale
        return None
    pids = (os.getpid(), worker)
    reason = ("a malformed request" if not umask.isdigit() or int(umask) > 0o777 else None
              or _environment(frames.environ_of(environ_data), baseline)
              or sandbox.differs(peer, baseline.sandbox) or _limits(peer, pids)
              or sandbox.carry_over(peer, pids)
              or _same_imports(raw, frames.paths_of(path_data), peer, baseline))
    if reason:
        conn.sendall(frames.COLD + reason.encode("utf-8", "replace"))
        return None
    conn.sendall(frames.ACCEPT + os.getpid().to_bytes(8, "big"))
    conn.settimeout(None)  # the client sends GO at once: waiting longer costs nothing
    go, fds, _, _ = socket.recv_fds(conn, len(frames.GO), frames.FDS)
    if go != frames.GO or len(fds) != frames.FDS:
        for fd in fds:
            os.close(fd)
        return None  # the client timed out and runs the cell cold: nothing ran here
    return fds, sections


def _receive_sections(conn: socket.socket) -> list[bytes] | None:
    """The request's sections; None at EOF, past the deadline, or when they are too large."""
    data = bytearray()
    while (sections := frames.unpack(data, frames.SECTIONS)) is None:
        if frames.claimed(data, frames.SECTIONS) > frames.MAX_REQUEST:
            return None
        try:
            chunk = conn.recv(1 << 20)
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return sections


def _environment(environ: dict[bytes, bytes], baseline: Baseline) -> str | None:
    mine = relevant(environ)
    if mine != baseline.environ:
        names = sorted(set(mine.items()) ^ set(baseline.environ.items()))
        return f"environment differs: {names[0][0].decode('utf-8', 'replace')}"
    return None


def _limits(peer: int, pids: tuple[int, ...]) -> str | None:
    """Give processes `pids` the launcher's resource limits; why not, if not.

    A limit on memory cannot mean the same: a copy of the warm process has
    the preloaded modules mapped already, which a cold one would not.
    """
    import resource

    for name in _RLIMITS:
        limit = getattr(resource, name, None)
        if limit is None:
            continue
        try:
            wanted = resource.prlimit(peer, limit)
            if name in _MEMORY and wanted[0] != resource.RLIM_INFINITY:
                return f"resource limits: {name} limits memory"
            for pid in pids:
                if resource.prlimit(pid, limit) != wanted:
                    resource.prlimit(pid, limit, wanted)
        except (OSError, ValueError):
            return f"resource limits: {name} cannot be matched"
    return None


def _same_imports(raw: bytes, path: list[str], peer: int, baseline: Baseline) -> str | None:
    """Why the cell's imports could differ from a cold cell's, if they could.

    The launcher's sys.path must hold the warm process's (a cold runtime
    has the launcher script's folder first: it is added). A module in a
    folder a cold cell looks in first (that one, the note's, the working
    directory) may stand in for a preloaded one, and matplotlib reads a
    `matplotlibrc` in the working directory at import. Relative paths are
    the launcher's: read from its current directory, entered for a moment.
    """
    if [p for p in path if p in baseline.path] != baseline.path:
        return "sys.path differs"
    try:
        os.chdir(f"/proc/{peer}/cwd")
    except OSError as exc:
        return f"the launcher's current directory: {exc.strerror}"
    try:
        return _look_in_folders(raw, [p for p in path if p not in baseline.path], baseline)
    finally:
        os.chdir("/")


def _look_in_folders(raw: bytes, folders: list[str], baseline: Baseline) -> str | None:
    from pyrelune.protocols import vixnote
    from pyrelune.protocols.vixnote_folders import note_folder

    working = None
    try:
        request = vixnote.parse_request(raw)
        note = note_folder(request.document_path)
        working = os.path.abspath(request.working_directory or ".")
        folders += [f for f in (note, working) if f is not None]
    except (vixnote.Rejected, OSError, ValueError):
        pass  # the cold path's answer is the same rejection: let it give it
    for folder in folders:
        shadow = _shadow_in(folder, baseline.shadowable)
        if shadow:
            return f"{shadow} would shadow a preloaded module"
    if baseline.matplotlibrc is not None and working is not None:
        found = _matplotlibrc(working)
        if found is not None and found != baseline.matplotlibrc:
            return f"matplotlib would read its settings from {found}"
    return None


def _shadow_in(folder: str, names: frozenset[str]) -> str | None:
    """A file in `folder` that would stand in for a module of `names`, if any.

    The cold worker puts the note's folder and the working directory first
    on sys.path: there, `pandas.py` (or a `pandas/` package, `pandas.*.so`)
    is the cell's pandas, and a preloaded one cannot be.
    """
    try:
        entries = os.listdir(folder)
    except (OSError, ValueError):
        return None
    for entry in entries:
        stem, dot, suffix = entry.partition(".")
        if stem in names and (suffix in ("py", "pyc") or suffix.endswith("so") if dot
                              else os.path.isfile(os.path.join(folder, entry, "__init__.py"))):
            return os.path.join(folder, entry)
    return None


def matplotlibrc() -> str | None:
    """The settings file the loaded matplotlib read (absolute), or None without matplotlib."""
    matplotlib = sys.modules.get("matplotlib")
    if matplotlib is None:
        return None
    found: str = matplotlib.matplotlib_fname()
    return os.path.abspath(found)


def _matplotlibrc(working: str) -> str | None:
    """The settings file a cold cell's matplotlib would read in `working`, if it can be told.

    Changes the current directory (the caller puts it back).
    """
    try:
        os.chdir(working)  # matplotlib looks in the current directory first
    except (OSError, ValueError):
        return None  # the cold path rejects the request: let it
    return matplotlibrc()


def _release_std_fds() -> None:
    """Let go of the host's pipes before exit, so its EOF does not wait for our teardown.

    An exiting process frees its memory before its descriptors: for a copy
    of the warm process that takes milliseconds.
    """
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _die_with(conn: socket.socket) -> None:
    """SIGKILL this process when the client's end closes (a host that SIGKILLed the launcher).

    As in cold, where the runtime is the process the host kills, the cell's
    process group then dies with it (the worker's lifeline). With O_ASYNC
    the kernel sends the signal: nothing here waits or polls.
    """
    import fcntl
    import select

    fd = conn.fileno()
    fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(fd, fcntl.F_SETSIG, _signal.SIGKILL)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if poller.poll(0):  # gone (or talking) before the signal was armed
        os._exit(0)
