"""What the kernel's snapshots of the namespace cost, against snapshots off in the same run.

    python bench/snapshots.py [--round-trips N] [--losses N] [--queued N]

Lines, rpc (over pipes) and Jupyter kernels, each started twice (PYRELUNE_SNAPSHOTS unset,
and 0), with Python's defaults (PYTHONUNBUFFERED and PYTHONDONTWRITEBYTECODE unset). Turns alternate
between the two, so this machine's drifting speed hits both alike; medians are reported.

- `1+1`: a round trip back to back, after `a = list(range(10**6))` (target <= 1.3x);
- a cell of 50 ms (`time.sleep(0.05)`) (target <= 1.05x);
- crash to answer: a cell that segfaults, then `1+1`, from the first request to the
  second's answer (with snapshots, the worker resumes from one; without, a fresh one
  starts);
- the kernel's total PSS (all its processes, snapshots among them) after a 400 MB
  bytearray is made, every page written (target <= 1.2x: the snapshot shares the pages
  copy-on-write); while a cell that wrote one byte in each of its pages still runs (the
  snapshot of the cell before keeps the old pages: about 2x, until...); and once idle after
  it (...the next snapshot replaces that one);
- queued, then a crash: N cells of 50 ms (`x = i`) sent back to back without waiting for
  their answers ("Run All"), then one that segfaults; which `x` the next cell finds (with
  snapshots, the last queued cell's should come back: a long cell gets its snapshot at
  once; without, none).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from jupyter_kernel import Kernel, defaults_env, kernelspecs, tree_pss_kib
from kernel_roundtrip import LinesClient
from rpc_kernel import execute_line

SETUP = "a = list(range(10**6)); b = 5"
CRASH = "import ctypes; ctypes.string_at(0)"
BIG = "a = bytearray(b'\\1') * (400 << 20); b = None"  # every page written
#: One byte written in each of the array's pages, then a pause to measure in.
REWRITE = "a[::4096] = b'\\2' * len(range(0, len(a), 4096)); import time; time.sleep({pause})"
#: Long past the idle time after which a kernel forks its snapshot, and its memory settles.
SETTLE = 1.0
QUEUED = "x = {i}; import time; time.sleep(0.05)"
#: Where the cell after the crash writes the `x` it finds.
FOUND = "open({path!r}, 'w').write(repr(globals().get('x')))"
_MIB = 1024  # KiB


class Piped:
    """A kernel on pipes (`proc`): a cell timed from its sending to its answer."""

    proc: subprocess.Popen[bytes]

    def send(self, code: str) -> None:
        raise NotImplementedError

    def wait(self) -> None:
        raise NotImplementedError

    def run(self, code: str) -> float:
        begin = time.perf_counter()
        self.send(code)
        self.wait()
        return time.perf_counter() - begin

    def pss_kib(self) -> int:
        return tree_pss_kib(self.proc.pid)

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


class Lines(Piped):
    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "pyrelune", "--mode", "lines"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self._sent = 0  # cells not answered yet

    def send(self, code: str) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps({"id": "b", "type": "execute", "code": code}).encode()
                              + b"\n")
        self.proc.stdin.flush()
        self._sent += 1

    def wait(self) -> None:
        """Until the cell sent last has answered."""
        assert self.proc.stdout
        for _ in range(self._sent):
            self.proc.stdout.readline()
        self._sent = 0


class Rpc(Piped):
    """`pyrelune --mode rpc` over pipes."""

    def __init__(self, env: dict[str, str]) -> None:
        self.client = LinesClient([sys.executable, "-m", "pyrelune", "--mode", "rpc"], env)
        self.proc = self.client.proc
        assert b"kernel.ready" in self.client.read_line()
        self._sent = 0  # 1 while a cell is not done yet

    def send(self, code: str) -> None:
        """Once the cell before is done: the rpc kernel refuses a cell while one runs, so a
        host queues them, sending each as soon as the one before is done."""
        self.wait()
        assert self.proc.stdin
        os.write(self.proc.stdin.fileno(), execute_line("b", code))
        self._sent = 1

    def wait(self) -> None:
        """Until the cell sent last is done."""
        while self._sent:
            if b'"execute.done"' in self.client.read_line():
                self._sent = 0


class Jupyter:
    def __init__(self, env: dict[str, str]) -> None:
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        try:
            self.kernel = Kernel("pyrelune")
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self._sent = ""  # the msg_id of the cell sent last

    def run(self, code: str) -> float:
        return self.kernel.run(code)[0]

    def send(self, code: str) -> None:
        self._sent = self.kernel.client.execute(code)

    def wait(self) -> None:
        """Until the cell sent last has answered, and its kernel is idle."""
        while self.kernel.client.get_shell_msg(timeout=60)["parent_header"].get(
                "msg_id") != self._sent:
            pass
        self.kernel.until_idle(self._sent)

    def pss_kib(self) -> int:
        return self.kernel.pss_kib()

    def close(self) -> None:
        self.kernel.close()


Host = type[Lines] | type[Rpc] | type[Jupyter]


def measure(host: Host, trips: int, losses: int, queued: int) -> None:
    kernels = {"on": host(defaults_env()), "off": host({**defaults_env(),
                                                        "PYRELUNE_SNAPSHOTS": "0"})}
    rows: dict[str, dict[str, list[float]]] = {row: {"on": [], "off": []}
                                               for row in ("1+1", "50 ms cell", "crash to answer")}
    memory: dict[str, dict[str, float]] = {row: {} for row in (
        "PSS 400 MB array", "PSS rewriting it", "PSS rewritten")}
    try:
        for kernel in kernels.values():
            kernel.run(SETUP)
            for _ in range(20):
                kernel.run("1+1")
        for _ in range(trips):
            for side, kernel in kernels.items():
                rows["1+1"][side].append(kernel.run("1+1"))
        for _ in range(max(5, trips // 20)):
            for side, kernel in kernels.items():
                rows["50 ms cell"][side].append(kernel.run("import time; time.sleep(0.05)"))
        for _ in range(losses):
            for side, kernel in kernels.items():
                kernel.run(SETUP)
                rows["crash to answer"][side].append(kernel.run(CRASH) + kernel.run("1+1"))
        for side, kernel in kernels.items():
            kernel.run(BIG)
            time.sleep(SETTLE)
            memory["PSS 400 MB array"][side] = kernel.pss_kib() / _MIB
            kernel.send(REWRITE.format(pause=2 * SETTLE))
            time.sleep(SETTLE)
            memory["PSS rewriting it"][side] = kernel.pss_kib() / _MIB
            kernel.wait()
            time.sleep(SETTLE)
            memory["PSS rewritten"][side] = kernel.pss_kib() / _MIB
            kernel.run("del a")
        found = {side: restored(kernel, queued) for side, kernel in kernels.items()}
    finally:
        for kernel in kernels.values():
            kernel.close()
    for row, sides in rows.items():
        on, off = statistics.median(sides["on"]), statistics.median(sides["off"])
        print(f"{host.__name__:8} {row:16} on {on * 1000:8.2f} ms  off {off * 1000:8.2f} ms  "
              f"{on / off:5.2f}x")
    for row, mib in memory.items():
        print(f"{host.__name__:8} {row:16} on {mib['on']:8.0f} MiB off {mib['off']:8.0f} MiB "
              f"{mib['on'] / mib['off']:5.2f}x")
    print(f"{host.__name__:8} {queued} queued 50 ms cells (x = 0..{queued - 1}), a crash: "
          f"x found on {found['on']}  off {found['off']}")


def restored(kernel: Lines | Rpc | Jupyter, queued: int) -> str:
    """The `x` a cell finds after `queued` cells of 50 ms sent at once and a crash."""
    kernel.run("x = None")
    for i in range(queued):
        kernel.send(QUEUED.format(i=i))
    kernel.send(CRASH)
    kernel.wait()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x"
        kernel.run(FOUND.format(path=str(path)))
        return path.read_text() if path.exists() else "(none: the cell failed)"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--round-trips", type=int, default=300)
    parser.add_argument("--losses", type=int, default=10)
    parser.add_argument("--queued", type=int, default=20)
    args = parser.parse_args()
    measure(Lines, args.round_trips, args.losses, args.queued)
    measure(Rpc, args.round_trips, args.losses, args.queued)
    with tempfile.TemporaryDirectory() as folder:
        kernelspecs(Path(folder))
        os.environ["JUPYTER_PATH"] = folder
        measure(Jupyter, args.round_trips, args.losses, args.queued)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
