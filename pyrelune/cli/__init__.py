"""The `pyrelune` command line."""
