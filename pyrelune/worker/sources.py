"""The sources of the cells this process ran, so tracebacks can quote them.

Handed to `linecache` the moment something imports it (an error, a warning,
the cell itself), because importing it up front costs start-up time. A
kernel's worker keeps the cells it ran last, within a budget (see
`wire.recent`), and a fresh namespace forgets them all.
"""

from __future__ import annotations

import sys

from pyrelune.wire.recent import Recent
from pyrelune.worker import importhooks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

_sources = Recent()


def remember(filename: str, source: str) -> None:
    """Make `filename`'s lines available to tracebacks and warnings."""
    forgotten = _sources.put(filename, source)
    linecache = sys.modules.get("linecache")
    if linecache is not None:
        _unregister(linecache, forgotten)
        _register(linecache, filename, source)
    else:  # whoever imports it (warnings, traceback, logging) will find the cells there
        importhooks.after_import("linecache", _register_everything)


def forget_all() -> None:
    """A fresh namespace: no function of an earlier cell is left to quote."""
    linecache = sys.modules.get("linecache")
    if linecache is not None:
        _unregister(linecache, [filename for filename, _ in _sources.items()])
    _sources.clear()


def _register_everything(linecache: ModuleType) -> None:
    register_all()


def is_cell(filename: str) -> bool:
    """Whether code compiled under `filename` came from a cell."""
    return filename in _sources


def register_all() -> None:
    """Hand every cell's source to `linecache`: a traceback is about to quote them."""
    linecache = importhooks.import_own("linecache")
    for filename, source in _sources.items():
        if filename not in linecache.cache:
            _register(linecache, filename, source)


def _register(linecache: Any, filename: str, source: str) -> None:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def _unregister(linecache: Any, filenames: list[str]) -> None:
    for filename in filenames:
        linecache.cache.pop(filename, None)
