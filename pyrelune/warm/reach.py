"""What the preload cannot speed up: the installed modules that import nothing it loaded.

A cell that imports such a module (pygments, say, beside a preload of the
data stack) gains nothing from the warm process, and a copy of a large
process costs it more than a small cold start: the launcher runs it cold
(see `entry.gains`). The warm process writes their names once it has
preloaded (`publish`), from the installed distributions' metadata: a
distribution gains if it is loaded, or requires one that gains. A name it
does not know (the user's own module) may import anything, so gains.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable

#: A requirement's distribution name: what comes before its version, extras or markers.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def plain_modules(loaded: Iterable[str]) -> set[str]:
    """Top-level import names of installed distributions that gain nothing from `loaded`
    (the names of the modules in the warm process, after its preload)."""
    import importlib.metadata as metadata

    tops = {name.partition(".")[0] for name in loaded}
    provided = metadata.packages_distributions()
    requires: dict[str, set[str]] = {}
    for dist in metadata.distributions():
        name = _normal(dist.metadata["Name"] or "")
        needed = requires.setdefault(name, set())
        for requirement in dist.requires or ():
            match = _NAME.match(requirement)
            if match and "extra ==" not in requirement.replace("extra==", "extra =="):
                needed.add(_normal(match.group()))
    gaining = {_normal(d) for top in tops for d in provided.get(top, ())}
    while True:  # whatever requires a distribution that gains, gains
        more = {name for name, needed in requires.items() if needed & gaining} - gaining
        if not more:
            break
        gaining |= more
    return {top for top, dists in provided.items()
            if top not in tops and top.isidentifier()
            and not any(_normal(d) in gaining for d in dists)}


def publish(path: str, loaded: Iterable[str]) -> None:
    """Write the names `plain_modules` finds to `path` (atomically: a launcher may read it)."""
    names = " ".join(sorted(plain_modules(loaded) - set(sys.stdlib_module_names)))
    partial = f"{path}.{os.getpid()}"
    with open(partial, "w", encoding="utf-8", opener=_private) as f:
        f.write(names + "\n")
    os.replace(partial, path)


def _private(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)
