"""The full command line: kernel modes and the commands around the runtime.

Imported only when `pyrelune` gets arguments, because typer is slow to import.
"""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional, TypeVar

import typer

from pyrelune import __version__, settings
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
    listen: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="rpc: serve WebSocket on HOST:PORT (port 0: any free port; the "
                     "address is printed as one JSON line on stdout). Default host 127.0.0.1.",
                     rich_help_panel="rpc kernel"),
    ] = None,
    token: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="rpc over WebSocket: the secret clients send with kernel.auth "
                     "(visible to other users in the process list: prefer --token-file or "
                     "$PYRELUNE_TOKEN).", rich_help_panel="rpc kernel"),
    ] = None,
    token_file: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="rpc over WebSocket: read the token from this file.", dir_okay=False,
                     exists=True, rich_help_panel="rpc kernel"),
    ] = None,
    allow_origin: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(help="rpc over WebSocket: a browser Origin allowed to connect "
                     "(repeatable; by default only clients that send no Origin).",
                     rich_help_panel="rpc kernel"),
    ] = None,
    certfile: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="rpc over WebSocket: serve TLS (wss://) with this certificate chain.",
                     dir_okay=False, exists=True, rich_help_panel="rpc kernel"),
    ] = None,
    keyfile: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="rpc over WebSocket: the certificate's private key, if not in "
                     "--certfile.", dir_okay=False, exists=True, rich_help_panel="rpc kernel"),
    ] = None,
    max_message_size: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="BYTES", help="rpc: largest request (line or frame) in bytes. "
                     "[default: 16 MiB]", rich_help_panel="rpc kernel"),
    ] = None,
    auth_timeout: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="SECONDS", help="rpc over WebSocket with a token: seconds a client "
                     "has to send kernel.auth before it is disconnected (it holds the kernel's "
                     "only connection meanwhile). [default: 10]", rich_help_panel="rpc kernel"),
    ] = None,
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    if mode is not Mode.oneshot and timeout is not None:
        raise typer.BadParameter("applies to oneshot mode only: a kernel's cells run until "
                                 "done or interrupted", param_hint="--timeout")
    rpc_only = {"--listen": listen, "--token": token, "--token-file": token_file,
                "--allow-origin": allow_origin, "--certfile": certfile, "--keyfile": keyfile,
                "--auth-timeout": auth_timeout, "--max-message-size": max_message_size}
    given = [name for name, value in rpc_only.items() if value]
    if mode is not Mode.rpc and given:
        raise typer.BadParameter("applies to --mode rpc only", param_hint=given[0])
    if mode is Mode.lines:
        from pyrelune.modes import lines

        raise typer.Exit(lines.main())
    if mode is Mode.rpc:
        raise typer.Exit(_rpc(listen, token, token_file, allow_origin or [], certfile, keyfile,
                              max_message_size, auth_timeout))
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


def _rpc(
    listen: str | None,
    token: str | None,
    token_file: Path | None,
    allow_origin: list[str],
    certfile: Path | None,
    keyfile: Path | None,
    max_message_size: str | None,
    auth_timeout: str | None,
) -> int:
    import os

    from pyrelune.modes import rpc

    if listen is None and (token is not None or token_file is not None):
        raise typer.BadParameter("a token is for WebSocket kernels: add --listen",
                                 param_hint="--token")
    if token is None and token_file is not None:
        token = token_file.read_text(encoding="utf-8").strip()
    if token is None and listen is not None:
        token = os.environ.get("PYRELUNE_TOKEN") or None
    try:
        address = rpc.parse_listen(listen) if listen is not None else None
    except rpc.ConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint="--listen") from None
    max_message = rpc.DEFAULT_MAX_MESSAGE if max_message_size is None else _setting(
        lambda: settings.byte_count("--max-message-size", max_message_size))
    wait = rpc.AUTH_TIMEOUT if auth_timeout is None else _setting(
        lambda: settings.seconds("--auth-timeout", auth_timeout, minimum=0.1))
    return rpc.main(rpc.Settings(
        listen=address, token=token, allow_origins=tuple(allow_origin),
        certfile=str(certfile) if certfile else None, keyfile=str(keyfile) if keyfile else None,
        max_message=max_message, max_output=_setting(lambda: settings.max_output(None)),
        auth_timeout=wait,
    ))


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


def run_app() -> None:
    app(prog_name="pyrelune")
