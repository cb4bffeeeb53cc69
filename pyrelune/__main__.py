"""`python -m pyrelune`: the same entrypoint as the `pyrelune` command."""

from pyrelune.cli.entry import main

main()
