"""The rpc kernel's round trips and its 100 MB print, over real pipes and a real WebSocket.

    python bench/rpc_kernel.py [--requests N] [--megabytes M]

Measures, in one run:
- the median `execute.cell` -> `execute.done` round trip of `1+1` over the
  pipe (`pyrelune --mode rpc`) and over loopback WebSocket (`--listen`),
  the latter with a plain-socket client as lean as the pipe's (the target's
  row) and with the `websockets` package's client;
- the same for the lines kernel (`pyrelune --mode lines`, `execute` ->
  response) when this checkout has it, and always for the supervisor's own
  `Kernel` driven in-process (no protocol at all: the floor);
- start-up: spawn to `kernel.ready` of `pyrelune --mode rpc`, and to its
  first `1+1` `execute.done`, against spawn to the first `pong` of
  `pyrelune --mode lines` (and its first `1+1`), in alternating pairs;
- a cell printing M MB (`print('x' * 99)` M*10,000 times) through the rpc
  kernel until `execute.done`, against the same loop in plain Python writing
  to /dev/null, with the peak resident memory (VmHWM) of the kernel process
  and of its worker.

Everything runs with Python's defaults, whatever this shell sets:
PYTHONUNBUFFERED would make both the plain loop and the kernels write each
line at once.

Only the standard library and `websockets` (and the pipe client of
`kernel_roundtrip.py`, beside this file): time.perf_counter, subprocess, os.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from kernel_roundtrip import DEFAULTS, LinesClient

ONE_PLUS_ONE = "1+1"
#: Each client is timed in this many turns, taken in rotation: this machine's
#: speed drifts within seconds, and the drift should hit every client alike.
ROUNDS = 4
KERNEL = [sys.executable, "-m", "pyrelune", "--mode"]


def execute_line(request_id: str, source: str) -> bytes:
    return json.dumps({"kind": "request", "id": request_id, "method": "execute.cell",
                       "params": {"cell_id": "bench", "source": source}}).encode() + b"\n"


class PipeClient(LinesClient):
    """A host's end of `pyrelune --mode rpc` over pipes."""

    def __init__(self) -> None:
        super().__init__([*KERNEL, "rpc"])
        assert b"kernel.ready" in self.read_line()

    def run(self, source: str) -> int:
        """Execute `source` and read until execute.done; the bytes of messages received."""
        os.write(self._in, execute_line("b", source))
        size = 0
        while True:
            line = self.read_line()
            size += len(line)
            if b'"execute.done"' in line:
                assert b'"status": "ok"' in line, line
                return size

    def peak_kib(self) -> tuple[int, int]:
        """VmHWM of the kernel process and of its worker (Linux /proc)."""
        pid = self.proc.pid
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            worker = int(f.read().split()[0])
        return _hwm(pid), _hwm(worker)


