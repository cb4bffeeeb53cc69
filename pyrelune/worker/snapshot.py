"""The kernel's snapshots, the worker's side: after each cell, a frozen fork holding the namespace.

Once a cell's Done has gone out, its snapshot is due (`Snapshots.when_idle`):
the child is a snapshot of the namespace as that cell left it,
copy-on-write, and waits on its socket to the session (see
`supervisor.snapshots`). A new snapshot replaces the last one. The fork is
off the cell's path (after its reply), but it stalls the worker for its
length, which grows with the worker's memory (about 0.3 ms for 50 MB, page
tables copied; the copy-on-write faults after it are a tenth of that), and a
command that comes meanwhile waits for it. So the worker forks:

- at once, even with a command waiting, when the cell ran at least `WORTH`
  times what this fork should cost (the last one's, measured here, scaled by
  the worker's resident memory now against then): the fork is then at most
  4% of the cell. Cells queued back to back ("Run All") that take long get
  their snapshots, and a crash an hour in loses one cell, not the hour;
- otherwise once idle for `IDLE` with no command waiting: quick cells back to
  back skip their snapshots (the older one stays, naming its own cell). Their
  time is not added up: a fork's full cost is more than the worker's stall
  it is timed by (the copy-on-write faults after it, the snapshot's own
  start on a shared CPU), and a fork every few dozen quick cells slowed
  their round trips by a third.

When the worker is lost, the session wakes the newest snapshot with the ends
of fresh pipes, and it goes on as the worker, returning into the command
loop where the worker forked it.

A snapshot is named for the cell it holds, for hosts and tests to see: its
process name (/proc/<pid>/comm, `ps`) is `snap ` and the cell's file name
without its angle brackets (`snap In[12]`, `snap cell 3`), cut to the 15
bytes Linux keeps, set as soon as it is in its own process group, right after
the fork; woken, it takes back the worker's name.

What a fork cannot carry is not pretended: threads other than the main one
do not exist in a snapshot (the session is told their names, and the pools
they were of, which a woken snapshot mends: see `pools`); every descriptor it
inherited but its socket (and the stdout ring's doorbell) is released at
once, its number left pointing at nothing (O_PATH on "/": a read or write
fails with EBADF, as if closed, and no later open takes the number that an
object still holds), and the session is told what those the cells opened
were (read from /proc/self/fd by the snapshot, not the worker); the cells'
asyncio loop, whose descriptors those were, is dropped with its tasks. A
process whose GPU context a fork would break takes no snapshots. The
snapshot watches its own private memory, which grows as the worker rewrites
the pages they shared, and ends past its budget, saying so.
"""

from __future__ import annotations

import _signal
import os
import select
import socket
import sys
import time
import warnings

from pyrelune import fastjson
from pyrelune.wire import forks
from pyrelune.worker import pools
from pyrelune.worker.channel import flush_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from threading import Thread
    from typing import NoReturn

    from pyrelune.wire import WorkerFds
    from pyrelune.worker.channel import Channel
    from pyrelune.worker.runtime import StdFds

#: How often a waiting snapshot looks at its own memory, in seconds.
WATCH_EVERY = 0.5
#: How long the worker waits, idle after a cell, before it forks that cell's snapshot, in
#: seconds: a command that comes sooner is not kept waiting for a fork.
IDLE = 0.005
#: How many times a fork's cost a cell must have run for its snapshot to be forked at once, a
#: command waiting or not.
WORTH = 25
#: What the first fork is taken to cost, before one is measured, in seconds.
FIRST_FORK = 0.002
#: What no fork costs less than, in seconds: a cell shorter than `WORTH` times this has its
#: snapshot forked once idle, without a look at the worker's memory.
LEAST_FORK = 0.0002
#: The most of a snapshot's process name that Linux keeps (/proc/<pid>/comm), in bytes.
NAME_BYTES = 15
#: The most released descriptors a snapshot names, and the longest a path is said.
RELEASED_NAMED, RELEASED_LENGTH = 16, 120
_kill, _waitpid, _setpgid, _exit = os.kill, os.waitpid, os.setpgid, os._exit  # a cell's own
_SIGINT = {_signal.SIGINT}


def gpu_in_use(modules: Mapping[str, object]) -> str | None:
    """Why no snapshot may be forked, if a GPU library has a context (`modules`: sys.modules)."""
    cuda = getattr(modules.get("torch"), "cuda", None)
    try:
        initialised = cuda is not None and bool(cuda.is_initialized())
    except Exception:  # a broken or stub module: no context of its own
        initialised = False
    if initialised:
        return "torch has initialised CUDA, and a CUDA context does not survive a fork"
    for name in ("cupy", "pycuda.autoinit", "numba.cuda"):
        if modules.get(name) is not None:
            return f"{name} is imported, and a CUDA context does not survive a fork"
    return None


def process_name(filename: str) -> bytes:
    """A snapshot's process name, from the file name its cell ran under: `<In[12]>` gives
    `snap In[12]`, cut to `NAME_BYTES`."""
    name = filename[1:-1] if filename.startswith("<") and filename.endswith(">") else filename
    return f"snap {name}".encode(errors="replace")[:NAME_BYTES]


