"""Round trips of the lines kernel against a minimal in-process reference server.

    python bench/kernel_roundtrip.py [--requests N] [--command 'pyrelune --mode lines']

Measures, over real pipes as a host drives them, the median round trip of an
`execute` of `1+1` and of a cell of 1,000 `print` calls, for pyrelune and for
the reference server below (the same protocol with `sys.stdout` swapped for a
buffer: no isolation, no fd capture, no interrupt; the floor a lean kernel is
compared with); the 1,000 prints once more with PYTHONUNBUFFERED=1, which
makes the kernel write each line at once. Also spawn-to-pong, and how much
the kernel's memory (the supervisor and its worker) grows over 10,000
executes. When `ipykernel` and
`jupyter_client` are installed, ipykernel's `execute_interactive` round trip
is measured too.

Only the standard library: time.perf_counter, subprocess, os.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

ONE_PLUS_ONE = "1+1"
THOUSAND_PRINTS = "for i in range(1000):\n    print(i)"
#: Turns each server is timed in, in rotation (see `main`).
ROUNDS = 10
#: The kernels' own defaults, whatever this shell sets: PYTHONUNBUFFERED makes
#: the lines kernel write every printed line at once (timed in its own row).
DEFAULTS = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
UNBUFFERED = DEFAULTS | {"PYTHONUNBUFFERED": "1"}


def reference_server() -> None:
    """The lines protocol in one process, as lean as it gets."""
    import ast
    import io
    import traceback

    namespace: dict[str, object] = {"__builtins__": __builtins__, "__name__": "__main__"}
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        request = json.loads(line)
        buffer, stderr = io.StringIO(), io.StringIO()
        error = None
        real = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = buffer, stderr
        try:
            if request["type"] == "ping":
                buffer.write("pong")
            else:
                tree = ast.parse(request.get("code", ""), "<cell>", "exec")
                last = tree.body[-1] if tree.body else None
                if isinstance(last, ast.Expr):
                    tree.body.pop()
                else:
                    last = None
                exec(compile(tree, "<cell>", "exec"), namespace)
                if last is not None:
                    value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
                    if value is not None:
                        namespace["_"] = value
                        print(repr(value))
        except BaseException:
            error = traceback.format_exc()
        finally:
            sys.stdout, sys.stderr = real
        response = {"id": request.get("id", ""), "type": "result", "stdout": buffer.getvalue(),
                    "stderr": stderr.getvalue(), "error": error, "output_type": "text"}
        out.write(json.dumps(response).encode() + b"\n")
        out.flush()


class LinesClient:
    """A host's end of a lines kernel: one request, then its response line."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env or DEFAULTS)
        assert self.proc.stdin and self.proc.stdout
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self._pending = b""

    def request(self, line: bytes) -> bytes:
        os.write(self._in, line)
        return self.read_line()

    def read_line(self) -> bytes:
        """The next line the kernel writes, without its newline."""
        while b"\n" not in self._pending:
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                raise RuntimeError("the kernel closed its stdout")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def execute(self, code: str) -> bytes:
        return self.request(json.dumps({"id": "r", "type": "execute", "code": code}).encode()
                            + b"\n")

    def rss_kib(self) -> int:
        """Resident memory of the kernel and its direct children (Linux /proc)."""
        pids = [self.proc.pid]
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
        total = 0
        for pid in pids:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        return total

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        assert self.proc.stdout
        self.proc.stdout.close()


