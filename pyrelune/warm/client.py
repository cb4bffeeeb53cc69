"""The warm path of the launcher: hand the cell to the warm process, or say "run it cold".

Runs in the process Vix Note execs, so it imports nothing but `_socket`
(Python's `socket` module would add `selectors` and `enum`). Every refusal
or failure before the warm runtime has committed to the cell returns None,
and the caller runs the cell cold with the request bytes it already holds:
the cell never runs twice, and never not at all. With PYRELUNE_WARM_DEBUG
set, one line on stderr says why a cell ran cold.

On first use (no warm process) it starts one in the background, detached
and holding none of the caller's descriptors, and runs the cell cold.
"""

from __future__ import annotations

import _signal
import _socket
import os
import sys

from pyrelune.warm import frames, place

#: Seconds the warm process has to take the cell before it runs cold instead.
HANDSHAKE = 3.0
#: Signals the host may send the runtime; passed on to the warm runtime, which
#: answers them as the cold one does (see oneshot._STOPPING).
FORWARDED = tuple(getattr(_signal, n) for n in (
    "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM"))
_PROGRAM = """\
import sys
if not getattr(sys.flags, "safe_path", False):
    del sys.path[0]
cold = list(sys.modules)
from pyrelune.warm.server import main
main(sys.argv[1:], cold)
"""


def run(raw: bytes, preload: str) -> int | None:
    """The exit status once the warm runtime answered the request `raw`; None: run it cold."""
    socket_path, lock_path = place.paths(preload)
    try:
        place.check_folder(os.path.dirname(socket_path), create=True)
        place.check_socket(socket_path)
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except place.Unsafe as refusal:
        return _cold(str(refusal))
    except FileNotFoundError:
        return _cold(start(preload, lock_path, os.getpid()))
    except OSError as exc:
        return _cold(f"socket: {exc}")
    try:
        conn.settimeout(HANDSHAKE)
        try:
            conn.connect(socket_path)
        except (ConnectionRefusedError, FileNotFoundError):  # a warm process that died
            return _cold(start(preload, lock_path, os.getpid()))
        return _exchange(conn, raw)
    except OSError as exc:  # TimeoutError too
        return _cold(f"warm process: {exc}")
    finally:
        conn.close()


def _exchange(conn: _socket.socket, raw: bytes) -> int | None:
    try:
        here = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return _cold(f"current directory: {exc.strerror}")
    try:
        fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2, here))
        conn.sendmsg([frames.RUN], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    finally:
        os.close(here)
    umask = os.umask(0o077)
    os.umask(umask)
    argv0 = sys.argv[0].encode("utf-8", "surrogateescape") if sys.argv else b""
    conn.sendall(frames.pack(argv0, str(umask).encode(),
                             frames.environ_bytes(dict(os.environb)), raw))
    answer = _receive(conn, 1 + 8)
    if answer[:1] != frames.ACCEPT or len(answer) < 9:
        reason = answer[1:] + _receive(conn, 4096) if answer[:1] == frames.COLD else b""
        return _cold(reason.decode("utf-8", "replace") or "the warm process refused")
    runtime = int.from_bytes(answer[1:9], "big")
    forward = _Forward(runtime)
    conn.sendall(frames.GO)  # committed: from here on, the cell is the warm runtime's
    conn.settimeout(None)
    try:
        status = conn.recv(1)
    except OSError:
        status = b""
    forward.close()
    if not status:
        os.write(2, b"pyrelune: the warm runtime ended without an exit status\n")
        return 1
    return status[0]


class _Forward:
    """A signal the host sends this process goes to the warm runtime, which answers it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        for signum in FORWARDED:
            _signal.signal(signum, self._pass)

    def _pass(self, signum: int, frame: object) -> None:
        try:
            os.kill(self.pid, signum)
        except OSError:
            pass  # it has just ended: its status is on its way

    def close(self) -> None:
        for signum in FORWARDED:
            _signal.signal(signum, _signal.SIG_DFL)


def _receive(conn: _socket.socket, size: int) -> bytes:
    """Up to `size` bytes, fewer only at EOF."""
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _cold(reason: str) -> int | None:
    """None (run it cold), said on stderr with PYRELUNE_WARM_DEBUG."""
    if os.environ.get("PYRELUNE_WARM_DEBUG"):
        os.write(2, f"pyrelune warm: cold ({reason})\n".encode("utf-8", "replace"))
    return None


def start(preload: str, lock_path: str, wait_for: int = 0) -> str:
    """Start a warm process in the background unless one is starting or running; say which.

    Whoever holds the lock is the warm process (or about to be): it takes
    the lock here, before the fork, and keeps it for its whole life, so two
    cells racing at first use start one. The process detaches (its own
    session, stdio on /dev/null, every other inherited descriptor closed,
    one fork: the cell pays for no second one)
    and waits for process `wait_for` (the cell that started it) to end
    before it execs: neither the interpreter's start nor the preloading
    competes with that cell for the processors.
    """
    import fcntl  # first use only

    try:
        lock = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        return f"lock: {exc.strerror}"
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return "warm process starting"
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(lock)
        return f"fork: {exc.strerror}"
    if pid == 0:  # pragma: no cover (a child process)
        try:
            os.setsid()
            os.dup2(lock, 3)
            os.set_inheritable(3, True)  # a dup2 onto itself keeps close-on-exec
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.closerange(4, 1 << 20)
            os.chdir("/")
            if wait_for:
                _wait_for(wait_for)
            os.execv(sys.executable, [sys.executable, "-c", _PROGRAM, preload])
        finally:
            os._exit(127)
    # Not waited for: it outlives this process (then no one's child, so never a zombie),
    # and this process waits only for the pids it means (its worker's).
    os.close(lock)
    return "starting a warm process"


def _wait_for(pid: int) -> None:
    """Until process `pid` has ended (at most 15 s: a cell's lifetime with the host's margin)."""
    import select

    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return  # gone already (or no pidfd): nothing to wait for
    select.select([handle], [], [], 15.0)
    os.close(handle)
