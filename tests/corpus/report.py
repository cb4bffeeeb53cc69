"""Print how many corpus cells behave as in Jupyter, per mode, and what differs.

    python tests/corpus/report.py [--mode MODE ...] [--all]

Runs every notebook of cells.py under ipykernel (which must be installed,
with jupyter_client) and under pyrelune's modes (the installed package), as
the corpus test does. Lists the differences not in known.py, and the
entries of known.py that no longer hold (to remove after a merge); `--all`
lists the known differences too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: the harnesses

from support.modes import MODES

from corpus.cells import cells
from corpus.compare import Runs
from corpus.known import KNOWN


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", action="append", choices=MODES, help="only these modes")
    parser.add_argument("--all", action="store_true", help="list the known differences too")
    args = parser.parse_args()
    runs = Runs()
    for mode in args.mode or MODES:
        same = total = 0
        unexpected, stale, known = [], [], []
        for book, cell in cells():
            if mode == "oneshot" and not cell.alone:
                continue
            total += 1
            found = runs.differences(mode, book, cell)
            reason = KNOWN.get(cell.name, {}).get(mode)
            if not found:
                same += 1
                if reason is not None:
                    stale.append(f"  {cell.name}: matches now; remove from known.py ({reason})")
            elif reason is None:
                unexpected.append(f"  {cell.name}: " + "; ".join(found))
            else:
                known.append(f"  {cell.name}: {reason}\n      " + "; ".join(found))
        print(f"{mode}: {same}/{total} cells behave as in Jupyter ({100 * same / total:.0f}%)")
        for title, entries in (("not in known.py", unexpected), ("stale known.py entries", stale),
                               *([("known", known)] if args.all else [])):
            if entries:
                print(f" {title}:")
                print("\n".join(entries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
