"""The sources of the cells this process ran, so tracebacks can quote them.

Handed to `linecache` the moment something imports it (an error, a warning,
the cell itself), because importing it up front costs start-up time.
"""

from __future__ import annotations

import sys

from pyrelune.worker import importhooks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

_sources: dict[str, str] = {}


def remember(filename: str, source: str) -> None:
    """Make `filename`'s lines available to tracebacks and warnings."""
    _sources[filename] = source
    linecache = sys.modules.get("linecache")
    if linecache is not None:
        _register(linecache, filename, source)
    else:  # whoever imports it (warnings, traceback, logging) will find the cells there
        importhooks.after_import("linecache", _register_everything)


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
