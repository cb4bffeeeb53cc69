"""What the preload cannot speed up: the installed modules that import nothing it loaded.

A cell that imports such a module (pygments, say, beside a preload of the
data stack) gains nothing from the warm process, and a copy of a large
process costs it more than a small cold start: the launcher runs it cold
(see `gate.gains`). The warm process writes their names once it has
preloaded (`publish`), from the installed distributions' metadata: a
distribution gains if it is loaded, or requires one that gains. A name it
does not know (the user's own module) may import anything, so gains.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.metadata import Distribution

#: A requirement's distribution name: what comes before its version, extras or markers.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def plain_modules(loaded: Iterable[str]) -> set[str]:
    """Top-level import names of installed distributions that gain nothing from `loaded`
    (the names of the modules in the warm process, after its preload)."""
    import importlib.metadata as metadata

    tops = {name.partition(".")[0] for name in loaded}
    provided: dict[str, list[str]] = {}
    requires: dict[str, set[str]] = {}
    for dist in metadata.distributions():
        name = _normal(dist.metadata["Name"] or "")
        for top in _tops(dist):
            provided.setdefault(top, []).append(name)
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


def _tops(dist: Distribution) -> set[str]:
    """The top-level import names `dist` installs: its top_level.txt, else those its files
    show (wheels built by newer tools have no top_level.txt, and Python 3.10's
    `packages_distributions` reads nothing else)."""
    declared = (dist.read_text("top_level.txt") or "").split()
    if declared:
        return set(declared)
    names = set()
    for file in dist.files or ():
        first = file.parts[0] if file.parts else ""
        if first in ("..", "__pycache__") or first.endswith((".dist-info", ".data")):
            continue
        top = first[:-3] if len(file.parts) == 1 and first.endswith(".py") else first
        if len(file.parts) > 1 or first.endswith(".py"):
            names.add(top)
    return names


def publish(path: str, loaded: Iterable[str]) -> None:
    """Write the names `plain_modules` finds to `path` (atomically: a launcher may read it)."""
    names = " ".join(sorted(plain_modules(loaded) - set(sys.stdlib_module_names)))
    partial = f"{path}.{os.getpid()}"
    with open(partial, "w", encoding="utf-8", opener=_private) as f:
        f.write(names + "\n")
    os.replace(partial, path)


def _private(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)
