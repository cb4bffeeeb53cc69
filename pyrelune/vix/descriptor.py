"""The extension descriptor (`extension.json`) and the files install derives from it.

The repository's top-level `extension.json` ships inside the package (this
folder holds a link to it) and says who the extension is and what Vix Note
should register; the version comes from the installed package, and the
runtime entry is adapted to where the launcher is written.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from pyrelune import PyreluneError, __version__
from pyrelune.protocols.validation import authoritative_errors, schema

DESCRIPTOR_FILE = Path(__file__).with_name("extension.json")
SCHEMA = "extension.schema"
PACKAGE_ID = re.compile(r"[A-Za-z0-9._-]+/[A-Za-z0-9._-]+")
VERSION = __version__


class InvalidDescriptor(PyreluneError, ValueError):
    """A descriptor or id that Vix Note would reject."""


def load(path: Path = DESCRIPTOR_FILE) -> dict[str, Any]:
    """The descriptor, checked against its schema."""
    descriptor: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    found = problems(descriptor)
    if found:
        raise InvalidDescriptor(f"{path}: " + "; ".join(found))
    return descriptor


def problems(instance: Any, definition: str | None = None) -> list[str]:
    """Why `instance` breaks Vix Note's rules: the whole descriptor, or one `$defs` entry."""
    spec = schema(SCHEMA)
    if definition is not None:
        spec = {"$defs": spec["$defs"], "$ref": f"#/$defs/{definition}"}
    return authoritative_errors(instance, spec)


def split_id(package_id: str) -> tuple[str, str]:
    """`owner/name` as (namespace, name), the way a project vix.json spells it.

    Both parts become folder names (`packages/owner/name`, `.vix/deps/name`),
    so neither may be `.` or `..`, which would lead out of them.
    """
    parts = package_id.split("/")
    if not PACKAGE_ID.fullmatch(package_id) or any(part in (".", "..") for part in parts):
        raise InvalidDescriptor(
            f"Extension id {package_id!r} must look like owner/name "
            "(letters, digits, '.', '_', '-'; neither part '.' or '..')"
        )
    namespace, name = parts
    return namespace, name


def note(descriptor: dict[str, Any], runtime: dict[str, str]) -> dict[str, Any]:
    """`extensions.note` with the runtime's `command` or `path` replaced by `runtime`."""
    result: dict[str, Any] = copy.deepcopy(descriptor["extensions"]["note"])
    kept = {k: v for k, v in result["runtime"].items() if k not in ("command", "path")}
    result["runtime"] = {**kept, **runtime}
    return result


def command_name(descriptor: dict[str, Any]) -> str:
    """The launcher's file name: the runtime command Vix Note looks up in the prefix's bin/."""
    name: str = descriptor["extensions"]["note"]["runtime"]["command"]
    return name


def global_entry(descriptor: dict[str, Any], package_id: str, installed_path: Path,
                 version: str = VERSION) -> dict[str, Any]:
    """The `packages[]` entry of installed.json, with `extensions.note` inline."""
    split_id(package_id)
    return {
        "id": package_id,
        "version": version,
        "installed_path": str(installed_path),
        "extensions": {"note": note(descriptor, {"command": command_name(descriptor)})},
    }


def package_manifest(descriptor: dict[str, Any], package_id: str, runtime: dict[str, str],
                     version: str = VERSION) -> dict[str, Any]:
    """A vix.json: the form Vix Note reads in a project's `.vix/deps/<name>/`."""
    namespace, name = split_id(package_id)
    return {
        "namespace": namespace,
        "name": name,
        "version": version,
        "extensions": {"note": note(descriptor, runtime)},
    }
