"""A small event loop for the rpc kernel over a pipe, where asyncio is not worth its import.

`import asyncio` costs the kernel's start more than everything else it
imports (it pulls in logging, ssl, socket, subprocess, inspect...), and a
pipe kernel needs none of it: it waits on a few descriptors, a few timers and
two signals. `Reactor` offers exactly the part of asyncio's loop that the
pipe kernel uses (`add_reader`, `call_soon`, `call_at`, `add_signal_handler`,
...), with the same order within a turn: ready descriptors' callbacks and due
timers run after the callbacks already scheduled, and what a callback
schedules runs in the next turn. So `evented.LoopDriver` and `LineConnection` run
on it or on asyncio's loop alike, and the WebSocket kernel keeps asyncio.

Signals and other threads wake it through one self-pipe: the signal number
is written there by `signal.set_wakeup_fd` (the handler is then a callback
like any other, never run in the middle of one), a zero byte by
`call_soon_threadsafe`. A callback's exception is not caught: it ends `run`,
and with it the kernel, with its traceback.

It waits with `select.poll` and imports only C modules (`selectors` alone
would bring `collections`, which nothing else on the pipe kernel's start needs).
"""

from __future__ import annotations

import _signal
import os
from _heapq import heappop, heappush
from math import ceil
from select import POLLIN, POLLNVAL, poll
from time import monotonic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    class TimerHandle(Protocol):
        def when(self) -> float: ...
        def cancel(self) -> None: ...

    class Loop(Protocol):
        """What the rpc kernel asks of its loop: asyncio's or a `Reactor`."""

        def time(self) -> float: ...
        def call_soon(self, callback: Callable[..., object], *args: Any) -> object: ...
        def call_soon_threadsafe(self, callback: Callable[..., object], *args: Any) -> object: ...
        def call_later(self, delay: float, callback: Callable[..., object],
                       *args: Any) -> TimerHandle: ...
        def call_at(self, when: float, callback: Callable[..., object],
                    *args: Any) -> TimerHandle: ...
        def add_reader(self, fd: int, callback: Callable[..., object], *args: Any) -> None: ...
        def remove_reader(self, fd: int) -> bool: ...


