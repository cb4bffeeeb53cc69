"""The full command line: kernel modes and the commands around the runtime.

Imported only when `pyrelune` gets arguments, because typer is slow to import.
"""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from pyrelune import __version__
from pyrelune.cli.vix import app as vix_app

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    help="Run Python notebook cells for host applications. With no arguments: "
    "read one vix-note-extension-1 request on stdin, write one response on stdout.",
)


class Mode(str, enum.Enum):
    oneshot = "oneshot"
    lines = "lines"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pyrelune {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    mode: Annotated[
        Mode, typer.Option(help="Which protocol to speak on stdin/stdout.")
    ] = Mode.oneshot,
    timeout: Annotated[
        Optional[float],  # noqa: UP045 (typer reads the annotation at run time on 3.10)
        typer.Option(help="Seconds a cell may run (0: no limit). Default: $PYRELUNE_TIMEOUT or 9."),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    if timeout is not None and timeout < 0:
        raise typer.BadParameter("must be >= 0", param_hint="--timeout")
    if mode is Mode.lines:
        if timeout is not None:
            raise typer.BadParameter("applies to oneshot mode only: a kernel's cells run until "
                                     "done or interrupted", param_hint="--timeout")
        from pyrelune.modes import lines

        raise typer.Exit(lines.main())
    from pyrelune.modes import oneshot

    raise typer.Exit(oneshot.main(timeout))


@app.command()
def validate(
    request: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Argument(help="A request file; stdin when omitted.", dir_okay=False, exists=True),
    ] = None,
) -> None:
    """Check a vix-note-extension-1 request against its schema without running it."""
    from pyrelune.protocols import vixnote

    raw = request.read_bytes() if request else sys.stdin.buffer.read()
    try:
        vixnote.parse_request(raw)
    except vixnote.Rejected as error:
        typer.echo(f"invalid ({error.code}): {error.message}", err=True)
        raise typer.Exit(1) from None
    typer.echo("valid")


@app.command()
def run(
    file: Annotated[Path, typer.Argument(help="A Python file to run as one cell.", dir_okay=False,
                                         exists=True)],
    timeout: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(help="Seconds the cell may run (0: no limit)."),
    ] = None,
) -> None:
    """Run a file as a oneshot cell in its own directory and print the JSON response."""
    from pyrelune.modes import oneshot

    request = {"source": file.read_text(encoding="utf-8"), "cellId": file.name,
               "workingDirectory": str(file.resolve().parent)}
    response = oneshot.handle(json.dumps(request).encode(), timeout)
    typer.echo(response.decode())
    raise typer.Exit(0 if json.loads(response)["ok"] else 1)


app.add_typer(vix_app, name="vix")


def run_app() -> None:
    app(prog_name="pyrelune")