def median_round_trip(client: LinesClient, code: str, count: int) -> float:
    line = json.dumps({"id": "r", "type": "execute", "code": code}).encode() + b"\n"
    for _ in range(max(50, count // 10)):  # warm-up
        client.request(line)
    times = []
    for _ in range(count):
        start = time.perf_counter()
        client.request(line)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def spawn_to_pong(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        client = LinesClient(argv)
        client.request(b'{"id": "p", "type": "ping"}\n')
        times.append(time.perf_counter() - client.started)
        client.close()
    return statistics.median(times)


def memory_growth(argv: list[str], count: int) -> int:
    client = LinesClient(argv)
    line = json.dumps({"id": "r", "type": "execute", "code": ONE_PLUS_ONE}).encode() + b"\n"
    for _ in range(200):
        client.request(line)
    before = client.rss_kib()
    for _ in range(count):
        client.request(line)
    grown = client.rss_kib() - before
    client.close()
    return grown


def ipykernel_round_trip(count: int) -> float | None:
    try:
        from jupyter_client.manager import start_new_kernel
    except ImportError:
        return None
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        for _ in range(max(20, count // 10)):
            client.execute_interactive(ONE_PLUS_ONE, store_history=False, output_hook=_quiet)
        times = []
        for _ in range(count):
            start = time.perf_counter()
            client.execute_interactive(ONE_PLUS_ONE, store_history=False, output_hook=_quiet)
            times.append(time.perf_counter() - start)
        return statistics.median(times)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _quiet(message: object) -> None:
    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--command",
                        default=f"{shlex.quote(sys.executable)} -m pyrelune --mode lines")
    parser.add_argument("--memory-executes", type=int, default=10_000)
    parser.add_argument("--no-ipykernel", action="store_true")
    args = parser.parse_args()
    ours = shlex.split(args.command)
    reference = [sys.executable, os.path.abspath(__file__), "--serve-reference"]

    rows = []
    for name, code, count, env in (
        ("1+1", ONE_PLUS_ONE, args.requests, DEFAULTS),
        ("1,000 prints", THOUSAND_PRINTS, max(200, args.requests // 10), DEFAULTS),
        ("same, -u", THOUSAND_PRINTS, max(200, args.requests // 10), UNBUFFERED),
    ):
        kernel, ref = LinesClient(ours, env), LinesClient(reference, env)
        assert json.loads(kernel.execute(code))["error"] is None
        assert json.loads(kernel.execute(code)) == json.loads(ref.execute(code)) | {"id": "r"}
        # Short turns, in alternating order, each pair giving a ratio: the
        # machine's speed drifts within seconds, and a pair shares its drift.
        ours_times: list[float] = []
        ref_times: list[float] = []
        for turn in range(ROUNDS):
            pair = [(kernel, ours_times), (ref, ref_times)]
            for client, times in pair if turn % 2 == 0 else reversed(pair):
                times.append(median_round_trip(client, code, count // ROUNDS))
        kernel.close()
        ref.close()
        ours_s, ref_s = statistics.median(ours_times), statistics.median(ref_times)
        ratio = statistics.median(o / r for o, r in zip(ours_times, ref_times, strict=True))
        rows.append((name, ours_s, ref_s))
        print(f"{name:>14}: pyrelune {ours_s * 1e6:8.1f} us   reference {ref_s * 1e6:8.1f} us"
              f"   ratio {ratio:5.2f}x (median of {ROUNDS} paired turns)", flush=True)
    pong = spawn_to_pong(ours, 15)
    pong_ref = spawn_to_pong(reference, 15)
    print(f"{'spawn-to-pong':>14}: pyrelune {pong * 1e3:8.1f} ms   "
          f"reference {pong_ref * 1e3:8.1f} ms")
    grown = memory_growth(ours, args.memory_executes)
    print(f"{'memory':>14}: {grown / 1024:+.2f} MiB RSS over {args.memory_executes:,} executes")
    if not args.no_ipykernel:
        ipy = ipykernel_round_trip(max(200, args.requests // 10))
        if ipy is None:
            print(f"{'ipykernel':>14}: not installed (pip install ipykernel jupyter_client)")
        else:
            print(f"{'ipykernel':>14}: {ipy * 1e6:8.1f} us per 1+1, "
                  f"{ipy / rows[0][1]:.0f}x pyrelune's round trip")


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve-reference"]:
        reference_server()
    else:
        main()
