"""The kernelspec `pyrelune jupyter install` writes, and the folder Jupyter finds it in.

Jupyter's front ends (JupyterLab, Notebook, VS Code, nbclient) list the kernels
they can start from `<data dir>/kernels/<name>/kernel.json` under each folder of
Jupyter's data path. The folders are resolved here by jupyter_core's rules so
that no Jupyter package is needed to install; planning is separate from writing
(see `pyrelune.vix.install.Plan`) so `--dry-run` prints exactly what would change.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyrelune import PyreluneError, __version__
from pyrelune.vix import jsonfile
from pyrelune.vix.install import Change, Plan

NAME = "pyrelune"
DISPLAY_NAME = "Python (pyrelune)"
KERNEL_JSON = "kernel.json"
#: Interrupts come as `interrupt_request` on the control channel. The supervisor
#: never runs user code, so the message is always read and escalated (SIGINT, then
#: the worker's replacement) as the other modes do; it also works when the front
#: end cannot signal the kernel (a remote kernel behind a gateway). In signal mode
#: jupyter_client signals the kernel's whole process group, the worker and the
#: cell's own subprocesses included, bypassing that escalation.
INTERRUPT_MODE = "message"
#: The transport encryption the kernel offers (JEP 145): a front end that requires it
#: (jupyter_client's `transport_encryption="required"`) starts only a kernelspec saying so.
SUPPORTED_ENCRYPTION = ("curve",)
#: Where kernel.json says it was written by pyrelune (uninstall removes only those).
MARK = "pyrelune"
#: The provisioner's entry point (`jupyter_client.kernel_provisioners` in pyproject.toml)
#: and where kernel.json names it.
PROVISIONER = "pyrelune-provisioner"
PROVISIONER_KEY = "kernel_provisioner"
#: gateway_provisioners' provisioner over SSH (`--provisioner distributed`).
DISTRIBUTED = "distributed-provisioner"
#: `--provisioner` values: what the Jupyter server's environment needs to run the kernelspec
#: (modules, and the pip requirement that brings them).
PROVISIONERS = {
    "distributed": (("gateway_provisioners",), "gateway-provisioners"),
    "kubernetes": (("gateway_provisioners", "kubernetes", "jinja2"),
                   "gateway-provisioners[k8s]"),
    "docker": (("gateway_provisioners", "docker"), "gateway-provisioners[docker]"),
}


@dataclass(frozen=True)
class Container:
    """A gateway_provisioners provisioner that runs the kernel in a container: its name, its
    kernel-launchers folder, and the scripts its kernelspec tool copies into the kernelspec's
    `scripts/` (the first is what the argv runs, beside the Jupyter server, to start the
    image; the image's CMD then runs pyrelune's launcher: docker/Dockerfile)."""

    provisioner_name: str
    launchers: str
    scripts: tuple[str, ...]


#: `--provisioner kubernetes` and `--provisioner docker`.
CONTAINERS = {
    "kubernetes": Container("kubernetes-provisioner", "kubernetes",
                            ("launch_kubernetes.py", "kernel-pod.yaml.j2")),
    "docker": Container("docker-provisioner", "docker", ("launch_docker.py",)),
}
#: The provisioners' placeholders the launcher takes, in the order their kernelspecs give them.
PLACEHOLDERS = ("kernel_id", "port_range", "response_address", "public_key",
                "transport_encryption")
#: jupyter_client's rule for kernel names (it lowercases them when it lists them).
_VALID_NAME = re.compile(r"^[a-z0-9._\-]+$")
#: jupyter_core's spellings of "off" for a boolean variable.
_OFF = ("no", "n", "false", "off", "0", "0.0")


class KernelspecError(PyreluneError):
    """Why nothing was changed, worded for the user, with the way out."""


@dataclass(frozen=True)
class Place:
    """A folder of Jupyter's data path chosen on the command line, and how it was named."""

    how: str  # "user", "sys-prefix" or "prefix"
    data_dir: Path

    @property
    def kernels(self) -> Path:
        return self.data_dir / "kernels"


