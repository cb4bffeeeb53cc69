"""Whose output it is: what a thread or a task writes belongs to the cell that started it.

As in ipykernel, a thread one cell started that prints while a later cell runs
(or between cells) is shown under the cell that started it, not under the one
running. A cell is known by what its host knows it by (`Execute.origin`: an
rpc cell_id, a Jupyter request's header); a context variable holds it, set on
the main thread for each cell. Asyncio tasks and callbacks take it with the
context they copy; a thread gets its starter's (`Thread.start`), so a thread's
threads go with its cell too; a ThreadPoolExecutor's job gets its submitter's
(`submit`, which `map`, `loop.run_in_executor` and `asyncio.to_thread` use),
whichever cell started the pool's threads.

What the running cell's own context writes (or a context of no cell: a
thread started by other means) goes the usual way, into the ring or fd 2, at
the cost of one look at the variable. What another cell's context writes goes
to the session as events naming that cell, in pieces of `PIECE` characters at
most; while no cell runs, every cell's context is another's. Bytes written to
fd 1 or 2 directly (`os.write`, a subprocess, C code's stdio) carry no
context: they go under the running cell.
"""

from __future__ import annotations

import os
from contextvars import ContextVar

from pyrelune.wire.events import Stream
from pyrelune.worker import importhooks
from pyrelune.worker.flushfirst import named_as

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future
    from types import ModuleType
    from typing import Any, TypeVar

    T = TypeVar("T")

#: The origin of the cell whose code, thread or task runs in the calling context.
cell: ContextVar[str | None] = ContextVar("pyrelune.origin", default=None)
#: The subshell request the calling context serves (`worker.subshells` sets it on its thread),
#: which a comm message sent there goes under, as ipykernel keeps a parent per subshell thread.
#: A thread of an earlier cell's has none: its comm messages go under the running (or last)
#: cell, as ipykernel's do, so a front end that follows only the running cell sees them.
serving: ContextVar[str | None] = ContextVar("pyrelune.serving", default=None)
#: The most characters of text one event carries: an event line stays small whatever is printed.
PIECE = 4096


class Origins:
    """The running cell's origin, and the way to the session for other cells' text."""

    __slots__ = ("_notify", "running")

    def __init__(self, notify: Callable[[Stream], None]) -> None:
        self.running: str | None = None  # the running cell's origin; None while none runs
        self._notify = notify  # sends an event from any thread, waiting for nothing

    def begin(self, origin: str | None) -> None:
        """Code of the cell `origin` runs on the main thread from now on.

        None for a question about the namespace (a comm message, say): what it
        writes goes under what the host asked, as does a thread of no cell's.
        """
        cell.set(origin)
        self.running = origin

    def end(self) -> None:
        """No cell runs: whatever a cell's thread or task writes now is sent as its own."""
        self.running = None

    def elsewhere(self) -> str | None:
        """The calling context's cell, when it is not the running one (else None)."""
        here = cell.get()
        return None if here is self.running else here

    def write(self, name: str, text: str, origin: str) -> None:
        """`text`, written to stream `name` for the cell `origin`: events, in pieces."""
        if not text.isascii():
            try:
                text.encode()
            except UnicodeEncodeError:  # a lone surrogate: as the streams write it
                text = text.encode("utf-8", "backslashreplace").decode()
        for start in range(0, len(text), PIECE):
            self._notify(Stream(name, text[start:start + PIECE], origin))


def install() -> None:
    """Threads and executor jobs go with the cell that started them, from now on."""
    importhooks.after_import("threading", _threads_inherit)
    importhooks.after_import("concurrent.futures.thread", _jobs_inherit)
    # A process the cell forks writes to the descriptors, as before: two processes'
    # events could mix on the pipe.
    os.register_at_fork(after_in_child=lambda: cell.set(None))


def _threads_inherit(threading: ModuleType) -> None:
    plain_start = threading.Thread.start

    def start(self: Any) -> None:
        origin = cell.get()
        if origin is not None and "run" not in vars(self):  # an instance's own `run` is left
            vars(self)["run"] = _run_in(origin, self)
        plain_start(self)

    threading.Thread.start = named_as(start, plain_start)


def _run_in(origin: str, thread: Any) -> Callable[[], None]:
    """`thread.run`, run in the cell `origin`; once begun, the thread is as it was."""
    run = thread.run

    def run_in_cell() -> None:
        vars(thread).pop("run", None)
        cell.set(origin)
        run()

    return run_in_cell


def _jobs_inherit(module: ModuleType) -> None:
    executor = module.ThreadPoolExecutor
    plain_submit = executor.submit

    def submit(self: Any, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        origin = cell.get()
        if origin is None:
            return plain_submit(self, fn, *args, **kwargs)  # type: ignore[no-any-return]
        return plain_submit(self, _job_in, origin, fn, *args,  # type: ignore[no-any-return]
                            **kwargs)

    executor.submit = named_as(submit, plain_submit)


def _job_in(origin: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in the cell `origin`, on a pool's thread that any cell started."""
    token = cell.set(origin)
    try:
        return fn(*args, **kwargs)
    finally:
        cell.reset(token)

