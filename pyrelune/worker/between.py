"""Between an interactive kernel's cells: the cells' asyncio loop runs, late output is seen.

As in a notebook, a task one cell started (`asyncio.get_event_loop().create_task(poll())`)
goes on while the kernel waits for the next cell, and so does a thread. The loop runs only
here and in a cell that awaits: it is stopped before a cell's synchronous code runs, so
`asyncio.run()` works in a cell. What tasks and threads print between cells goes into the
ring, at which the session looks on a timer only while a cell runs (see
`supervisor.evented`); so while anything of the cells' is left that may print, the worker
rings the ring's doorbell when it holds output unread, looking every `_LOOK` seconds at
first and less often while nothing comes. Meanwhile no thread may wait for the session's
answers (`Channel.lend`): a display goes out unanswered, `input()` raises EOFError.
"""

from __future__ import annotations

import _thread
import sys
from select import select

from pyrelune.wire.ring import ring

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio

    from pyrelune.wire.commands import PipeCommand
    from pyrelune.wire.ring import RingWriter
    from pyrelune.worker.channel import Channel

#: How soon output printed between cells is first looked for, and the longest between looks.
_LOOK = 0.02
_LOOK_IDLE = 0.1


def next_command(channel: Channel, writer: RingWriter | None) -> PipeCommand:
    """The session's next command; until it comes, the cells' tasks and threads run."""
    look = _LOOK
    channel.lend(None)
    try:
        while not channel.pending():
            loop = _cells_loop()
            alive = loop is not None or _threads_left()
            # Looked at after the threads were: a thread's print before it ended is in there.
            if writer is not None and writer.unread():
                ring(writer.ring)
                look = _LOOK
            if not alive:
                break  # nothing is left that can print before the next command: wait for it
            if loop is not None:
                _run_a_while(loop, channel.control_fd, look)
            if select([channel.control_fd], [], [], 0 if loop is not None else look)[0]:
                break
            look = min(look * 2, _LOOK_IDLE)
    finally:
        channel.lend(_thread.get_ident())
    return channel.receive()


def before_cell() -> None:
    """The cells' loop is the thread's current one (again: a cell's `asyncio.run()` unsets it).

    Once asyncio is imported: a cell that never uses it costs nothing.
    """
    if "asyncio" in sys.modules:
        from pyrelune.worker import eventloop

        eventloop.make_current()


def _cells_loop() -> asyncio.AbstractEventLoop | None:
    """The cells' loop when it has tasks or callbacks waiting; None if it has none."""
    if "asyncio" not in sys.modules:
        return None
    from pyrelune.worker import eventloop

    loop = eventloop.make_current()
    return loop if _has_work(loop) else None


def _has_work(loop: asyncio.AbstractEventLoop) -> bool:
    """Tasks not done, callbacks due or timers set (any loop of another kind: assumed so)."""
    import asyncio

    ready, timers = getattr(loop, "_ready", None), getattr(loop, "_scheduled", None)
    if ready is None or timers is None:
        return True
    return bool(ready) or any(not timer.cancelled() for timer in timers) or bool(
        asyncio.all_tasks(loop))


def watch_for_asyncio() -> None:
    """Once a cell imports asyncio, the cells' loop is current, for `get_event_loop()`."""
    if "asyncio" not in sys.modules:
        from pyrelune.worker import importhooks

        importhooks.after_import("asyncio", _asyncio_imported)


def _asyncio_imported(module: object) -> None:
    # Not when the runtime's own loop module imports it (a cell that awaits): it is
    # half made then, and makes its loop current itself.
    if "pyrelune.worker.eventloop" not in sys.modules:
        before_cell()


def _threads_left() -> bool:
    threading = sys.modules.get("threading")
    return threading is not None and threading.active_count() > 1


def _run_a_while(loop: asyncio.AbstractEventLoop, fd: int, seconds: float) -> None:
    """`_run_until_readable`; a task's SystemExit or KeyboardInterrupt, which asyncio lets
    out of the loop, is reported (the traceback on stderr) instead of ending the worker."""
    try:
        _run_until_readable(loop, fd, seconds)
    except (SystemExit, KeyboardInterrupt):
        import traceback

        sys.stderr.write("a task raised this between cells; the kernel goes on:\n")
        traceback.print_exc()
        sys.stderr.flush()


def _run_until_readable(loop: asyncio.AbstractEventLoop, fd: int, seconds: float) -> None:
    """Run `loop` until `fd` is readable, or for `seconds` at most.

    `loop.stop` ends the run, not a future's completion (`run_until_complete`):
    a task's SystemExit can leave the callback that completion scheduled behind
    in the loop (when the task's wake-up and the timer came due in one turn),
    and it stopped the next run before its own future was done, a RuntimeError
    that ended the worker. A `stop` left behind only makes the next run short.
    """
    loop.add_reader(fd, loop.stop)
    timer = loop.call_later(seconds, loop.stop)
    try:
        loop.run_forever()
    finally:
        timer.cancel()
        loop.remove_reader(fd)
