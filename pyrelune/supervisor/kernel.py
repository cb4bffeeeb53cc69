"""A persistent kernel: one namespace across cells, surviving whatever a cell does.

Four drive it. Through `events()`, the blocking driver: the lines kernel's
loop (`modes.lines`) and `pyrelune run` of a notebook (`cli.notebook`).
Through `evented.EventedKernel`, on an event loop: the rpc kernel
(`modes.rpc`) and the Jupyter kernel (`modes.jupyter`). It owns the current
worker and replaces it when it dies or has to be killed, so a host always
gets an answer and a kernel that can run the next cell.
"""

from __future__ import annotations

import os
import sys

from pyrelune import PyreluneError
from pyrelune.settings import PLAIN
from pyrelune.supervisor import blocking
from pyrelune.supervisor.link import WorkerLink
from pyrelune.supervisor.process import WorkerProcess, describe_exit
from pyrelune.supervisor.session import PATIENCE
from pyrelune.wire.commands import (
    CancelInput,
    Execute,
    InputReply,
    Interrupt,
    Query,
    RefuseInput,
    Reset,
    to_wire,
)
from pyrelune.wire.events import WORKER_DIED, CellError, Done, Stream
from pyrelune.wire.interrupts import Interrupts
from pyrelune.wire.ring import OutputRing

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, NoReturn

    from pyrelune.wire import WorkerFds
    from pyrelune.wire.commands import Command, PipeCommand
    from pyrelune.wire.events import Event

#: A kernel's capture pipes hold this much: a cell may print for a while unread.
CAPTURE_PIPE_SIZE = 1 << 20
#: The output cap a kernel's events are cut to, unless its mode says otherwise
#: (the lines kernel's default output cap).
DEFAULT_CAP = 8 << 20
LOST = "the kernel's namespace was lost and a fresh worker has started"
UNFLUSHED = ("what the cell printed last may be missing, as stdout is block-buffered "
             "(PYTHONUNBUFFERED=1 writes every line at once)")


class NoWorker(PyreluneError):
    """No worker could start (no descriptor left, no process): the kernel has none until
    the next request, which tries again. The text is the failed cell's to tell."""


#: Whether Python was asked for unbuffered output (`python -u`, PYTHONUNBUFFERED):
#: its own stdout then writes through. Read at import, before a worker replaces it.
_UNBUFFERED = bool(getattr(sys.__stdout__, "write_through", False))


def buffers_stdout(interactive: bool) -> bool:
    """Whether a kernel worker's stdout is block-buffered (see `worker.flushfirst`).

    Not for a host that shows output live (interactive), nor when the user
    asked Python for unbuffered output.
    """
    return not interactive and not _UNBUFFERED


def _serve(fds: WorkerFds, interactive: bool, cap: int, comms: bool,
           shown: tuple[str, ...] | None, shell: str) -> NoReturn:
    """The fork target: the worker's command loop, imported in the child only."""
    from pyrelune.worker.kernelloop import serve

    serve(fds, interactive, buffers_stdout(interactive), cap, comms, shown, shell)


