"""The engine of a persistent kernel: one namespace across cells, surviving whatever a cell does.

`Kernel` is the one supervisor-side kernel: every mode's codec commands
(`wire.commands`) reach it through `Kernel.apply`, and it owns the current
worker, replacing it when it dies or has to be killed, so a host always gets
an answer and a kernel that can run the next cell. Its events reach the
host through one of two I/O layers: `Kernel.events()`, the blocking one
(`blocking.run`), for the lines kernel (`modes.lines`) and `pyrelune run` of
a notebook (`cli.notebook`); or `evented.LoopDriver`, on an event loop, for
the rpc kernel (`modes.rpc`) and the Jupyter kernel (`modes.jupyter`). What a
host is (`wire.profile.HostProfile`) is given once, by its protocol.
"""

from __future__ import annotations

import os
import sys

from pyrelune import PyreluneError
from pyrelune.supervisor import blocking
from pyrelune.supervisor.link import WorkerLink
from pyrelune.supervisor.process import WorkerProcess, describe_exit
from pyrelune.supervisor.session import FINISHED, PATIENCE, STARTING
from pyrelune.wire.commands import (
    SUBSHELL,
    AskInSubshell,
    CancelInput,
    EndSubshell,
    Execute,
    InputReply,
    Interrupt,
    InterruptSubshells,
    MakeSubshell,
    Query,
    RefuseInput,
    Reset,
    RunInSubshell,
    SubshellInput,
    to_wire,
)
from pyrelune.wire.events import WORKER_DIED, CellError, Done, Reply, Stream
from pyrelune.wire.interrupts import Interrupts
from pyrelune.wire.ring import OutputRing

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, ClassVar, NoReturn

    from pyrelune.supervisor.snapshots import Snapshots
    from pyrelune.supervisor.usage import Usage
    from pyrelune.wire import WorkerFds
    from pyrelune.wire.commands import Command, PipeCommand
    from pyrelune.wire.events import Event
    from pyrelune.wire.profile import HostProfile

#: A kernel's capture pipes hold this much: a cell may print for a while unread.
CAPTURE_PIPE_SIZE = 1 << 20
LOST = "the kernel's namespace was lost and a fresh worker has started"
UNFLUSHED = ("what the cell printed last may be missing, as stdout is block-buffered "
             "(PYTHONUNBUFFERED=1 writes every line at once)")


class NoWorker(PyreluneError):
    """No worker could start (no descriptor left, no process): the kernel has none until
    the next request, which tries again. The text is the failed request's to tell."""


#: Whether Python was asked for unbuffered output (`python -u`, PYTHONUNBUFFERED):
#: its own stdout then writes through. Read at import, before a worker replaces it.
_UNBUFFERED = bool(getattr(sys.__stdout__, "write_through", False))


def buffers_stdout(interactive: bool) -> bool:
    """Whether a kernel worker's stdout is block-buffered (see `worker.flushfirst`).

    Not for a host that shows output live (interactive), nor when the user
    asked Python for unbuffered output.
    """
    return not interactive and not _UNBUFFERED


def _reaper() -> bool:
    """Whether this kernel can keep snapshots: Linux, the session the reaper of its workers'
    orphans (see `supervisor.snapshots`)."""
    if not sys.platform.startswith("linux"):
        return False
    from pyrelune.supervisor.snapshots import become_reaper

    return become_reaper()


def _serve(fds: WorkerFds, host: HostProfile) -> NoReturn:
    """The fork target: the worker's command loop, imported in the child only."""
    from pyrelune.worker.kernelloop import serve

    serve(fds, host, buffers_stdout(host.interactive))


class Driver:
    """What an I/O layer is told of the engine's changes, so that it watches the right worker.

    The blocking layer (`Kernel.events`) needs nothing: it reads whatever the
    current link is. The loop's (`evented.LoopDriver`) follows the worker's
    descriptors and arms the clock.
    """

    def replacing(self) -> None:
        """The worker is about to be replaced or closed: its descriptors close after this."""

    def started(self) -> None:
        """A cell, a query or a reset was sent: its events follow."""

    def __init__(self) -> None:
        self.told: list[Event] = []  # the blocking layer's: `Kernel.events` yields them

    def tell(self, event: Event) -> None:
        """An event the engine gives itself, no worker asked: its own answer to a query
        (`Kernel.ENGINE_ANSWERS`, no Done follows), or the Done of a request no worker could
        start (`NoWorker`)."""
        self.told.append(event)

    def interrupted(self, link: WorkerLink) -> None:
        """The cell of `link` was interrupted: the kill it may call for is the driver's clock."""


