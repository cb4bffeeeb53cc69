"""pyrelune runs Python notebook cells for host applications.

The package is imported on every oneshot request, so it imports nothing here;
`from pyrelune import display` loads the display machinery only when asked.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.2.0"


def __getattr__(name: str) -> Any:
    if name == "display":
        from pyrelune.worker.display import display

        return display
    raise AttributeError(f"module 'pyrelune' has no attribute {name!r}")
