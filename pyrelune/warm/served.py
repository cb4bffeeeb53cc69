"""The warm process's child: one request, run by the cold oneshot runtime itself.

Forked per cell. It takes the caller's descriptors, current directory,
environment, umask and resource limits, so that `oneshot.handle` runs as in
a freshly started runtime; what the preloaded modules make impossible to
match (an environment they read at import, a module of the cell's folders
that would stand in for one of them) is refused before anything runs, and
the caller runs the cell cold. A host that SIGKILLs the caller SIGKILLs this
process too (O_ASYNC on the socket), and with it, as in cold, the cell's
process group.
"""

from __future__ import annotations

import _signal
import os
import sys
import traceback
from collections.abc import Iterable
from typing import NoReturn

from pyrelune.warm import frames

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket

#: Environment variables that modules read at import (or the interpreter at start-up):
#: by prefix, by suffix and by name. A request whose values differ runs cold.
_PREFIXES = (b"PYTHON", b"MPL", b"LC_", b"OMP_", b"MKL_", b"OPENBLAS_", b"GOTO", b"BLIS_",
             b"KMP_", b"NUMEXPR_", b"NUMBA_", b"NUMPY_", b"PANDAS_", b"VECLIB_", b"ARROW_",
             b"LD_", b"MALLOC_", b"GLIBC_", b"XDG_CONFIG", b"XDG_CACHE", b"XDG_DATA")
_SUFFIXES = (b"_NUM_THREADS",)
_NAMES = frozenset((b"LANG", b"LANGUAGE", b"PATH", b"HOME", b"TZ", b"TZDIR", b"TMPDIR",
                    b"TEMP", b"TMP"))
#: The limits a child takes from its caller.
_RLIMITS = tuple(n for n in ("RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA",
                             "RLIMIT_FSIZE", "RLIMIT_MEMLOCK", "RLIMIT_MSGQUEUE", "RLIMIT_NICE",
                             "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_RSS", "RLIMIT_RTPRIO",
                             "RLIMIT_RTTIME", "RLIMIT_SIGPENDING", "RLIMIT_STACK"))


class Baseline:
    """What the warm process was made with: the requests it can serve warm."""

    def __init__(self, environ: dict[bytes, bytes], shadowable: frozenset[str],
                 stamp: Stamp) -> None:
        self.environ = environ
        self.shadowable = shadowable
        self.stamp = stamp


class Stamp:
    """A cheap sign of the installed packages: the mtime of every sys.path folder.

    Installing, upgrading or removing a distribution adds or removes entries
    (its `.dist-info` folder, at least) in a sys.path folder, which changes
    that folder's mtime. A few `stat` calls per request.
    """

    def __init__(self) -> None:
        self.folders = tuple(p for p in sys.path if p)
        self.value = self.now()

    def now(self) -> tuple[tuple[int, int] | None, ...]:
        stamps: list[tuple[int, int] | None] = []
        for folder in self.folders:
            try:
                st = os.stat(folder)
                stamps.append((st.st_mtime_ns, st.st_ino))
            except OSError:
                stamps.append(None)
        return tuple(stamps)

    def changed(self) -> bool:
        return self.now() != self.value


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


def serve(conn: socket.socket, fds: list[int], peer: int, baseline: Baseline,
          inherited: tuple[int, ...]) -> NoReturn:
    """Run one request in this forked child, then exit; never returns."""
    status = 1
    try:
        for signum in (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGCHLD):
            _signal.signal(signum, _signal.SIG_DFL)
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        for fd in inherited:
            os.close(fd)  # the listening socket and the lock are the warm process's alone
        status = _serve(conn, fds, peer, baseline)
    except BaseException:  # an uncaught error ends a cold runtime so too
        try:
            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:
            pass
    finally:
        os._exit(status)


def _serve(conn: socket.socket, fds: list[int], peer: int, baseline: Baseline) -> int:
    conn.settimeout(5.0)
    data = b""
    while (sections := frames.unpack(data, 4)) is None:
        chunk = conn.recv(1 << 20)
        if not chunk:
            return 0  # the client gave up: it runs the cell cold
        data += chunk
    argv0, umask, environ_data, raw = sections
    if baseline.stamp.changed():
        conn.sendall(frames.COLD + b"installed packages changed")
        os.kill(os.getppid(), _signal.SIGTERM)  # the warm process: its modules are stale
        return 0
    environ = frames.environ_of(environ_data)
    reason = _adopt(fds, peer, environ, baseline) or _shadowed(raw, baseline.shadowable)
    if reason:
        conn.sendall(frames.COLD + reason.encode("utf-8", "replace"))
        return 0
    os.umask(int(umask))
    sys.argv = [argv0.decode("utf-8", "surrogateescape")]
    _reseed()
    conn.sendall(frames.ACCEPT + os.getpid().to_bytes(8, "big"))
    if conn.recv(1) != frames.GO:
        return 0  # the client timed out and runs the cell cold: nothing ran here
    conn.settimeout(None)
    _die_with(conn)
    from pyrelune.modes import oneshot
    from pyrelune.transports import stdio

    stdio.write_all(oneshot.handle(raw, None))
    status = 0
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    conn.sendall(bytes((status,)))
    return status


def _adopt(fds: list[int], peer: int, environ: dict[bytes, bytes],
           baseline: Baseline) -> str | None:
    """Become the caller (descriptors, directory, environment, limits); why not, if not."""
    mine = relevant(environ)
    if mine != baseline.environ:
        names = sorted(set(mine.items()) ^ set(baseline.environ.items()))
        return f"environment differs: {names[0][0].decode('utf-8', 'replace')}"
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    os.fchdir(fds[3])
    for fd in fds:
        os.close(fd)
    fds.clear()
    os.environb.clear()
    os.environb.update(environ)
    import resource

    for name in _RLIMITS:
        limit = getattr(resource, name, None)
        if limit is None:
            continue
        try:
            wanted = resource.prlimit(peer, limit)
            if resource.getrlimit(limit) != wanted:
                resource.setrlimit(limit, wanted)
        except (OSError, ValueError):
            return f"resource limits: {name} cannot be matched"
    return None


def _shadowed(raw: bytes, names: frozenset[str]) -> str | None:
    """Which preloaded module a file in the cell's folders would stand in for, if any.

    The cold worker puts the note's folder and the working directory first
    on sys.path: there, `pandas.py` (or a `pandas/` package, `pandas.*.so`)
    is the cell's pandas, and a preloaded one cannot be.
    """
    from pyrelune.modes import oneshot
    from pyrelune.protocols import vixnote

    try:
        request = vixnote.parse_request(raw)
        note = oneshot.note_folder(request.document_path)
        working = os.path.abspath(request.working_directory or ".")
    except (vixnote.Rejected, OSError, ValueError):
        return None  # the cold path's answer is the same rejection: let it give it
    for folder in (note, working):
        if folder is None:
            continue
        try:
            entries = os.listdir(folder)
        except (OSError, ValueError):
            continue
        for entry in entries:
            stem, dot, suffix = entry.partition(".")
            if stem in names and (suffix in ("py", "pyc") or suffix.endswith("so") if dot
                                  else os.path.isfile(os.path.join(folder, entry, "__init__.py"))):
                return f"{os.path.join(folder, entry)} would shadow a preloaded module"
    return None


def _reseed() -> None:
    """Fresh random state, as a new process has (Python's `random` reseeds itself at fork)."""
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()


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