class Kernel:
    """The current worker of a kernel and the link that reads it.

    A worker that dies between cells (a cell's `signal.alarm`, say) or before
    it starts the cell it was sent (an earlier cell broke its machinery:
    `os.read = None`, a tight RLIMIT_AS) costs the namespace, not the cell:
    a fresh worker runs it, once, and the death is told in a notice ahead of
    its output (`take_told`). What the dead worker had written and not yet
    been read (a thread's last words) goes ahead of the notice.
    """

    def __init__(self, host: HostProfile) -> None:
        """`host`: what the host is, which every worker of this kernel serves."""
        self.host = host
        self.driver = Driver()  # an event loop's takes its place (see `evented.LoopDriver`)
        self.snapshots: Snapshots | None = None  # the current worker's (see `supervisor.snapshots`)
        self._snapshots = host.snapshot_max > 0 and _reaper()
        self.link = self._spawn()
        self._sent: Execute | None = None  # the cell sent, while it may not have started
        # The last cell before the current worker was woken from a snapshot (None: it was not).
        self._woken_after: int | None = None
        self._told: list[Event] = []  # for the host ahead of the next cell's own output
        self._usage: Usage | None = None  # made at the first ask: it keeps what it measured

    def _spawn(self) -> WorkerLink:
        host = self.host
        # A live host's stdout goes through shared memory (see `wire.ring`).
        ring = worker = None
        try:
            ring = OutputRing() if host.interactive else None
            if self._snapshots:
                from pyrelune.supervisor.snapshots import Snapshots

                self.snapshots = Snapshots()
            snapshots = self.snapshots.worker_end if self.snapshots is not None else -1
            worker = WorkerProcess(lambda fds: _serve(fds, host), Interrupts(), ring, snapshots)
            if self.snapshots is not None:
                self.snapshots.forked()
            worker.widen_capture(CAPTURE_PIPE_SIZE)
            return WorkerLink(worker, host.cap)
        except OSError as exc:  # nothing half-made is kept: the next try needs the descriptors
            if worker is not None:
                worker.close()
            elif ring is not None:
                ring.close()
            self._drop_snapshots()
            raise NoWorker(f"the kernel's namespace was lost, and no fresh worker could start "
                           f"({exc}); the next request tries again") from None

    @property
    def worker(self) -> WorkerProcess:
        return self.link.worker

    def _start(self, execute: Execute) -> None:
        """Start the cell `execute` asks for; a worker that died since the last one is
        replaced first."""
        self._revive()
        self._hear_snapshots()
        self._send(execute)

    def _hear_snapshots(self) -> None:
        """The snapshots' notes (one dropped over its budget, none taken), for the host."""
        if self.snapshots is not None:
            self._told.extend(Stream("stderr", note) for note in self.snapshots.take_notes())

    def _revive(self) -> None:
        """Before a request: a worker if the last could not start (`NoWorker` if none can
        yet), a fresh one if it died since."""
        if self.link.closed:
            self.link = self._spawn()
        elif (status := self.link.worker.reap(block=False)) is not None:
            self.replace_lost(status)

    def signal_worker(self, signum: int) -> None:
        """Send `signum` to the worker, whatever it runs (a fresh one if it died since);
        `NoWorker` if none can start."""
        self._revive()
        os.kill(self.link.worker.pid, signum)

    def _send(self, execute: Execute) -> None:
        """Send `execute` as the link's next cell (numbered by its session)."""
        self.link.fresh_ring()
        self.link.begin()
        execute.cell = self.link.session.cell
        self._sent = execute
        self._command(execute)

    def replace_lost(self, status: int) -> bool:
        """The idle worker died (wait `status`): start another, told with the next cell;
        whether a snapshot took its place."""
        self._keep_leftovers()
        ended = f"pyrelune: the kernel's worker ended between cells ({describe_exit(status)}); "
        try:
            words = self._replace()
        except NoWorker:  # the notice waits for the request that starts one
            self._told.append(Stream("stderr", f"{ended}{LOST}\n"))
            raise
        self._told.append(Stream("stderr", f"{ended}{words}\n"))
        return words != LOST

    def _replace(self) -> str:
        """A worker in place of the lost one: the newest snapshot, woken, or a fresh one
        (`NoWorker` if none can start); what the host is to be told of its namespace."""
        self.driver.replacing()
        old, snapshots = self.link, self.snapshots
        interrupts = old.worker.interrupts
        # A woken snapshot that died before it began a cell carries what killed it.
        fresh = self._woken_after is not None and interrupts is not None and (
            interrupts.began() <= self._woken_after)
        self._woken_after = None
        if snapshots is not None and not fresh:
            self._hear_snapshots()
            interrupts, ring = old.worker.hand_over()
            old.close()  # what the cell started goes with it; its snapshot is left
            woken = snapshots.wake(old.worker.key, interrupts, ring)
            if woken is not None:
                from pyrelune.supervisor.snapshots import resumed

                self.link = WorkerLink(woken, self.host.cap)
                self.link.session.cell = old.session.cell  # its cells' numbers go on
                self.link.fresh_ring(always=True)  # where the dead worker's writes ended
                self._woken_after = old.session.cell
                return resumed(snapshots.name, snapshots.threads, snapshots.pools,
                               snapshots.released, snapshots.more_released)
            self._hear_snapshots()  # it was dropped meanwhile: say why
            for shared in (interrupts, ring):
                if shared is not None:
                    shared.close()
        self.restart()
        return LOST

    def _keep_leftovers(self) -> None:
        """What the dead worker wrote that is not read yet, kept for `take_told`: its pipes,
        its ring, and another cell's text on its event pipe (a thread's last words)."""
        self._told.extend(self.link.read(self.link.fds()))

    def take_told(self) -> list[Event]:
        """What the kernel has to tell the host before the cell's own output, once."""
        told, self._told = self._told, []
        return told

    def apply(self, command: Command) -> None:
        """Carry out a codec's `command` (the engine's one entry; see `wire.commands`).

        An `Execute`, a `Query` or a `Reset` starts (its events follow, a Done
        last); the answers to the running cell's `input()` (`InputReply`,
        `CancelInput`, `RefuseInput`) go to its worker; an `Interrupt` stops the
        cell. `Shutdown`, `Admit` and `Disconnect` are the mode's, never a kernel's.
        A request no worker can start for (`NoWorker`) ends at once, its Done
        saying why; the kernel lives on, and the next request tries again.
        """
        if isinstance(command, Query) and (own := self.ENGINE_ANSWERS.get(command.kind)):
            self.driver.tell(Reply(own(self), command.kind))
        elif isinstance(command, (Execute, Query, Reset)):
            try:
                self._begin(command)
            except NoWorker as exc:
                self.driver.tell(Done(CellError(WORKER_DIED, "", str(exc))))
                return
            self.driver.started()
        elif isinstance(command, Interrupt):
            self.interrupt()
        elif isinstance(command, (InputReply, CancelInput, RefuseInput)):
            self._command(command)
        elif isinstance(command, (RunInSubshell, AskInSubshell, MakeSubshell, EndSubshell,
                                  SubshellInput, InterruptSubshells)):
            self._to_subshell(command)
        else:
            raise TypeError(f"{type(command).__name__} is the mode's to carry out, not a kernel's")

    def _begin(self, command: Execute | Query | Reset) -> None:
        if isinstance(command, Execute):
            self._start(command)
        elif isinstance(command, Query):
            self._query(command)
        else:
            self._reset()

    def _to_subshell(self, command: RunInSubshell | AskInSubshell | MakeSubshell | EndSubshell
                     | SubshellInput | InterruptSubshells) -> None:
        """To a subshell's thread in the worker, whatever the main shell runs (a worker that
        died since is replaced first); a request no worker can start for fails at once."""
        try:
            if self.link.closed or self.link.session.state in (STARTING, FINISHED):
                self._revive()  # no cell of the main shell's runs: a dead worker is replaced
        except NoWorker as exc:
            if isinstance(command, (RunInSubshell, AskInSubshell)):
                self.driver.tell(Reply({"origin": command.origin, "status": "error",
                                        "ename": "WorkerDied", "evalue": str(exc),
                                        "traceback": ""}, SUBSHELL))
            return
        self._command(command)

    def _usage_figures(self) -> dict[str, Any]:
        """`usage`: the CPU and memory of the kernel's processes (see `usage`)."""
        if self._usage is None:
            from pyrelune.supervisor.usage import Usage

            self._usage = Usage()
        return self._usage.measure()

    #: Who answers a query: the engine itself, at once, for the kinds here (the worker may be
    #: busy); the worker (`worker.introspect`) for every other kind, once its cell is over.
    ENGINE_ANSWERS: ClassVar[dict[str, Callable[[Kernel], dict[str, Any]]]] = {
        "usage": _usage_figures,
    }

    def _query(self, query: Query) -> None:
        """Ask the idle worker about its namespace (see `worker.introspect`): a Reply and a
        Done follow, as a cell's events do. A worker that died in between is replaced first."""
        self._revive()
        self.link.begin()
        self._sent = None
        query.cell = self.link.session.cell
        self._command(query)

    def _reset(self) -> None:
        """Ask for a fresh namespace (the cell must be over); the worker confirms with a Done."""
        if self.link.closed or self.link.worker.reap(block=False) is not None:
            self._keep_leftovers()  # a fresh namespace is what was asked for: no notice
            self.restart()
        elif self.snapshots is not None:
            self.snapshots.forget()  # the worker ends it with the namespace
        self._sent = None
        self.link.fresh_ring(always=True)  # a fresh stdout ring too, whatever a cell did to it
        self.link.begin()
        self._command(Reset())

    def events(self, check: Callable[[], None] | None = None) -> Iterator[Event]:
        """The running cell's events, ending with its Done (see `blocking.run`, and its
        `check`)."""
        while True:
            yield from self.take_told()
            if self.driver.told:  # the engine's own Done: no worker could start
                told, self.driver.told = self.driver.told, []
                yield from told
                return
            for event in blocking.run(self.link, soon=True, check=check):
                if not isinstance(event, Done):
                    yield event
                elif (done := self.settle(event)) is not None:
                    yield done
                    return
                else:
                    break  # sent again, to a fresh worker

    def settle(self, done: Done) -> Done | None:
        """After a cell's Done: if the worker is gone, start a new one (a new `link`) and say so.

        None: the worker died before it started the cell, which a fresh
        worker now runs (its events follow, on the new link, after a notice).
        Not a cell the host had stopped (see `Session.stopped`): interrupted
        before its slow worker began it, and then killed, it is over.
        """
        status = self.link.worker.reap(block=False)
        sent, self._sent = self._sent, None
        if status is None:
            return done
        interrupts = self.link.worker.interrupts
        lost = LOST
        try:
            if (sent is not None and interrupts is not None and not self.link.session.stopped
                    and not interrupts.started(sent.cell)):
                resumed = self.replace_lost(status)
                self._send(sent)
                # Once to a fresh worker: a second death is the cell's own. A snapshot may carry
                # what broke its worker (an earlier cell's `os.read = None`): then once more.
                self._sent = sent if resumed else None
                return None
            lost = self._replace()
            if os.WIFSIGNALED(status) and buffers_stdout(self.host.interactive):
                lost = f"{lost}; {UNFLUSHED}"  # a signal it never saw: its buffer went with it
        except NoWorker as exc:
            lost = str(exc)
        error = done.error or CellError(WORKER_DIED, "", "the worker ended")
        return Done(CellError(error.code, error.ename, f"{error.evalue}; {lost}",
                              error.traceback, error.line, error.column))

    def interrupt(self) -> None:
        """KeyboardInterrupt to the running cell (none: nothing happens), its kill armed."""
        link = self.link
        link.interrupt(patience=PATIENCE)
        self.driver.interrupted(link)

    def restart(self) -> None:
        """Kill the worker with everything it started and begin a fresh one."""
        self.driver.replacing()
        self.link.close()
        self._drop_snapshots()
        self.link = self._spawn()

    def close(self) -> None:
        self.driver.replacing()
        self.link.close()
        self._drop_snapshots()

    def _drop_snapshots(self) -> None:
        """End the snapshot of a worker that is gone, and its socket (after the worker: its
        snapshot is the session's child then)."""
        if self.snapshots is not None:
            self.snapshots.close()
            self.snapshots = None

    def _command(self, command: PipeCommand) -> None:
        self.link.send(to_wire(command))
