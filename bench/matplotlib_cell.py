"""What a one-line matplotlib cell costs through pyrelune, against a plain script.

A: `pyrelune` answering a Vix Note request whose source is
`import matplotlib.pyplot as plt` + `plt.plot([1, 3, 2])` (the chart comes
back as SVG). B: the same plot saved to an SVG file by `python -c`. Runs are
paired (A then B, repeated) on the same interpreter, and the median of the
per-pair ratios A/B is printed. Target: at most 1.1.

    python bench/matplotlib_cell.py [--runs 15]
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

CELL = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])"


def wall_time(command: list[str], stdin: bytes, env: dict[str, str]) -> float:
    """Seconds from start to exit of one run; fails loudly if the run fails."""
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, env=env, check=True)
    elapsed = time.perf_counter() - start
    if command[0].endswith("pyrelune"):
        response = json.loads(done.stdout)
        assert response["ok"] and response["outputs"][-1]["mime"] == "image/svg+xml", response
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="paired runs counted (default 15)")
    args = parser.parse_args()
    pyrelune = str(Path(sys.executable).parent / "pyrelune")
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # each its default
    with tempfile.TemporaryDirectory() as tmp:
        svg = os.path.join(tmp, "plot.svg")
        script = f"{CELL}\nplt.savefig({svg!r}, format='svg')"
        a = ([pyrelune], json.dumps({"source": CELL}).encode())
        b = ([sys.executable, "-c", script], b"")
        wall_time(*a, env)  # warm-up: font cache, page cache
        wall_time(*b, env)
        pairs = [(wall_time(*a, env), wall_time(*b, env)) for _ in range(args.runs)]
    ratios = [ta / tb for ta, tb in pairs]
    print(f"pyrelune cell : median {statistics.median(t for t, _ in pairs) * 1000:.1f} ms")
    print(f"plain script  : median {statistics.median(t for _, t in pairs) * 1000:.1f} ms")
    print(f"ratio         : median {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f}, {len(pairs)} pairs; target <= 1.1)")


if __name__ == "__main__":
    main()
