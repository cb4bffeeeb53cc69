"""A forked worker process and the supervisor's ends of its pipes.

The worker is forked, not spawned: no second interpreter start. It runs in a
process group of its own, so signals reach every process a cell started (and
the group dies with the session), and it keeps none of the supervisor's
descriptors but its own pipes.
"""

from __future__ import annotations

import _signal
import os

from pyrelune.wire import WorkerFds

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import NoReturn

    from pyrelune.wire.interrupts import Interrupts
    from pyrelune.wire.ring import OutputRing


_SIGINT = {_signal.SIGINT}
#: The worker's ends of `_pipes()`: stdout's, stderr's and the events' write ends, the
#: control's and the lifeline's read ends.
_WORKER_ENDS = (1, 3, 5, 6, 8)


class WorkerProcess:
    """A forked worker: its pid and the session's ends of its pipes."""

    def __init__(self, target: Callable[[WorkerFds], NoReturn],
                 interrupts: Interrupts | None = None, ring: OutputRing | None = None,
                 snapshots: int = -1) -> None:
        """Fork a worker that runs `target`, sharing `interrupts` (kernels) and `ring` with it,
        and keeping `snapshots` (its socket for snapshots, see `supervisor.snapshots`).

        OSError if it cannot (no descriptor left for a pipe, no process for the fork), with
        every pipe it opened closed again.
        """
        opened = _pipes()
        out_w, err_w, ev_w, ctl_r, life_r = (opened[end] for end in _WORKER_ENDS)
        # Every event line the worker sends carries this: a line a cell writes
        # into the event pipe (from /proc/self/fd, say) does not, and is foreign.
        key = os.urandom(8).hex()
        # Until the worker has its own SIGINT handler (see `worker.runtime.become_worker`),
        # an interrupt must not raise KeyboardInterrupt in the supervisor's code
        # that the child still runs: it waits, blocked, to be ignored or kept.
        _signal.pthread_sigmask(_signal.SIG_BLOCK, _SIGINT)
        try:
            pid = os.fork()
        except OSError:  # EAGAIN: the process limit; ENOMEM
            _signal.pthread_sigmask(_signal.SIG_UNBLOCK, _SIGINT)
            _close(opened)
            raise
        if pid == 0:
            fds = WorkerFds(out_w, err_w, ev_w, ctl_r, life_r, key, interrupts, ring, snapshots)
            _close_all_but(fds)
            target(fds)
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, _SIGINT)
        try:
            os.setpgid(pid, pid)  # also done by the child; whoever runs first wins the race
        except OSError:
            pass
        self._adopt(pid, key, opened, interrupts, ring)

    @classmethod
    def woken(cls, pid: int, key: str, interrupts: Interrupts | None, ring: OutputRing | None,
              hand: Callable[[list[int]], object]) -> WorkerProcess:
        """The kernel's snapshot `pid` (see `supervisor.snapshots`), woken as the worker.

        `hand` gives it its ends of fresh pipes (stdout, stderr, events,
        control, lifeline); it keeps `key`, and shares `interrupts` and `ring`
        as the worker it was forked from did. OSError as `__init__`.
        """
        opened = _pipes()
        try:
            hand([opened[end] for end in _WORKER_ENDS])
        except OSError:
            _close(opened)
            raise
        worker = cls.__new__(cls)
        worker._adopt(pid, key, opened, interrupts, ring)
        return worker

    def _adopt(self, pid: int, key: str, opened: list[int], interrupts: Interrupts | None,
               ring: OutputRing | None) -> None:
        """The session's side of the worker `pid`, whose ends of the pipes `opened` it has."""
        out_r, out_w, err_r, err_w, ev_r, ev_w, ctl_r, ctl_w, life_r, life_w = opened
        _kill_group_with_lifeline(life_r, pid)
        _close((out_w, err_w, ev_w, ctl_r, life_r))
        # Imported after the fork: on two cores it loads while the worker starts.
        from pyrelune.supervisor.capture import CapturedStream

        self.pid = pid
        self.key = key
        self.stdout = CapturedStream("stdout", out_r)
        self.stderr = CapturedStream("stderr", err_r)
        self.event_fd = ev_r
        self.control_fd = ctl_w
        self.lifeline_fd = life_w  # never written: closing it (or dying) ends the worker
        self.exit_fd = _exit_notifier(pid)
        self.status: int | None = None
        self.interrupts = interrupts
        self.ring = ring

    def hand_over(self) -> tuple[Interrupts | None, OutputRing | None]:
        """The memory shared with this worker, for the snapshot that takes its place: `close`
        leaves it open."""
        shared, self.interrupts, self.ring = (self.interrupts, self.ring), None, None
        return shared

    def widen_capture(self, size: int) -> None:
        """Let each capture pipe hold `size` bytes (Linux; else nothing changes).

        A session that lets a trickle of output gather before reading it
        (see `Session.took`) would otherwise stall a cell that prints faster
        than 64 KiB per pause.
        """
        import fcntl

        setting = getattr(fcntl, "F_SETPIPE_SZ", None)
        if setting is None:
            return
        for stream in (self.stdout, self.stderr):
            try:
                fcntl.fcntl(stream.fd, setting, size)
            except OSError:
                pass  # over /proc/sys/fs/pipe-max-size for this user: the default it is

    def signal_group(self, signum: int) -> None:
        """`signum` to the worker's process group, and to the worker itself if it left it.

        A cell can move the worker into another group (`os.setpgid`): the
        group's signal would then miss it, and a kill would wait for ever.
        Until it is reaped, the worker's pid cannot name another process.
        """
        try:
            os.killpg(self.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass
        if self.status is None:
            try:
                if os.getpgid(self.pid) != self.pid:
                    os.kill(self.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def reap(self, block: bool) -> int | None:
        """The wait status once the worker has exited, else None."""
        if self.status is None:
            pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
            if pid:
                self.status = status
        return self.status

    def close(self) -> None:
        """Kill what is left of the process group and release every descriptor (once: a
        reaped worker's pid, and its descriptors' numbers, may be another's by now)."""
        if self.status is not None and self.event_fd < 0:
            return
        self.signal_group(_signal.SIGKILL)
        self.reap(block=True)
        _reap_group(self.pid)
        for fd in (self.event_fd, self.control_fd, self.lifeline_fd, self.exit_fd):
            if fd >= 0:
                os.close(fd)
        self.event_fd = self.control_fd = self.lifeline_fd = self.exit_fd = -1
        self.stdout.close()
        self.stderr.close()
        if self.interrupts is not None:
            self.interrupts.close()
        if self.ring is not None:
            self.ring.close()


def _kill_group_with_lifeline(lifeline: int, pgid: int) -> None:
    """Have the kernel SIGKILL the worker's process group once the session is gone.

    A host may SIGKILL the session alone (Vix Note does at 10 s): the worker,
    busy with the cell, and what the cell started must not live on. With
    O_ASYNC, the lifeline's read end signals its owner (here the worker's
    process group) when the last write end closes, which only the session
    holds; F_SETSIG makes that signal SIGKILL (Linux). The worker pays
    nothing for it (no thread, no import); the session's import of fcntl
    (about 0.3 ms) runs while the worker starts.
    """
    import fcntl

    try:
        fcntl.fcntl(lifeline, fcntl.F_SETOWN, -pgid)
        fcntl.fcntl(lifeline, fcntl.F_SETSIG, _signal.SIGKILL)
        fcntl.fcntl(lifeline, fcntl.F_SETFL, fcntl.fcntl(lifeline, fcntl.F_GETFL) | os.O_ASYNC)
    except (AttributeError, OSError):
        pass  # no F_SETSIG (not Linux), or the worker is already gone: nothing to tie


def _pipes() -> list[int]:
    """A worker's five pipes (stdout, stderr, events, control, lifeline), read end first each;
    OSError with none left open."""
    opened: list[int] = []
    try:
        for _ in range(5):
            opened.extend(os.pipe())
    except OSError:
        _close(opened)
        raise
    return opened


def _reap_group(pgid: int) -> None:
    """Reap what of the killed group `pgid` became the session's child (a kernel with
    snapshots is its processes' reaper: see `supervisor.snapshots`); none: nothing to do."""
    try:
        while os.waitpid(-pgid, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _close(fds: Iterable[int]) -> None:
    for fd in fds:
        os.close(fd)


def _close_all_but(fds: WorkerFds) -> None:
    """In the new worker: close every inherited descriptor above 2 but its own.

    The session may hold sockets, other workers' pipes or a listening port;
    none of that belongs to user code.
    """
    low = 3
    ours = [fds.stdout, fds.stderr, fds.events, fds.control, fds.lifeline]
    if fds.snapshots >= 0:
        ours.append(fds.snapshots)
    if fds.ring is not None:
        ours.append(fds.ring.doorbell)
        fds.ring.doorbell_r = -1  # closed here: the session's to read
    for fd in sorted(ours):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 1 << 20)


def _exit_notifier(pid: int) -> int:
    """A descriptor that becomes readable when `pid` exits (-1: poll instead)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return -1


#: Second names of signals: a signal is told by its first (SIGABRT, not SIGIOT).
_ALIASES = frozenset({"SIGIOT", "SIGCLD", "SIGPOLL"})


def describe_exit(status: int) -> str:
    """How a worker ended, in words: 'worker exited with status 3'.

    From `_signal`, built in: `signal` is a file to import, and this is said
    also when no descriptor is left to open one (a peer took them all).
    """
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        names = [name for name in dir(_signal) if name.startswith("SIG")
                 and not name.startswith(("SIG_", "SIGRT")) and name not in _ALIASES
                 and getattr(_signal, name) == signum]
        name = names[0] if names else f"signal {signum}"
        meaning = _signal.strsignal(signum)
        return f"worker killed by {name} ({meaning.lower()})" if meaning else f"killed by {name}"
    return f"worker exited with status {os.waitstatus_to_exitcode(status)}"
