"""The Jupyter kernel's command line, read without typer: a front end waits for the kernel.

`pyrelune --mode jupyter -f CONNECTION_FILE`, as a kernelspec's argv has it
(`--connection-file` too, `=VALUE` forms, any order). Anything else goes to
the full command line, which says what is wrong.
"""

from __future__ import annotations

from pyrelune.cli.rpcargs import pairs


def read(args: list[str]) -> tuple[str, str | None] | None:
    """The connection file and the `--shell` (None without one), if `args` are exactly
    `--mode jupyter`, one connection file and at most one `--shell`."""
    options = pairs(args)
    if options is None:
        return None
    mode = path = shell = None
    for name, value in options:
        if name == "--mode" and mode is None:
            mode = value
        elif name in ("-f", "--connection-file") and path is None and value:
            path = value
        elif name == "--shell" and shell is None:
            shell = value
        else:
            return None
    return (path, shell) if mode == "jupyter" and path is not None else None
