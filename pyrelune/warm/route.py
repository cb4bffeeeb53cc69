"""Which way a cell goes: to the warm process, or cold; and the start of one at first use.

Runs in the process Vix Note execs, before every warm-enabled cell, so it
imports nothing. A cell that cannot gain from the preload (`gate.gains`)
runs cold without asking: for a cell that needs none of the preloaded
modules the warm path costs more than a cold start (when a warm process
runs, the console script decides so with `pyrelune.warm.gate` alone,
before this module is imported). On
first use (no warm process) the cell runs cold, and once its response is
out (`Start.spawn`) a warm process starts in the background, detached and
holding none of the caller's descriptors. With PYRELUNE_WARM_DEBUG set,
one line on stderr says why a cell ran cold.
"""

from __future__ import annotations

import os
import sys
import time

from pyrelune import PyreluneError
from pyrelune.warm import place
from pyrelune.warm.gate import cold, warm_paths

#: The lock's descriptor in the warm process (see `Start`).
LOCK_FD = 3
#: What a cold cell says when a warm process is on its way: one spawned, or another's.
STARTING = "starting a warm process"
BUSY = "warm process starting"
_PROGRAM = """\
import os, sys
if not getattr(sys.flags, "safe_path", False):
    del sys.path[0]
os.chdir("/")
cold = list(sys.modules)
from pyrelune.warm.server import main
main(sys.argv[1:], cold)
"""


def run(raw: bytes, preload: str, handed: bool
        ) -> tuple[int | None, Start | None, float | None]:
    """The exit status once the warm runtime answered the request `raw` (None: run it cold),
    the warm process to start once the cold cell has answered, if none runs, and
    when the cold cell's deadline started, if the warm process was asked first.

    `handed`: the cell goes to the warm process if one serves (it may gain
    from the preload: `gate.gains`, or every cell does); else it runs cold.
    """
    socket_path, lock_path = warm_paths(preload)
    try:
        place.check_folder(os.path.dirname(socket_path), create=True)
        place.check_socket(socket_path)
    except place.Unsafe as refusal:
        return cold(str(refusal)), None, None
    except FileNotFoundError:
        return _first_use(preload, lock_path)
    except OSError as exc:
        return cold(f"socket: {exc}"), None, None
    if not handed:
        return cold("the cell uses no preloaded module"), None, None
    from pyrelune.warm import client

    try:
        status = client.run(raw, socket_path)
    except (ConnectionRefusedError, FileNotFoundError):  # a warm process that died
        return _first_use(preload, lock_path)
    if status is not None:
        return status, None, None
    from pyrelune.warm.started import started

    return None, None, started()  # the time the warm process took counts


def _first_use(preload: str, lock_path: str) -> tuple[int | None, Start | None, None]:
    try:
        start = Start.reserve(preload, lock_path)
    except NoStart as why:
        return cold(str(why)), None, None
    return cold(STARTING), start, None


class NoStart(PyreluneError):
    """Why no warm process is started; `busy`: because one is on its way (or runs) already,
    which is no failure."""

    def __init__(self, reason: str, busy: bool = False) -> None:
        super().__init__(reason)
        self.busy = busy


class Start:
    """A warm process to start, its lock taken: whoever holds the lock is the warm process.

    The lock is taken when the cell finds none running (`reserve`), before
    the cold cell runs, and passed on (`spawn`) to the warm process, which
    keeps it for its whole life: two cells racing at first use start one.
    The spawn comes once the cell's response is out, so that nothing of it
    (no fork of this process, no interpreter start, no preloading) competes
    with the cell for the processors.
    """

    def __init__(self, preload: str, lock: int, log: str) -> None:
        self.preload = preload
        self.lock = lock
        self.log = log

    @classmethod
    def reserve(cls, preload: str, lock_path: str, patient: bool = True) -> Start:
        """The start to make; else NoStart says why none: one is starting (or running),
        the setting is wrong, the last ones died (unless not `patient`: see `starts`),
        or an error."""
        import fcntl  # first use only

        from pyrelune import settings
        from pyrelune.warm import starts

        try:
            settings.warm_idle()  # the warm process's own: it would die of a bad one
        except settings.SettingError as exc:
            raise NoStart(str(exc)) from None
        try:
            lock = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise NoStart(f"lock: {exc.strerror}") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if lock <= LOCK_FD:  # kept apart from the descriptors the spawn sets up
                moved = fcntl.fcntl(lock, fcntl.F_DUPFD_CLOEXEC, LOCK_FD + 1)
                os.close(lock)
                lock = moved
            record = starts.Record.read(lock).after_a_crash()
            refusal = record.refusal(time.time()) if patient else None
            if refusal is None:
                starts.Record(starts.STARTING, record.failures, time.time()).write(lock)
        except OSError:
            os.close(lock)
            raise NoStart(BUSY, busy=True) from None
        if refusal is not None:
            os.close(lock)
            raise NoStart(refusal)
        return cls(preload, lock, starts.log_path(lock_path))

    def spawn(self) -> None:
        """Start the warm process, detached (NoStart if it cannot be).

        posix_spawn (no fork of this process): its own session, stdin and
        stdout on /dev/null, stderr to its log (see `starts`), the lock as
        LOCK_FD and every other descriptor this
        process has closed (Vix Note's server sockets are open in it). Not
        waited for: it outlives this process (then no one's child, so never
        a zombie).
        """
        actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0),
            (os.POSIX_SPAWN_DUP2, 0, 1),
            (os.POSIX_SPAWN_OPEN, 2, self.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
            (os.POSIX_SPAWN_DUP2, self.lock, LOCK_FD)]
        try:
            actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in map(int, os.listdir("/proc/self/fd"))
                        if fd > LOCK_FD]
            os.posix_spawn(sys.executable, [sys.executable, "-c", _PROGRAM, self.preload],
                           os.environ, file_actions=actions, setsid=True)
        except (OSError, NotImplementedError) as exc:
            raise NoStart(f"spawn: {exc}") from None
        finally:
            os.close(self.lock)
