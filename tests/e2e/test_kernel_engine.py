"""The supervisor's Kernel driven as the protocol loops drive it, with a real worker."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable, Iterator

import pytest
from support.stall import stall_first_worker

from pyrelune.shaping import LINES_MAX_OUTPUT
from pyrelune.supervisor.kernel import LOST, Kernel
from pyrelune.wire.commands import CancelInput, Execute, InputReply
from pyrelune.wire.events import Display, Done, InputRequest
from pyrelune.wire.profile import HostProfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pyrelune.wire.events import Event


def ended(events: Iterable[Event]) -> Done:
    """The last of a cell's events, which the kernel promises is its Done."""
    *_, last = events
    assert isinstance(last, Done), last
    return last


@pytest.fixture
def kernel() -> Iterator[Kernel]:
    k = Kernel(HostProfile(LINES_MAX_OUTPUT, interactive=True))
    yield k
    k.close()


def test_a_reply_that_comes_after_the_interrupt_is_ignored(kernel: Kernel) -> None:
    kernel.apply(Execute("x = 41", "<cell 1>"))
    assert ended(kernel.events()).ok
    kernel.apply(Execute("input('name? ')", "<cell 2>"))
    events = kernel.events()
    assert isinstance(next(events), InputRequest)
    kernel.interrupt()
    done = next(e for e in events if isinstance(e, Done))
    assert done.error is not None and done.error.ename == "KeyboardInterrupt"
    kernel.apply(InputReply("too late"))  # both reach the worker after its input() has ended
    kernel.apply(CancelInput())
    kernel.apply(Execute("x + 1", "<cell 3>"))
    events_3 = list(kernel.events())
    assert ended(events_3).ok, events_3[-1]
    result = [e for e in events_3 if isinstance(e, Display)]
    assert result[0].data["text/plain"] == "42"  # the same worker, its namespace kept
    assert all(LOST not in (e.error.evalue if e.error else "") for e in events_3
               if isinstance(e, Done))


@pytest.mark.parametrize("interactive", [False, True])
def test_an_interrupt_right_after_the_cell_is_sent_stops_that_cell(interactive: bool) -> None:
    """The worker may get the SIGINT before it has read the cell: it is kept for the cell."""
    kernel = Kernel(HostProfile(LINES_MAX_OUTPUT, interactive=interactive))
    try:
        kernel.apply(Execute("kept = 1", "<cell 1>"))
        assert ended(kernel.events()).ok
        for n in range(2, 22):
            kernel.apply(Execute("while True: pass", f"<cell {n}>"))
            kernel.interrupt()
            done = ended(kernel.events())
            assert done.error is not None
            assert done.error.evalue == "Execution interrupted", done.error.evalue  # not killed
        kernel.apply(Execute("kept", "<cell 22>"))
        assert ended(kernel.events()).ok
    finally:
        kernel.close()


@pytest.mark.parametrize("interactive", [False, True])
@pytest.mark.parametrize("killer", ["session", "outside"])
def test_an_interrupted_cell_whose_worker_never_began_it_is_not_run_again(
        interactive: bool, killer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stalled worker has not read the cell when it is interrupted. The session kills it
    once the grace runs out, or something else does first: either way the cell is over.
    It is not sent to a fresh worker, as a cell that a worker died before is (which would
    run, here print, what the host stopped)."""
    stall_first_worker(monkeypatch)
    kernel = Kernel(HostProfile(LINES_MAX_OUTPUT, interactive=interactive))
    try:
        kernel.apply(Execute("print('ran')", "<cell 1>"))
        kernel.interrupt()
        if killer == "outside":
            os.kill(kernel.worker.pid, signal.SIGKILL)
        events = list(kernel.events())
        done = ended(events)
        assert done.error is not None and LOST in done.error.evalue, done
        if killer == "session":
            assert done.error.ename == "KeyboardInterrupt" and "killed" in done.error.evalue
        assert not [e for e in events if "ran" in str(e)], events
        kernel.apply(Execute("print('next')", "<cell 2>"))  # a fresh worker, which starts
        events = list(kernel.events())
        assert ended(events).ok, events
    finally:
        kernel.close()


def test_a_late_second_interrupt_spares_the_next_cell(kernel: Kernel) -> None:
    """A second SIGINT for a cell that has ended reaches the worker as the next one starts."""
    for n in range(1, 21, 2):
        kernel.apply(Execute("while True: pass", f"<cell {n}>"))
        kernel.interrupt()
        assert ended(kernel.events()).error is not None
        worker = kernel.worker
        assert worker.interrupts is not None  # a kernel's worker has the board
        worker.interrupts.aim(kernel.link.session.cell)  # the second click, aimed at that cell
        kernel.apply(Execute("import time\ntime.sleep(0.05)\nprint('spared')", f"<cell {n + 1}>"))
        worker.signal_group(signal.SIGINT)  # delivered late, while the next cell runs
        events = list(kernel.events())
        assert ended(events).ok, events[-1]
