"""The kernel's snapshots, the session's side: which one is newest, and waking it as the worker.

After each cell a kernel's worker forks a frozen copy of itself (see
`worker.snapshot`): the namespace as that cell left it, copy-on-write. When
the worker is lost (a signal, `os._exit`, the kill of an interrupt or of
the out-of-memory killer), the session wakes the newest copy instead of
starting a fresh worker: it hands it the ends of fresh pipes over a Unix
socket (SCM_RIGHTS), and it runs the next cell in the namespace the last
finished cell left. The socket is the snapshots' only descriptor: its other
end is the session's, so a snapshot sees end of file when the session is
gone, and ends. A snapshot is in a process group of its own (the kill of its
worker's group spares it), and the session is the reaper of its workers'
orphans (`become_reaper`), so that a woken snapshot is its child, as a
worker must be (its exit status, its reaping). So are the superseded
snapshots the worker killed and had not reaped yet (or not killed: it died
first) when it died: the session ends and reaps those it heard of.

The worker and its snapshot tell the session their news on the socket, one
JSON object a packet: `taken` (a snapshot was forked: its pid, the cell it
holds, the threads it could not keep and the pools they were of), `ready` (it is
set up and waits; what the descriptors it released were),
`dropped` (it ended: its private memory passed the budget) and `skipped`
(no snapshot can be taken: a GPU library holds a context a fork breaks).
"""

from __future__ import annotations

import _signal
import os
import select
import socket
import time
from collections import deque

from pyrelune import fastjson
from pyrelune.wire.events import RESUMED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pyrelune.supervisor.process import WorkerProcess
    from pyrelune.wire.interrupts import Interrupts
    from pyrelune.wire.ring import OutputRing

#: How long a snapshot that is still setting itself up may take to say it is ready.
READY_WAIT = 2.0
#: How many superseded snapshots the session keeps the pids of (see `Snapshots.wake`).
SUPERSEDED = 4
_PR_SET_CHILD_SUBREAPER = 36
_MIB = 1 << 20


