"""`pyrelune warm ...`: start, inspect and stop the warm process (see pyrelune.warm)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from pyrelune.cli.style import group

app = group("Warm start: oneshot cells served by a preloaded process.\n\nIt serves them "
            "when `vix install`'s launcher (unless --cold) or PYRELUNE_WARM turns it on.",
            no_args_is_help=True)

Preload = Annotated[
    Optional[str],  # noqa: UP045 (typer reads the annotation at run time on 3.10)
    typer.Option(metavar="MODULES", help="Modules it preloads, comma-separated (each list has "
                 "a warm process of its own). Default: $PYRELUNE_WARM, else "
                 "numpy,pandas,matplotlib."),
]


def _preload(preload: str | None) -> str:
    """The preload list `--preload` names, else $PYRELUNE_WARM's; a bad one is a usage error."""
    from pyrelune.settings import SettingError
    from pyrelune.warm import control
    from pyrelune.warm.gate import DEFAULT_PRELOAD, preload_names

    try:
        return (preload_names(preload, "--preload") or DEFAULT_PRELOAD) if preload else (
            control.setting())
    except SettingError as exc:
        raise typer.BadParameter(str(exc)) from None


def describe(found: dict[str, object]) -> str:
    """The status as lines for a person."""
    mib = 1 << 20
    preloaded = ", ".join(found["preloaded"]) or "nothing"  # type: ignore[arg-type]
    rss, private = found["rss"], found["private"]
    assert isinstance(rss, int) and isinstance(private, int)
    return (f"running: pid {found['pid']} ({found['python']})\n"
            f"preloaded: {preloaded} (asked: {found['preload']})\n"
            f"memory: {rss / mib:.0f} MiB resident, {private / mib:.0f} MiB its own (PSS, with "
            "its spare child and the worker it forked ahead)\n"
            f"idle: {found['idle']} s (exits after {found['idle_timeout']} s idle), "
            f"cells served: {found['served']}")


@app.command("status")
def status_command(preload: Preload = None) -> None:
    """Say whether the warm process runs.

    And if it does, its pid, preloaded modules, memory and idle time.
    """
    from pyrelune.warm import control

    chosen = _preload(preload)
    found = control.status(chosen)
    if found is None:
        failure = control.failure(chosen)
        typer.echo("not running" if failure is None else f"not running: {failure}")
        raise typer.Exit(1)
    typer.echo(describe(found))


@app.command("start")
def start_command(preload: Preload = None) -> None:
    """Start the warm process and wait until it serves.

    The first warm cell starts it by itself.
    """
    from pyrelune.warm import control, place

    try:
        found = control.start(_preload(preload))
    except (place.Unsafe, control.NotStarted) as refusal:
        typer.echo(f"not started: {refusal}", err=True)
        raise typer.Exit(1) from None
    typer.echo(describe(found))


@app.command("stop")
def stop_command(preload: Preload = None) -> None:
    """Stop the warm process.

    Cells run cold until the next one starts it again.
    """
    from pyrelune.warm import control

    pid = control.stop(_preload(preload))
    typer.echo("not running" if pid is None else f"stopped pid {pid}")
