"""Install and uninstall: every file operation is planned first, then applied.

A plan is plain values (what to write, move aside or remove, and why), so
`--dry-run` prints exactly what would happen and tests inspect it without
touching a disk. Files are written atomically; the global `installed.json`
is read, planned and replaced under an exclusive lock so that concurrent
installs of any packages serialise. Nothing is ever written over a file this
command does not understand, unless `force` moves it aside first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyrelune import PyreluneError
from pyrelune.vix import descriptor as descriptors
from pyrelune.vix import jsonfile, launcher
from pyrelune.vix.places import Places, project_package_dir

EXECUTABLE = 0o755
REGULAR = 0o644


class InstallError(PyreluneError):
    """Why nothing was changed, worded for the user, with the way out."""


@dataclass
class Change:
    """One file operation."""

    action: str  # "write", "backup" (move aside), "remove", "rmdir" (only if empty)
    path: Path
    data: bytes = b""
    mode: int = REGULAR
    why: str = ""  # what the user must know of this change: "was A, now B"

    def describe(self, done: bool = False) -> str:
        verb = {
            "write": ("would write", "wrote"), "backup": ("would move aside", "moved aside"),
            "remove": ("would remove", "removed"),
            "rmdir": ("would remove folder (if empty)", "removed folder"),
        }[self.action][done]
        return f"{verb} {self.path}" + (f" ({self.why})" if self.why else "")


@dataclass
class Plan:
    """The changes to make, in order, and what the user must be told."""

    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def write(self, path: Path, data: bytes, mode: int = REGULAR, why: str = "") -> None:
        """Plan a write, unless the file already holds exactly this."""
        try:
            same = path.read_bytes() == data and (path.stat().st_mode & 0o777) == mode
        except OSError:
            same = False
        if not same:
            self.changes.append(Change("write", path, data, mode, why))


@dataclass
class Target:
    """What to install: the descriptor, under which id, started by which interpreter."""

    package_id: str
    interpreter: str
    descriptor: dict[str, Any] = field(default_factory=descriptors.load)
    version: str = descriptors.VERSION
    warm: str = "1"  # the launcher's warm-start setting: "1" (the default), "0" (`--cold`)

    @property
    def command(self) -> str:
        return descriptors.command_name(self.descriptor)


def apply(plan: Plan) -> list[str]:
    """Carry out the plan; returns one line per change made."""
    done = []
    for change in plan.changes:
        if change.action == "write":
            jsonfile.write_atomic(change.path, change.data, change.mode)
        elif change.action == "backup":
            if change.path.exists():
                done.append(f"moved {change.path} aside to {jsonfile.backup(change.path)}")
            continue
        elif change.action == "remove":
            try:
                change.path.unlink()
            except FileNotFoundError:
                continue
        else:
            try:
                change.path.rmdir()
            except FileNotFoundError:
                continue
            except OSError:  # not empty: what is left is not ours to remove
                done.append(f"kept folder {change.path}: {_left_in(change.path)}")
                continue
        done.append(change.describe(done=True))
    return done


def _left_in(folder: Path, shown: int = 3) -> str:
    """What keeps a folder: `holds a, b and 2 more`."""
    try:
        names = sorted(entry.name for entry in folder.iterdir())
    except OSError as error:
        return f"cannot be removed ({error.strerror})"
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"holds {', '.join(names[:shown])}{more}" if names else "cannot be removed"


@contextmanager
def global_lock(places: Places, dry_run: bool) -> Iterator[None]:
    """The installed.json lock; a dry run creates nothing, so it takes none."""
    with nullcontext() if dry_run else jsonfile.locked(places.lock_file):
        yield


def plan_global_install(places: Places, target: Target, force: bool = False,
                        enable: bool = False) -> Plan:
    """Launcher in `<prefix>/bin`, a vix.json in the package's own folder, the entry last."""
    plan = Plan()
    package_dir = places.package_dir(target.package_id)
    _plan_launcher(plan, places.bin_dir / target.command, target, force)
    manifest = descriptors.package_manifest(
        target.descriptor, target.package_id, {"command": target.command}, target.version)
    plan.write(package_dir / "vix.json", jsonfile.dumps(manifest))
    root = _read_installed(plan, places.installed_json, force)
    entry = descriptors.global_entry(target.descriptor, target.package_id, package_dir,
                                     target.version)
    packages = list(root.get("packages", []))
    mine = [i for i, p in enumerate(packages) if _is_package(p, target.package_id)]
    if mine:
        previous = packages[mine[0]]
        if previous.get("installed_path") not in (None, str(package_dir)):
            plan.notes.append(
                f"Replaced the earlier entry for {target.package_id} (version "
                f"{previous.get('version')}); its files in {previous.get('installed_path')} "
                "were left in place.")
        packages[mine[0]] = entry
        packages = [p for i, p in enumerate(packages) if i not in mine[1:]]
    else:
        packages.append(entry)
    updated = {**root, "packages": packages}
    if updated != root or not places.installed_json.exists():
        plan.changes.append(Change("write", places.installed_json, jsonfile.dumps(updated)))
    _plan_enabled(plan, places, target.package_id, force, enable)
    return plan


