"""The warm path of the launcher: hand the cell to the warm process, or say "run it cold".

Runs in the process Vix Note execs, so it imports nothing but `_socket`
(Python's `socket` module would add `selectors` and `enum`), and only for a
cell that goes warm (see `route`). Every refusal or failure before the warm
runtime has committed to the cell returns None, and the caller runs the
cell cold with the request bytes it already holds: the cell never runs
twice, and never not at all.
"""

from __future__ import annotations

import _signal
import _socket
import os
import sys
import time

from pyrelune.warm import frames
from pyrelune.warm.gate import cold

#: Seconds the warm process has, from the connect to its answer, before the cell runs cold:
#: a healthy one answers in milliseconds; a stopped or swapped-out one must not
#: eat the deadline, which counts from the launcher's start either way.
HANDSHAKE = 1.0
#: Signals the host may send the runtime; passed on to the warm runtime, which
#: answers them as the cold one does (see oneshot._STOPPING).
FORWARDED = tuple(getattr(_signal, n) for n in (
    "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM"))


def run(raw: bytes, socket_path: str) -> int | None:
    """The exit status once the warm runtime answered the request `raw`; None: run it cold.

    Raises ConnectionRefusedError or FileNotFoundError when no warm process listens.
    """
    try:
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except OSError as exc:
        return cold(f"socket: {exc}")
    until = time.monotonic() + HANDSHAKE
    try:
        conn.settimeout(HANDSHAKE)
        try:
            conn.connect(socket_path)
        except (ConnectionRefusedError, FileNotFoundError):
            raise
        except OSError as exc:  # TimeoutError too
            return cold(f"warm process: {exc}")
        try:
            return _exchange(conn, raw, until)
        except TimeoutError:
            return cold(f"the warm process did not answer within {HANDSHAKE:g} s")
        except OSError as exc:
            return cold(f"warm process: {exc}")
    finally:
        conn.close()


def _exchange(conn: _socket.socket, raw: bytes, until: float) -> int | None:
    umask = os.umask(0o077)
    os.umask(umask)
    argv0 = sys.argv[0].encode("utf-8", "surrogateescape") if sys.argv else b""
    path = frames.paths_bytes(sys.path)
    _in_time(conn, until)
    conn.sendall(frames.RUN + frames.pack(argv0, str(umask).encode(),
                                          frames.environ_bytes(dict(os.environb)), path, raw))
    answer = _receive(conn, 1 + 8, until)
    if answer[:1] != frames.ACCEPT or len(answer) < 9:
        reason = answer[1:] + _receive(conn, 4096, until) if answer[:1] == frames.COLD else b""
        return cold(reason.decode("utf-8", "replace") or "the warm process refused")
    runtime = int.from_bytes(answer[1:9], "big")
    try:
        here = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return cold(f"current directory: {exc.strerror}")
    forward = _Forward(runtime)
    conn.settimeout(None)
    try:
        # Committed once sent: from here on, the cell is the warm runtime's. The
        # host's descriptors go with it, so no one holds them who has not taken the cell.
        fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2, here))
        conn.sendmsg([frames.GO], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    except OSError as exc:
        forward.close()
        return cold(f"warm process: {exc}")  # not delivered: nothing ran
    finally:
        os.close(here)
    try:
        status = conn.recv(1)
    except OSError:
        status = b""
    forward.close()
    if not status:
        os.write(2, b"pyrelune: the warm runtime ended without an exit status\n")
        return 1
    return status[0]


def _in_time(conn: _socket.socket, until: float) -> None:
    """The socket's timeout set to what is left of the handshake (TimeoutError if none)."""
    left = until - time.monotonic()
    if left <= 0:
        raise TimeoutError
    conn.settimeout(left)


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


def _receive(conn: _socket.socket, size: int, until: float) -> bytes:
    """Up to `size` bytes, fewer only at EOF; TimeoutError past `until`."""
    data = b""
    while len(data) < size:
        _in_time(conn, until)
        chunk = conn.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data