class Kernel:
    """The current worker of a kernel and the link that reads it.

    A worker that dies between cells (a cell's `signal.alarm`, say) or before
    it starts the cell it was sent (an earlier cell broke its machinery:
    `os.read = None`, a tight RLIMIT_AS) costs the namespace, not the cell:
    a fresh worker runs it, once, and the death is told in a notice ahead of
    its output (`take_told`). What the dead worker had written and not yet
    been read (a thread's last words) goes ahead of the notice.
    """

    def __init__(self, interactive: bool = False, cap: int = DEFAULT_CAP,
                 before_replace: Callable[[], None] | None = None, comms: bool = False,
                 shown: tuple[str, ...] | None = None, shell: str = PLAIN) -> None:
        """`before_replace()` is called whenever the worker is about to be replaced, before
        its descriptors close: a driver watching them stops then (new pipes may reuse their
        numbers). `comms`: the host is a Jupyter front end, which widgets talk to (see
        `worker.comms`). `shown`: the MIME types the host shows, the only ones its workers
        build (see `display.host_shows`); None, every type. `shell`: what runs the cells,
        `PLAIN` or `IPYTHON` (see `settings.shell`)."""
        self._interactive = interactive
        self._comms = comms
        self._shown = shown
        self._shell = shell
        self._cap = cap
        self._before_replace = before_replace
        self.link = self._spawn()
        self._sent: Execute | None = None  # the cell sent, while it may not have started
        self._told: list[Event] = []  # for the host ahead of the next cell's own output

    def _spawn(self) -> WorkerLink:
        interactive, cap, comms, shown = self._interactive, self._cap, self._comms, self._shown
        shell = self._shell
        # A live host's stdout goes through shared memory (see `wire.ring`).
        ring = worker = None
        try:
            ring = OutputRing() if interactive else None
            worker = WorkerProcess(lambda fds: _serve(fds, interactive, cap, comms, shown,
                                                      shell), Interrupts(), ring)
            worker.widen_capture(CAPTURE_PIPE_SIZE)
            return WorkerLink(worker, cap)
        except OSError as exc:  # nothing half-made is kept: the next try needs the descriptors
            if worker is not None:
                worker.close()
            elif ring is not None:
                ring.close()
            raise NoWorker(f"the kernel's namespace was lost, and no fresh worker could start "
                           f"({exc}); the next request tries again") from None

    @property
    def worker(self) -> WorkerProcess:
        return self.link.worker

    def execute(self, source: str, filename: str, inputs: dict[str, Any] | None = None,
                origin: str | None = None, count: int | None = None, history: bool = True,
                silent: bool = False) -> None:
        """Start a cell; its events come from `events()` (or an event-loop driver).

        `origin`: what the host knows the cell by, on what its threads and tasks write
        while another cell runs (see `worker.origin`). `count`, `history`, `silent`: see
        `Execute`.
        """
        self.start(Execute(source, filename, 0, inputs, origin, count, history, silent))

    def start(self, execute: Execute) -> None:
        """Start the cell `execute` asks for; a worker that died since the last one is
        replaced first."""
        self._revive()
        self._send(execute)

    def _revive(self) -> None:
        """Before a request: a worker if the last could not start (`NoWorker` if none can
        yet), a fresh one if it died since."""
        if self.link.closed:
            self.link = self._spawn()
        elif (status := self.link.worker.reap(block=False)) is not None:
            self.replace_lost(status)

    def _send(self, execute: Execute) -> None:
        """Send `execute` as the link's next cell (numbered by its session)."""
        self.link.fresh_ring()
        self.link.begin()
        execute.cell = self.link.session.cell
        self._sent = execute
        self._command(execute)

    def replace_lost(self, status: int) -> None:
        """The idle worker died (wait `status`): start another, told with the next cell."""
        self._keep_leftovers()
        self._told.append(Stream("stderr", f"pyrelune: the kernel's worker ended between "
                                           f"cells ({describe_exit(status)}); {LOST}\n"))
        self.restart()  # a NoWorker leaves the notice for the request that starts one

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

        An `Execute` or a `Query` starts (its events follow); the answers to the running
        cell's `input()` (`InputReply`, `CancelInput`, `RefuseInput`) go to its worker.
        `Shutdown`, `Admit` and `Disconnect` are the mode's, never a kernel's.
        """
        if isinstance(command, Execute):
            self.start(command)
        elif isinstance(command, Query):
            self.query(command.kind, command.args)
        elif isinstance(command, Reset):
            self.begin_reset()
        elif isinstance(command, Interrupt):
            self.interrupt()
        elif isinstance(command, (InputReply, CancelInput, RefuseInput)):
            self._command(command)
        else:
            raise TypeError(f"{type(command).__name__} is the mode's to carry out, not a kernel's")

    def query(self, kind: str, args: dict[str, Any]) -> None:
        """Ask the idle worker about its namespace (see `worker.introspect`): a Reply and a
        Done follow, as a cell's events do. A worker that died in between is replaced first."""
        self._revive()
        self.link.begin()
        self._sent = None
        self._command(Query(kind, args, self.link.session.cell))

    def reset(self) -> None:
        """A fresh namespace (the cell must be over); blocks until the worker confirms."""
        self.begin_reset()
        for _ in self.events():
            pass

    def begin_reset(self) -> None:
        """Ask for a fresh namespace; the worker confirms with a Done (for event-loop drivers)."""
        if self.link.closed or self.link.worker.reap(block=False) is not None:
            self._keep_leftovers()  # a fresh namespace is what was asked for: no notice
            self.restart()
        self._sent = None
        self.link.fresh_ring(always=True)  # a fresh stdout ring too, whatever a cell did to it
        self.link.begin()
        self._command(Reset())

    def events(self, check: Callable[[], None] | None = None) -> Iterator[Event]:
        """The running cell's events, ending with its Done (see `blocking.run`, and its
        `check`)."""
        while True:
            yield from self.take_told()
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
                self.replace_lost(status)
                self._send(sent)
                self._sent = None  # once: a second death is the cell's own
                return None
            self.restart()
            if os.WIFSIGNALED(status) and buffers_stdout(self._interactive):
                lost = f"{LOST}; {UNFLUSHED}"  # a signal it never saw: its buffer went with it
        except NoWorker as exc:
            lost = str(exc)
        error = done.error or CellError(WORKER_DIED, "", "the worker ended")
        return Done(CellError(error.code, error.ename, f"{error.evalue}; {lost}",
                              error.traceback, error.line, error.column))

    def interrupt(self) -> None:
        self.link.interrupt(patience=PATIENCE)

    def restart(self) -> None:
        """Kill the worker with everything it started and begin a fresh one."""
        if self._before_replace is not None:
            self._before_replace()
        self.link.close()
        self.link = self._spawn()

    def close(self) -> None:
        self.link.close()

    def _command(self, command: PipeCommand) -> None:
        self.link.send(to_wire(command))
