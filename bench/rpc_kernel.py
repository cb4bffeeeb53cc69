"""The rpc kernel against its baselines, each row a ratio measured in the same run.

    python bench/rpc_kernel.py [--requests N] [--megabytes M] [--placement one|two|both]

The four rows of the target table, for each placement of the processes:
both sides (this host and the kernel with its worker) pinned to one CPU,
then the host on one CPU and the kernel on another (sched_setaffinity,
inherited by every process spawned):
- a cell printing M MB (default 100: `print('x' * 99)` a million times)
  through the rpc kernel until `execute.done`, against the same loop in
  plain Python writing to /dev/null (pinned as the kernel is), with Python's
  defaults (target <= 1.5x), and the peak resident memory (VmHWM) of the
  kernel process and of its worker;
- a cell of 1,000 prints, `execute.cell` -> `execute.done`, against the
  in-process reference server of `kernel_roundtrip.py` (target <= 2.0x);
- `1+1` over the pipe against the lines kernel (target <= 1.2x);
- spawn to `kernel.ready` (`--mode rpc`) against spawn to the first `pong`
  of `--mode lines` (target <= 1.5x).

Also, as before:
- the median `execute.cell` -> `execute.done` round trip of `1+1` over the
  pipe (`pyrelune --mode rpc`) and over loopback WebSocket (`--listen`),
  the latter with a plain-socket client as lean as the pipe's (the target's
  row) and with the `websockets` package's client;
- the same for the lines kernel (`pyrelune --mode lines`, `execute` ->
  response) when this checkout has it, and always for the supervisor's own
  `Kernel` driven in-process (no protocol at all: the floor);
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

from kernel_roundtrip import DEFAULTS, THOUSAND_PRINTS, LinesClient

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
        from pyrelune.protocols import rpc
        from pyrelune.settings import PLAIN
        from pyrelune.shaping import STREAM_MAX_OUTPUT
        from pyrelune.supervisor.kernel import Kernel

        self.kernel = Kernel(rpc.profile(STREAM_MAX_OUTPUT, PLAIN))  # the rpc kernel's host

    def run(self, source: str) -> None:
        from pyrelune.wire.commands import Execute

        self.kernel.apply(Execute(source, "<cell bench>"))
        for _ in self.kernel.events():
            pass

    def close(self) -> None:
        self.kernel.close()


def median_ms(client: object, count: int, source: str = ONE_PLUS_ONE) -> float:
    run = client.run  # type: ignore[attr-defined]
    for _ in range(max(20, count // 10)):
        run(source)
    times = []
    for _ in range(count):
        start = time.perf_counter()
        run(source)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


class Placement:
    """Where the host (this process) and the kernel run: CPU numbers, inherited by children."""

    def __init__(self, name: str, host: int, kernel: int) -> None:
        self.name, self.host, self.kernel = name, host, kernel
        os.sched_setaffinity(0, {host})

    def spawn(self, make: Any) -> Any:
        """`make()` with this process moved to the kernel's CPU meanwhile, so its children start
        (and stay) there."""
        os.sched_setaffinity(0, {self.kernel})
        try:
            return make()
        finally:
            os.sched_setaffinity(0, {self.host})


def big_print(place: Placement, megabytes: int) -> None:
    lines = megabytes * 10_000
    source = f"for _ in range({lines}):\n    print('x' * 99)"
    plain, ours = [], []
    received = kernel_kib = worker_kib = 0
    for _ in range(2):  # paired: the machine's speed drifts
        with open(os.devnull, "w") as null:
            start = time.perf_counter()
            place.spawn(lambda: subprocess.run([sys.executable, "-c", source],
                                               stdout=null, check=True, env=DEFAULTS))
            plain.append(time.perf_counter() - start)
        client = place.spawn(PipeClient)
        start = time.perf_counter()
        received = client.run(source)
        ours.append(time.perf_counter() - start)
        kernel_kib, worker_kib = client.peak_kib()
        client.close()
    ratio = statistics.median(o / p for o, p in zip(ours, plain, strict=True))
    print(f"  {megabytes} MB printed: rpc kernel {min(ours):.2f} s, plain Python to /dev/null "
          f"{min(plain):.2f} s: {ratio:.2f}x (target <= 1.5x); {received / 1e6:.2f} MB of "
          f"messages; peak memory kernel {kernel_kib / 1024:.1f} MB + worker "
          f"{worker_kib / 1024:.1f} MB", flush=True)


def paired(clients: dict[str, Any], count: int,
           source: str = ONE_PLUS_ONE) -> dict[str, list[float]]:
    """Median round trips of each client, in `ROUNDS` turns taken in rotation."""
    results: dict[str, list[float]] = {}
    for turn in range(ROUNDS):
        order = list(clients.items())
        for name, client in order if turn % 2 == 0 else reversed(order):
            results.setdefault(name, []).append(median_ms(client, count // ROUNDS, source))
    return results


def ratio(values: list[float], base: list[float]) -> float:
    return statistics.median(v / b for v, b in zip(values, base, strict=True))


class ReferenceServer(LinesClient):
    """`kernel_roundtrip.py`'s in-process reference server, timed like the others (`run`)."""

    def __init__(self) -> None:
        here = os.path.dirname(os.path.abspath(__file__))
        super().__init__([sys.executable, os.path.join(here, "kernel_roundtrip.py"),
                          "--serve-reference"])

    def run(self, source: str) -> None:
        self.execute(source)