def _hwm(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _listening_kernel() -> tuple[subprocess.Popen[bytes], str, int]:
    """`pyrelune --mode rpc --listen 127.0.0.1:0`, its host and port."""
    env = {k: v for k, v in DEFAULTS.items() if k != "PYRELUNE_TOKEN"}
    proc = subprocess.Popen([*KERNEL, "rpc", "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env=env)
    assert proc.stdout
    data = json.loads(proc.stdout.readline())["data"]
    return proc, data["host"], data["port"]


class WebSocketClient:
    """A host's end of the WebSocket kernel, as lean as a browser's own WebSocket.

    Plain sockets and RFC 6455 framing, in the spirit of the pipe clients:
    what is timed is the kernel, not a Python WebSocket library on the host's
    side (`LibraryWebSocketClient` times that combination too).
    """

    def __init__(self) -> None:
        import base64
        import socket

        self.proc, host, port = _listening_kernel()
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                          f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                          f"Sec-WebSocket-Version: 13\r\n\r\n".encode())
        self._pending = b""
        while b"\r\n\r\n" not in self._pending:
            self._pending += self.sock.recv(1 << 16)
        head, _, self._pending = self._pending.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head
        assert b"kernel.ready" in self._message()

    def _send(self, payload: bytes) -> None:
        size = len(payload)
        if size < 126:
            header = bytes([0x81, 0x80 | size])
        elif size < 1 << 16:
            header = bytes([0x81, 0x80 | 126]) + size.to_bytes(2, "big")
        else:
            header = bytes([0x81, 0x80 | 127]) + size.to_bytes(8, "big")
        mask = os.urandom(4)
        key = (mask * (size // 4 + 1))[:size]
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(size, "big")
        self.sock.sendall(header + mask + masked)

    def _take(self, count: int) -> bytes:
        while len(self._pending) < count:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise RuntimeError("the kernel closed the connection")
            self._pending += chunk
        data, self._pending = self._pending[:count], self._pending[count:]
        return data

    def _message(self) -> bytes:
        """The next text message (the kernel sends them unfragmented and unmasked)."""
        first, second = self._take(2)
        assert first == 0x81, f"unexpected frame {first:#x}"
        size = second & 0x7F
        if size == 126:
            size = int.from_bytes(self._take(2), "big")
        elif size == 127:
            size = int.from_bytes(self._take(8), "big")
        return self._take(size)

    def run(self, source: str) -> None:
        self._send(execute_line("b", source).rstrip(b"\n"))
        while b'"execute.done"' not in (message := self._message()):
            pass
        assert b'"status": "ok"' in message, message

    def close(self) -> None:
        self.sock.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


class LibraryWebSocketClient:
    """The same host written with the `websockets` package's asyncio client."""

    def __init__(self) -> None:
        import asyncio

        self.proc, host, port = _listening_kernel()
        self.loop = asyncio.new_event_loop()
        self.ws = self.loop.run_until_complete(self._connect(f"ws://{host}:{port}"))

    async def _connect(self, url: str) -> Any:
        from websockets.asyncio.client import connect

        ws = await connect(url)
        assert "kernel.ready" in str(await ws.recv())
        return ws

    def run(self, source: str) -> None:
        self.loop.run_until_complete(self._run(source))

    async def _run(self, source: str) -> None:
        await self.ws.send(execute_line("b", source).decode())
        while '"execute.done"' not in (message := str(await self.ws.recv())):
            pass
        assert '"status": "ok"' in message, message

    def close(self) -> None:
        self.loop.run_until_complete(self.ws.close())
        self.loop.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


class LinesKernel(LinesClient):
    """`pyrelune --mode lines`, timed like the others (`run`)."""

    def __init__(self) -> None:
        super().__init__([*KERNEL, "lines"])

    def run(self, source: str) -> None:
        self.execute(source)


def lines_client() -> LinesKernel | None:
    """The lines kernel, if this checkout has it (None otherwise)."""
    try:
        client = LinesKernel()
        client.run("1")
    except (RuntimeError, OSError):
        return None
    return client


class InProcessKernel:
    """The supervisor's Kernel with no protocol around it."""

    def __init__(self) -> None:
        from pyrelune.supervisor.kernel import Kernel

        self.kernel = Kernel(interactive=True)

    def run(self, source: str) -> None:
        self.kernel.execute(source, "<cell bench>")
        for _ in self.kernel.events():
            pass

    def close(self) -> None:
        self.kernel.close()


def median_ms(client: object, count: int) -> float:
    run = client.run  # type: ignore[attr-defined]
    for _ in range(max(20, count // 10)):
        run(ONE_PLUS_ONE)
    times = []
    for _ in range(count):
        start = time.perf_counter()
        run(ONE_PLUS_ONE)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def start_up(pairs: int) -> None:
    """Spawn to the first answers, rpc (pipe) against lines, in turn; ratios pair by pair."""
    ping = json.dumps({"id": "p", "type": "ping"}).encode() + b"\n"
    times: dict[str, list[float]] = {}
    for turn in range(pairs + 1):  # the first pair only warms the caches
        for kind in ("rpc", "lines") if turn % 2 else ("lines", "rpc"):
            start = time.perf_counter()
            client: LinesClient
            if kind == "rpc":
                client = rpc = PipeClient()  # it has read kernel.ready
                first = time.perf_counter() - start
                rpc.run(ONE_PLUS_ONE)
            else:
                client = LinesClient([*KERNEL, "lines"])
                assert b"pong" in client.request(ping)
                first = time.perf_counter() - start
                client.execute(ONE_PLUS_ONE)
            cell = time.perf_counter() - start
            client.close()
            if turn:
                times.setdefault(f"{kind} first", []).append(first)
                times.setdefault(f"{kind} 1+1", []).append(cell)

    def ratio(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))

    ms = {name: statistics.median(values) * 1000 for name, values in times.items()}
    print(f"start-up (median of {pairs} pairs): rpc to kernel.ready {ms['rpc first']:.1f} ms, "
          f"lines to pong {ms['lines first']:.1f} ms ({ratio('rpc first', 'lines first'):.2f}x; "
          f"target <= 1.5x)")
    print(f"  to the first 1+1 answer: rpc {ms['rpc 1+1']:.1f} ms, lines {ms['lines 1+1']:.1f} "
          f"ms ({ratio('rpc 1+1', 'lines 1+1'):.2f}x; against lines' pong "
          f"{ratio('rpc 1+1', 'lines first'):.2f}x)")


def big_print(megabytes: int) -> None:
    lines = megabytes * 10_000
    source = f"for _ in range({lines}):\n    print('x' * 99)"
    start = time.perf_counter()
    with open(os.devnull, "w") as null:
        subprocess.run([sys.executable, "-c", source], stdout=null, check=True, env=DEFAULTS)
    plain = time.perf_counter() - start
    client = PipeClient()
    start = time.perf_counter()
    received = client.run(source)
    ours = time.perf_counter() - start
    kernel_kib, worker_kib = client.peak_kib()
    client.close()
    print(f"{megabytes} MB print: plain Python to /dev/null {plain:.2f} s, rpc kernel "
          f"{ours:.2f} s ({ours / plain:.2f}x; target <= 1.5x), {received / 1e6:.2f} MB of "
          f"messages received")
    print(f"  peak memory: kernel {kernel_kib / 1024:.1f} MB + worker {worker_kib / 1024:.1f} MB "
          f"= {(kernel_kib + worker_kib) / 1024:.1f} MB (target < 200 MB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--starts", type=int, default=20, help="start-up pairs")
    args = parser.parse_args()

    start_up(args.starts)
    big_print(args.megabytes)
    results = {}
    clients = {"rpc pipe": PipeClient(), "rpc WebSocket": WebSocketClient(),
               "rpc WebSocket, websockets client": LibraryWebSocketClient(),
               "in-process Kernel (no protocol)": InProcessKernel()}
    lines = lines_client()
    if lines is not None:
        clients["lines kernel"] = lines
    for turn in range(ROUNDS):
        order = list(clients.items())
        for name, client in order if turn % 2 == 0 else reversed(order):
            results.setdefault(name, []).append(median_ms(client, args.requests // ROUNDS))
    for client in clients.values():
        client.close()
    base_name = "lines kernel" if lines is not None else "in-process Kernel (no protocol)"
    base = results[base_name]
    print(f"1+1 round trip (median of {ROUNDS} turns of {args.requests // ROUNDS}), against "
          f"the {base_name} (ratio: median of the turns' ratios):")
    for name, values in results.items():
        ratio = statistics.median(v / b for v, b in zip(values, base, strict=True))
        print(f"  {name:34s} {statistics.median(values) * 1000:8.0f} us  {ratio:5.2f}x")
    if lines is None:
        print("  (no lines kernel in this checkout: targets pipe <= 1.5x, WebSocket <= 3x of it)")


if __name__ == "__main__":
    main()