def plan_global_uninstall(places: Places, target: Target) -> Plan:
    """Remove the entry first (so Vix Note never lists a missing launcher), then the files."""
    plan = Plan()
    try:
        root = jsonfile.read(places.installed_json)
    except jsonfile.Malformed as error:
        raise InstallError(f"{error}. Not touching it: fix or remove it by hand.") from None
    if isinstance(root, dict) and isinstance(root.get("packages"), list):
        kept = [p for p in root["packages"] if not _is_package(p, target.package_id)]
        if len(kept) != len(root["packages"]):
            plan.changes.append(
                Change("write", places.installed_json, jsonfile.dumps({**root, "packages": kept})))
    elif root is not None:
        raise InstallError(f"{places.installed_json} is not an object with a `packages` array. "
                           "Not touching it: fix or remove it by hand.")
    _plan_remove_launcher(plan, places.bin_dir / target.command)
    package_dir = places.package_dir(target.package_id)
    _plan_remove_manifest(plan, package_dir / "vix.json", target.package_id)
    for folder in (package_dir, package_dir.parent, package_dir.parent.parent, places.bin_dir):
        plan.changes.append(Change("rmdir", folder))
    return plan


def plan_project_install(project: Path, places: Places, target: Target, force: bool = False,
                         enable: bool = False) -> Plan:
    """`<project>/.vix/deps/<name>/vix.json` with `runtime.path` to a launcher beside it."""
    if not project.is_dir():
        raise InstallError(f"Project folder {project} does not exist.")
    _, name = descriptors.split_id(target.package_id)
    folder = project_package_dir(project, name)
    plan = Plan()
    relative = f"bin/{target.command}"
    _plan_launcher(plan, folder / relative, target, force)
    manifest_path = folder / "vix.json"
    try:
        existing = jsonfile.read(manifest_path)
    except jsonfile.Malformed as error:
        if not force:
            raise InstallError(f"{error}. Not replacing it: fix it, or rerun with --force to "
                               "move it aside.") from None
        existing = None
        plan.changes.append(Change("backup", manifest_path))
    if existing is not None and _manifest_id(existing) != target.package_id:
        if not force:
            raise InstallError(f"{manifest_path} belongs to {_manifest_id(existing)}. Not "
                               "replacing it: rerun with --force to move it aside.")
        plan.changes.append(Change("backup", manifest_path))
    manifest = descriptors.package_manifest(
        target.descriptor, target.package_id, {"path": relative}, target.version)
    plan.write(manifest_path, jsonfile.dumps(manifest))
    _plan_enabled(plan, places, target.package_id, force, enable)
    return plan


def plan_project_uninstall(project: Path, target: Target) -> Plan:
    _, name = descriptors.split_id(target.package_id)
    folder = project_package_dir(project, name)
    plan = Plan()
    _plan_remove_manifest(plan, folder / "vix.json", target.package_id)
    _plan_remove_launcher(plan, folder / "bin" / target.command)
    for path in (folder / "bin", folder, folder.parent, folder.parent.parent):
        plan.changes.append(Change("rmdir", path))
    return plan


def _is_package(package: Any, package_id: str) -> bool:
    return isinstance(package, dict) and package.get("id") == package_id


