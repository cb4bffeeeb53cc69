"""The worker's channel to the session: events out on one pipe, commands in on another.

Python-level streams are flushed before each event, so the session, which
drains the capture pipes before it reads an event, sees output and events
in the order the cell produced them.
"""

from __future__ import annotations

import _thread
import os
import sys

from pyrelune import fastjson
from pyrelune.wire import LineBuffer, write_all  # loaded before the fork, always
from pyrelune.wire.events import (
    SYNC,
    Clear,
    Comm,
    Display,
    Done,
    InputRequest,
    Payload,
    Reply,
    message_limit,
    to_wire,
)
from pyrelune.wire.forks import in_cell_child
from pyrelune.worker import importhooks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from pyrelune.wire.commands import PipeCommand
    from pyrelune.wire.events import Event, Stream


class Channel:
    """The worker's ends of the event pipe (out) and the control pipe (in).

    Only the thread that made it (the worker's main thread, which runs the
    cells) waits for the session's answers. Threads a cell starts would race
    it, and each other, for the control pipe, and may outlive the cell: their
    displays go out unanswered, their switches between stdout and stderr are
    not waited for, and their `input()` raises EOFError. So do processes a
    cell forks (`multiprocessing`'s fork workers): a child waiting for an
    answer would take the worker's, and both would wait for ever.
    """

    def __init__(self, event_fd: int, control_fd: int, cap: int, key: str) -> None:
        self._event_fd = event_fd
        self._control_fd = control_fd
        self._cap = cap  # the mode's output cap: no event is sent bigger (see `bounds`)
        self._limit = message_limit(cap)
        self._key = key  # signs every line: the session refuses one without it
        self._sync = _line({"t": SYNC, "k": key})
        self._from_wire: Callable[[bytes], PipeCommand] | None = None  # see `receive`
        self._commands = LineBuffer()  # the control pipe, cut into commands
        self._queued = b""  # events posted, written with the next one sent
        self._owner: int | None = _thread.get_ident()
        self._writing = _thread.allocate_lock()  # one event at a time, whole
        #: Called before a Done, after the cell's last output: an rpc worker's
        #: ring says there where the cell's writes ended (see `wire.ring`).
        self.before_done: Callable[[], object] | None = None
        #: The cell a display belongs to if not the running one (an interactive
        #: kernel's: see `worker.origin`).
        self.origin_of: Callable[[], str | None] | None = None
        #: The request a comm message belongs to if not the main shell's (a Jupyter worker's
        #: subshell: see `worker.origin.serving`).
        self.comm_origin: Callable[[], str | None] | None = None
        #: Takes a command line that is not the main thread's (a Jupyter worker's subshells:
        #: see `worker.subshells`), answering whether it did.
        self.aside: Callable[[bytes], bool] | None = None
        #: `input()` on a thread that may not wait here: its answer by another way (a
        #: subshell's thread), None if it has none.
        self.prompt_aside: Callable[[InputRequest], PipeCommand | None] | None = None
        in_cell_child(self._forked)

    def _forked(self) -> None:
        """In a child the cell forked: nobody waits, and no other thread holds the lock."""
        self._owner = None
        self._writing = _thread.allocate_lock()

    def forget_commands(self) -> None:
        """What was read of the control pipe is not for this process (a woken snapshot's:
        the dead worker's session sent it), nor what was posted for it."""
        self._commands = LineBuffer()
        self._queued = b""

    def waits_here(self) -> bool:
        """Whether the calling thread may wait for the session's answers."""
        return _thread.get_ident() == self._owner

    def lend(self, owner: int | None) -> None:
        """Who may wait: None while a kernel is idle (see `between`), the main thread again after.

        Between cells the main thread runs the cells' tasks while it waits for
        the next command: an answer it waited for there could be that command.
        """
        self._owner = owner

    @property
    def control_fd(self) -> int:
        return self._control_fd

    def pending(self) -> bool:
        """Whether the session's next command has begun to arrive (`receive` will not wait long)."""
        return self._commands.pending()

    def send(self, event: Display | Clear | InputRequest | Reply | Done | Payload) -> None:
        """Report `event` (and any posted before it) after everything the cell wrote."""
        flush_output()
        if self.before_done is not None and type(event) is Done:
            self.before_done()
        self._write(self._queued + self._line(event))
        self._queued = b""

    def notify(self, event: Comm | Stream | Reply) -> None:
        """Report `event`, from any thread; ValueError if it is too big.

        A comm message is not cut to fit as a display is: half a widget's state is none.
        Stream text comes here only from another cell's thread or task, in small
        pieces (`worker.origin`). A comm message from the thread that runs the cell
        waits, as a display does (see `ask`), until the session has read what the cell
        wrote before it: what the cell prints next comes after it (ipywidgets' `Output`
        names the request its output goes under in one). A comm message goes under the
        subshell request its context serves, if any (`comm_origin`).
        """
        flush_output()
        if isinstance(event, Comm) and self.comm_origin is not None:
            event.origin = self.comm_origin()
        wait = isinstance(event, Comm) and self.waits_here()
        line = self._signed(event, wait=wait)
        if len(line) > self._limit:
            raise ValueError(f"a message of {len(line):,} bytes: more than the kernel "
                             f"sends in one ({self._limit:,})")
        self._write(line)
        if wait:
            self.receive()

    def sync(self) -> None:
        """Wait until the session has read all output written so far (see `_StreamOrder`)."""
        if self.waits_here():
            self._write(self._sync)
            self.receive()

    def _write(self, data: bytes) -> None:
        with self._writing:
            write_all(data, self._event_fd)

    def post(self, event: Display) -> None:
        """Queue `event` to go with the next `send`: one write, one wake-up of the session.

        Only for an event that no output of the cell follows (the final
        result), since the session would read such output before it.
        """
        flush_output()
        self._queued += self._line(event)

    def ask(self, event: Display | Clear | InputRequest) -> PipeCommand:
        """Send `event` and wait for the session's answer.

        Waiting keeps the order exact: the session drains the capture pipes
        before it answers, so output the cell writes afterwards cannot be
        read as if it came first.
        """
        self.send(event)
        return self.receive()

    def receive(self) -> PipeCommand:
        """The next command from the session (one `aside` takes is not: while idle, a
        Continue stands for it, so that the idle loop goes on with the cells' tasks)."""
        while True:
            while (line := self._commands.pop()) is None:
                # Imported here, not at start-up: a oneshot worker seldom waits. As
                # the runtime's own: spin imports `select`, which a cell's folder may shadow.
                importhooks.import_own("pyrelune.spin").poll([self._control_fd])  # then read
                chunk = os.read(self._control_fd, 1 << 16)
                if not chunk:
                    os._exit(0)  # the session is gone: so is the reason to exist
                self._commands.feed(chunk)
            if self._from_wire is None:
                # Loaded on the first wait, not at start-up: a oneshot cell seldom waits.
                from pyrelune.wire.commands import from_wire

                self._from_wire = from_wire
            if self.aside is None or not self.aside(line):
                return self._from_wire(line)
            if self._owner is None:  # idle (`lend`): nothing waits for an answer
                from pyrelune.wire.commands import Continue

                return Continue()

    def publish(self, event: Display | Clear) -> None:
        """Show a MIME bundle (a `display()` or the final expression), or clear, in its place.

        The final expression is not waited for: only the cell's open figures
        follow it, and they are displays that wait for their own turn. It is
        posted, to go in one write with what follows (Done, usually).
        """
        if self.origin_of is not None:
            event.origin = self.origin_of()
        if isinstance(event, Display) and event.is_result:
            self.post(event)
        elif self.waits_here():
            self.ask(event)
        else:  # another thread of the cell's: nothing to wait for (see the class docstring)
            flush_output()
            self._write(self._line(event, wait=False))

    def _line(self, event: Display | Clear | InputRequest | Reply | Done | Payload,
              wait: bool = True) -> bytes:
        """One message to the session: a JSON line, signed, within the event limit.

        Text far over it is cut before it is encoded: a 300 MB display is
        not copied into a 300 MB line first.
        """
        # A Reply and a Payload are kept small (`introspect`, `ipyshell`).
        small = (InputRequest, Clear, Reply, Payload)
        if isinstance(event, small) or _text_size(event) <= self._limit:
            line = self._signed(event, wait)
            if len(line) <= self._limit or isinstance(event, small):
                return line  # a prompt is cut by the codec that shows it
        from pyrelune.worker import bounds

        line = self._signed(bounded := bounds.bounded(event, self._cap), wait)
        if len(line) <= self._limit:
            return line
        return self._signed(bounds.plain(bounded, self._cap), wait)

    def _signed(self, event: Event, wait: bool) -> bytes:
        message = to_wire(event)
        message["k"] = self._key
        if not wait:
            message["wait"] = False
        return _line(message)


