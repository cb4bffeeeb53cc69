"""Back-pressure on WebSocket: a client that does not read cannot make the kernel grow.

The clients here speak WebSocket over a plain socket (the library's sans-I/O
client makes the frames) so that "not reading" means exactly that: nothing
is taken from the socket. The kernel's own memory is read from /proc.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from support.rpc_host import TIMEOUT, Listener, WebSocketHost, stdout_of
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.uri import parse_uri

TOKEN = "s3cret-token"
#: The bound the issue sets: the kernel's peak memory above its idle size.
BOUND = 64 << 20


def resident(pid: int, field: str) -> int:
    """VmRSS or VmHWM of `pid`, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for process {pid}")


class RawClient:
    """A WebSocket client that reads from its socket only inside `receive()`."""

    def __init__(self, url: str) -> None:
        self.protocol = ClientProtocol(parse_uri(url), max_size=None)
        address = urlsplit(url)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before it connects
        self.sock.settimeout(TIMEOUT)
        self.sock.connect((address.hostname, address.port))
        self.protocol.send_request(self.protocol.connect())
        self._out()
        self._messages: list[str] = []
        while self.protocol.state is State.CONNECTING:
            self._in()

    def _out(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                self.sock.sendall(data)

    def _in(self) -> None:
        data = self.sock.recv(1 << 16)
        if not data:
            self.protocol.receive_eof()
        else:
            self.protocol.receive_data(data)
        for event in self.protocol.events_received():
            if isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                self._messages.append(bytes(event.data).decode())
        self._out()
        assert data, "the kernel closed the connection"

    def send(self, message: Mapping[str, object]) -> None:
        self.protocol.send_text(json.dumps(message).encode())
        self._out()

    def receive(self) -> dict[str, object]:
        while not self._messages:
            self._in()
        message: dict[str, object] = json.loads(self._messages.pop(0))
        return message

    def close(self) -> None:
        self.sock.close()


class Flood(threading.Thread):
    """Sends `count` requests as fast as the kernel takes them; never reads an answer."""

    def __init__(self, client: RawClient, count: int, request_id: str) -> None:
        super().__init__(daemon=True)
        self.client, self.count, self.sent = client, count, 0
        self.error: OSError | None = None  # how the kernel cut it off
        self.frame = {"kind": "request", "id": request_id, "method": "kernel.info"}

    def run(self) -> None:
        try:
            while self.sent < self.count:
                self.client.send(self.frame)
                self.sent += 1
        except OSError as exc:
            self.error = exc


def connect(url: str, token: str | None, **options: object) -> WebSocketHost:
    host = WebSocketHost(url, **options)
    assert host.receive()["event"] == "kernel.ready"
    if token is not None:
        assert host.call("kernel.auth", {"token": token})["result"]["ok"] is True
    return host


def settle(listener: Listener, token: str | None) -> int:
    """The kernel's resident size once it has served one cell: its idle size."""
    host = connect(listener.url, token)
    assert stdout_of(host.run("print('warm')")) == "warm\n"
    host.close()
    return resident(listener.process.pid, "VmRSS")


def test_a_flooding_client_that_never_reads_is_held_back_then_dropped() -> None:
    """Without a token on loopback, the flood is served: every request has an answer."""
    env = {k: v for k, v in os.environ.items() if k != "PYRELUNE_TOKEN"}
    listener = Listener("--drain-timeout", "3", env=env)
    try:
        idle = settle(listener, None)
        flood = Flood(RawClient(listener.url), 100_000, "x" * 1000)  # 200 MB of answers
        flood.start()
        flood.join(TIMEOUT)  # its requests stop being read, then past --drain-timeout it is cut off
        assert not flood.is_alive()
        assert flood.error is not None, f"all {flood.count} requests were taken"
        assert flood.sent < flood.count
        assert resident(listener.process.pid, "VmHWM") - idle < BOUND
        host = connect(listener.url, None)  # the kernel is alive and serves the next one
        assert stdout_of(host.run("print(6 * 7)")) == "42\n"
        host.close()
        assert resident(listener.process.pid, "VmHWM") - idle < BOUND
    finally:
        listener.close()


def test_a_flooding_guest_that_never_reads_keeps_the_kernel_small() -> None:
    listener = Listener("--drain-timeout", "3", env={"PYRELUNE_TOKEN": TOKEN})
    try:
        idle = settle(listener, TOKEN)
        flood = Flood(RawClient(listener.url), 100_000, "x" * 1000)
        flood.start()
        flood.join(TIMEOUT)  # dropped past its budget, at once even if it never reads
        assert not flood.is_alive()
        assert resident(listener.process.pid, "VmHWM") - idle < BOUND
        host = connect(listener.url, TOKEN)
        assert stdout_of(host.run("print(6 * 7)")) == "42\n"
        host.close()
    finally:
        listener.close()


def test_a_client_that_stops_reading_a_huge_output_blocks_the_cell(tmp_path: Path) -> None:
    """A cell printing 1 GB: while its client does not read, it waits; cut off, it goes on."""
    progress = tmp_path / "progress"
    # No output cap to speak of: without back-pressure, all that is printed would be sent.
    # Held for 10 s before the cut-off: long enough to see the cell stand still.
    listener = Listener("--drain-timeout", "10", env={"PYRELUNE_TOKEN": TOKEN,
                                                      "PYRELUNE_MAX_OUTPUT": str(1 << 40)})
    try:
        idle = settle(listener, TOKEN)
        client = RawClient(listener.url)
        assert client.receive()["event"] == "kernel.ready"
        client.send({"kind": "request", "id": "a", "method": "kernel.auth",
                     "params": {"token": TOKEN}})
        assert client.receive()["id"] == "a"
        source = ("line = 'x' * 1023\n"
                  f"with open({str(progress)!r}, 'w', buffering=1) as note:\n"
                  "    for i in range(1 << 20):\n"
                  "        print(line)\n"
                  "        if i % 1024 == 0:\n"
                  "            note.write(f'{i}\\n')\n")
        client.send({"kind": "request", "id": "big", "method": "execute.cell",
                     "params": {"cell_id": "big", "source": source}})
        # It stops reading now. The cell must come to a stop, not print on.
        deadline = time.monotonic() + TIMEOUT
        last = -1
        while time.monotonic() < deadline:
            time.sleep(0.5)
            seen = progress.read_text().count("\n") if progress.exists() else 0
            if seen == last and seen > 0:
                break
            last = seen
        else:
            raise AssertionError("the cell never stopped printing")
        assert last < 1024  # far less than the 1 GB: it was held back
        assert resident(listener.process.pid, "VmHWM") - idle < BOUND
        # Past --drain-timeout the client is cut off: the cell prints on, for no one.
        deadline = time.monotonic() + TIMEOUT
        while progress.read_text().count("\n") == last:
            assert time.monotonic() < deadline, "the cell stayed blocked"
            time.sleep(0.2)
        # The next client finds it running, and gets what was printed for no one since
        # (within the output cap, which here is none): a large first frame.
        owner = connect(listener.url, TOKEN, max_size=None)
        assert owner.call("execute.interrupt", {})["result"]["interrupted"] is True
        assert owner.until_done()[-1]["data"]["ename"] == "KeyboardInterrupt"
        assert stdout_of(owner.run("print(6 * 7)")) == "42\n"
        owner.close()
        client.close()
    finally:
        listener.close()