def _rename(name: bytes) -> None:
    """This process's name (what PR_SET_NAME sets), if this system lets it be written."""
    try:
        with open("/proc/self/comm", "wb") as file:
            file.write(name)
    except OSError:
        pass  # not Linux, or no /proc: the snapshot goes unnamed


def _name() -> bytes:
    """This process's name, to take back when a snapshot is woken as the worker."""
    try:
        with open("/proc/self/comm", "rb") as file:
            return file.read().rstrip(b"\n")
    except OSError:
        return b""


def _resident() -> int:
    """This process's resident pages (/proc/self/statm); 0 where unknown."""
    try:
        with open("/proc/self/statm", "rb") as file:
            return int(file.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def private_memory(smaps_rollup: str) -> int:
    """The private bytes that /proc/<pid>/smaps_rollup's text counts."""
    total = 0
    for line in smaps_rollup.splitlines():
        if line.startswith(("Private_Clean:", "Private_Dirty:")):
            total += int(line.split()[1]) * 1024
    return total


def _own_private_memory() -> int:
    try:
        with open("/proc/self/smaps_rollup") as file:
            return private_memory(file.read())
    except (OSError, ValueError, IndexError):
        return 0


def _other_threads() -> list[Thread]:
    """The threads alive besides this one, which a fork does not copy."""
    threading = sys.modules.get("threading")
    if threading is None:
        return []
    main = threading.main_thread()
    return [thread for thread in threading.enumerate()
            if thread is not main and thread.is_alive()]


def _open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def _link(fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None  # closed since it was listed


def _loop_fds() -> list[int]:
    eventloop = sys.modules.get("pyrelune.worker.eventloop")
    return [] if eventloop is None else list(eventloop.wakeup_fds())


def released_name(link: str) -> str | None:
    """What a released descriptor was, from its /proc/self/fd link, as the host is told it:
    a file's path, "socket" or "pipe"; None for what a cell did not open itself (the
    kernel's "/" of an earlier release, an epoll or eventfd of a loop)."""
    if link == "/" or link.startswith("anon_inode:"):
        return None
    if link.startswith(("socket:", "pipe:")):
        return link.partition(":")[0]
    return link if len(link) <= RELEASED_LENGTH else "..." + link[-RELEASED_LENGTH + 3:]


class Snapshots:
    """The worker's snapshots: the newest, and the session's socket."""

    def __init__(self, fds: WorkerFds, std: StdFds, channel: Channel, budget: int) -> None:
        """`budget`: the most private memory a snapshot may take, in bytes."""
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=fds.snapshots)
        self._fds = fds
        self._std = std
        self._channel = channel
        self._budget = budget
        self._child: int | None = None  # the newest snapshot
        self._ended: list[int] = []  # snapshots killed, not reaped yet
        self._skipped = False
        self._due: str | None = None  # the finished cell whose snapshot is not taken yet
        self._ran = 0.0  # the seconds the cell whose snapshot is due ran
        self._cost = FIRST_FORK  # the seconds the last fork stalled the worker
        self._resident = 0  # the worker's resident pages then (0: no fork measured)
        self._name = b""  # the worker's own process name, in a snapshot
        # The kernel's own descriptors (its pipes, the cells' standard streams), open before
        # any cell: a snapshot releases them too, but never names them.
        self._own_fds = {fd: _link(fd) for fd in _open_fds()}

    def _say(self, **news: object) -> None:
        try:
            self._socket.send(fastjson.dumps(news).encode())
        except OSError:
            pass  # the session is gone, or not reading: the worker goes on without

    def due(self, filename: str, ran: float) -> None:
        """The cell named `filename` has finished (its Done sent), after `ran` seconds: its
        snapshot is due."""
        self._due, self._ran = filename, ran

    def when_idle(self) -> None:
        """Before the worker waits for a command: the due snapshot, at once if its cell ran
        `WORTH` times the fork's cost, else once nothing has come for `IDLE`. A command that
        came first skips it; it stays due past a question (which leaves the namespace be),
        not past the next cell (which makes another due)."""
        if self._due is None:
            return
        if not self._worth_it() and (
                self._channel.pending()
                or select.select([self._channel.control_fd], [], [], IDLE)[0]):
            return
        filename, self._due = self._due, None
        self.take(filename)

    def _worth_it(self) -> bool:
        """Whether the due snapshot's cell ran `WORTH` times what the fork should cost: the
        last one's, scaled by the worker's memory now against then (a cell that freed a big
        array makes the next fork cheaper, one that made one dearer)."""
        if self._ran < WORTH * LEAST_FORK:
            return False
        cost = self._cost
        if self._resident and (now := _resident()):
            cost *= now / self._resident
        return self._ran >= WORTH * cost

    def take(self, filename: str) -> None:
        """A snapshot of the namespace that the cell named `filename` left, now, in place of
        the last one. In a snapshot that is woken, it returns as the worker."""
        if self._skipped:
            return
        if (why := gpu_in_use(sys.modules)) is not None:
            self._skipped = True
            self.drop()
            self._say(t="skipped", why=why)
            return
        threads = _other_threads()
        while self._fork(filename, threads):
            # Woken as the worker: a snapshot of itself at once, so that a second loss
            # before the next cell ends finds one too. Its threads were the last's.
            threads = []

    def _fork(self, filename: str, threads: list[Thread]) -> bool:
        """Fork the snapshot of the cell `filename`; True in the snapshot, once woken."""
        kinds = pools.pool_kinds(threads)
        flush_output()  # what the streams hold goes out now, and never again from the snapshot
        began = time.perf_counter()
        _signal.pthread_sigmask(_signal.SIG_BLOCK, _SIGINT)  # until it has its own group
        try:
            with warnings.catch_warnings():  # "use of fork() may lead to deadlocks" (3.12+)
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = forks.snapshot_fork()
        except OSError:
            pid = -1  # no process left: the last snapshot stays the newest
        if pid == 0:
            self._wait(filename)
            pools.mend(kinds)
            return True
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, _SIGINT)
        if pid < 0:
            return False
        try:
            _setpgid(pid, pid)  # also done by the child: the kill of this group must spare it
        except OSError:
            pass
        self._say(t="taken", pid=pid, name=filename, threads=[t.name for t in threads],
                  pools=kinds)
        self.drop()
        self._child = pid
        self._cost = time.perf_counter() - began
        self._resident = _resident()
        return False

    def drop(self) -> None:
        """End the newest snapshot (a reset, or a newer one), and reap those ended before."""
        self._due = None
        if self._child is not None:
            try:
                _kill(self._child, _signal.SIGKILL)
            except OSError:
                pass
            self._ended.append(self._child)
            self._child = None
        for pid in list(self._ended):
            try:
                if _waitpid(pid, os.WNOHANG)[0] == 0:
                    continue
            except ChildProcessError:
                pass
            self._ended.remove(pid)

    # -- in the snapshot ---------------------------------------------------------

    def _wait(self, filename: str) -> None:
        """Frozen until the session wakes this snapshot (then it returns, as the worker) or
        is gone, or its memory passes the budget (then it ends)."""
        _setpgid(0, 0)
        self._name = _name()
        _rename(process_name(filename))
        released = self._release()
        ready = False
        while True:
            private = _own_private_memory()
            if private > self._budget:
                self._say(t="dropped", pid=os.getpid(), private=private, budget=self._budget)
                _exit(0)
            if not ready:
                self._say(t="ready", pid=os.getpid(), released=released[:RELEASED_NAMED],
                          more=max(0, len(released) - RELEASED_NAMED))
                ready = True
            if not select.select([self._socket], [], [], WATCH_EVERY)[0]:
                continue
            try:
                message, fds, _flags, _address = socket.recv_fds(self._socket, 64, 8)
            except OSError:
                self._end()
            if not message:
                self._end()  # the session is gone
            if len(fds) == 5:
                self._become_worker(fds)
                return
            for fd in fds:
                os.close(fd)

    def _end(self) -> NoReturn:
        _exit(0)

    def _release(self) -> list[str]:
        """Every inherited descriptor but the socket and the ring's doorbell points at nothing;
        what those the cells opened were (`released_name`), for the host to be told."""
        keep = {self._socket.fileno()}
        if self._fds.ring is not None:
            keep.add(self._fds.ring.doorbell)
        nothing = os.open("/", os.O_PATH | os.O_CLOEXEC)
        keep.add(nothing)
        keep.update(_loop_fds())
        released: list[str] = []
        for fd in _open_fds():
            if fd in keep:
                continue
            link = _link(fd)
            try:
                os.dup2(nothing, fd, inheritable=False)
            except OSError:
                continue  # the listing's own, closed by now
            if link is not None and link != self._own_fds.get(fd) and (
                    name := released_name(link)) is not None:
                released.append(name)
        os.close(nothing)
        return released

    def _become_worker(self, received: list[int]) -> None:
        """Take the worker's place: its descriptors' numbers get the fresh pipes' ends."""
        _rename(self._name)
        fds, std = self._fds, self._std
        null = os.open(os.devnull, os.O_RDONLY)
        for new, number in zip([*received, null],
                               [std.out, std.err, fds.events, fds.control, fds.lifeline,
                                std.null], strict=True):
            os.dup2(new, number, inheritable=False)
            os.close(new)
        std.renew()
        # Fresh pipes behind the kernel's own numbers: still its own, never named as released.
        self._own_fds = {fd: _link(fd) for fd in self._own_fds}
        # A SIGINT meant for the dead worker's group before this one left it is not for
        # the next cell: ignoring it discards it.
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        from pyrelune.worker.runtime import interrupt_guard, moved

        _signal.signal(_signal.SIGINT, interrupt_guard)
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, _SIGINT)
        moved()
        from pyrelune.worker import display

        display.moved()
        self._channel.forget_commands()
        if (eventloop := sys.modules.get("pyrelune.worker.eventloop")) is not None:
            eventloop.abandon()
        self._child, self._ended = None, []
