"""How Vix Note discovers extensions, read back exactly as its registry does.

A transcription of Vix Note's discovery (global `installed.json`, project
`.vix/deps/*/vix.json`, the disabled list) that also says *why* something is
skipped or unavailable, where Vix Note stays silent. Doctor and the tests use
it to see an installation through the host's eyes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pyrelune.vix import jsonfile
from pyrelune.vix.places import Places

BUILTIN_CELL_TYPES = frozenset({"markdown", "html", "cpp", "reply"})
PROTOCOL = "vix-note-extension-1"
#: Vix Note reads its extensions when it starts and when told to reload them; what its page
#: then shows, in the order a user meets it.
RELOAD = ("Vix Note takes up an installed or enabled extension only when it reloads its "
          "extensions: until then Python cells have no Run button, and the page does not say "
          "why. Reload them from the page's extension panel (or /api/extensions/reload), or "
          "restart `vix note`: the menu then offers Python cells, but a cell's Run button "
          "appears only after the page itself is reloaded, and reloading the page reopens the "
          "note from disk, so outputs not yet saved are lost")
_CELL_STRINGS = ("id", "label", "language", "commentLine", "commentBlock", "defaultSource",
                 "placeholder")


@dataclass
class Extension:
    """One registered extension, as Vix Note holds it."""

    id: str
    version: str
    source: str  # "global" or "project"
    root: Path
    command: str = ""  # the absolute file Vix Note would execl
    cell_types: list[str] = field(default_factory=list)
    aliases: dict[str, list[str]] = field(default_factory=dict)
    available: bool = True
    enabled: bool = True
    diagnostics: list[str] = field(default_factory=list)


@dataclass
class Discovery:
    """Everything found, and every file or entry Vix Note would skip or choke on."""

    extensions: list[Extension] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def find(self, package_id: str) -> Extension | None:
        """The extension registered last under `package_id` (a later one replaces it)."""
        found = [e for e in self.extensions if e.id == package_id]
        return found[-1] if found else None

    def conflicts(self, package_id: str) -> list[str]:
        """Cell types of `package_id` rejected because another extension claimed them first."""
        owners: dict[str, str] = {name: "vix.note (built in)" for name in BUILTIN_CELL_TYPES}
        found = []
        for extension in self.extensions:
            if not extension.enabled:
                continue
            for cell_type in extension.cell_types:
                owner = owners.setdefault(cell_type, extension.id)
                if owner != extension.id and extension.id == package_id:
                    found.append(f"cell type {cell_type!r} is rejected: {owner} registered it "
                                 "first")
        return found


def normalize(value: str) -> str:
    """Vix Note's cell type id normalisation: trimmed and lower-cased."""
    return value.strip().lower()


def disabled_ids(places: Places) -> list[str]:
    """The ids in `~/.vix/note/extensions.json`; like Vix Note, a broken file disables nothing."""
    try:
        document = jsonfile.read(places.disabled_json)
    except jsonfile.Malformed:
        return []
    if not isinstance(document, dict) or not isinstance(document.get("disabled"), list):
        return []
    return [item for item in document["disabled"] if isinstance(item, str) and item]


def discover_global(places: Places, into: Discovery | None = None) -> Discovery:
    """Register the packages of `$VIX_GLOBAL_PREFIX/installed.json`."""
    found = into or Discovery()
    disabled = disabled_ids(places)
    try:
        root = jsonfile.read(places.installed_json)
    except jsonfile.Malformed as error:
        found.skipped.append(f"Vix Note ignores all of {error.path}: it {error.reason}")
        return found
    if root is None:
        return found
    if not isinstance(root, dict) or not isinstance(root.get("packages"), list):
        found.skipped.append(f"{places.installed_json} has no `packages` array")
        return found
    for index, package in enumerate(root["packages"]):
        where = f"{places.installed_json} packages[{index}]"
        if not isinstance(package, dict):
            continue
        extensions = package.get("extensions")
        if not isinstance(extensions, dict) or "note" not in extensions:
            continue
        if problem := _non_strings(package, ("id", "version", "installed_path"), where):
            found.skipped.append(problem)
            continue
        _register(found, extensions["note"], package.get("id", ""), package.get("version", ""),
                  "global", Path(package.get("installed_path", "")), places.bin_dir, disabled,
                  where)
    return found


