"""IOPub bounded in bytes: a subscriber that stops reading while cells display 1 MiB images
pauses the cell instead of growing the kernel, and loses nothing once it reads again.
Through jupyter_client and the real process, on loopback; every wait bounded."""

from __future__ import annotations

import threading
from pathlib import Path
from queue import Empty

import zmq
from support import jupyter_host
from support.jupyter_host import TIMEOUT, collect

MIB = 1 << 20
#: Images the cell displays: far more than IOPub's budget (`zmqsockets.IOPUB_BUDGET`).
IMAGES = 160
#: How long the front end that reads waits for one more display before taking the cell
#: to be paused (it would come in milliseconds).
SILENCE = 3.0


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


def test_a_subscriber_that_stops_reading_pauses_the_cell_and_nothing_is_lost(
        tmp_path: Path) -> None:
    with jupyter_host.started(tmp_path) as (manager, client):
        pid = manager.provisioner.process.pid  # type: ignore[union-attr]
        context = zmq.Context()
        stalled = context.socket(zmq.SUB)
        stalled.rcvhwm = 1  # it holds next to nothing itself
        stalled.setsockopt(zmq.RCVBUF, 4096)
        stalled.subscribe(b"")
        stalled.connect(f"tcp://127.0.0.1:{manager.iopub_port}")
        reader = threading.Thread(target=read_all, args=(stalled,), daemon=True)
        try:
            assert stalled.poll(int(TIMEOUT * 1000))  # its welcome: subscribed; now it stops
            jupyter_host.drain_iopub(client)
            before = rss(pid)
            msg_id = client.execute(
                "from IPython.display import display\nimport base64\n"
                f"png = base64.b64encode(bytes({3 * MIB // 4})).decode()\n"
                f"for n in range({IMAGES}):\n"
                "    display({'image/png': png, 'text/plain': str(n)}, raw=True)\n")
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
