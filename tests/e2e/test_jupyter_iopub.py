"""IOPub bounded in bytes: a subscriber that stops reading while cells display 1 MiB images
pauses the cell instead of growing the kernel, and loses nothing once it reads again; one
that stays stalled past the stall limit holds no cell for the front ends that read (they
get the outputs, or a note of those not sent), and once it goes everything flows again.
Through jupyter_client and the real process, on loopback; every wait bounded."""

from __future__ import annotations

import re
import threading
from contextlib import contextmanager
from pathlib import Path
from queue import Empty

import zmq
from support import jupyter_host
from support.jupyter_host import TIMEOUT, Run, collect, execute

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

MIB = 1 << 20
#: Images the cell displays: far more than IOPub's budget (`zmqsockets.IOPUB_BUDGET`).
IMAGES = 160
#: How long the front end that reads waits for one more display before taking the cell
#: to be paused (it would come in milliseconds).
SILENCE = 3.0
#: The stall limit of the test whose subscriber stays stalled: long enough for a front end
#: that reads on a busy machine (one taken for stalled would get the note: still passes).
STALL = "3"
#: A cell that displays `IMAGES` images of 1 MiB (3/4 MiB, base64-encoded).
DISPLAYS = ("from IPython.display import display\nimport base64\n"
            f"png = base64.b64encode(bytes({3 * MIB // 4})).decode()\n"
            f"for n in range({IMAGES}):\n"
            "    display({'image/png': png, 'text/plain': str(n)}, raw=True)\n")
#: How the kernel's note counts the outputs it did not send.
UNSENT = re.compile(r"pyrelune: (\d+) outputs? (?:was|were) not sent \(.+\): a front end "
                    r"connected to IOPub stopped reading")


def read_all(socket: zmq.Socket[bytes]) -> None:
    """Read `socket` until its context ends."""
    try:
        while True:
            socket.recv_multipart()
    except zmq.ContextTerminated:
        socket.close(linger=0)


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def subscriber(context: zmq.Context[zmq.Socket[bytes]], port: int) -> zmq.Socket[bytes]:
    """A raw IOPub subscriber, subscribed (welcomed), that then reads nothing."""
    stalled = context.socket(zmq.SUB)
    stalled.rcvhwm = 1  # it holds next to nothing itself
    stalled.setsockopt(zmq.RCVBUF, 4096)
    stalled.subscribe(b"")
    stalled.connect(f"tcp://127.0.0.1:{port}")
    assert stalled.poll(int(TIMEOUT * 1000))  # its welcome: subscribed; now it stops
    return stalled


@contextmanager
def ended_context() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    """A ZeroMQ context ended on the way out, with whatever sockets are left in it."""
    made: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    try:
        yield made
    finally:
        made.destroy(linger=0)


def test_a_subscriber_that_stops_reading_pauses_the_cell_and_nothing_is_lost(
        tmp_path: Path) -> None:
    # No stall limit: the cell waits for the subscriber for as long as it takes.
    with jupyter_host.started(tmp_path, env={"PYRELUNE_IOPUB_STALL": "0"}) as (manager,
                                                                               client):
        pid = manager.provisioner.process.pid  # type: ignore[union-attr]
        context = zmq.Context()
        stalled = subscriber(context, manager.iopub_port)
        reader = threading.Thread(target=read_all, args=(stalled,), daemon=True)
        try:
            jupyter_host.drain_iopub(client)
            before = rss(pid)
            msg_id = client.execute(DISPLAYS)
            shown = 0
            try:
                while shown < IMAGES:
                    message = client.get_iopub_msg(timeout=SILENCE)
                    if (message["parent_header"].get("msg_id") == msg_id
                            and message["msg_type"] == "display_data"):
                        shown += 1
            except Empty:
                pass
            paused = rss(pid)
            print(f"supervisor RSS: {before / MIB:.0f} MiB before, {paused / MIB:.0f} MiB after")
            assert shown < IMAGES  # the cell waits on its own output
            reader.start()  # it reads again
            run = collect(client, msg_id)
        finally:
            if not reader.is_alive():
                stalled.close(linger=0)
            context.term()  # a reader's socket closes as it ends
            reader.join(TIMEOUT)
    assert run.content["status"] == "ok"
    assert shown + len(run.of("display_data")) == IMAGES  # none lost for the reader
    grown = (paused - before) / MIB
    assert grown < IMAGES / 2, f"the supervisor grew {grown:.0f} MiB"


def unsent(run: Run) -> int:
    """How many of `run`'s outputs the kernel's notes say it did not send."""
    return sum(int(count) for count in UNSENT.findall(run.stdout("stderr")))


def test_a_stalled_subscriber_holds_no_cell_and_once_it_goes_everything_flows_again(
        tmp_path: Path) -> None:
    with (jupyter_host.started(tmp_path, env={"PYRELUNE_IOPUB_STALL": STALL}) as (manager,
                                                                                 client),
          ended_context() as zmq_context):
        pid = manager.provisioner.process.pid  # type: ignore[union-attr]
        stalled = subscriber(zmq_context, manager.iopub_port)
        jupyter_host.drain_iopub(client)
        before = rss(pid)
        for _ in range(2):  # the first finds it stalled; the second, already known to be
            run = execute(client, DISPLAYS)
            assert run.content["status"] == "ok"
            shown = len(run.of("display_data"))
            print(f"shown {shown}, said not sent {unsent(run)}")
            assert unsent(run) > 0  # 120 MiB, with IOPub's budget at 32 MiB
            assert shown + unsent(run) == IMAGES  # every one is there, or said
        grown = (rss(pid) - before) / MIB
        print(f"supervisor RSS: {before / MIB:.0f} MiB before, grew {grown:.0f} MiB")
        assert grown < IMAGES / 2, f"the supervisor grew {grown:.0f} MiB"
        stalled.close(linger=0)  # its pipe, and what it held, is let go of
        runs: list[Run] = []  # the kernel sees it go a moment later: a cell may still miss it
        while len(runs) < 10 and (not runs or unsent(runs[-1])):
            runs.append(execute(client, DISPLAYS))
        print(f"{len(runs)} cell(s) after it disconnected")
        run = runs[-1]
        assert len(run.of("display_data")) == IMAGES
        assert "IOPub" not in run.stdout("stderr")
