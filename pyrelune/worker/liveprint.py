"""An rpc worker's stdout: everything printed goes into the shared ring at once.

The rpc kernel's host shows output as it is printed (see `wire.ring` for
why shared memory). What makes it cheap is the number of steps per line:
CPython's `print` hands each piece (the text, the separator, the end) to
`sys.stdout.write` on its own, and a text stream that passes each on costs
about 1.5 us a line by itself. So in an rpc worker `print` is this module's,
which joins the pieces as the builtin would and copies the line into the
ring in one step, with the same output, errors and effects: any other
`file`, `sep` or `end` than a plain stream and strings goes to the builtin,
and so does a print to a stream reconfigured to encode otherwise (`RingText`).
One copy per `print` also keeps a line whole when threads print at once.
A print of another cell's thread or task goes to the session as an event
instead (`worker.origin`), at the cost of one look at a context variable.

sys.stdout itself is a text stream over the ring (`RingRaw`), written
through, so `sys.stdout.write` and `sys.stdout.buffer.write` keep their
place among prints. Bytes that reach fd 1 or 2 without it (`os.write`,
subprocesses, forks, C code called through ctypes) go through the capture
pipes, after the ring has been read (`HandOver`, installed by `flushfirst`),
and the session reads the pipes before the ring: both kinds keep the order
they were written in.
"""

from __future__ import annotations

import builtins
import codecs
import io
import sys

from pyrelune.wire.forks import in_cell_child
from pyrelune.wire.ring import RingWriter
from pyrelune.worker.origin import cell
from pyrelune.worker.runtime import TEXT_OPTIONS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from _typeshed import ReadableBuffer

    from pyrelune.worker.channel import Channel
    from pyrelune.worker.origin import Origins


class RingRaw(io.RawIOBase):
    """sys.stdout.buffer of an rpc worker: writes go to the ring; fd 1 stays the capture pipe.

    Another cell's writes go to `origins` instead (see `worker.origin`).
    """

    def __init__(self, writer: RingWriter, origins: Origins) -> None:
        super().__init__()
        self._put = writer.put
        self._origins = origins
        self.name = "<stdout>"

    def write(self, data: ReadableBuffer, /) -> int:
        chunk = bytes(data)
        origins = self._origins
        if (here := cell.get()) is not origins.running and here is not None:
            origins.write("stdout", chunk.decode("utf-8", "replace"), here)
        else:
            self._put(chunk)
        return len(chunk)

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return 1  # what a subprocess given sys.stdout writes to: the capture pipe

    def isatty(self) -> bool:
        return False


class RingText(io.TextIOWrapper):
    """sys.stdout of an rpc worker: text written through to the ring, nothing held back.

    `plain` while it encodes as `LivePrint` does (UTF-8, backslashreplace,
    newlines as they are): a `reconfigure` that changes that sends its
    prints through the builtin, which writes as the stream says.
    """

    def __init__(self, writer: RingWriter, printing: LivePrint, origins: Origins) -> None:
        super().__init__(RingRaw(writer, origins), write_through=True, **TEXT_OPTIONS)
        self._printing = printing
        self._newline_plain = True
        self.plain = True

    def reconfigure(self, **changes: Any) -> None:
        super().reconfigure(**changes)
        if "newline" in changes:
            self._newline_plain = changes["newline"] in (None, "", "\n")
        plain = (self._newline_plain and codecs.lookup(self.encoding).name == "utf-8"
                 and self.errors == TEXT_OPTIONS["errors"])
        if plain != self.plain:
            self.plain = plain
            self._printing.follow(self)


def _no_switch() -> None:
    """What `LivePrint` calls when no switch between the streams is due: nothing."""


