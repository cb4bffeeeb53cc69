"""What a kernel's worker adds to the worker: a loop of cells, and streams for its host.

The worker process itself (`runtime`, `channel`) is shared with oneshot mode, whose
start-up pays for every module it imports; what only kernels need is here.
A kernel's worker runs cells from the control pipe in one namespace, ends
with its session (the lifeline), and makes sys.stdout and sys.stderr the
way its host reads them: in one order, as it is printed, for a host that
shows output live (rpc: stdout into shared memory, see `liveprint`); stdout
block-buffered for one that reads it when the cell ends (lines; see
flushfirst).
"""

from __future__ import annotations

import _signal
import _thread
import builtins
import io
import os
import sys
import time

from pyrelune import PyreluneError
from pyrelune.settings import IPYTHON
from pyrelune.wire.commands import Execute, FreshRing, InputReply, Query, RefuseInput, Reset
from pyrelune.wire.events import Done, InputRequest
from pyrelune.worker import importhooks, sources
from pyrelune.worker.channel import Channel, flush_stdout
from pyrelune.worker.display import host_shows
from pyrelune.worker.mainmodule import fresh_namespace
from pyrelune.worker.runtime import (
    TEXT_OPTIONS,
    Cell,
    become_worker,
    binary,
    interrupt_guard,
    report,
    run,
    text_stream,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

    from pyrelune.wire import WorkerFds
    from pyrelune.wire.commands import PipeCommand
    from pyrelune.wire.profile import HostProfile
    from pyrelune.wire.ring import RingWriter
    from pyrelune.worker.ipyshell.shell import ZMQInteractiveShell
    from pyrelune.worker.liveprint import LivePrint
    from pyrelune.worker.origin import Origins
    from pyrelune.worker.snapshot import Snapshots

#: The runtime's own os.killpg: a lines kernel's cells get one that flushes
#: first (see flushfirst), and the lifeline must not wait on a cell's stream.
_killpg = os.killpg


def _buffered_text_stream(fd: int) -> io.TextIOWrapper:
    # Block-buffered below the text layer, which passes each write straight
    # down: text and sys.stdout.buffer writes keep their order (see flushfirst).
    return io.TextIOWrapper(binary(fd), write_through=True, **TEXT_OPTIONS)


class _StreamOrder:
    """Keeps what Python writes to stdout and stderr in one order, for a live host.

    The two streams are two pipes, and the session cannot tell which bytes
    came first across them. So when the cell switches from one stream to the
    other, the worker pushes out what the other holds, then waits until the
    session has read everything so far: a round trip per switch, none per
    line. stderr is watched where text enters it (so that even a partial
    line on stdout goes out before a warning). stdout is watched only when
    a switch to it is due: its next write finds a hook in the instance (which
    the builtin `print` looks up before the class's method) and takes it
    away, so a flood of prints runs at the plain stream's speed. The worker's
    own `print` (`liveprint`) is told of the switch due, and switches too.
    Another cell's text (`origins`: a thread's of an earlier cell) switches
    nothing: it goes to the session apart, as an event.
    """

    def __init__(self, sync: Callable[[], None], printing: LivePrint,
                 origins: Origins) -> None:
        self._sync = sync  # returns once the session has read all output so far
        self.printing = printing
        self.origins = origins
        self.last: str | None = None
        self.texts: dict[str, io.TextIOWrapper] = {}

    def switch_to(self, name: str) -> None:
        last = self.last
        if last is not None:
            self.flush(last)  # before `last` changes: no switch back from there
        self.last = name
        if last is not None:
            self._sync()

    def flush(self, name: str) -> None:
        try:
            self.texts[name].flush()
        except (OSError, ValueError, KeyError):
            pass  # closed by the cell, or not made yet: nothing of it to order

    def watch_stdout(self) -> None:
        """The next write to sys.stdout switches to it first."""
        text = self.texts.get("stdout")
        if text is None or "write" in vars(text):
            return

        def switch() -> None:
            vars(text).pop("write", None)  # back to the stream's own method (once, if threads race)
            self.printing.aim(text)
            self.switch_to("stdout")

        def switch_then_write(data: str, /) -> int:
            if self.origins.elsewhere() is None:
                switch()
            return type(text).write(text, data)

        self.printing.aim(text, switch)
        setattr(text, "write", switch_then_write)  # noqa: B010 (an instance attribute, on purpose)


class _OrderedText(io.TextIOWrapper):
    """An interactive kernel's sys.stderr."""

    def __init__(self, fd: int, order: _StreamOrder) -> None:
        super().__init__(_written_through(fd), line_buffering=True, **TEXT_OPTIONS)
        self._order = order

    def write(self, text: str, /) -> int:
        order = self._order
        if type(text) is str and (origin := order.origins.elsewhere()) is not None:
            order.origins.write("stderr", text, origin)
            return len(text)
        if order.last != "stderr":
            order.switch_to("stderr")
            order.watch_stdout()
        return super().write(text)


def _written_through(fd: int) -> io.BufferedWriter:
    """A live host's binary stderr: what `sys.stderr.buffer.write` gets, written at once.

    The text layer above it already hands on each line as it ends, in one
    write; bytes written to the binary layer directly must not wait in it
    either, or an `os.write` (a subprocess, C code) that follows them would
    reach the host first. It costs a printed line nothing: the line goes
    straight through, without a copy into the buffer.
    """
    return io.BufferedWriter(io.FileIO(fd, "w", closefd=False), buffer_size=1)


def _ordered_text(fd: int, order: _StreamOrder, writer: RingWriter) -> io.TextIOWrapper:
    if fd != 1:
        order.texts["stderr"] = _OrderedText(fd, order)
        return order.texts["stderr"]
    from pyrelune.worker.liveprint import RingText

    text = order.texts["stdout"] = RingText(writer, order.printing, order.origins)
    order.printing.aim(text)
    if order.last != "stdout":
        order.watch_stdout()
    return text


def _watch_lifeline(fd: int) -> None:
    """End the whole process group once the session is gone.

    Runs on a thread blocked in read(): a kernel host kills the session with
    SIGKILL, and nothing the cells started may outlive it. Not on Linux,
    where the lifeline's O_ASYNC signal does it (see `process`) without a
    thread that a starved process (a cell's tight RLIMIT_AS) could break.
    """
    try:
        os.read(fd, 1)
    finally:
        _killpg(0, _signal.SIGKILL)


def _current_directory_first() -> None:
    """Modules beside where the kernel runs import, as in Jupyter: `""` leads sys.path.

    It takes the place of what the interpreter put first: the folder of the
    script that started it (pyrelune's console script, a host's wrapper),
    the directory of `-m`, or `""` already for `-c`. With `-P` (or `-I`)
    nothing was put there, and nothing is.
    """
    if not getattr(sys.flags, "safe_path", False) and sys.path:
        sys.path[0] = ""


class StdinNotImplementedError(PyreluneError, NotImplementedError):
    """input() in a cell whose front end cannot answer it (IPython's name and meaning)."""


class Prompter:
    """`input()` for hosts that can answer: asks the session and waits.

    With `password`, it is `getpass.getpass`: the host hides what is typed.
    """

    def __init__(self, channel: Channel, password: bool = False) -> None:
        self._channel = channel
        self._password = password

    def __call__(self, prompt: object = "", stream: object = None) -> str:
        if prompt == "" and self._password:
            prompt = "Password: "  # getpass's own default
        request = InputRequest(str(prompt), self._password)
        channel = self._channel
        reply: PipeCommand | None = None
        if channel.waits_here():
            reply = channel.ask(request)
        elif channel.prompt_aside is not None:  # a subshell's thread
            reply = channel.prompt_aside(request)
        if reply is None:
            raise EOFError("input() can be answered only on the thread that runs the cell")
        if isinstance(reply, RefuseInput):
            raise StdinNotImplementedError(
                "raw_input was called, but this frontend does not support input requests.")
        if not isinstance(reply, InputReply):
            raise EOFError("input() was cancelled")
        return reply.value


def serve(fds: WorkerFds, host: HostProfile, buffered: bool) -> NoReturn:
    """A kernel's worker: run cells from the control pipe in one namespace, for `host`.

    An interactive host (rpc, Jupyter) shows the cell while it runs and can
    answer: `input()` asks it, and stdout and stderr keep their mutual order;
    the rpc kernel's cells get `show()` and `plot()` as builtins. `buffered`:
    stdout is block-buffered (see `flushfirst`), for a host that sees output
    only when the cell ends. `host.shell` `IPYTHON` runs the cells through
    IPython's own shell (see `worker.ipyshell`), `PLAIN` through pyrelune's.

    `Execute` and `Reset` (see `wire.commands`) are each answered by a Done event.
    """
    try:
        std = become_worker(fds.stdout, fds.stderr,
                            "input() is not available in this kernel: there is no one to answer")
        if not sys.platform.startswith("linux"):  # there the lifeline signals the group itself
            _thread.start_new_thread(_watch_lifeline, (fds.lifeline,))
        channel = Channel(fds.events, fds.control, host.cap, fds.key)
        interrupt_guard.interrupts = fds.interrupts
        snapshots: Snapshots | None = None
        if fds.snapshots >= 0:  # the kernel keeps one of the namespace after each cell
            # Imported before `flush_first` wraps os.kill and os._exit: the snapshots' are the
            # runtime's own, which never wait for the session (that would take a command).
            from pyrelune.worker.snapshot import Snapshots

            snapshots = Snapshots(fds, std, channel, host.snapshot_max)
        if host.shown is not None:
            host_shows(host.shown)
        _current_directory_first()
        if "asyncio" in sys.modules:  # the supervisor's (rpc): its loop is not the cells'
            from pyrelune.worker import eventloop

            eventloop.forget_inherited()
        # A host that sees output only when a cell ends (lines) waits between cells: so does
        # its worker. An interactive one's goes on running the cells' tasks (see `between`).
        receive: Callable[[], PipeCommand] = channel.receive
        origins: Origins | None = None  # whose output it is (see `worker.origin`): a live host's
        if host.interactive:
            from pyrelune.wire.ring import RingWriter
            from pyrelune.worker import origin, show
            from pyrelune.worker.flushfirst import flush_before_c_calls, flush_first
            from pyrelune.worker.liveprint import HandOver, LivePrint

            origins = origin.Origins(channel.notify)
            channel.origin_of = origins.elsewhere
            channel.comm_origin = origin.serving.get
            origin.install()
            builtins.input = Prompter(channel)
            importhooks.after_import("getpass", lambda getpass: setattr(
                getpass, "getpass", Prompter(channel, password=True)))
            if not (host.comms and host.shell == IPYTHON):  # the rpc kernel's show() and plot()
                show.install()
            assert fds.ring is not None  # an interactive kernel's worker has one
            writer = RingWriter(fds.ring)
            channel.before_done = writer.settle
            printing = LivePrint(writer, origins)
            printing.install()
            order = _StreamOrder(channel.sync, printing, origins)
            std.use(lambda fd: _ordered_text(fd, order, writer))
            hand_over = HandOver(writer, channel)
            flush_first(hand_over)
            flush_before_c_calls(hand_over)
            from pyrelune.worker import between

            between.watch_for_asyncio()
            if host.comms:  # a Jupyter front end's: widgets talk to it (see `worker.comms`)
                from pyrelune.worker.comms import install

                install(channel)
            receive = lambda: between.next_command(channel, writer)  # noqa: E731
        elif buffered:
            from pyrelune.worker.flushfirst import flush_first

            std.use(lambda fd: _buffered_text_stream(fd) if fd == 1 else text_stream(fd))
            flush_first(flush_stdout)
        ipython: ZMQInteractiveShell | None = None
        if host.shell == IPYTHON:
            import gc

            # Importing IPython and making its shell allocates much and frees little: with no
            # collection meanwhile, the first cell waits about a tenth less.
            gc.disable()
            try:
                from pyrelune.worker.ipyshell.shell import make_shell

                ipython = make_shell(channel, as_parts=host.comms)
            finally:
                gc.enable()
            if host.comms:  # a Jupyter front end's debugger (see `worker.debugging`)
                from pyrelune.worker.debugging import watch

                watch(channel, ipython)
            namespace = ipython.user_ns
        else:
            namespace = fresh_namespace()
        if host.comms:  # a Jupyter front end's subshells (JEP 91): see `worker.subshells`
            from pyrelune.worker.subshells import Subshells

            subshells = Subshells(channel, lambda: namespace, ipython)
            channel.aside, channel.prompt_aside = subshells.aside, subshells.prompt
        while True:
            if origins is not None:
                origins.end()  # what a cell's thread or task writes while idle is its own
            if snapshots is not None:  # off the cells' path: only once idle
                snapshots.when_idle()
            command = receive()
            if isinstance(command, Reset):
                cells_loop = sys.modules.get("pyrelune.worker.eventloop")
                if cells_loop is not None:
                    cells_loop.discard()
                if ipython is not None:
                    ipython.fresh_namespace()
                    namespace = ipython.user_ns
                else:
                    namespace = fresh_namespace()
                sources.forget_all()
                if snapshots is not None:
                    snapshots.drop()
                channel.send(Done())
            elif isinstance(command, Execute):
                began = time.perf_counter()
                std.restore()
                if origins is not None:  # interactive
                    between.before_cell()
                    origins.begin(command.origin)
                namespace.update(command.inputs or {})
                if ipython is not None:
                    report(channel, ipython.run_command(command))
                else:
                    run(Cell(command.source, command.filename, command.cell), namespace, channel)
                if snapshots is not None:  # its Done is out
                    snapshots.due(command.filename, time.perf_counter() - began)
            elif isinstance(command, Query):
                if origins is not None:
                    origins.begin(None)  # what it writes goes under the question
                if command.kind == "comm":
                    from pyrelune.worker.comms import receive as to_comm

                    if ipython is not None:  # what its handlers show goes under the message
                        ipython.kernel.serve(command.args.get("header"))
                    to_comm(command, channel)
                else:
                    from pyrelune.worker.introspect import answer

                    if ipython is not None:
                        from pyrelune.worker.ipyshell.answers import answers

                        answer(command, namespace, channel, answers(ipython))
                    else:
                        answer(command, namespace, channel)
            elif isinstance(command, FreshRing) and fds.ring is not None:
                writer.restart(command.lap)
            # Anything else answered an input() that an interrupt ended first: nothing waits for it.
    finally:
        os._exit(0)
