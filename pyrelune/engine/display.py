"""Turn a Python object into a MIME bundle (`data`, `metadata`)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def mime_bundle(obj: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The representations of `obj` a host may choose from; `text/plain` always."""
    return {"text/plain": repr(obj)}, {}
