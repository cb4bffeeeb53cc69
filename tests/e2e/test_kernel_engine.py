"""The engine's Kernel driven as the protocol loops drive it, with a real worker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pyrelune.engine.events import Display, Done, InputRequest
from pyrelune.engine.kernel import LOST, Kernel


@pytest.fixture
def kernel() -> Iterator[Kernel]:
    k = Kernel(interactive=True)
    yield k
    k.close()


def test_a_reply_that_comes_after_the_interrupt_is_ignored(kernel: Kernel) -> None:
    kernel.execute("x = 41", "<cell 1>")
    assert list(kernel.events())[-1].ok
    kernel.execute("input('name? ')", "<cell 2>")
    events = kernel.events()
    assert isinstance(next(events), InputRequest)
    kernel.interrupt()
    done = next(e for e in events if isinstance(e, Done))
    assert done.error is not None and done.error.ename == "KeyboardInterrupt"
    kernel.reply_input("too late")  # both reach the worker after its input() has ended
    kernel.cancel_input()
    kernel.execute("x + 1", "<cell 3>")
    events_3 = list(kernel.events())
    assert events_3[-1].ok, events_3[-1]
    result = [e for e in events_3 if isinstance(e, Display)]
    assert result[0].data["text/plain"] == "42"  # the same worker, its namespace kept
    assert all(LOST not in (e.error.evalue if e.error else "") for e in events_3
               if isinstance(e, Done))
