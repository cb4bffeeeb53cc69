"""The worker's standard streams: fds 0, 1, 2 and sys.stdin/out/err, as cells get them.

Fds 1 and 2 are the capture pipes the session reads. Each cell starts from
the runtime's own descriptors and streams, whatever the cell before did to
them (`StdFds`). Their buffering depends on who reads them: a host that
shows output live gets line-buffered streams that keep stdout and stderr in
one order (`_StreamOrder`); a lines kernel's stdout is block-buffered
(see flushfirst). Everything buffered is flushed before each event the
worker sends, so the session sees output and events in the cell's order.
"""

from __future__ import annotations

import io
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


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

        _fflush = ctypes.CDLL(None).fflush  # looked up once: 15 us a time (numpy loads ctypes)
    _fflush(None)


_fflush: Callable[[Any], int] | None = None


class StdFds:
    """Private copies of the capture pipes, to put back what a cell broke.

    A kernel cell may close or redirect fd 0, 1 or 2, or replace sys.stdout;
    the next cell must still be captured, so each cell starts from these.
    """

    def __init__(self, out_fd: int, err_fd: int) -> None:
        self.null = os.open(os.devnull, os.O_RDONLY)  # os.open/dup: not inheritable
        self.out = os.dup(out_fd)
        self.err = os.dup(err_fd)
        self._identity = [_identity(fd) for fd in (self.null, self.out, self.err)]
        self._streams: list[Any] = []
        self.make_stream: Callable[[int], io.TextIOWrapper] = _text_stream

    def buffer_stdout(self) -> None:
        """From now on, stdout is block-buffered and flushed before whatever writes around it."""
        from pyrelune.engine.flushfirst import flush_first

        self.make_stream = lambda fd: _buffered_text_stream(fd) if fd == 1 else _text_stream(fd)
        self._streams = []  # rebuilt by the next restore()
        flush_first(flush_stdout)

    def order_streams(self, sync: Callable[[], None]) -> None:
        """From now on, sys.stdout and sys.stderr keep their mutual order (see `_StreamOrder`).

        `sync` returns once the session has read all output written so far.
        """
        order = _StreamOrder(sync)
        self.make_stream = lambda fd: _ordered_text(fd, order)
        self._streams = []  # rebuilt by the next restore()

    def restore(self) -> None:
        """Point fds 0, 1, 2 and sys.stdin/out/err back at the runtime's own."""
        for target, (fd, identity) in enumerate(zip((self.null, self.out, self.err),
                                                    self._identity, strict=True)):
            if _identity(target) != identity:
                os.dup2(fd, target)
        if [sys.stdin, sys.stdout, sys.stderr] != self._streams or any(
            s.closed for s in self._streams
        ):
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
            sys.stdout = self.make_stream(1)
            sys.stderr = self.make_stream(2)
            self._streams = [sys.stdin, sys.stdout, sys.stderr]
            # The originals, as a script sees them: what `sys.stdout = sys.__stdout__`
            # restores, and what flush_output flushes even while a cell replaced sys.stdout.
            sys.__stdin__, sys.__stdout__, sys.__stderr__ = self._streams  # type: ignore[misc]


def _identity(fd: int) -> tuple[int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _text_stream(fd: int) -> io.TextIOWrapper:
    # Line-buffered: each printed line is one write, so lines keep their order
    # with what os.write, subprocesses and C code put on the same descriptor,
    # and what was printed before a crash is not lost.
    # Lone surrogates are written as escapes instead of failing the print.
    return io.TextIOWrapper(_binary(fd), line_buffering=True, **_TEXT_OPTIONS)


def _buffered_text_stream(fd: int) -> io.TextIOWrapper:
    # Block-buffered below the text layer, which passes each write straight
    # down: text and sys.stdout.buffer writes keep their order (see flushfirst).
    return io.TextIOWrapper(_binary(fd), write_through=True, **_TEXT_OPTIONS)


def _binary(fd: int) -> io.BufferedWriter:
    return io.BufferedWriter(io.FileIO(fd, "w", closefd=False))


_TEXT_OPTIONS: dict[str, Any] = {"encoding": "utf-8", "errors": "backslashreplace"}


#: Whether Python was asked for unbuffered output (`python -u`, PYTHONUNBUFFERED):
#: its own stdout then writes through. Read at import, before a worker replaces it.
_UNBUFFERED = bool(getattr(sys.__stdout__, "write_through", False))


def buffers_stdout(interactive: bool) -> bool:
    """Whether a kernel worker's stdout is block-buffered (see `flushfirst`).

    Not for a host that shows output live (interactive), nor when the user
    asked Python for unbuffered output.
    """
    return not interactive and not _UNBUFFERED


class _StreamOrder:
    """Keeps what Python writes to stdout and stderr in one order, for a live host.

    The two streams are two pipes, and the session cannot tell which bytes
    came first across them. So when the cell switches from one stream to the
    other, the worker pushes out what the other holds, then waits until the
    session has read everything so far: a round trip per switch, none per
    line. stderr is watched where text enters it (so that even a partial
    line on stdout goes out before a warning). stdout is watched only when
    a switch to it is due: its next write finds a hook in the instance (which
    `print` looks up before the class's method) and takes it away, so a flood
    of prints runs at the plain stream's speed.
    """

    def __init__(self, sync: Callable[[], None]) -> None:
        self._sync = sync
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

        def switch_then_write(data: str, /) -> int:
            vars(text).pop("write", None)  # back to the stream's own method (once, if threads race)
            self.switch_to("stdout")
            return text.write(data)

        setattr(text, "write", switch_then_write)  # noqa: B010 (an instance attribute, on purpose)


class _OrderedText(io.TextIOWrapper):
    """An interactive kernel's sys.stderr."""

    def __init__(self, fd: int, order: _StreamOrder) -> None:
        super().__init__(_binary(fd), line_buffering=True, **_TEXT_OPTIONS)
        self._order = order

    def write(self, text: str, /) -> int:
        order = self._order
        order.flush("stdout")  # a partial line printed before this goes out first
        if order.last != "stderr":
            order.switch_to("stderr")
            order.watch_stdout()
        return super().write(text)


def _ordered_text(fd: int, order: _StreamOrder) -> io.TextIOWrapper:
    if fd != 1:
        order.texts["stderr"] = _OrderedText(fd, order)
        return order.texts["stderr"]
    order.texts["stdout"] = _text_stream(fd)
    if order.last != "stdout":
        order.watch_stdout()
    return order.texts["stdout"]