def place(user: bool = False, sys_prefix: bool = False, prefix: str | None = None,
          env: Mapping[str, str] | None = None) -> Place:
    """`--user` (the default), `--sys-prefix` or `--prefix P`: at most one of them."""
    given = [name for name, on in (("--user", user), ("--sys-prefix", sys_prefix),
                                   ("--prefix", prefix is not None)) if on]
    if len(given) > 1:
        raise KernelspecError(f"{' and '.join(given)} name different places: give one of them")
    if prefix is not None:
        if not prefix:
            raise KernelspecError("--prefix is empty: give a folder (its share/jupyter is used)")
        return Place("prefix", Path(os.path.abspath(prefix)) / "share" / "jupyter")
    if sys_prefix:
        return Place("sys-prefix", Path(sys.prefix) / "share" / "jupyter")
    return Place("user", user_data_dir(env))


def user_data_dir(env: Mapping[str, str] | None = None, platform: str = sys.platform) -> Path:
    """jupyter_core's `jupyter_data_dir()`: the per-user data folder, as Jupyter reads it."""
    env = os.environ if env is None else env
    if env.get("JUPYTER_DATA_DIR"):
        return Path(env["JUPYTER_DATA_DIR"])
    home = Path(os.path.realpath(os.path.expanduser(env.get("HOME") or "~")))
    platform_dirs = env.get("JUPYTER_PLATFORM_DIRS", "no").lower() not in _OFF
    if platform == "darwin":
        if platform_dirs:
            return home / "Library" / "Application Support" / "jupyter"
        return home / "Library" / "Jupyter"
    xdg = env.get("XDG_DATA_HOME", "").strip() if platform_dirs else env.get("XDG_DATA_HOME")
    return Path(xdg or home / ".local" / "share") / "jupyter"


def kernel_name(name: str) -> str:
    """The folder name, lowercased as Jupyter lists it; anything else it would skip is refused."""
    lowered = name.lower()
    if not _VALID_NAME.match(lowered):
        raise KernelspecError(
            f"--name {name!r}: a kernel name is letters, digits, '.', '_' and '-' only")
    return lowered


def parse_env(items: Sequence[str]) -> dict[str, str]:
    """`--env K=V` options as kernel.json's `env`; a value may itself hold `=`."""
    chosen: dict[str, str] = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals:
            raise KernelspecError(f"--env {item!r}: write it as NAME=VALUE")
        if not key or "\0" in item:
            raise KernelspecError(f"--env {item!r}: the variable's name is missing or not valid")
        if key in chosen:
            raise KernelspecError(f"--env {key}: given twice ({chosen[key]!r} and {value!r})")
        chosen[key] = value
    return chosen