def _manifest_id(manifest: Any) -> str:
    if not isinstance(manifest, dict):
        return "(not an object)"
    return f"{manifest.get('namespace', '')}/{manifest.get('name', '')}"


def _read_installed(plan: Plan, path: Path, force: bool) -> dict[str, Any]:
    """installed.json as an object with a `packages` list; malformed stops, or with force
    is moved aside."""
    try:
        root = jsonfile.read(path)
        problem = None if root is None or (
            isinstance(root, dict) and isinstance(root.get("packages", []), list)
        ) else f"{path}: is not an object with a `packages` array"
    except jsonfile.Malformed as error:
        problem = str(error)
    if problem is None:
        return root if root is not None else {"packages": []}
    if not force:
        raise InstallError(
            f"{problem}. Not overwriting it: fix it by hand, or rerun with --force to move it "
            f"aside to {path.name}.bak and start a new one (other packages will then be "
            "missing from Vix Note until restored).")
    plan.changes.append(Change("backup", path))
    plan.notes.append(f"{path} was malformed: it is kept as a backup beside it (.bak).")
    return {"packages": []}


def _plan_launcher(plan: Plan, path: Path, target: Target, force: bool) -> None:
    try:
        existing = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        existing = None
    except OSError as error:
        raise InstallError(f"Cannot read {path}: {error.strerror}") from None
    if existing is not None and not launcher.is_launcher(existing):
        if not force:
            raise InstallError(
                f"{path} exists and was not written by pyrelune (an earlier runtime?). Not "
                "replacing it: remove it, or rerun with --force to move it aside.")
        plan.changes.append(Change("backup", path))
    before = launcher.interpreter_of(existing or "")
    # Another environment's launcher, replaced: its cells now import this one's packages.
    why = f"was {before}, now {target.interpreter}" if before not in (
        None, target.interpreter) else ""
    plan.write(path, launcher.render(target.interpreter, target.warm).encode(), EXECUTABLE,
               why)


def _plan_remove_launcher(plan: Plan, path: Path) -> None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    if launcher.is_launcher(text):
        plan.changes.append(Change("remove", path))
    else:
        plan.notes.append(f"Left {path} in place: pyrelune did not write it.")


def _plan_remove_manifest(plan: Plan, path: Path, package_id: str) -> None:
    try:
        manifest = jsonfile.read(path)
    except jsonfile.Malformed:
        manifest = None
        plan.notes.append(f"Left {path} in place: it is not valid JSON.")
    if manifest is None:
        return
    if _manifest_id(manifest) == package_id:
        plan.changes.append(Change("remove", path))
    else:
        plan.notes.append(f"Left {path} in place: it belongs to {_manifest_id(manifest)}.")


def _plan_enabled(plan: Plan, places: Places, package_id: str, force: bool,
                  enable: bool) -> None:
    """Say when Vix Note has the extension switched off; with `enable`, switch it on."""
    path = places.disabled_json
    try:
        document = jsonfile.read(path)
    except jsonfile.Malformed as error:
        if enable:
            raise InstallError(f"{error}. Not changing it: fix it by hand.") from None
        return  # Vix Note ignores a broken list: nothing is disabled
    if not isinstance(document, dict) or not isinstance(document.get("disabled"), list):
        return
    if package_id not in document["disabled"]:
        return
    if enable:
        kept = [item for item in document["disabled"] if item != package_id]
        plan.changes.append(Change("write", path, jsonfile.dumps({**document, "disabled": kept})))
        plan.notes.append(f"Enabled {package_id} in {path}.")
    else:
        plan.notes.append(
            f"Vix Note lists {package_id} as disabled in {path}: its cells will not run. "
            "Rerun with --enable to enable it (or enable it in Vix Note).")


def interpreter() -> str:
    """This installation's interpreter: the environment pyrelune was installed into.

    Not resolved through symlinks: a virtual environment's `bin/python` is a
    symlink, and only that path makes Python use the environment.
    """
    if not sys.executable:
        raise InstallError("Cannot tell which Python runs pyrelune (sys.executable is empty).")
    return os.path.abspath(sys.executable)
