"""Wall time of one oneshot cell through each way of starting pyrelune.

Usage: python bench/launcher_startup.py [runs]

Compares the two launcher forms `pyrelune vix install` can write (a Python
script with an absolute shebang, a /bin/sh script that execs the
interpreter) with pip's console script and `python -m pyrelune`, all with
this interpreter. Each run starts the process as Vix Note does (no
arguments, request on stdin, stdin closed) and waits for it to exit.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from pyrelune.vix import launcher

REQUEST = b'{"source": "print(2 + 3)"}'


def timed(command: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(command, input=REQUEST, capture_output=True, check=True)
        times.append((time.perf_counter() - started) * 1000)
        assert b'"5\\n"' in done.stdout, done.stdout
    return times


def write(folder: str, name: str, text: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    with tempfile.TemporaryDirectory() as folder:
        # `--cold` launchers: what the launcher itself costs, without warm start's gate.
        shebang = write(folder, "shebang", launcher.render(sys.executable, "0"))
        # The same environment reached through a path a shebang cannot carry.
        spaced = os.path.join(folder, "with space")
        os.symlink(sys.prefix, spaced)
        interpreter = os.path.join(spaced, "bin", os.path.basename(sys.executable))
        wrapper = write(folder, "sh", launcher.render(interpreter, "0"))
        candidates = {
            "shebang launcher": [shebang],
            "sh launcher": [wrapper],
            "pip console script": [os.path.join(os.path.dirname(sys.executable), "pyrelune")],
            "python -m pyrelune": [sys.executable, "-m", "pyrelune"],
        }
        for command in candidates.values():
            timed(command, 3)  # warm the page cache
        for name, command in candidates.items():
            times = timed(command, runs)
            print(f"{name:20} median {statistics.median(times):6.1f} ms   "
                  f"min {min(times):6.1f} ms   ({runs} runs)")


if __name__ == "__main__":
    main()
