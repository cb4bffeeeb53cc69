"""An interrupt sent right behind its cell's request stops that cell; a late one stops nothing.

A host that writes a request and sends SIGINT at once (0-1 ms later) found
the kernel idle in 3 of 40 tries: the interrupt was ignored and the host
killed the whole kernel 2 s later. A SIGINT that finds a request on its way
(being handled, or in the pipe) is now kept for that request's cell; one
that finds nothing on its way is a late click for the cell that ended.
"""

from __future__ import annotations

import signal
import time

from lines_host import KILL_AFTER_INTERRUPT, Host


def test_an_interrupt_right_behind_its_request_stops_that_cell(lines_kernel: Host) -> None:
    assert lines_kernel.execute("kept = 'yes'")["error"] is None
    for _ in range(20):
        request_id = lines_kernel.send("execute", "import time\ntime.sleep(30)")
        lines_kernel.proc.send_signal(signal.SIGINT)
        answer = lines_kernel.read(request_id, timeout=KILL_AFTER_INTERRUPT)
        assert answer["error"] is not None and "KeyboardInterrupt" in answer["error"], answer
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