def spec(interpreter: str, display_name: str = DISPLAY_NAME,
         env: Mapping[str, str] | None = None, provisioned: bool = False) -> dict[str, Any]:
    """kernel.json: started by the interpreter pyrelune is installed in, whatever is active.

    `provisioned` names pyrelune's provisioner (`pyrelune.jupyter.provisioner`), which
    saves a start its first reconnect; see `provisioned`.
    """
    if not display_name.strip():
        raise KernelspecError("--display-name is empty: front ends list the kernel by it")
    from importlib.util import find_spec

    # As ipykernel says it: JupyterLab's debugger needs debugpy in the kernel's environment.
    metadata: dict[str, Any] = {"debugger": find_spec("debugpy") is not None,
                                "supported_encryption": list(SUPPORTED_ENCRYPTION),
                                MARK: {"version": __version__}}
    if provisioned:
        metadata[PROVISIONER_KEY] = {"provisioner_name": PROVISIONER, "config": {}}
    return {
        "argv": [interpreter, "-m", "pyrelune", "--mode", "jupyter", "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "python",
        "interrupt_mode": INTERRUPT_MODE,
        "env": dict(env or {}),
        "metadata": metadata,
    }


def distributed(kernel: dict[str, Any], hosts: str, interpreter: str) -> dict[str, Any]:
    """`kernel` (see `spec`) as gateway_provisioners' distributed provisioner runs it: over
    SSH on one of `hosts` (comma-separated), through pyrelune's launcher
    (`pyrelune.jupyter.launcher`) and `interpreter`, an absolute path, since a command run
    over SSH sees only the system's PATH. The argv takes the provisioner's placeholders."""
    chosen = [host.strip() for host in hosts.split(",") if host.strip()]
    if not chosen:
        raise KernelspecError("--remote-hosts is empty: give the hosts, comma-separated")
    if not os.path.isabs(interpreter):
        raise KernelspecError(f"--remote-python {interpreter!r}: give an absolute path (a "
                              "command run over SSH sees only the system's PATH)")
    argv = [interpreter, "-m", "pyrelune.jupyter.launcher", *_placeholders()]
    return _provisioned_by(kernel, argv, DISTRIBUTED, {"remote_hosts": chosen})


def container(kernel: dict[str, Any], provisioner: str, image: str, interpreter: str,
              folder: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """`kernel` as gateway_provisioners' Kubernetes or Docker provisioner runs it, in `image`
    (whose CMD runs pyrelune's launcher), with the kernelspec in `folder`; and the scripts to
    write beside it (their names under `folder`), as its jupyter-k8s-spec and
    jupyter-docker-spec write theirs for ipykernel. `interpreter` runs the first script beside
    the Jupyter server, which needs gateway_provisioners with the provisioner's extra."""
    chosen = CONTAINERS[provisioner]
    if not image.strip() or any(c.isspace() for c in image):
        raise KernelspecError(f"--image {image!r}: give the image to run, e.g. "
                              "registry.example.org/pyrelune-kernel:1 (docker/Dockerfile)")
    files = {f"scripts/{name}": _launch_script(chosen, name) for name in chosen.scripts}
    argv = [interpreter, str(folder / "scripts" / chosen.scripts[0]), *_placeholders()]
    return _provisioned_by(kernel, argv, chosen.provisioner_name, {"image_name": image}), files


def _placeholders() -> list[str]:
    return [arg for name in PLACEHOLDERS for arg in (f"--{name.replace('_', '-')}",
                                                     f"{{{name}}}")]


def _provisioned_by(kernel: dict[str, Any], argv: list[str], provisioner: str,
                    config: dict[str, Any]) -> dict[str, Any]:
    metadata = {**kernel["metadata"],
                PROVISIONER_KEY: {"provisioner_name": provisioner, "config": config}}
    return {**kernel, "argv": argv, "metadata": metadata}


def _launch_script(chosen: Container, name: str) -> bytes:
    """One of gateway_provisioners' launch scripts, from the installed package."""
    from importlib.util import find_spec

    found = find_spec("gateway_provisioners")
    if found is None or not found.submodule_search_locations:
        raise KernelspecError(
            f"--provisioner {chosen.launchers} copies gateway_provisioners' {name} into the "
            "kernelspec, and gateway_provisioners is not installed here: install it where the "
            f"Jupyter server runs (pip install '{PROVISIONERS[chosen.launchers][1]}') and "
            "run this there")
    path = (Path(found.submodule_search_locations[0]) / "kernel-launchers" / chosen.launchers
            / "scripts" / name)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise KernelspecError(f"gateway_provisioners' {name} cannot be read at {path}: "
                              f"{exc.strerror}") from None


def remote_options(provisioner: str | None, hosts: str | None, python: str | None,
                   image: str | None) -> None:
    """Refuse `--remote-hosts`, `--remote-python` and `--image` where they do not belong,
    and a provisioner without what it needs."""
    if provisioner is None:
        given = [name for name, value in (("--remote-hosts", hosts),
                                          ("--remote-python", python), ("--image", image))
                 if value is not None]
        if given:
            raise KernelspecError(f"{' and '.join(given)} go with --provisioner")
        return
    if provisioner not in PROVISIONERS:
        raise KernelspecError(f"--provisioner {provisioner!r}: expected "
                              + ", ".join(PROVISIONERS))
    if provisioner == "distributed":
        if hosts is None:
            raise KernelspecError("--provisioner distributed needs --remote-hosts HOST,...")
        if image is not None:
            raise KernelspecError("--image goes with --provisioner kubernetes or docker")
        return
    if hosts is not None or python is not None:
        raise KernelspecError(f"--remote-hosts and --remote-python go with --provisioner "
                              f"distributed; with {provisioner}, the image runs the kernel")
    if image is None:
        raise KernelspecError(f"--provisioner {provisioner} needs --image IMAGE: an image "
                              "whose kernel is pyrelune's launcher (docker/Dockerfile)")


def provisioned(where: Place, prefix: str = sys.prefix) -> bool:
    """Whether the kernelspec in `where` may name pyrelune's provisioner.

    jupyter_client hides a kernel whose provisioner its own environment lacks
    ("not available"), so the provisioner is named only in this environment's
    folder, which the front ends installed beside pyrelune read. A user folder is
    read by every environment's front end, most of which do not have pyrelune.
    """
    return where.data_dir == Path(prefix) / "share" / "jupyter"


def plan_install(where: Place, name: str, kernel: dict[str, Any],
                 files: Mapping[str, bytes] | None = None) -> Plan:
    """Write `<kernels>/<name>/kernel.json`, and `files` beside it (see `container`); one
    that is not pyrelune's is never replaced."""
    path = where.kernels / name / KERNEL_JSON
    plan = Plan()
    if not _ours_or_absent(path):
        raise KernelspecError(
            f"{path} is another kernel's: pick another --name, or remove it with "
            f"`jupyter kernelspec remove {name}`")
    for relative, data in (files or {}).items():
        plan.write(path.parent / relative, data)
    plan.write(path, jsonfile.dumps(kernel))
    return plan


def plan_uninstall(where: Place, name: str) -> Plan:
    """Remove kernel.json and then its folder if nothing else is in it."""
    folder = where.kernels / name
    path = folder / KERNEL_JSON
    plan = Plan()
    if not path.exists():
        return plan
    if not _ours_or_absent(path):
        raise KernelspecError(f"{path} is not pyrelune's: left in place")
    plan.changes.append(Change("remove", path))
    scripts = folder / "scripts"
    for name in sorted({name for chosen in CONTAINERS.values() for name in chosen.scripts}):
        if (scripts / name).exists():
            plan.changes.append(Change("remove", scripts / name))
    if scripts.is_dir():
        plan.changes.append(Change("rmdir", scripts))
    plan.changes.append(Change("rmdir", folder))
    return plan


def _ours_or_absent(path: Path) -> bool:
    """True for a missing kernel.json or one that says pyrelune wrote it."""
    if not path.exists():  # nor its folder, or a file where a folder goes (written: it fails)
        return True
    try:
        document = jsonfile.read(path)
    except jsonfile.Malformed:
        return False
    metadata = document.get("metadata") if isinstance(document, dict) else None
    return isinstance(metadata, dict) and isinstance(metadata.get(MARK), dict)


def path_note(where: Place, env: Mapping[str, str] | None = None) -> str | None:
    """What to do when Jupyter does not read the chosen folder (a `--prefix` it is not told of)."""
    if where.how != "prefix":
        return None
    env = os.environ if env is None else env
    read = [Path(p) for p in env.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    read += [Path(sys.prefix) / "share" / "jupyter", Path("/usr/local/share/jupyter"),
             Path("/usr/share/jupyter")]
    if where.data_dir in read:
        return None
    return (f"note: Jupyter reads {where.data_dir} only when told: "
            f"export JUPYTER_PATH={where.data_dir}")


def next_step(display_name: str, name: str, path: str | None = None) -> str:
    """What to do once the kernelspec is written, by what this PATH (`path`, else $PATH) runs:
    `jupyter console` where its command is there, installing a front end where no `jupyter` is
    (pyrelune's install brings none, and the command would fail as not found)."""
    import shutil

    pick = f'pick "{display_name}" in JupyterLab, Notebook or VS Code'
    if shutil.which("jupyter", path=path) is None:
        return (f"Jupyter is not installed here: pip install jupyterlab (or the front end you "
                f"use), then {pick}")
    if shutil.which("jupyter-console", path=path) is None:  # what `jupyter console` runs
        return f"{pick}; in a terminal: pip install jupyter-console, then jupyter console " \
               f"--kernel {name}"
    return f"{pick}, or start it with `jupyter console --kernel {name}`"


def provisioner_note(provisioner: str) -> str | None:
    """What the front end's environment lacks to run a remote kernelspec, if this is it."""
    from importlib.util import find_spec

    modules, requirement = PROVISIONERS[provisioner]
    missing = [module for module in modules if find_spec(module) is None]
    if not missing:
        return None
    where = ("each remote host needs pyrelune with its jupyter and remote extras"
             if provisioner == "distributed" else
             "the image needs pyrelune with its jupyter and remote extras (docker/Dockerfile)")
    return (f"note: {', '.join(missing)} not installed here: the Jupyter server that starts "
            f"this kernel needs {'it' if len(missing) == 1 else 'them'} "
            f"(pip install '{requirement}'), and {where}")


def extra_note() -> str | None:
    """What to install when this environment cannot run the kernel it lists (no pyzmq)."""
    from importlib.util import find_spec

    if find_spec("zmq") is not None:
        return None
    from pyrelune.extras import hint

    return ("note: pyzmq is not installed here, and the kernel needs it to start: "
            + hint("pyzmq", "jupyter"))
