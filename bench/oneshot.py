"""Start-up cost of a oneshot cell, relative to the interpreter's own floor.

Runs, in turn (A B A B ...), a `print(2 + 3)` request through the installed
`pyrelune` command (stdin from a file, as a host's pipe would be) and
`python -c "import json"` on the same interpreter, and prints both medians
and their ratio. Pairing the runs keeps the ratio honest when the machine's
speed drifts. Target: a ratio of at most 1.1.

    python bench/oneshot.py [--quick] [--pairs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1.1
REQUEST = b'{"protocol": "vix-note-extension-1", "source": "print(2 + 3)"}'


def wall(command: list[str], stdin_path: str) -> float:
    """Seconds for one run of `command`, its stdin read from `stdin_path`."""
    with open(stdin_path, "rb") as stdin:
        start = time.perf_counter()
        subprocess.run(command, stdin=stdin, stdout=subprocess.DEVNULL, check=True)
        return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer pairs (for CI)")
    parser.add_argument("--pairs", type=int, default=None, help="paired runs to count")
    args = parser.parse_args()
    pairs = args.pairs or (15 if args.quick else 60)

    pyrelune = [str(Path(sys.executable).parent / "pyrelune")]
    floor = [sys.executable, "-c", "import json"]
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        f.write(REQUEST)
        request_path = f.name
    try:
        with open(request_path, "rb") as stdin:
            response = json.loads(subprocess.run(pyrelune, stdin=stdin, capture_output=True,
                                                 check=True).stdout)
        if response.get("stdout") != "5\n":
            print(f"unexpected response: {response}", file=sys.stderr)
            return 1
        for _ in range(3):  # warm the page cache and the bytecode
            wall(pyrelune, request_path)
            wall(floor, request_path)
        a_times, b_times, ratios = [], [], []
        for _ in range(pairs):
            a = wall(pyrelune, request_path)
            b = wall(floor, request_path)
            a_times.append(a)
            b_times.append(b)
            ratios.append(a / b)
    finally:
        Path(request_path).unlink()

    print(f"python {sys.version.split()[0]}, {pairs} pairs")
    print(f"pyrelune print(2 + 3):     median {statistics.median(a_times) * 1000:7.1f} ms")
    print(f"python -c 'import json':   median {statistics.median(b_times) * 1000:7.1f} ms")
    print(f"ratio (median of pairs):   {statistics.median(ratios):.3f}  (target <= {TARGET})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
