"""How every `pyrelune` command group is made, so that its help reads alike everywhere.

Plain text, as ipykernel's and uv's help: typer draws boxes when rich happens
to be installed in the environment (a notebook's often has it), and not
otherwise; its rich tracebacks are no help to a user of a command line.
"""

from __future__ import annotations

import inspect
from typing import Any

import click
import typer

#: A mistyped command gets one "Did you mean 'jupyter'?": click suggests a close name itself
#: from 8.4 on (its NoSuchCommand), and typer from 0.20 on adds its own to the same message
#: unless told not to (`suggest_commands`, which older typers do not take).
_ONE_SUGGESTION: dict[str, Any] = ({"suggest_commands": False}
                   if hasattr(click.exceptions, "NoSuchCommand")
                   and "suggest_commands" in inspect.signature(typer.Typer).parameters else {})


def group(help: str, no_args_is_help: bool = False) -> typer.Typer:
    """A typer app with pyrelune's help style (`no_args_is_help`: a group of subcommands)."""
    return typer.Typer(help=help, add_completion=False, rich_markup_mode=None,
                       pretty_exceptions_enable=False, no_args_is_help=no_args_is_help,
                       **_ONE_SUGGESTION)
