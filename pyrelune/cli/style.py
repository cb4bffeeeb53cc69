"""How every `pyrelune` command group is made, so that its help reads alike everywhere.

Plain text, as ipykernel's and uv's help: typer draws boxes when rich happens
to be installed in the environment (a notebook's often has it), and not
otherwise; its rich tracebacks are no help to a user of a command line.
"""

from __future__ import annotations

import typer


def group(help: str, no_args_is_help: bool = False) -> typer.Typer:
    """A typer app with pyrelune's help style (`no_args_is_help`: a group of subcommands)."""
    return typer.Typer(help=help, add_completion=False, rich_markup_mode=None,
                       pretty_exceptions_enable=False, no_args_is_help=no_args_is_help)
