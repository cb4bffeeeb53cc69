"""`pyrelune vix ...`: register pyrelune with Vix Note, remove it, check it.

Thin wrappers: the work is in `pyrelune.vix`.
"""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from pyrelune.cli.style import group

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyrelune.vix.install import Plan, Target
    from pyrelune.vix.places import Places

app = group("Use pyrelune as Vix Note's Python runtime.", no_args_is_help=True)

Prefix = Annotated[
    Optional[Path],  # noqa: UP045 (typer reads the annotation at run time on 3.10)
    typer.Option(help="Vix's global prefix. Default: $VIX_GLOBAL_PREFIX, else ~/.vix/global.",
                 file_okay=False),
]
Project = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(help="A Vix project folder: use its .vix/deps/ instead of the global prefix.",
                 file_okay=False),
]
ExtensionId = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--id", help="Extension id (owner/name). Default: the one in extension.json."),
]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Print what would be written; change nothing.")
]


def _target(package_id: str | None, warm: str) -> Target:
    from pyrelune.vix import descriptor, install

    loaded = descriptor.load()
    chosen = package_id or loaded["id"]
    descriptor.split_id(chosen)
    return install.Target(chosen, install.interpreter(), loaded, warm=warm)


def show_plan(plan: Plan, dry_run: bool) -> None:
    """Print the plan (`--dry-run`) or carry it out and say what was done."""
    from pyrelune.vix import install

    if dry_run:
        for change in plan.changes:
            typer.echo(change.describe())
            if change.action == "write":
                typer.echo(change.data.decode().rstrip("\n"))
        if not plan.changes:
            typer.echo("nothing would change")
    else:
        for line in install.apply(plan):
            typer.echo(line)
    for note in plan.notes:
        typer.echo(note, err=True)


def _carry_out(
    prefix: Path | None, project: Path | None, package_id: str | None, dry_run: bool,
    make_plan: Callable[[Places, Path | None, Target], Plan], warm: str = "1",
) -> tuple[Target, Plan]:
    """Plan under the global lock (projects need none), then apply or print the plan."""
    from pyrelune.vix import descriptor, install
    from pyrelune.vix.places import Places

    if project is None and prefix is None and not _home() and not os.environ.get(
            "VIX_GLOBAL_PREFIX"):
        raise fail(ValueError("HOME is not set, so Vix Note would look for its global prefix "
                               "in .vix/global under whatever folder `vix note` starts in: set "
                               "HOME, or choose the prefix with --prefix or VIX_GLOBAL_PREFIX"))
    places = Places.from_env(prefix)
    try:
        target = _target(package_id, warm)
        where = project.absolute() if project is not None else None
        with install.global_lock(places, dry_run) if where is None else nullcontext():
            plan = make_plan(places, where, target)
            show_plan(plan, dry_run)
    except BrokenPipeError:
        raise  # stdout was closed (`| head`): the reader has what it wanted, as with any tool
    except (install.InstallError, descriptor.InvalidDescriptor, OSError) as error:
        raise fail(error) from None
    return target, plan


def _home() -> str:
    """$HOME as Vix Note reads it (no password-database fallback); empty when unset."""
    return os.environ.get("HOME", "")


def fail(error: Exception | str) -> typer.Exit:
    """Say why on stderr; the exit (status 1) to raise."""
    typer.echo(f"error: {error}", err=True)
    return typer.Exit(1)


