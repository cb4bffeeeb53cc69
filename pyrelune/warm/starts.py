"""The warm process's starts, kept in its lock file: one that keeps dying is not restarted.

Every first use whose warm process is gone would start another, and each
start preloads the data stack (seconds of CPU): a warm process that dies
on the way (a preloaded module that crashes, memory) would cost that on
every cell. So the starter writes `starting` in the lock file, the warm
process `serving` once it listens (and clears the count once it has served
a cell), `ended` when it leaves cleanly. A starter that finds `starting` or
`serving` in a lock no one holds counts a failure; from the second in a row
on, starts wait (`backoff`) and cells run cold meanwhile. The warm process's
stderr goes to a log beside the lock, so the reason can be told.

Imported at first use and by the warm process, never on a cell's way.
"""

from __future__ import annotations

import os
import time

STARTING = "starting"
SERVING = "serving"
ENDED = "ended"
#: Seconds before the next start after `failures` failures in a row (from the second on).
FIRST_WAIT = 30.0
LONGEST_WAIT = 3600.0
#: How much of the log's end `describe` quotes.
_QUOTED = 400


class Record:
    """What the lock file says: the last start's phase, the failures in a row, when it began."""

    def __init__(self, phase: str = ENDED, failures: int = 0, last: float = 0.0) -> None:
        self.phase = phase
        self.failures = failures
        self.last = last

    @classmethod
    def read(cls, lock: int) -> Record:
        """The record in the lock file `lock` (a fresh one if it holds none or garbage)."""
        words = os.pread(lock, 256, 0).split()
        try:
            phase, failures, last = words[0].decode("ascii"), int(words[1]), float(words[2])
        except (IndexError, ValueError, UnicodeDecodeError):
            return cls()
        return cls(phase, max(failures, 0), last)

    def write(self, lock: int) -> None:
        data = f"{self.phase} {self.failures} {self.last!r}\n".encode()
        os.pwrite(lock, data, 0)
        os.ftruncate(lock, len(data))

    def after_a_crash(self) -> Record:
        """The record as a starter holding the lock reads it: a start that never ended counts."""
        if self.phase in (STARTING, SERVING):
            return Record(STARTING, self.failures + 1, self.last)
        return self

    def wait(self) -> float:
        """Seconds from the last start before the next one may come."""
        if self.failures < 2:
            return 0.0
        return min(FIRST_WAIT * 2.0 ** min(self.failures - 2, 32), LONGEST_WAIT)

    def refusal(self, now: float) -> str | None:
        """Why no start now, if the warm process keeps dying; None: start it."""
        retry = self.last + self.wait()
        if now >= retry:
            return None
        return (f"the warm process died {self.failures} times in a row without ending cleanly;"
                f" next start after {time.strftime('%H:%M:%S', time.localtime(retry))}")


def held(lock_path: str) -> bool:
    """Whether a warm process (or its starter) holds the lock at `lock_path`."""
    import fcntl

    try:
        lock = os.open(lock_path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(lock)
    return False


def log_path(lock_path: str) -> str:
    """Where the warm process of `lock_path` writes its stderr (truncated at each start)."""
    return lock_path.removesuffix(".lock") + ".log"


def describe(lock_path: str) -> str | None:
    """Why the warm process is not running, when it failed; None when nothing failed
    (or it is starting: its lock is held)."""
    if held(lock_path):
        return None
    try:
        lock = os.open(lock_path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        record = Record.read(lock).after_a_crash()
    finally:
        os.close(lock)
    if record.failures == 0:
        return None
    why = record.refusal(time.time()) or (f"the warm process died {record.failures} "
                                          "time(s) in a row without ending cleanly")
    try:
        with open(log_path(lock_path), "rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(log.tell() - _QUOTED, 0))
            tail = log.read().decode("utf-8", "replace").strip()
    except OSError:
        tail = ""
    said = tail.splitlines()[-1] if tail else "nothing (killed, or it crashed without a word)"
    return f"{why}; its last words: {said}"
