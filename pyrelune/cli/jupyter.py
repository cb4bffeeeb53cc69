"""`pyrelune jupyter ...`: list pyrelune among Jupyter's kernels, or remove it.

Thin wrappers: the work is in `pyrelune.jupyter.kernelspec`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from pyrelune.cli.style import group

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyrelune.jupyter.kernelspec import Place
    from pyrelune.vix.install import Plan

app = group("Use pyrelune as a Jupyter kernel.", no_args_is_help=True)

User = Annotated[bool, typer.Option(
    "--user", help="This user's Jupyter data folder (the default).")]
#: Install's; uninstall's says what it removes (see `uninstall_command`).
SysPrefix = Annotated[bool, typer.Option(
    "--sys-prefix", help="This Python environment's share/jupyter (sys.prefix), for front "
    "ends installed here; the kernelspec then also names pyrelune's provisioner, which "
    "starts the kernel about 90 ms sooner.")]
Prefix = Annotated[
    Optional[str],  # noqa: UP045 (typer reads the annotation at run time on 3.10)
    typer.Option(metavar="PREFIX", help="PREFIX/share/jupyter (Jupyter reads it when "
                 "JUPYTER_PATH names it, or when it is Jupyter's own prefix)."),
]
Name = Annotated[str, typer.Option(
    help="The kernel's folder name, by which `jupyter kernelspec list` and "
    "`--kernel` know it.")]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Print what would be written; change nothing.")
]


def _carry_out(user: bool, sys_prefix: bool, prefix: str | None, name: str, dry_run: bool,
               make_plan: Callable[[Place, str], Plan]) -> Plan:
    from pyrelune.cli.vix import fail, show_plan
    from pyrelune.jupyter import kernelspec

    try:
        where = kernelspec.place(user, sys_prefix, prefix)
        plan = make_plan(where, kernelspec.kernel_name(name))
        show_plan(plan, dry_run)
    except kernelspec.KernelspecError as error:
        raise fail(error) from None
    except PermissionError as error:
        raise fail(f"cannot change {error.filename}: permission denied; use --user, or a "
                    "--prefix you can write") from None
    except OSError as error:
        raise fail(f"cannot change {error.filename}: {error.strerror}") from None
    return plan


@app.command("install")
def install_command(
    user: User = False, sys_prefix: SysPrefix = False, prefix: Prefix = None,
    name: Name = "pyrelune",
    display_name: Annotated[str, typer.Option(
        help="The name front ends show in their kernel pickers.")] = "Python (pyrelune)",
    env: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(metavar="NAME=VALUE", help="An environment variable the kernel is "
                     "started with (repeat for more)."),
    ] = None,
    provisioner: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="distributed|kubernetes|docker", help="Run the kernel elsewhere "
                     "through gateway_provisioners' provisioner of that name: distributed (SSH "
                     "to --remote-hosts) runs pyrelune's launcher there; kubernetes and docker "
                     "run --image, whose kernel is pyrelune's launcher (docs/remote.md)."),
    ] = None,
    remote_hosts: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="HOST,...", help="With --provisioner distributed: the hosts, "
                     "comma-separated."),
    ] = None,
    remote_python: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="PATH", help="With --provisioner distributed: the Python, with "
                     "pyrelune's jupyter and remote extras, on the remote hosts (default: this "
                     "one's path)."),
    ] = None,
    image: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="IMAGE", help="With --provisioner kubernetes or docker: the "
                     "image the kernel runs in (built from docker/Dockerfile)."),
    ] = None,
    dry_run: DryRun = False,
) -> None:
    """List pyrelune among Jupyter's kernels (a kernelspec).

    The kernelspec starts pyrelune with this Python, whichever environment is active.
    """
    from pyrelune.jupyter import kernelspec
    from pyrelune.vix.install import interpreter

    def make_plan(where: Place, chosen: str) -> Plan:
        kernelspec.remote_options(provisioner, remote_hosts, remote_python, image)
        kernel = kernelspec.spec(interpreter(), display_name, kernelspec.parse_env(env or []),
                                 provisioner is None and kernelspec.provisioned(where))
        files: dict[str, bytes] = {}
        if provisioner == "distributed":
            assert remote_hosts is not None  # remote_options said so
            kernel = kernelspec.distributed(kernel, remote_hosts,
                                            remote_python or interpreter())
        elif provisioner is not None:
            assert image is not None  # remote_options said so
            kernel, files = kernelspec.container(kernel, provisioner, image, interpreter(),
                                                 where.kernels / chosen)
        return kernelspec.plan_install(where, chosen, kernel, files)

    plan = _carry_out(user, sys_prefix, prefix, name, dry_run, make_plan)
    where = kernelspec.place(user, sys_prefix, prefix)
    if not plan.changes:
        typer.echo(f"kernel {name.lower()} is already installed in {where.kernels}: "
                   "nothing changed")
    notes = [kernelspec.path_note(where), kernelspec.extra_note()]
    if provisioner is not None:
        notes.append(kernelspec.provisioner_note(provisioner))
    for note in notes:
        if note is not None:
            typer.echo(note, err=True)
    if not dry_run:
        typer.echo(kernelspec.next_step(display_name, name.lower()))


@app.command("uninstall")
def uninstall_command(
    user: User = False,
    sys_prefix: Annotated[bool, typer.Option(
        "--sys-prefix", help="This Python environment's share/jupyter (sys.prefix): "
        "where `install --sys-prefix` wrote it.")] = False,
    prefix: Prefix = None,
    name: Name = "pyrelune",
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print what would be removed; change nothing.")] = False,
) -> None:
    """Remove the kernelspec that `pyrelune jupyter install` wrote.

    Nothing else: a kernelspec of that name that pyrelune did not write is left in place.
    """
    from pyrelune.jupyter import kernelspec

    plan = _carry_out(user, sys_prefix, prefix, name, dry_run, kernelspec.plan_uninstall)
    if not plan.changes:
        where = kernelspec.place(user, sys_prefix, prefix)
        typer.echo(f"kernel {name.lower()} was not installed in {where.kernels}: nothing removed")

