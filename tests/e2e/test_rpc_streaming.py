"""The rpc kernel's live output: what a host is promised about a cell's prints.

The guarantees any faster way of streaming must keep (see the README's rpc
kernel section): a line leaves the worker as it is printed, whatever the
cell does next; threads' prints stay whole; fd-level output keeps its place
among prints; a dying worker loses none of its lines. Every output here
stays under the default 1 MiB cap.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.rpc_host import PipeHost, stdout_of

#: Generous: only a kernel that never sends the line runs into it.
PATIENT = 60.0


@pytest.fixture
def kernel() -> Iterator[PipeHost]:
    host = PipeHost()
    assert host.receive()["event"] == "kernel.ready"
    yield host
    assert host.close() == 0


def printed(kernel: PipeHost, source: str) -> str:
    """The stdout of a cell that must succeed."""
    events = kernel.run(source)
    assert events[-1]["data"]["status"] == "ok", events[-1]
    return stdout_of(events)


def _first_stream(kernel: PipeHost) -> dict[str, object]:
    while True:
        message = kernel.receive(timeout=PATIENT)
        assert message.get("event") != "execute.done", message
        if message.get("event") == "stream":
            return message["data"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("block", [
    # C code that holds the GIL for ages (a catastrophic regex), which no
    # thread of the worker's could interrupt to flush anything.
    "import re\nre.match(r'(x+x+)+y', 'x' * 64)",
    "import time\ntime.sleep(3600)",
])
def test_a_print_reaches_the_host_while_the_cell_still_runs(kernel: PipeHost,
                                                            block: str) -> None:
    started = kernel.call("execute.cell", {"cell_id": "live",
                                           "source": f"print('before')\n{block}"})
    assert started["result"] == {"status": "started"}
    assert _first_stream(kernel) == {"cell_id": "live", "name": "stdout", "text": "before\n"}
    kernel.call("execute.interrupt", {})
    done = kernel.until_done()[-1]
    assert done["data"]["status"] == "error"
    assert kernel.run("print('next')")[0]["data"]["text"] == "next\n"


def test_prints_from_threads_are_never_cut_into_each_other(kernel: PipeHost) -> None:
    lines = printed(kernel,
                    "import threading\n"
                    "def work(n):\n"
                    "    for i in range(2000):\n"
                    "        print(str(n) * 40, str(n) * 40, sep='-', end='|\\n')\n"
                    "threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]\n"
                    "for t in threads: t.start()\n"
                    "for t in threads: t.join()\n").splitlines()
    assert len(lines) == 8000
    assert set(lines) == {f"{n * 40}-{n * 40}|" for n in "0123"}


ORDERED = (
    "import ctypes, os, subprocess, sys\n"
    "libc = ctypes.CDLL(None)\n"
    "for i in range(30):\n"
    "    print('print', i)\n"
    "    os.write(1, b'write %d\\n' % i)\n"
    "print('a')\n"
    "subprocess.run(['echo', 'subprocess'])\n"
    "print('b')\n"
    "os.system('echo system')\n"
    "print('c')\n"
    "libc.printf(b'printf\\n')\n"
    "libc.fflush(None)\n"
    "print('d')\n"
    "sys.stdout.buffer.write(b'buffer\\n')\n"
    "os.write(1, b'end\\n')\n"
)
ORDER = ("".join(f"print {i}\nwrite {i}\n" for i in range(30))
         + "a\nsubprocess\nb\nsystem\nc\nprintf\nd\nbuffer\nend\n")


def test_fd_level_output_keeps_its_place_among_prints(kernel: PipeHost) -> None:
    assert printed(kernel, ORDERED) == ORDER


def test_fd_level_output_keeps_its_place_among_a_threads_prints(kernel: PipeHost) -> None:
    source = "import threading\ndef work():\n" + "".join(
        f"    {line}\n" for line in ORDERED.splitlines())
    source += "t = threading.Thread(target=work)\nt.start()\nt.join()"
    assert printed(kernel, source) == ORDER


@pytest.mark.parametrize("end", [
    "import signal\nsignal.raise_signal(signal.SIGKILL)",  # as the OOM killer would
    "import faulthandler\nfaulthandler._sigsegv()",
    "import os\nos._exit(3)",
])
def test_nothing_printed_before_the_worker_dies_is_lost(kernel: PipeHost, end: str) -> None:
    events = kernel.run(f"for i in range(5000):\n    print(i)\n{end}")
    assert events[-1]["data"]["status"] == "error"
    assert stdout_of(events) == "".join(f"{i}\n" for i in range(5000))


def test_what_a_killed_cell_printed_is_kept(kernel: PipeHost) -> None:
    started = kernel.call("execute.cell", {"cell_id": "stubborn", "source": (
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "for i in range(1000):\n    print(i)\nwhile True:\n    pass")})
    assert started["result"] == {"status": "started"}
    first = _first_stream(kernel)["text"]
    kernel.call("execute.interrupt", {})
    events = kernel.until_done()
    assert events[-1]["data"]["status"] == "error"
    assert str(first) + stdout_of(events) == "".join(f"{i}\n" for i in range(1000))


def test_a_flood_is_whole_and_in_order_with_stderr(kernel: PipeHost) -> None:
    events = kernel.run(
        "import sys\nfor i in range(150):\n"
        "    print('x' * 5000, i)\n"
        "    if i % 50 == 0:\n        print('err', i, file=sys.stderr)\n",
    )
    runs = [(e["data"]["name"], e["data"]["text"]) for e in events if e["event"] == "stream"]
    text = "".join(t for _, t in runs)
    expected = "".join(f"{'x' * 5000} {i}\n" + (f"err {i}\n" if i % 50 == 0 else "")
                       for i in range(150))
    assert text == expected


@pytest.fixture
def roomy_kernel() -> Iterator[PipeHost]:
    """A kernel whose cells may print 64 MB: floods that cross many laps of the ring."""
    host = PipeHost(env={"PYRELUNE_MAX_OUTPUT": str(64 << 20)})
    assert host.receive()["event"] == "kernel.ready"
    yield host
    assert host.close() == 0


def test_lines_longer_than_the_ring_and_nul_bytes_arrive_whole(roomy_kernel: PipeHost) -> None:
    out = printed(roomy_kernel, "print('a\\0b', '\\0')\n"
                                "for n in range(3):\n    print(str(n) * 2_500_000)\n"
                                "print('end')\n")
    assert out == "a\0b \0\n" + "".join(str(n) * 2_500_000 + "\n" for n in range(3)) + "end\n"


def test_threads_lines_stay_whole_across_many_laps(roomy_kernel: PipeHost) -> None:
    lines = printed(roomy_kernel, "import threading\n"
                                  "def work(n):\n"
                                  "    for i in range(5000):\n"
                                  "        print(str(n) * (i % 600), i, sep=':')\n"
                                  "threads = [threading.Thread(target=work, args=(n,))"
                                  " for n in range(4)]\n"
                                  "for t in threads: t.start()\n"
                                  "for t in threads: t.join()\n").splitlines()
    assert sorted(lines) == sorted(f"{str(n) * (i % 600)}:{i}" for n in range(4)
                                   for i in range(5000))


def test_a_signal_handler_printing_in_a_flood_loses_no_line(roomy_kernel: PipeHost) -> None:
    lines = printed(roomy_kernel, "import signal\n"
                                  "signal.signal(signal.SIGALRM, lambda *_: print('tick'))\n"
                                  "signal.setitimer(signal.ITIMER_REAL, 0.0005, 0.0005)\n"
                                  "for i in range(200_000):\n"
                                  "    print('x' * 90, i)\n"
                                  "signal.setitimer(signal.ITIMER_REAL, 0)\n").splitlines()
    lines_printed = [line for line in lines if line != "tick"]
    assert lines_printed == [f"{'x' * 90} {i}" for i in range(200_000)]
    assert len(lines) > len(lines_printed)