def discover_project(project: Path, places: Places, into: Discovery | None = None) -> Discovery:
    """Register the packages in `<project>/.vix/deps/*/vix.json` (after the global ones)."""
    found = into or Discovery()
    disabled = disabled_ids(places)
    deps = project / ".vix" / "deps"
    if not deps.is_dir():
        return found
    for folder in sorted(p for p in deps.iterdir() if p.is_dir()):
        manifest = folder / "vix.json"
        try:
            root = jsonfile.read(manifest)
        except jsonfile.Malformed as error:
            found.skipped.append(f"Vix Note ignores {error.path}: it {error.reason}")
            continue
        if not isinstance(root, dict):
            continue
        extensions = root.get("extensions")
        if not isinstance(extensions, dict) or "note" not in extensions:
            continue
        if problem := _non_strings(root, ("namespace", "name", "version"), str(manifest)):
            found.skipped.append(problem)
            continue
        package_id = root.get("namespace", "") + "/" + root.get("name", folder.name)
        _register(found, extensions["note"], package_id, root.get("version", ""), "project",
                  folder, None, disabled, str(manifest))
    return found


def _non_strings(record: dict[str, Any], keys: tuple[str, ...], where: str) -> str | None:
    """Why Vix Note would crash on `record` (one of `keys` present but not a string), if so."""
    wrong = [k for k in keys if k in record and not isinstance(record[k], str)]
    return f"{where}: {', '.join(wrong)} not a string (crashes Vix Note)" if wrong else None


def _register(found: Discovery, note: Any, package_id: str, version: str, source: str,
              root: Path, bin_dir: Path | None, disabled: list[str], where: str) -> None:
    try:
        extension = describe(note, package_id, version, source, root, bin_dir)
    except (TypeError, ValueError) as error:
        found.skipped.append(f"{where}: {error}")
        return
    if extension is None:
        found.skipped.append(f"{where}: Vix Note skips {package_id}: extensions.note is not "
                             "an object with api \"1\" and a cellTypes array")
        return
    extension.enabled = package_id not in disabled
    found.extensions = [e for e in found.extensions if e.id != package_id] + [extension]


def describe(note: Any, package_id: str, version: str, source: str, root: Path,
             bin_dir: Path | None) -> Extension | None:
    """What Vix Note makes of one `extensions.note`; None when it skips it.

    Raises TypeError where Vix Note's JSON reader would throw (a field of the
    wrong type), which it does not catch.
    """
    if not isinstance(note, dict):
        return None
    if _string(note, "api", "extensions.note") != "1":
        return None
    if not isinstance(note.get("cellTypes"), list):
        return None
    extension = Extension(package_id, version, source, root)
    for item in note["cellTypes"]:
        if not isinstance(item, dict):
            extension.diagnostics.append("cellTypes entries must be objects")
            continue
        for key in _CELL_STRINGS:
            _string(item, key, "cell type")
        executable = item.get("executable", False)
        if not isinstance(executable, bool):
            raise TypeError("cell type executable is not a boolean (crashes Vix Note)")
        cell_id = normalize(item.get("id", ""))
        if not cell_id or cell_id == "unknown":
            extension.diagnostics.append("cell type id is empty or invalid")
        elif cell_id in BUILTIN_CELL_TYPES:
            extension.diagnostics.append(f"external extension cannot replace reserved cell "
                                         f"type: {cell_id}")
        else:
            extension.cell_types.append(cell_id)
            aliases = item.get("aliases")
            extension.aliases[cell_id] = [
                normalize(a) for a in (aliases if isinstance(aliases, list) else [])
                if isinstance(a, str) and normalize(a)
            ]
    if not extension.cell_types:
        extension.available = False
        extension.diagnostics.append("no valid cell types declared")
    runtime = note.get("runtime")
    if not isinstance(runtime, dict):
        extension.available = False
        extension.diagnostics.append("runtime is required for executable cell types")
        return extension
    for key, expected in (("protocol", PROTOCOL), ("mode", "oneshot")):
        value = _string(runtime, key, "runtime")
        if value != expected:
            extension.available = False
            extension.diagnostics.append(f"unsupported runtime {key}: {value}")
    if "command" in runtime:
        command = _string(runtime, "command", "runtime")
        if not command or any(not (c.isascii() and (c.isalnum() or c in "-_.")) for c in command):
            extension.available = False
            extension.diagnostics.append(f"unsafe runtime command: {command}")
        else:
            # A project package has no bin/: Vix Note resolves against its own cwd.
            extension.command = os.path.join(bin_dir or "", command)
    elif "path" in runtime:
        relative = _string(runtime, "path", "runtime")
        parts = PurePosixPath(relative).parts
        if not relative or relative.startswith("/") or ".." in parts:
            extension.available = False
            extension.diagnostics.append(f"runtime path must be relative without '..': "
                                         f"{relative}")
        extension.command = os.path.normpath(root / relative)
    else:
        extension.available = False
        extension.diagnostics.append("runtime command/path is required")
        return extension
    if extension.available and not os.path.exists(extension.command):
        extension.available = False
        extension.diagnostics.append(f"runtime not found: {extension.command}")
    return extension


def _string(item: dict[str, Any], key: str, what: str) -> str:
    value = item.get(key, "")
    if not isinstance(value, str):
        raise TypeError(f"{what} {key} is not a string (crashes Vix Note)")
    return value
