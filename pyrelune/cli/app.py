"""The full command line: kernel modes and the commands around the runtime.

Imported only when `pyrelune` gets arguments, because typer is slow to import.
"""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional, TypeVar

import typer

from pyrelune import __version__, settings
from pyrelune.cli import rpcargs
from pyrelune.cli.jupyter import app as jupyter_app
from pyrelune.cli.vix import app as vix_app
from pyrelune.cli.warm import app as warm_app

T = TypeVar("T")

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    help="Run Python notebook cells for host applications. With no arguments: "
    "read one vix-note-extension-1 request on stdin, write one response on stdout.",
)


class Mode(str, enum.Enum):
    oneshot = "oneshot"
    lines = "lines"
    rpc = "rpc"


def _rpc_option(param: str) -> Any:
    """The typer option for one of the rpc kernel's (`pyrelune.cli.rpcargs` has them all)."""
    option = rpcargs.OPTIONS[param]
    file = option.kind == rpcargs.FILE  # the checks apply to the Path parameters only
    return typer.Option(help=option.help, metavar=option.metavar, rich_help_panel=rpcargs.PANEL,
                        exists=file, dir_okay=not file)


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
        Optional[str],  # noqa: UP045 (typer reads the annotation at run time on 3.10)
        typer.Option(metavar="SECONDS", help="Seconds a cell may run (0: no limit). "
                     "Default: $PYRELUNE_TIMEOUT or 9."),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
    listen: Annotated[Optional[str], _rpc_option("listen")] = None,  # noqa: UP045
    token: Annotated[Optional[str], _rpc_option("token")] = None,  # noqa: UP045
    token_file: Annotated[Optional[Path], _rpc_option("token_file")] = None,  # noqa: UP045
    allow_origin: Annotated[
        Optional[list[str]], _rpc_option("allow_origin")] = None,  # noqa: UP045
    certfile: Annotated[Optional[Path], _rpc_option("certfile")] = None,  # noqa: UP045
    keyfile: Annotated[Optional[Path], _rpc_option("keyfile")] = None,  # noqa: UP045
    max_message_size: Annotated[
        Optional[str], _rpc_option("max_message_size")] = None,  # noqa: UP045
    auth_timeout: Annotated[Optional[str], _rpc_option("auth_timeout")] = None,  # noqa: UP045
    drain_timeout: Annotated[Optional[str], _rpc_option("drain_timeout")] = None,  # noqa: UP045
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    if mode is not Mode.oneshot and timeout is not None:
        raise typer.BadParameter("applies to oneshot mode only: a kernel's cells run until "
                                 "done or interrupted", param_hint="--timeout")
    rpc_values = {param: ctx.params[param] for param in rpcargs.OPTIONS}
    given = [rpcargs.OPTIONS[param].name for param, value in rpc_values.items() if value]
    if mode is not Mode.rpc and given:
        raise typer.BadParameter("applies to --mode rpc only", param_hint=given[0])
    if mode is Mode.lines:
        from pyrelune.modes import lines

        raise typer.Exit(lines.main())
    if mode is Mode.rpc:
        raise typer.Exit(_rpc(rpc_values))
    from pyrelune.modes import oneshot

    raise typer.Exit(oneshot.main(_timeout(timeout)))


def _setting(read: Callable[[], T]) -> T:
    """A setting read by its one rule (see `pyrelune.settings`); a bad one is a usage error."""
    try:
        return read()
    except settings.SettingError as exc:
        raise typer.BadParameter(str(exc)) from None


def _timeout(option: str | None) -> float | None:
    """`--timeout` in seconds, None when not given (the environment's or the default, then)."""
    if option is None:
        return None
    return _setting(lambda: settings.seconds("--timeout", option))


def _rpc(values: dict[str, Any]) -> int:
    from pyrelune.modes import rpc

    try:
        chosen = rpcargs.settings(values)
    except rpcargs.Usage as exc:
        raise typer.BadParameter(exc.message, param_hint=exc.hint) from None
    return rpc.main(chosen)


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
        Optional[str],  # noqa: UP045
        typer.Option(metavar="SECONDS", help="Seconds the cell may run (0: no limit)."),
    ] = None,
) -> None:
    """Run a file as a oneshot cell in its own directory and print the JSON response."""
    from pyrelune.modes import oneshot

    request = {"source": file.read_text(encoding="utf-8"), "cellId": file.name,
               "workingDirectory": str(file.resolve().parent)}
    response = oneshot.handle(json.dumps(request).encode(), _timeout(timeout))
    typer.echo(response.decode())
    raise typer.Exit(0 if json.loads(response)["ok"] else 1)


app.add_typer(vix_app, name="vix")
app.add_typer(warm_app, name="warm")
app.add_typer(jupyter_app, name="jupyter")


def run_app() -> None:
    app(prog_name="pyrelune")
