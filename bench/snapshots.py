"""What the kernel's snapshots of the namespace cost, against snapshots off in the same run.

    python bench/snapshots.py [--round-trips N] [--losses N]

Lines and Jupyter kernels, each started twice (PYRELUNE_SNAPSHOTS unset, and 0), with
Python's defaults (PYTHONUNBUFFERED and PYTHONDONTWRITEBYTECODE unset). Turns alternate
between the two, so this machine's drifting speed hits both alike; medians are reported.

- `1+1`: a round trip back to back, after `a = list(range(10**6))` (target <= 1.3x);
- a cell of 50 ms (`time.sleep(0.05)`) (target <= 1.05x);
- crash to answer: a cell that segfaults, then `1+1`, from the first request to the
  second's answer (with snapshots, the worker resumes from one; without, a fresh one
  starts).
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
from jupyter_kernel import Kernel, defaults_env, kernelspecs

SETUP = "a = list(range(10**6)); b = 5"
CRASH = "import ctypes; ctypes.string_at(0)"


class Lines:
    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "pyrelune", "--mode", "lines"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def run(self, code: str) -> float:
        assert self.proc.stdin and self.proc.stdout
        begin = time.perf_counter()
        self.proc.stdin.write(json.dumps({"id": "b", "type": "execute", "code": code}).encode()
                              + b"\n")
        self.proc.stdin.flush()
        self.proc.stdout.readline()
        return time.perf_counter() - begin

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


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

    def run(self, code: str) -> float:
        return self.kernel.run(code)[0]

    def close(self) -> None:
        self.kernel.close()


def measure(host: type[Lines] | type[Jupyter], trips: int, losses: int) -> None:
    kernels = {"on": host(defaults_env()), "off": host({**defaults_env(),
                                                        "PYRELUNE_SNAPSHOTS": "0"})}
    rows: dict[str, dict[str, list[float]]] = {row: {"on": [], "off": []}
                                               for row in ("1+1", "50 ms cell", "crash to answer")}
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
    finally:
        for kernel in kernels.values():
            kernel.close()
    for row, sides in rows.items():
        on, off = statistics.median(sides["on"]), statistics.median(sides["off"])
        print(f"{host.__name__:8} {row:16} on {on * 1000:8.2f} ms  off {off * 1000:8.2f} ms  "
              f"{on / off:5.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--round-trips", type=int, default=300)
    parser.add_argument("--losses", type=int, default=10)
    args = parser.parse_args()
    measure(Lines, args.round_trips, args.losses)
    with tempfile.TemporaryDirectory() as folder:
        kernelspecs(Path(folder))
        os.environ["JUPYTER_PATH"] = folder
        measure(Jupyter, args.round_trips, args.losses)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
