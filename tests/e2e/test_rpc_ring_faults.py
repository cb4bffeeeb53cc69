"""The rpc worker's stdout ring against cells that reach into it, or print from signal handlers.

The ring (`pyrelune.wire.ring`) is shared memory inside the worker, so a cell
can write to it: the session must check what it reads, start a fresh ring
when it finds one damaged, and never send text under the wrong cell. A
signal handler that prints while its thread is in the middle of a print must
get neither a spurious error nor its line inside another one.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.rpc_host import PipeHost, stdout_of

#: Where a cell finds the ring: sys.stdout's binary layer writes into it.
WRITER = "import sys; _w = sys.stdout.buffer._put.__self__\n"
#: The header's words (see `wire.ring`): a cell's write to any of them.
WORDS = {"written": 0, "read": 1, "lap": 3}


@pytest.fixture
def host() -> Iterator[PipeHost]:
    kernel = PipeHost(env={"PYRELUNE_MAX_OUTPUT": str(256 << 20)})
    kernel.wait_event("kernel.ready")
    yield kernel
    kernel.close()


def ok_stdout(host: PipeHost, source: str, cell_id: str = "c") -> str:
    events = host.run(source, cell_id)
    assert events[-1]["data"]["status"] == "ok", events[-1]
    return stdout_of(events)


@pytest.mark.parametrize("word", sorted(WORDS))
@pytest.mark.parametrize("value", [0, 5, 1 << 40, (1 << 64) - 1])
def test_a_write_to_the_ring_header_sends_nothing_under_the_wrong_cell(
        host: PipeHost, word: str, value: int) -> None:
    assert ok_stdout(host, "print('an earlier cell, [0, 11, 1, 0]')", "a") == (
        "an earlier cell, [0, 11, 1, 0]\n")
    source = f"{WRITER}print('before')\n_w.words[{WORDS[word]}] = {value}\nprint('damaged')"
    out = ok_stdout(host, source, "b")
    assert out == "before\ndamaged\n", out  # its own output kept, nothing of another cell's
    for n in range(3):
        assert ok_stdout(host, f"print('later {n}')", f"l{n}") == f"later {n}\n"
    host.call("kernel.reset")
    assert ok_stdout(host, "print('after reset')", "r") == "after reset\n"


def test_a_damaged_lap_header_loses_no_later_output_across_laps(host: PipeHost) -> None:
    """Past a lap's end (1 MiB) the worker starts the next one: later cells still see it all."""
    host.run(f"{WRITER}_w.words[3] = 12345\nprint('damaged')", "b")
    lines = ok_stdout(host, "for i in range(30000): print(f'{i:08}' * 8)", "big").splitlines()
    assert lines == [f"{i:08}" * 8 for i in range(30000)]
    assert ok_stdout(host, "print('last')", "z") == "last\n"


def test_a_reset_gives_a_fresh_ring_even_when_nothing_looked_damaged(host: PipeHost) -> None:
    """A cell that moved the worker's own position: reset starts the ring afresh."""
    ok_stdout(host, "print('before')", "a")
    host.run(f"{WRITER}_w.ring.data.seek(700000)\n", "b")
    host.call("kernel.reset")
    assert ok_stdout(host, "print('after reset')", "r") == "after reset\n"
    assert ok_stdout(host, "print('and after')", "s") == "and after\n"


HANDLER_CELL = """\
import signal
def handler(signum, frame):
    print("HANDLER")
signal.signal(signal.SIGALRM, handler)
signal.setitimer(signal.ITIMER_REAL, 0.0003, 0.0003)
try:
    for i in range({count}):
        print(str(i).rjust({width}, "L"))
finally:
    signal.setitimer(signal.ITIMER_REAL, 0)
"""


@pytest.mark.parametrize("width", [180_000, 1_500_000])
def test_a_signal_handler_that_prints_neither_fails_nor_splits_a_line(
        host: PipeHost, width: int) -> None:
    """Long lines cross the lap's end (1 MiB) while a timer's handler prints."""
    count = 120 if width < 1 << 20 else 12
    out = ok_stdout(host, HANDLER_CELL.format(count=count, width=width))
    lines = [line for line in out.splitlines() if line != "HANDLER"]
    assert lines == [str(i).rjust(width, "L") for i in range(count)]


def test_print_follows_a_reconfigured_encoding(host: PipeHost) -> None:
    events = host.run("import sys\nsys.stdout.reconfigure(encoding='latin-1')\nprint('\\u20ac')")
    done = events[-1]["data"]
    assert done["status"] == "error" and done["ename"] == "UnicodeEncodeError", done


def test_print_follows_reconfigured_errors(host: PipeHost) -> None:
    source = ("import sys\nsys.stdout.reconfigure(encoding='ascii', errors='replace')\n"
              "print('caf\\u00e9', 'x', sep='-')\nsys.stdout.reconfigure(encoding='utf-8')\n"
              "print('\\u20ac')")
    assert ok_stdout(host, source) == "caf?-x\n\u20ac\n"