def thousand_prints(place: Placement, count: int) -> None:
    clients = {"rpc pipe": place.spawn(PipeClient), "reference": place.spawn(ReferenceServer)}
    results = paired(clients, count, THOUSAND_PRINTS)
    for client in clients.values():
        client.close()
    ours, ref = results["rpc pipe"], results["reference"]
    print(f"  1,000 prints: rpc pipe {statistics.median(ours) * 1000:.0f} us, in-process "
          f"reference {statistics.median(ref) * 1000:.0f} us: {ratio(ours, ref):.2f}x "
          f"(target <= 2.0x)", flush=True)


def round_trips(place: Placement, count: int) -> None:
    clients: dict[str, Any] = {"rpc pipe": place.spawn(PipeClient),
                               "rpc WebSocket": place.spawn(WebSocketClient),
                               "rpc WebSocket, websockets client":
                                   place.spawn(LibraryWebSocketClient),
                               "in-process Kernel (no protocol)": place.spawn(InProcessKernel)}
    lines = place.spawn(lines_client)
    if lines is not None:
        clients["lines kernel"] = lines
    results = paired(clients, count)
    for client in clients.values():
        client.close()
    base_name = "lines kernel" if lines is not None else "in-process Kernel (no protocol)"
    base = results[base_name]
    print(f"  1+1 round trip (median of {ROUNDS} turns of {count // ROUNDS}), against the "
          f"{base_name} (target: rpc pipe <= 1.2x):")
    for name, values in results.items():
        print(f"    {name:34s} {statistics.median(values) * 1000:8.0f} us  "
              f"{ratio(values, base):5.2f}x")


def _spawn_to_answers(mode: str) -> tuple[float, float]:
    """Seconds from spawning the kernel to its first answer (`--mode rpc`: `kernel.ready`,
    `--mode lines`: a `pong`), and to the answer of a first `1+1` (the host's real wait)."""
    client: LinesClient
    if mode == "rpc":
        client = PipeClient()  # it has read kernel.ready
        ready = time.perf_counter() - client.started
        client.run(ONE_PLUS_ONE)
    else:
        client = LinesClient([*KERNEL, mode])
        assert b"pong" in client.request(b'{"id": "p", "type": "ping"}\n')
        ready = time.perf_counter() - client.started
        client.execute(ONE_PLUS_ONE)
    answered = time.perf_counter() - client.started
    client.close()
    return ready, answered


def start_up(place: Placement, runs: int) -> None:
    rpc: list[tuple[float, float]] = []
    lines: list[tuple[float, float]] = []
    for turn in range(runs):  # in turn, each kind first every other time
        kinds = ("rpc", "lines") if turn % 2 else ("lines", "rpc")
        for kind in kinds:
            (rpc if kind == "rpc" else lines).append(
                place.spawn(lambda kind=kind: _spawn_to_answers(kind)))
    ready = [r for r, _ in rpc], [r for r, _ in lines]
    first = [a for _, a in rpc], [a for _, a in lines]
    print(f"  start-up: rpc to kernel.ready {statistics.median(ready[0]) * 1000:.0f} ms, lines "
          f"to its first pong {statistics.median(ready[1]) * 1000:.0f} ms: "
          f"{ratio(*ready):.2f}x (target <= 1.5x); to the first 1+1 answer "
          f"{statistics.median(first[0]) * 1000:.0f} ms against "
          f"{statistics.median(first[1]) * 1000:.0f} ms: {ratio(*first):.2f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--placement", choices=("one", "two", "both"), default="both")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    placements = []
    if args.placement in ("one", "both"):
        placements.append(("both sides on CPU", cpus[0], cpus[0]))
    if args.placement in ("two", "both") and len(cpus) > 1:
        placements.append(("host and kernel on two CPUs", cpus[0], cpus[1]))
    for name, host, kernel in placements:
        place = Placement(name, host, kernel)
        print(f"{name}: host on CPU {host}, kernel on CPU {kernel}", flush=True)
        big_print(place, args.megabytes)
        thousand_prints(place, max(100, args.requests // 10))
        round_trips(place, args.requests)
        start_up(place, 15)
    os.sched_setaffinity(0, cpus)


if __name__ == "__main__":
    main()