def become_reaper() -> bool:
    """Make this process the reaper of its workers' orphans (Linux); whether it is."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def cell_name(filename: str) -> str:
    """How a cell is named to the host, from the file name it ran under: `<cell 3>` is
    cell 3, `<In[5]>` is In [5]."""
    name = filename[1:-1] if filename.startswith("<") and filename.endswith(">") else filename
    if name.startswith("In[") and name.endswith("]"):
        return f"In [{name[3:-1]}]"
    return name or "the last cell"


#: What is said of the pools whose threads a snapshot did not keep (see `worker.pools`).
POOLS = {
    "ThreadPoolExecutor": "a ThreadPoolExecutor starts new threads at its next submit (a "
                          "task one was running then fails)",
    "ProcessPoolExecutor": "a ProcessPoolExecutor is broken (its processes died with the "
                           "worker): its submit raises BrokenProcessPool, and a task it had "
                           "then fails",
    "joblib": "joblib starts new worker processes (loky) at its next parallel call",
    "multiprocessing": "a multiprocessing Pool is closed (its processes died with the "
                       "worker): its apply and map raise ValueError, and a result it owed "
                       "fails",
}
#: The most paths of released descriptors the words name.
PATHS_NAMED = 5


def resumed(name: str, threads: list[str], pools: list[str] | None = None,
            released: list[str] | None = None, more: int = 0) -> str:
    """What the failed cell's error adds when a snapshot took the lost worker's place:
    the cell it holds, the `threads` it did not keep and the `pools` among them (mended:
    `worker.pools`), the descriptors it `released` (paths, "socket", "pipe"; `more`
    not named)."""
    words = f"{RESUMED}: the namespace is the one {name} left (its last finished cell)"
    if threads:
        words += (f"; threads are not restored ({len(threads)} ran then: "
                  f"{', '.join(threads[:5])}{', ...' if len(threads) > 5 else ''})")
        mended = [POOLS[kind] for kind in pools or () if kind in POOLS]
        if mended:
            words += f": {'; '.join(mended)}"
    if released or more:
        words += f"; descriptors were released, as if closed: {_released(released or [], more)}"
    return words


def _released(released: list[str], more: int) -> str:
    """`/tmp/a.db, 2 sockets, a pipe and 3 more`: each path once, at most PATHS_NAMED."""
    paths = [name for name in dict.fromkeys(released) if name not in ("socket", "pipe")]
    parts = paths[:PATHS_NAMED]
    more += len(paths) - len(parts)
    for kind in ("socket", "pipe"):
        count = released.count(kind)
        if count:
            parts.append(f"a {kind}" if count == 1 else f"{count} {kind}s")
    said = ", ".join(parts) if parts else "descriptors"
    return f"{said} and {more} more" if more else said


def dropped(name: str, private: int, budget: int) -> str:
    """The note for a snapshot dropped over its budget."""
    return (f"pyrelune: the kernel's snapshot of {name} was dropped: its own memory "
            f"({private / _MIB:.1f} MiB) passed PYRELUNE_SNAPSHOT_MAX ({budget / _MIB:.1f} MiB); "
            "until another is kept, a lost worker costs the namespace\n")


def skipped(why: str) -> str:
    """The note, said once, for snapshots that cannot be taken."""
    return f"pyrelune: no snapshots of the namespace are taken in this kernel: {why}\n"


class Snapshots:
    """The session's end of a kernel's snapshots, and the newest of them."""

    def __init__(self) -> None:
        self._socket, self._theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._socket.setblocking(False)
        self.pid: int | None = None  # the newest snapshot's
        self.name = ""  # the cell it holds the namespace of
        self.threads: list[str] = []  # those it did not keep
        self.pools: list[str] = []  # the kinds of pool those were (`worker.pools`)
        self.released: list[str] = []  # what the descriptors it released were
        self.more_released = 0  # how many more it released, not named
        self.ready = False
        self.notes: list[str] = []  # for the host, ahead of the next cell's output
        self._dropped_said = False
        self._skipped_said = False
        self._early: dict[int, dict[str, Any]] = {}  # a snapshot's news before its `taken`
        # The last few snapshots a newer one replaced: the worker kills each and reaps it at
        # its next snapshot, so only these may be left to the session when it dies.
        self._superseded: deque[int] = deque(maxlen=SUPERSEDED)

    @property
    def worker_end(self) -> int:
        """The worker's end of the socket, until `forked`."""
        return self._theirs.fileno()

    def forked(self) -> None:
        """The worker has its end: the session's copy closes."""
        self._theirs.close()

    def take_notes(self) -> list[str]:
        self.hear()
        notes, self.notes = self.notes, []
        return notes

    def hear(self) -> None:
        """Take in the news on the socket, never waiting."""
        while True:
            try:
                data = self._socket.recv(1 << 16)
            except (BlockingIOError, OSError):
                return
            if not data:
                return
            try:
                self._news(fastjson.loads(data.decode()))
            except (ValueError, AttributeError):
                continue  # not one of the worker's: a cell wrote there

    def _news(self, message: dict[str, Any]) -> None:
        kind, pid = message.get("t"), message.get("pid", 0)
        if kind == "taken":
            if self.pid is not None:
                self._superseded.append(self.pid)
            self.pid, self.ready = pid, False
            self.name = cell_name(str(message.get("name", "")))
            self.threads = [str(name) for name in message.get("threads", [])]
            self.pools = [str(kind) for kind in message.get("pools", [])]
            self.released, self.more_released = [], 0
            early, self._early = self._early.get(pid), {}
            if early is not None:
                self._news(early)
        elif kind in ("ready", "dropped") and pid != self.pid:
            self._early[pid] = message  # a snapshot may speak before its worker says it forked
        elif kind == "ready":
            self.ready = True
            self.released = [str(name) for name in message.get("released", [])]
            self.more_released = int(message.get("more", 0))
            self._dropped_said = False
        elif kind == "dropped":
            self.pid = None
            if not self._dropped_said:
                self._dropped_said = True
                self.notes.append(dropped(self.name, int(message.get("private", 0)),
                                          int(message.get("budget", 0))))
        elif kind == "skipped" and not self._skipped_said:
            self._skipped_said = True
            self.notes.append(skipped(str(message.get("why", ""))))

    def forget(self) -> None:
        """A reset: the worker ends its snapshot, whose namespace no one wants any more."""
        self.hear()
        self.pid = None

    def wake(self, key: str, interrupts: Interrupts | None,
             ring: OutputRing | None) -> WorkerProcess | None:
        """The newest snapshot, woken as the worker (after its worker died); None: there is
        none, or it is gone. It keeps the dead worker's `key`, `interrupts` and `ring`."""
        self.hear()
        self._end_superseded()
        deadline = time.monotonic() + READY_WAIT
        while self.pid is not None and not self.ready:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._socket], [], [], left)[0]:
                break
            self.hear()
        pid, self.pid = self.pid, None
        if pid is None or not self.ready or not _child_alive(pid):
            if pid is not None:
                _end(pid)
            return None
        from pyrelune.supervisor.process import WorkerProcess

        try:
            return WorkerProcess.woken(pid, key, interrupts, ring, self._hand)
        except OSError:
            _end(pid)
            return None

    def _end_superseded(self) -> None:
        """After the worker died: end and reap the superseded snapshots it left, which are
        this process's children now (those it reaped are no one's)."""
        while self._superseded:
            _end(self._superseded.popleft())

    def _hand(self, fds: list[int]) -> None:
        socket.send_fds(self._socket, [b"wake"], fds)

    def close(self) -> None:
        """End the snapshot (after its worker: it is the session's child then), and the socket."""
        self.hear()
        self._end_superseded()
        if self.pid is not None:
            _end(self.pid)
            self.pid = None
        self._socket.close()
        self._theirs.close()


def _child_alive(pid: int) -> bool:
    """Whether `pid` is a live child of this process (an orphaned snapshot is one)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == 0
    except ChildProcessError:
        return False


def _end(pid: int) -> None:
    """Kill and reap `pid`, if it is a live child of this process (no other: its number may
    be another process's by now)."""
    if _child_alive(pid):
        os.kill(pid, _signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
