"""Warm start against the cold Vix launcher, paired in the same run.

Usage: python bench/warm_start.py [runs]

Two launchers as `pyrelune vix install` writes them, for this interpreter:
`--cold`, and the default (warm start, preloading what is installed of
numpy, pandas and matplotlib). Each run starts the launcher as Vix Note does (no
arguments, request on stdin, stdin closed) and waits for its exit; cold
and warm runs alternate, so a busy machine slows both alike. Rows: the
issue's four cells, a cell that imports a module no preload imports
(pygments, which the test extras install with IPython: warm start gains it
nothing, and must cost it nothing), the first-use row (it stops the warm
process before each warm run, so that run starts one and is served cold), then the idle warm
process's memory and the cost of the staleness check it makes per request.
The warm process has a runtime folder of its own and is stopped at the end.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import timeit

from pyrelune.vix import launcher
from pyrelune.warm import control, served
from pyrelune.warm.gate import preload_names, warm_paths

CELLS = {
    "pandas": 'import pandas as pd; pd.DataFrame({"a": [1]})',
    "plot": "import matplotlib.pyplot as plt; plt.plot([1, 2, 3])",
    "print": "print(2 + 3)",
    # A small module from outside the standard library that no preload imports: the cell
    # gains nothing from the warm process, which must not make it slower.
    "not preloaded": "import pygments; print(pygments.__name__)",
}
EXPECT = {"pandas": b"   a\\n0  1", "plot": b"image/svg+xml", "print": b'"5\\n"',
          "not preloaded": b'"pygments\\n"'}
TARGETS = {"pandas": 0.15, "plot": 0.35, "print": 1.0, "not preloaded": 1.0,
           "print, first use": 1.1}


def request(source: str) -> bytes:
    import json

    return json.dumps({"source": source}).encode()


def timed(command: str, cell: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([command], input=request(CELLS[cell]), capture_output=True,
                          check=True)
    elapsed = (time.perf_counter() - started) * 1000
    assert EXPECT[cell] in done.stdout, done.stdout
    return elapsed


def warm_pids(runtime: str) -> list[int]:
    """The warm processes of this run (found by their runtime folder)."""
    found = []
    marker = f"XDG_RUNTIME_DIR={runtime}".encode()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if b"pyrelune.warm.server" not in f.read():
                    continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def kill_warm(runtime: str, lock_path: str) -> None:
    """Kill this run's warm process, even one still between its fork and its exec.

    Whoever holds the lock is one: once it can be taken, none is left.
    """
    import fcntl

    lock = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(lock, fcntl.LOCK_UN)
                return
            except OSError:
                pass
            for pid in warm_pids(runtime):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
    finally:
        os.close(lock)


def row(name: str, cold: list[float], warm: list[float]) -> None:
    ratio = statistics.median(warm) / statistics.median(cold)
    paired = statistics.median(w / c for w, c in zip(warm, cold, strict=True))
    target = TARGETS[name]
    print(f"{name:17} cold {statistics.median(cold):7.1f} ms  warm {statistics.median(warm):7.1f}"
          f" ms  ratio {ratio:5.2f}x (paired {paired:4.2f}x, target <= {target}x"
          f"{'' if ratio <= target else ': MISSED'})")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with tempfile.TemporaryDirectory() as folder:
        runtime = os.path.join(folder, "runtime")
        os.mkdir(runtime, 0o700)
        os.environ["XDG_RUNTIME_DIR"] = runtime
        os.environ.pop("PYRELUNE_WARM", None)
        cold = os.path.join(folder, "cold")
        warm = os.path.join(folder, "warm")
        for path, setting in ((cold, "0"), (warm, "1")):
            with open(path, "w") as f:
                f.write(launcher.render(sys.executable, setting))
            os.chmod(path, 0o755)
        preload = preload_names("1")
        assert preload is not None  # "1" turns warm start on
        lock_path = warm_paths(preload)[1]
        try:
            started = control.start(preload)
            assert started is not None, "the warm process did not start"
            print(f"warm process: pid {started['pid']}, preloaded "
                  f"{', '.join(started['preloaded'])}; {runs} paired runs per row")
            for cell in CELLS:
                timed(cold, cell), timed(warm, cell)  # page cache, font cache
            for cell in CELLS:
                pairs = [(timed(cold, cell), timed(warm, cell)) for _ in range(runs)]
                row(cell, [c for c, _ in pairs], [w for _, w in pairs])
            first: list[tuple[float, float]] = []
            for _ in range(runs):
                kill_warm(runtime, lock_path)
                first_use = timed(warm, "print")  # starts a warm process, served cold
                kill_warm(runtime, lock_path)  # before it preloads beside the next cold run
                first.append((timed(cold, "print"), first_use))
            row("print, first use", [c for c, _ in first], [w for _, w in first])
            control.start(preload)
            for _ in range(3):
                timed(warm, "pandas")
            time.sleep(1)
            status = control.status(preload)
            assert status is not None
            print(f"idle warm process: {status['rss'] / 2**20:.0f} MiB resident, "
                  f"{status['private'] / 2**20:.0f} MiB its own (PSS of it, its spare child "
                  "and the worker the spare forked ahead)")
            stamp = served.Stamp()
            each = min(timeit.repeat(stamp.changed, number=1000, repeat=5)) / 1000
            print(f"staleness check: {each * 1e6:.1f} us per request "
                  f"({len(stamp.folders)} sys.path folders stat'ed)")
        finally:
            control.stop(preload)
            kill_warm(runtime, lock_path)


if __name__ == "__main__":
    main()