@app.command("install")
def install_command(
    prefix: Prefix = None, project: Project = None, package_id: ExtensionId = None,
    dry_run: DryRun = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Move aside (as .bak) a malformed installed.json or vix.json, or a "
        "launcher pyrelune did not write, instead of stopping.")] = False,
    enable: Annotated[bool, typer.Option(
        "--enable", help="Remove the extension from Vix Note's disabled list.")] = False,
    warm: Annotated[bool, typer.Option(
        "--warm/--cold", help="Warm start, on unless --cold: cells are served by a process "
        "that has preloaded the data stack (started by the first cell, which runs cold, and "
        "gone after 10 idle minutes). $PYRELUNE_WARM, where Vix Note runs, wins over either.")
    ] = True,
    preload: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="The modules warm start preloads, comma-separated. Default: those "
                     "of numpy, pandas and matplotlib that are installed.")] = None,
) -> None:
    """Register this pyrelune (this Python environment) with Vix Note."""
    from pyrelune.vix import install

    def make_plan(places: Places, where: Path | None, target: Target) -> Plan:
        if where is None:
            return install.plan_global_install(places, target, force, enable)
        return install.plan_project_install(where, places, target, force, enable)

    from pyrelune.vix import fonts, warmth
    from pyrelune.vix.discovery import RELOAD

    if preload is not None and not warm:
        raise fail(ValueError("--preload names what warm start preloads, and --cold turns "
                               "warm start off: leave out one of them"))
    if enable and not _home():
        raise fail(ValueError("--enable edits Vix Note's list of disabled extensions, "
                               "~/.vix/note/extensions.json, and HOME is not set"))
    names = _preload_names(preload) if preload else None
    if names and (missing := _missing_modules(names)):
        raise fail(ValueError(f"--preload: {', '.join(missing)} cannot be imported by "
                               f"{sys.executable}: install {'them' if len(missing) > 1 else 'it'}"
                               " into this environment, or leave it out"))
    setting = (names or "1") if warm else "0"
    target, plan = _carry_out(prefix, project, package_id, dry_run, make_plan, setting)
    if not plan.changes:
        typer.echo(f"{target.package_id} {target.version} is already installed: nothing changed")
    if not dry_run:
        for line in warmth.summary(setting):
            typer.echo(line)
    if not dry_run and (cache := fonts.prepare()) is not None:  # not at the first plot
        typer.echo(cache.describe())
    if plan.changes and not dry_run:
        where = f" --project {project}" if project else ""
        typer.echo(f"{RELOAD}.")
        typer.echo(f"check it with: pyrelune vix doctor{where}")


def _preload_names(preload: str) -> str:
    """The modules `--preload` names, by the rule of PYRELUNE_WARM (see `warm.gate`)."""
    from pyrelune.settings import SettingError
    from pyrelune.warm.gate import DEFAULT_PRELOAD, preload_names

    try:
        return preload_names(preload, "--preload") or DEFAULT_PRELOAD
    except SettingError as exc:
        raise fail(exc) from None


def _missing_modules(preload: str) -> list[str]:
    """The names in a preload list that no module of this environment answers to."""
    import importlib.util

    missing = []
    for name in preload.split(","):
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent package that is missing, or no name
            found = False
        if not found:
            missing.append(name)
    return missing


@app.command("uninstall")
def uninstall_command(
    prefix: Prefix = None, project: Project = None, package_id: ExtensionId = None,
    dry_run: DryRun = False,
) -> None:
    """Remove exactly what `pyrelune vix install` added."""
    from pyrelune.vix import install

    def make_plan(places: Places, where: Path | None, target: Target) -> Plan:
        if where is None:
            return install.plan_global_uninstall(places, target)
        return install.plan_project_uninstall(where, target)

    target, plan = _carry_out(prefix, project, package_id, dry_run, make_plan)
    if not [c for c in plan.changes if c.action != "rmdir"]:
        typer.echo(f"{target.package_id} was not installed: nothing removed")


@app.command("doctor")
def doctor_command(prefix: Prefix = None, project: Project = None,
                   package_id: ExtensionId = None) -> None:
    """Check the installation as Vix Note sees it.

    Then run a real cell through it, started exactly as Vix Note starts one.
    """
    from pyrelune.vix import descriptor, doctor
    from pyrelune.vix.places import Places

    try:
        chosen = package_id or descriptor.load()["id"]
        descriptor.split_id(chosen)
    except descriptor.InvalidDescriptor as error:
        raise fail(error) from None
    checks = doctor.check(Places.from_env(prefix), chosen,
                          project.absolute() if project else None)
    from pyrelune.vix.discovery import RELOAD

    for item in checks:
        typer.echo(item.line())
    passed = all(c.passed for c in checks)
    if passed:
        typer.echo(f"note: {RELOAD}.")
    raise typer.Exit(0 if passed else 1)