def _text_size(event: Display | Done) -> int:
    """The characters of text `event` holds: a floor on the size of its line."""
    if isinstance(event, Display):
        size = 0
        for value in event.data.values():  # a loop: on every display's path, cheaper than sum()
            if type(value) is str:
                size += len(value)
        return size
    error = event.error
    return 0 if error is None else len(error.evalue) + len(error.traceback)


def _line(message: dict[str, Any]) -> bytes:
    """One message to the session: a JSON line."""
    return (fastjson.dumps(message) + "\n").encode()


def flush_output() -> None:
    """Push every buffered byte of the cell's output into the capture pipes."""
    _flush((sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__))


def flush_stdout() -> None:
    """What a lines kernel's cell does before it writes around sys.stdout (see flushfirst).

    stderr is line-buffered, as it always was; only stdout can hold whole lines.
    """
    _flush((sys.stdout, sys.__stdout__))


def _flush(streams: tuple[Any, ...]) -> None:
    for stream in streams:
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass  # the cell closed or replaced the stream: nothing of ours to flush
        except RuntimeError:
            pass  # a signal handler wrote while the stream was writing: it goes on
    global _fflush
    if _fflush is None:
        if "ctypes" not in sys.modules:
            return  # then no C code of the cell's can have used stdio's buffers
        import ctypes

        # Looked up once: 15 us a time (numpy loads ctypes). Through a prototype, not the
        # library's own functions: an rpc worker's call those hand over first (flushfirst).
        prototype = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
        _fflush = prototype(("fflush", ctypes.CDLL(None)))
    _fflush(None)


_fflush: Callable[[Any], int] | None = None
