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
from pyrelune.cli.style import group
from pyrelune.cli.vix import app as vix_app
from pyrelune.cli.warm import app as warm_app
from pyrelune.modes.oneshot import DEFAULT_TIMEOUT
from pyrelune.wire.events import PYTHON_EXIT, PYTHON_RUNTIME_ERROR, PYTHON_SYNTAX_ERROR, TIMEOUT

T = TypeVar("T")

app = group(
    "Run Python notebook cells for host applications.\n\n"
    "With no arguments, pyrelune is Vix Note's runtime: one request (JSON) on stdin, one "
    "response on stdout.",
)


class Mode(str, enum.Enum):
    oneshot = "oneshot"
    lines = "lines"
    rpc = "rpc"
    jupyter = "jupyter"


def _rpc_option(param: str) -> Any:
    """The typer option for one of the rpc kernel's (`pyrelune.cli.rpcargs` has them all)."""
    option = rpcargs.OPTIONS[param]
    file = option.kind == rpcargs.FILE  # the checks apply to the Path parameters only
    return typer.Option(help=option.help, metavar=option.metavar, exists=file,
                        dir_okay=not file)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pyrelune {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    mode: Annotated[
        Mode, typer.Option(metavar="MODE",
                           help="The protocol spoken: oneshot (one Vix Note request on stdin), "
                           "lines or rpc (a persistent kernel on stdin and stdout), jupyter "
                           "(a Jupyter kernel, with -f CONNECTION_FILE).")
    ] = Mode.oneshot,
    timeout: Annotated[
        Optional[str],  # noqa: UP045 (typer reads the annotation at run time on 3.10)
        typer.Option(metavar="SECONDS", help="oneshot: seconds a cell may run (0: no limit). "
                     f"Default: $PYRELUNE_TIMEOUT, else {DEFAULT_TIMEOUT:g}."),
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
    connection_file: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--connection-file", "-f", metavar="FILE", rich_help_panel="Jupyter kernel",
                     help="--mode jupyter: the connection file a Jupyter front end wrote "
                     "(a kernelspec passes {connection_file})."),
    ] = None,
    shell: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="SHELL", help="What runs the cells: ipython (IPython's own "
                     "shell: the jupyter mode's default) or plain (pyrelune's: the other "
                     "modes'). Default: $PYRELUNE_SHELL, else the mode's."),
    ] = None,
    no_snapshots: Annotated[
        bool,
        typer.Option("--no-snapshots", help="The kernel keeps no snapshot of the namespace, "
                     "and a lost worker costs it (as PYRELUNE_SNAPSHOTS=0; see docs/limits.md)."),
    ] = False,
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
    if (mode is Mode.jupyter) != (connection_file is not None):
        raise typer.BadParameter("--mode jupyter and --connection-file go together",
                                 param_hint="--connection-file")
    if shell is not None:
        _setting(lambda: settings.shell(settings.PLAIN, shell))  # a bad one: a usage error
    if no_snapshots:
        if mode is Mode.oneshot:
            raise typer.BadParameter("applies to a kernel: oneshot keeps no namespace",
                                     param_hint="--no-snapshots")
        import os

        os.environ["PYRELUNE_SNAPSHOTS"] = "0"  # read where each mode reads its settings
    if mode is Mode.jupyter:
        from pyrelune.modes import jupyter

        raise typer.Exit(jupyter.main(str(connection_file), shell))
    if mode is Mode.lines:
        from pyrelune.modes import lines

        raise typer.Exit(lines.main(shell))
    if mode is Mode.rpc:
        raise typer.Exit(_rpc({**rpc_values, "shell": shell}))
    from pyrelune.modes import oneshot

    if shell is not None:  # the worker reads it there, as it reads PYRELUNE_SHELL
        import os

        os.environ["PYRELUNE_SHELL"] = shell.strip()
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
        typer.Argument(help="A file holding one vix-note-extension-1 request (JSON); "
                       "stdin when omitted.", dir_okay=False, exists=True),
    ] = None,
) -> None:
    """Check a Vix Note request without running it.

    The request is read as `pyrelune` reads one. Prints "valid", or what is wrong (with
    status 1).
    """
    from pyrelune.protocols import vixnote

    raw = request.read_bytes() if request else sys.stdin.buffer.read()
    try:
        vixnote.parse_request(raw)
    except vixnote.Rejected as error:
        typer.echo(f"invalid ({error.code}): {error.message}", err=True)
        raise typer.Exit(1) from None
    typer.echo("valid")


@app.command(context_settings={"ignore_unknown_options": True,
                               "allow_interspersed_args": False})
