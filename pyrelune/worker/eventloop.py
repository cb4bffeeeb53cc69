"""One asyncio event loop for every cell of a worker, as a notebook kernel has.

A cell with top-level `await` runs on it until it is done; the tasks it
started (or that a plain cell scheduled through `asyncio.get_event_loop()`)
stay on it and go on whenever a later cell awaits. Between cells the loop
is not running, so `asyncio.run()` in a plain cell works as in a script.
Imported by the first cell that awaits (by an rpc worker as it starts: its
supervisor runs asyncio).
"""

from __future__ import annotations

import asyncio
import sys
import warnings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import Any

_loop: asyncio.AbstractEventLoop | None = None


def forget_inherited() -> None:
    """In a worker forked from a supervisor that runs asyncio (rpc): none of its loop.

    The copy shares the supervisor's epoll and wake-up descriptors, and was
    the thread's current loop (and the async generators' hooks) at the fork.
    """
    asyncio.set_event_loop_policy(None)
    sys.set_asyncgen_hooks(firstiter=None, finalizer=None)


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a cell's coroutine on the cells' loop; its value.

    A cell stopped by an interrupt while it awaited is cancelled, and given
    the chance to clean up, rather than left to resume in the next cell
    that awaits.
    """
    loop = make_current()
    task = loop.create_task(coroutine)
    try:
        return loop.run_until_complete(task)
    except BaseException:
        if not task.done():
            task.cancel()
            try:
                loop.run_until_complete(task)
            except (asyncio.CancelledError, Exception):
                pass  # the interrupt is what the cell reports
        raise


def make_current() -> asyncio.AbstractEventLoop:
    """The cells' loop, made the thread's current one again (`asyncio.run()` unsets it)."""
    global _loop
    if _loop is None or _loop.is_closed():
        _loop = _adopted() or asyncio.new_event_loop()
    asyncio.set_event_loop(_loop)
    return _loop


def wakeup_fds() -> list[int]:
    """The descriptors of the cells' loop's own wake-up socket pair, which no cell opened."""
    pair = (getattr(_loop, "_ssock", None), getattr(_loop, "_csock", None))
    return [end.fileno() for end in pair if end is not None]


def _adopted() -> asyncio.AbstractEventLoop | None:
    """The loop a plain cell's `asyncio.get_event_loop()` made before any cell awaited."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "no current event loop" (3.12+)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return None
    return None if loop.is_closed() or loop.is_running() else loop


def close() -> None:
    """End the loop as a script's `asyncio.run()` does, at the end of a oneshot cell.

    Its tasks are cancelled and awaited, its async generators finalized;
    the cell's deadline still holds over a task that will not end.
    """
    loop = _loop
    if loop is None or loop.is_closed():
        return
    try:
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


def discard() -> None:
    """A kernel's reset: the cells' loop ends; the next cell that awaits gets a new one.

    Its tasks are cancelled and given one turn of the loop to see it. No
    interrupt can reach a reset, so nothing may hold it up: a task that goes
    on awaiting after that is dropped with the loop.
    """
    loop = _loop
    if loop is None or loop.is_closed():
        return
    try:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        loop.close()


def abandon() -> None:
    """A woken snapshot (see `snapshot`): the cells' loop lost its descriptors at the fork,
    so it is dropped untouched, with its tasks; the next cell that awaits gets a new one."""
    global _loop
    _loop = None
    forget_inherited()
