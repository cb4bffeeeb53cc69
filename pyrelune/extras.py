"""What a message tells a user to install for an optional dependency.

pyrelune is installed from a checkout or a wheel, not by name from a package
index (where the name `pyrelune` could belong to anyone), so no message gives
pip that name. It names the third-party package, with the
versions this installation's extra allows (read from its metadata, so the
bounds are pyproject.toml's), and the extra as a checkout or wheel installs it.
Only error paths import this module.
"""

from __future__ import annotations


def requirement(package: str, extra: str) -> str:
    """`package` as pyrelune's `extra` requires it (`websockets>=14.1,<18`), or its bare
    name where pyrelune's metadata cannot be read (a checkout run in place)."""
    from importlib import metadata

    try:
        required = metadata.requires("pyrelune") or []
    except metadata.PackageNotFoundError:
        return package
    for line in required:
        spec, _, marker = line.partition(";")
        name = spec.split("[")[0]
        for mark in "<>=!~ ":
            name = name.split(mark)[0]
        if _normal(name) == _normal(package) and f'extra == "{extra}"' in marker:
            bounds = spec[len(name):].strip()
            lower_first = sorted(bounds.split(","), key=lambda bound: not bound.startswith(">"))
            return name + ",".join(lower_first)
    return package


def hint(package: str, extra: str) -> str:
    """The install line for `package`, and for the whole `extra` from pyrelune's checkout."""
    return (f"pip install '{requirement(package, extra)}' (or the whole {extra} extra: pip "
            f"install '<pyrelune checkout or wheel>[{extra}]')")


def _normal(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")