class Handle:
    """A callback waiting to run; `cancel()` makes it never run."""

    __slots__ = ("_args", "_callback", "cancelled")

    def __init__(self, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        self._callback = callback
        self._args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def run(self) -> None:
        if not self.cancelled:
            self._callback(*self._args)


class Timer(Handle):
    """A callback due at `when()` (the `monotonic` clock), earliest first."""

    __slots__ = ("_when",)

    def __init__(self, when: float, callback: Callable[..., object],
                 args: tuple[Any, ...]) -> None:
        super().__init__(callback, args)
        self._when = when

    def when(self) -> float:
        return self._when

    def __lt__(self, other: Timer) -> bool:
        return self._when < other._when


class Reactor:
    """A single-threaded loop over descriptors, timers and signals, until `stop()`."""

    def __init__(self) -> None:
        self._poll = poll()
        self._readers: dict[int, Handle] = {}
        self._ready: list[Handle] = []  # replaced each turn: see `run`
        self._from_threads: list[Handle] = []  # never replaced: other threads append to it
        self._timers: list[Timer] = []
        self._signals: dict[int, Handle] = {}
        self._stopping = False
        self._closed = False
        self._wake_r, self._wake_w = os.pipe()
        for fd in (self._wake_r, self._wake_w):
            os.set_blocking(fd, False)
        self._poll.register(self._wake_r, POLLIN)

    def time(self) -> float:
        return monotonic()

    # -- scheduling ----------------------------------------------------------------

    def call_soon(self, callback: Callable[..., object], *args: Any) -> Handle:
        handle = Handle(callback, args)
        self._ready.append(handle)
        return handle

    def call_soon_threadsafe(self, callback: Callable[..., object], *args: Any) -> Handle:
        """`call_soon` from another thread: the loop is woken if it sleeps."""
        handle = Handle(callback, args)
        self._from_threads.append(handle)  # before the wake-up, which then cannot miss it
        self._wake()
        return handle

    def call_at(self, when: float, callback: Callable[..., object], *args: Any) -> Timer:
        timer = Timer(when, callback, args)
        heappush(self._timers, timer)
        return timer

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> Timer:
        return self.call_at(monotonic() + delay, callback, *args)

    # -- descriptors and signals ---------------------------------------------------

    def add_reader(self, fd: int, callback: Callable[..., object], *args: Any) -> None:
        """Call `callback(*args)` each turn `fd` is readable (or at its end, or on an error)."""
        if (old := self._readers.get(fd)) is not None:
            old.cancel()
        else:
            self._poll.register(fd, POLLIN)
        self._readers[fd] = Handle(callback, args)

    def remove_reader(self, fd: int) -> bool:
        """Stop watching `fd`; a callback of this turn that has not run yet never will."""
        handle = self._readers.pop(fd, None)
        if handle is None:
            return False
        handle.cancel()
        self._poll.unregister(fd)
        return True

    def add_signal_handler(self, signum: int, callback: Callable[..., object],
                           *args: Any) -> None:
        """Run `callback(*args)` on the loop, between callbacks, when `signum` arrives."""
        self._signals[signum] = Handle(callback, args)
        _signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        _signal.signal(signum, _noted)

    def _wake(self) -> None:
        if self._closed:
            return  # a thread's last word after the end: no one is left to hear it
        try:
            os.write(self._wake_w, b"\0")
        except BlockingIOError:
            pass  # full: it will wake anyway

    def _woken(self) -> None:
        """Drain the self-pipe (each signal number in it schedules its handler), then take
        what other threads scheduled, in order."""
        while True:
            try:
                data = os.read(self._wake_r, 4096)
            except BlockingIOError:
                break
            for signum in data:
                if (handle := self._signals.get(signum)) is not None:
                    self._ready.append(Handle(handle.run, ()))
            if not data:
                break
        while self._from_threads:
            self._ready.append(self._from_threads.pop(0))

    # -- running -------------------------------------------------------------------

    def stop(self) -> None:
        """End `run` once the callbacks already scheduled for this turn have run."""
        self._stopping = True

    def run(self) -> None:
        """Turn until `stop()`: wait for a descriptor or the next timer, then run what is due."""
        self._stopping = False
        timers, readers = self._timers, self._readers
        while not self._stopping:
            if self._ready:
                timeout: int | None = 0
            elif timers:  # in whole milliseconds, rounded up: never woken just before it
                timeout = max(0, ceil((timers[0].when() - monotonic()) * 1000))
            else:
                timeout = None
            for fd, events in self._poll.poll(timeout):
                if fd == self._wake_r:
                    self._woken()
                elif events & POLLNVAL:  # closed while watched: it is no longer there to watch
                    self.remove_reader(fd)
                elif (handle := readers.get(fd)) is not None:
                    self._ready.append(handle)
            now = monotonic()
            while timers and (timers[0].cancelled or timers[0].when() <= now):
                timer = heappop(timers)
                if not timer.cancelled:
                    self._ready.append(timer)
            ready, self._ready = self._ready, []  # what these schedule runs in the next turn
            for handle in ready:
                handle.run()

    def close(self) -> None:
        """Give the signals back to Python's defaults' handling and free the descriptors."""
        for signum in self._signals:
            _signal.signal(signum, _signal.SIG_DFL if signum != _signal.SIGINT
                           else _signal.default_int_handler)
        if self._signals:
            _signal.set_wakeup_fd(-1)
        self._signals.clear()
        self._closed = True
        os.close(self._wake_r)
        os.close(self._wake_w)


def _noted(signum: int, frame: object) -> None:
    """A signal's Python-level handler: the wakeup fd already carries it to the loop."""