class LivePrint:
    """The worker's `print`: one copy into the ring for a print to its stdout.

    `aim(stream)` names the stream whose prints go straight into the ring
    (sys.stdout as the worker made it); `aim(stream, then)` says that a
    switch from stderr to it is due (see `kernelloop`): the next print to it
    calls `then` first, which aims it again. A print of another cell's
    context goes to `origins`, switching nothing.
    """

    def __init__(self, writer: RingWriter, origins: Origins) -> None:
        builtin = builtins.print
        copy: Callable[[bytes], object] = writer.ring.data.write
        put, spill = writer.put, writer.spill
        here_is = cell.get
        fast: Any = None
        stdout: Any = None  # the stream last aimed at
        due: Any = None  # the stream a switch is due to, and what switches
        switch: Callable[[], object] = _no_switch
        forked = False

        def print(*args: object, sep: str | None = None, end: str | None = None,
                  file: Any = None, flush: bool = False) -> None:
            if (here := here_is()) is not origins.running and here is not None:
                return aside(here, args, sep, end, file, flush)
            if file is None:
                file = sys.stdout
            if file is not fast:
                if file is not due:
                    return builtin(*args, sep=sep, end=end, file=file, flush=flush)
                switch()  # aims here again
                if file is not fast:  # reconfigured: not plain (see `RingText`)
                    return builtin(*args, sep=sep, end=end, file=file, flush=flush)
            if (sep is not None and type(sep) is not str) or (end is not None
                                                               and type(end) is not str):
                return builtin(*args, sep=sep, end=end, file=file, flush=flush)
            if len(args) == 1:
                text = args[0]
                if type(text) is not str:
                    text = str(text)
            else:
                text = _joined(args, " " if sep is None else sep, put)
            text += "\n" if end is None else end
            try:
                data = text.encode()
            except UnicodeEncodeError:  # a lone surrogate: as the streams write it
                data = text.encode("utf-8", "backslashreplace")
            if 0 in data:  # a NUL (an int test: a bytes one is much slower)
                put(data)  # which says how far it wrote (see `wire.ring`)
                return None
            try:
                copy(data)
            except ValueError:  # no room before the end of this lap
                spill(data)
            return None

        def aside(origin: str, args: tuple[object, ...], sep: str | None, end: str | None,
                  file: Any, flush: bool) -> None:
            """Another cell's print: to stdout, one event (not one a piece); else as written."""
            if file is None:
                file = sys.stdout
            if file is not fast and file is not due:
                return builtin(*args, sep=sep, end=end, file=file, flush=flush)
            pieces = io.StringIO()
            try:
                builtin(*args, sep=sep, end=end, file=pieces)
            finally:
                origins.write("stdout", pieces.getvalue(), origin)
            return None

        def aim(stream: Any, then: Callable[[], object] | None = None) -> None:
            """Print straight to `stream`; or, with `then`, call it first (a switch is due)."""
            nonlocal fast, stdout, due, switch
            stdout = stream
            if not forked:
                fast, due = (None, stream) if then else (_plain(stream), None)
                switch = then or _no_switch

        def follow(stream: Any) -> None:
            """`stream` was reconfigured: print straight to it only while it is plain."""
            nonlocal fast
            if stream is stdout and due is None:
                fast = _plain(stream)

        def in_child() -> None:
            """A process the cell forked writes each line to fd 1 itself, in one write.

            Its order with the worker's output is not kept (nor waited for), so
            its prints need no switching between the streams either.
            """
            nonlocal copy, fast, due, forked
            copy = writer.put
            fast, due, forked = _plain(stdout), None, True

        self.print = print
        self.aim = aim
        self.follow = follow
        # Shown, and pickled by reference, as the builtin it stands for.
        print.__module__, print.__qualname__, print.__doc__ = "builtins", "print", builtin.__doc__
        in_cell_child(in_child)  # after the writer's (registered first)

    def install(self) -> None:
        builtins.print = self.print


def _plain(stream: Any) -> Any:
    """`stream`, if `LivePrint` may write its prints itself; else None."""
    return stream if getattr(stream, "plain", True) else None


def _joined(args: tuple[object, ...], sep: str, put: Callable[[bytes], None]) -> str:
    """The pieces as the builtin writes them; what it would have written before a failing one."""
    pieces = []
    try:
        for arg in args:
            pieces.append(arg if type(arg) is str else str(arg))
    except BaseException:
        if pieces:
            put((sep.join(pieces) + sep).encode("utf-8", "backslashreplace"))
        raise
    return sep.join(pieces)


class HandOver:
    """Before anything writes to fd 1 or 2 around sys.stdout: the ring is read first.

    `os.write`, a shell, a subprocess, a fork, and a call into C through
    ctypes (see `flushfirst`) wait until the session has read what the ring
    holds, so that what they write comes after it, as it was printed. The
    cell's main thread asks the session (`Channel.sync`, one round trip);
    its other threads watch the ring until it is read. Nothing is waited for
    when the ring has been read already: a loop of `os.write` calls costs a
    comparison each.
    """

    def __init__(self, writer: RingWriter, channel: Channel) -> None:
        self._writer = writer
        self._channel = channel

    def __call__(self) -> None:
        writer = self._writer
        if writer.unread():
            if self._channel.waits_here():
                self._channel.sync()
            else:
                writer.wait_read()
