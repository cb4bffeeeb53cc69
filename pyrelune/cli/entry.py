"""The `pyrelune` console script.

With no arguments it is Vix Note's oneshot runtime, and nothing but that
path is imported. Any argument hands over to the full command line (typer).
"""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) == 1:
        from pyrelune.modes import oneshot

        sys.exit(oneshot.main())
    from pyrelune.cli.app import run_app

    run_app()
