"""Every note that tells a host's user some output was left out, each worded once.

The modes say the same thing the same way, and a test (or a user's search)
for one wording finds it in every mode. Imported where a note is written,
never at the top: a cell whose output fits in its cap never loads this.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable


def stream_bytes(count: int, stream: str) -> str:
    """Between the head and the tail of `stream`: `count` bytes of it were dropped."""
    return f"\n[... {count:,} bytes of {stream} omitted ...]\n"


def displays(count: int) -> str:
    """Where `count` displayed outputs were dropped, between the head and the tail."""
    return f"[... {count:,} displayed outputs omitted ...]\n"


def clipped(count: int, sep: str) -> str:
    """Inside one text cut to its head and tail; `sep` on either side of the marker."""
    return f"{sep}[... {count:,} bytes omitted ...]{sep}"


def earlier_output(count: int) -> str:
    """Before the last part of a failed cell's output, which is all an error message keeps."""
    return f"[... {count:,} bytes of earlier output omitted ...]\n"


def over_budget(mime: str, size: int) -> str:
    """In place of (or after a smaller stand-in for) a representation too big to send."""
    return f"[... {mime} output of {size:,} bytes omitted: over the output budget ...]"


def not_shown(mimes: Iterable[str]) -> str:
    """In place of a display Vix Note has no way to show."""
    return f"[... display omitted: no type Vix Note shows among {', '.join(mimes)} ...]"


def displays_past_limit(count: int, limit: int) -> str:
    """At the end of a Jupyter cell that displayed more than `limit` objects."""
    return (f"[pyrelune: {count:,} more displays were not shown: a cell shows at "
            f"most {limit:,}]\n")


def messages_dropped(count: int) -> str:
    """What an rpc client that connects late gets where output held for it overflowed."""
    return f"[pyrelune: {count} output messages were dropped while no client was connected]\n"
