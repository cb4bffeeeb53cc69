"""The warm path of the launcher: hand the cell to the warm process, or say "run it cold".

Runs in the process Vix Note execs, so it imports nothing but `_socket`
(Python's `socket` module would add `selectors` and `enum`). Every refusal
or failure before the warm runtime has committed to the cell returns None,
and the caller runs the cell cold with the request bytes it already holds:
the cell never runs twice, and never not at all. With PYRELUNE_WARM_DEBUG
set, one line on stderr says why a cell ran cold.

A cell that cannot gain from the preload (`gains`) runs cold without asking:
the warm path costs more than a cold start for a cell that needs none of
the preloaded modules.

On first use (no warm process) the cell runs cold, and once its response
is out (`Start.spawn`) a warm process starts in the background, detached
and holding none of the caller's descriptors.
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
#: The lock's descriptor in the warm process (see `Start`).
LOCK_FD = 3
#: What a cell may hold that imports a preloaded module without naming it:
#: any import, any IPython magic (`%pylab`, `%run script.py`).
_IMPORTING = (b"import", b"%")
_PROGRAM = """\
import os, sys
if not getattr(sys.flags, "safe_path", False):
    del sys.path[0]
os.chdir("/")
cold = list(sys.modules)
from pyrelune.warm.server import main
main(sys.argv[1:], cold)
"""


def gains(raw: bytes, preload: str) -> bool:
    """Whether the request `raw` may use a preloaded module, so that warm can be faster.

    Yes when its bytes hold `import`, a `%` (a magic) or the name of a
    preloaded module; a cell without any (`print(2 + 3)`) is faster cold.
    A substring test on the request as it came: no JSON decoding, and a
    false yes costs only the warm path.
    """
    names = (name.partition(".")[0].encode() for name in preload.split(","))
    return any(word in raw for word in _IMPORTING) or any(n in raw for n in names if n)


def run(raw: bytes, preload: str, every: bool = False) -> tuple[int | None, Start | None]:
    """The exit status once the warm runtime answered the request `raw` (None: run it cold),
    and the warm process to start once the cold cell has answered, if none runs.

    `every`: serve the cell warm even if it cannot gain (`gains`).
    """
    socket_path, lock_path = place.paths(preload)
    try:
        place.check_folder(os.path.dirname(socket_path), create=True)
        place.check_socket(socket_path)
    except place.Unsafe as refusal:
        return _cold(str(refusal)), None
    except FileNotFoundError:
        return _first_use(preload, lock_path)
    except OSError as exc:
        return _cold(f"socket: {exc}"), None
    if not every and not gains(raw, preload):
        return _cold("the cell uses no preloaded module"), None
    try:
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except OSError as exc:
        return _cold(f"socket: {exc}"), None
    try:
        conn.settimeout(HANDSHAKE)
        try:
            conn.connect(socket_path)
        except (ConnectionRefusedError, FileNotFoundError):  # a warm process that died
            return _first_use(preload, lock_path)
        return _exchange(conn, raw), None
    except OSError as exc:  # TimeoutError too
        return _cold(f"warm process: {exc}"), None
    finally:
        conn.close()


def _first_use(preload: str, lock_path: str) -> tuple[int | None, Start | None]:
    start = Start.reserve(preload, lock_path)
    if isinstance(start, str):
        return _cold(start), None
    return _cold("starting a warm process"), start


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


class Start:
    """A warm process to start, its lock taken: whoever holds the lock is the warm process.

    The lock is taken when the cell finds none running (`reserve`), before
    the cold cell runs, and passed on (`spawn`) to the warm process, which
    keeps it for its whole life: two cells racing at first use start one.
    The spawn comes once the cell's response is out, so that nothing of it
    (no fork of this process, no interpreter start, no preloading) competes
    with the cell for the processors.
    """

    def __init__(self, preload: str, lock: int) -> None:
        self.preload = preload
        self.lock = lock

    @classmethod
    def reserve(cls, preload: str, lock_path: str) -> Start | str:
        """The start to make, or why none: one is starting (or running), or an error."""
        import fcntl  # first use only

        try:
            lock = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            return f"lock: {exc.strerror}"
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if lock <= LOCK_FD:  # kept apart from the descriptors the spawn sets up
                moved = fcntl.fcntl(lock, fcntl.F_DUPFD_CLOEXEC, LOCK_FD + 1)
                os.close(lock)
                lock = moved
        except OSError:
            os.close(lock)
            return "warm process starting"
        return cls(preload, lock)

    def spawn(self) -> str:
        """Start the warm process, detached; say how it went.

        posix_spawn (no fork of this process): its own session, stdio on
        /dev/null, the lock as LOCK_FD and every other descriptor this
        process has closed (Vix Note's server sockets are open in it). Not
        waited for: it outlives this process (then no one's child, so never
        a zombie).
        """
        actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0),
            (os.POSIX_SPAWN_DUP2, 0, 1), (os.POSIX_SPAWN_DUP2, 0, 2),
            (os.POSIX_SPAWN_DUP2, self.lock, LOCK_FD)]
        try:
            actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in map(int, os.listdir("/proc/self/fd"))
                        if fd > LOCK_FD]
            os.posix_spawn(sys.executable, [sys.executable, "-c", _PROGRAM, self.preload],
                           os.environ, file_actions=actions, setsid=True)
        except (OSError, NotImplementedError) as exc:
            return f"spawn: {exc}"
        finally:
            os.close(self.lock)
        return "starting a warm process"
