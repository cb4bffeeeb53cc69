"""An interrupt sent right behind its cell's request stops that cell; a late one stops nothing.

A host that writes a request and sends SIGINT at once (0-1 ms later) found
the kernel idle in 3 of 40 tries: the interrupt was ignored and the host
killed the whole kernel 2 s later. A SIGINT that finds a request on its way
(being handled, or in the pipe) is now kept for that request's cell; one
that finds nothing on its way is a late click for the cell that ended.

A second click on stop came just after the interrupted cell's answer, with
the next cell sent at once, and interrupted that next cell (10-14 of 20
tries on a busy machine): which of the two the kernel saw first depends on
when it was scheduled. A SIGINT within `LATE_CLICK` seconds of the end of an
interrupted cell is now that cell's, whichever came first.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from support.lines_host import KILL_AFTER_INTERRUPT, Host

from pyrelune.modes.lines import LATE_CLICK

LOOP = "while True: pass"


def test_an_interrupt_right_behind_its_request_stops_that_cell(lines_kernel: Host) -> None:
    assert lines_kernel.execute("kept = 'yes'")["error"] is None
    for _ in range(20):
        request_id = lines_kernel.send("execute", "import time\ntime.sleep(30)")
        lines_kernel.proc.send_signal(signal.SIGINT)
        answer = lines_kernel.read(request_id, timeout=KILL_AFTER_INTERRUPT)
        assert answer["error"] is not None and "KeyboardInterrupt" in answer["error"], answer
        time.sleep(LATE_CLICK)  # a person's pace: the next click is not a second one
    assert lines_kernel.execute("print(kept)")["stdout"] == "yes\n"  # never killed


def _interrupted(kernel: Host, marker: Path) -> None:
    """Run a loop and interrupt it once it has started, as a click on stop."""
    marker.unlink(missing_ok=True)
    request_id = kernel.send("execute", f"open({str(marker)!r}, 'w').close()\n{LOOP}")
    answer = kernel.interrupt_when(marker, request_id)
    assert "KeyboardInterrupt" in (answer["error"] or ""), answer


@pytest.mark.parametrize("signal_first", [True, False], ids=["sigint-first", "request-first"])
def test_a_second_click_after_the_answer_spares_the_next_cell(
    lines_kernel: Host, tmp_path: Path, signal_first: bool
) -> None:
    assert lines_kernel.execute("kept = 'yes'")["error"] is None
    spared = "import time\ntime.sleep(0.05)\nprint('spared', kept)"
    for _ in range(10):
        _interrupted(lines_kernel, tmp_path / "started")
        if signal_first:
            lines_kernel.proc.send_signal(signal.SIGINT)
            request_id = lines_kernel.send("execute", spared)
        else:
            request_id = lines_kernel.send("execute", spared)
            lines_kernel.proc.send_signal(signal.SIGINT)
        answer = lines_kernel.read(request_id)
        assert answer["error"] is None and answer["stdout"] == "spared yes\n", answer
        time.sleep(LATE_CLICK)  # before the next first click


def test_a_click_after_the_window_stops_the_next_cell(lines_kernel: Host, tmp_path: Path) -> None:
    """Once `LATE_CLICK` has passed, a SIGINT is for the cell that runs, even one sent at once."""
    assert lines_kernel.execute("kept = 'yes'")["error"] is None
    for _ in range(3):
        _interrupted(lines_kernel, tmp_path / "started")
        marker = tmp_path / "next"
        marker.unlink(missing_ok=True)
        request_id = lines_kernel.send("execute", f"open({str(marker)!r}, 'w').close()\n{LOOP}")
        time.sleep(LATE_CLICK)
        answer = lines_kernel.interrupt_when(marker, request_id)
        assert "KeyboardInterrupt" in (answer["error"] or ""), answer
        time.sleep(LATE_CLICK)  # before the next first click
    assert lines_kernel.execute("print(kept)")["stdout"] == "yes\n"  # never killed


def test_a_late_interrupt_with_nothing_on_its_way_spares_the_next_cell(lines_kernel: Host) -> None:
    for _ in range(5):
        assert lines_kernel.execute("x = 1")["error"] is None
        lines_kernel.proc.send_signal(signal.SIGINT)  # the second click, after the answer
        time.sleep(0.5)  # a person: a click on stop, then on run
        answer = lines_kernel.execute("import time\ntime.sleep(0.1)\nprint('spared')")
        assert answer["error"] is None and answer["stdout"] == "spared\n", answer


def test_lines_shows_a_display_whose_other_types_are_over_the_cap(lines_kernel: Host) -> None:
    answer = lines_kernel.execute(
        'display({"text/html": "h" * 9_000_000, "text/plain": "small"}, raw=True)')
    assert answer["stdout"] == "small\n", answer["stdout"][:200]
