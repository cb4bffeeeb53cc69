"""pyrelune runs Python notebook cells for host applications.

The package is imported on every oneshot request, so it imports nothing here;
`from pyrelune import display` (or `update_display`, `clear_output`,
`DisplayHandle`, as IPython.display has them) loads the display machinery
only when asked.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.2.0"
_DISPLAY_NAMES = ("display", "update_display", "clear_output", "DisplayHandle")


def __getattr__(name: str) -> Any:
    if name in _DISPLAY_NAMES:
        from pyrelune.worker import display

        return getattr(display, name)
    raise AttributeError(f"module 'pyrelune' has no attribute {name!r}")
