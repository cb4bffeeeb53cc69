"""The Jupyter kernel's sockets: what IOPub keeps for a subscriber that reads late."""

from __future__ import annotations

import zmq
from support.ports import free_ports

from pyrelune.transports.zmqsockets import ZmqSockets

WAIT_MS = 60_000  # generous: a noisy 2-core machine


def test_iopub_keeps_a_cells_burst_for_a_subscriber_that_reads_late() -> None:
    """4,000 messages of 8 KiB (32 MiB, more than the connection's buffers hold) sent while
    the front end reads nothing: ZeroMQ's default would drop all but about 1,000 unsaid."""
    ports = free_ports()
    sockets = ZmqSockets("tcp", "127.0.0.1", ports)
    context = zmq.Context()
    front_end = context.socket(zmq.SUB)
    front_end.linger = 0
    front_end.rcvhwm = 10
    front_end.setsockopt(zmq.RCVBUF, 4096)
    front_end.subscribe(b"")
    front_end.connect(f"tcp://127.0.0.1:{ports['iopub']}")
    try:
        while not front_end.poll(10):  # until the subscription has reached the kernel
            sockets.send("iopub", [b"probe"])
        while front_end.poll(100):
            front_end.recv_multipart()
        body = b"x" * 8192
        for number in range(4000):
            sockets.send("iopub", [str(number).encode(), body])
        received: list[int] = []
        while len(received) < 4000 and front_end.poll(WAIT_MS if not received else 5000):
            received.append(int(front_end.recv_multipart()[0]))
        assert received == list(range(4000))
    finally:
        front_end.close()
        context.term()
        sockets.close()
