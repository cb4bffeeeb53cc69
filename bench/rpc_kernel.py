"""The rpc kernel's round trips and its 100 MB print, over real pipes and a real WebSocket.

    python bench/rpc_kernel.py [--requests N] [--megabytes M]

Measures, in one run:
- the median `execute.cell` -> `execute.done` round trip of `1+1` over the
  pipe (`pyrelune --mode rpc`) and over loopback WebSocket (`--listen`);
- the same for the lines kernel (`pyrelune --mode lines`, `execute` ->
  response) when this checkout has it, and always for the engine's own
  `Kernel` driven in-process (no protocol at all: the floor);
- a cell printing M MB (`print('x' * 99)` M*10,000 times) through the rpc
  kernel until `execute.done`, against the same loop in plain Python writing
  to /dev/null, with the peak resident memory (VmHWM) of the kernel process
  and of its worker.

Only the standard library and `websockets`: time.perf_counter, subprocess, os.
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

ONE_PLUS_ONE = "1+1"
KERNEL = [sys.executable, "-m", "pyrelune", "--mode"]


def execute_line(request_id: str, source: str) -> bytes:
    return json.dumps({"kind": "request", "id": request_id, "method": "execute.cell",
                       "params": {"cell_id": "bench", "source": source}}).encode() + b"\n"


class PipeClient:
    """A host's end of `pyrelune --mode rpc` over pipes."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([*KERNEL, "rpc"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.proc.stdin and self.proc.stdout
        self._in, self._out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        self._pending = b""
        assert b"kernel.ready" in self._line()

    def _line(self) -> bytes:
        while b"\n" not in self._pending:
            chunk = os.read(self._out, 1 << 20)
            if not chunk:
                raise RuntimeError("the kernel closed its stdout")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def run(self, source: str) -> int:
        """Execute `source` and read until execute.done; the bytes of messages received."""
        os.write(self._in, execute_line("b", source))
        size = 0
        while True:
            line = self._line()
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

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _hwm(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class WebSocketClient:
    """A host's end of `pyrelune --mode rpc --listen 127.0.0.1:0`.

    An asyncio client on this thread, as a browser's event loop would be:
    the synchronous client of `websockets` reads on a thread of its own, and
    the hand-over between threads would be timed as if it were the kernel's.
    """

    def __init__(self) -> None:
        import asyncio

        env = {k: v for k, v in os.environ.items() if k != "PYRELUNE_TOKEN"}
        self.proc = subprocess.Popen([*KERNEL, "rpc", "--listen", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL, env=env)
        assert self.proc.stdout
        url = json.loads(self.proc.stdout.readline())["data"]["url"]
        self.loop = asyncio.new_event_loop()
        self.ws = self.loop.run_until_complete(self._connect(url))

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


class LinesClient:
    """`pyrelune --mode lines`, if this checkout has it (None otherwise)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([*KERNEL, "lines"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.proc.stdin and self.proc.stdout
        self._in, self._out = self.proc.stdin.fileno(), self.proc.stdout.fileno()

    def run(self, source: str) -> None:
        os.write(self._in, json.dumps({"id": "b", "type": "execute", "code": source}).encode()
                 + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                raise RuntimeError("no lines kernel")
            data += chunk

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def lines_client() -> LinesClient | None:
    try:
        client = LinesClient()
        client.run("1")
    except (RuntimeError, OSError):
        return None
    return client


class InProcessKernel:
    """The engine's Kernel with no protocol around it."""

    def __init__(self) -> None:
        from pyrelune.engine.kernel import Kernel

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


def big_print(megabytes: int) -> None:
    lines = megabytes * 10_000
    source = f"for _ in range({lines}):\n    print('x' * 99)"
    start = time.perf_counter()
    with open(os.devnull, "w") as null:
        subprocess.run([sys.executable, "-c", source], stdout=null, check=True)
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
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--megabytes", type=int, default=100)
    args = parser.parse_args()

    big_print(args.megabytes)
    results = {}
    clients = {"rpc pipe": PipeClient(), "rpc WebSocket": WebSocketClient(),
               "in-process Kernel (no protocol)": InProcessKernel()}
    lines = lines_client()
    if lines is not None:
        clients["lines kernel"] = lines
    # Interleave halves so that a noisy machine's drift hits every client alike.
    for _ in range(2):
        for name, client in clients.items():
            results.setdefault(name, []).append(median_ms(client, args.requests // 2))
    for client in clients.values():
        client.close()
    medians = {name: statistics.mean(values) for name, values in results.items()}
    base_name = "lines kernel" if lines is not None else "in-process Kernel (no protocol)"
    base = medians[base_name]
    print(f"1+1 round trip (median of {args.requests}), against the {base_name}:")
    for name, value in medians.items():
        print(f"  {name:34s} {value * 1000:8.0f} us  {value / base:5.2f}x")
    if lines is None:
        print("  (no lines kernel in this checkout: targets pipe <= 1.5x, WebSocket <= 3x of it)")


if __name__ == "__main__":
    main()