def run(
    file: Annotated[Path, typer.Argument(
        dir_okay=False, exists=True, show_default=False,
        help="A Python file, or a notebook (.ipynb).")],
    args: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Argument(metavar="[ARGS]...", show_default=False,
                       help="What the code finds in sys.argv after FILE's name.")] = None,
    timeout: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="SECONDS", help="Seconds a Python file may run (0: no limit). "
                     f"Default: $PYRELUNE_TIMEOUT, else {DEFAULT_TIMEOUT:g}."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="A Python file: print the JSON response Vix Note "
                           "would get, instead of the output as text."),
    ] = False,
) -> None:
    """Run a Python file or a notebook; print its output.

    FILE runs in its own folder with sys.argv set to FILE's name and ARGS, as
    `python FILE ARGS...` would there. A Python file runs as Vix Note runs a
    cell; its output and any error are printed as text (the response itself
    with --json). A notebook (.ipynb) runs its code cells in order in one
    namespace, its output printed as it comes, and stops at the first cell
    that fails. The status is 1 when the code failed.
    """
    argv = [file.name, *(args or [])]
    if file.suffix == ".ipynb":
        if as_json:
            raise typer.BadParameter("applies to a Python file: a notebook's output is printed "
                                     "as it comes", param_hint="--json")
        raise typer.Exit(_run_notebook(file, argv, timeout))
    from pyrelune.modes import oneshot

    try:
        source = file.read_text(encoding="utf-8-sig")  # as Python reads a script, BOM or not
    except UnicodeDecodeError as exc:
        raise typer.BadParameter(f"{file} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                                 param_hint="FILE") from None
    request = {"source": source, "cellId": file.name,
               "workingDirectory": str(file.resolve().parent)}
    deadline = _timeout(timeout)
    sys.argv = argv  # the worker, forked from here, starts with it
    # A terminal shows text: each display's text form, as the notebook's run prints it.
    response = oneshot.handle(json.dumps(request).encode(), deadline,
                              order=None if as_json else ("text/plain",))
    answer = json.loads(response)
    if as_json:
        typer.echo(response.decode(), nl=False)
    else:
        out, err = as_text(answer)
        sys.stdout.write(out)
        sys.stdout.flush()
        sys.stderr.write(err)
    raise typer.Exit(0 if answer["ok"] else 1)


def as_text(response: dict[str, Any]) -> tuple[str, str]:
    """A vix-note-extension-1 response as a terminal shows a script's run: (stdout, stderr).

    On stdout, Vix Note's order: the `stdout` string, then each output (text, after the first
    display), each ending its line as `print` would. On stderr the `stderr` string, then a
    failure's traceback and, where its last line does not say it already (a timeout, a
    refused request), the error's summary.
    """
    out = [response["stdout"]]
    out += [data if data.endswith("\n") else f"{data}\n"
            for data in (item["data"] for item in response["outputs"]) if data]
    err = [response["stderr"]]
    if not response["ok"]:
        error = response["error"]
        err.append(error["details"])
        if not error["details"] or error["code"] not in _SAID_BY_TRACEBACK:
            summary = error["message"].split("\n\n")[0]  # the advice below it is Vix Note's
            if error["code"] == TIMEOUT:
                summary += " (--timeout SECONDS allows more; 0: no limit)"
            err.append(f"{summary}\n")
    return "".join(out), "".join(err)


#: The failures whose traceback ends with what the summary says (`NameError: ...`).
_SAID_BY_TRACEBACK = (PYTHON_RUNTIME_ERROR, PYTHON_SYNTAX_ERROR, PYTHON_EXIT)


def _run_notebook(file: Path, argv: list[str], timeout: str | None) -> int:
    import os

    from pyrelune.cli import notebook
    from pyrelune.transports import stdio

    if timeout is not None:
        raise typer.BadParameter("applies to a Python file: a notebook's cells run until done "
                                 "(Ctrl-C stops them)", param_hint="--timeout")
    try:
        sources = notebook.code_cells(file.read_bytes())
    except notebook.NotANotebook as exc:
        typer.echo(f"error: {file}: {exc}", err=True)
        return 2
    os.chdir(file.resolve().parent)
    sys.argv = argv  # the kernel's worker, forked from here, starts with it
    return notebook.run(sources,
                        lambda fd, text: stdio.write_all(text.encode("utf-8", "replace"), fd))


app.add_typer(vix_app, name="vix")
app.add_typer(warm_app, name="warm")
app.add_typer(jupyter_app, name="jupyter")


def run_app() -> None:
    app(prog_name="pyrelune")
