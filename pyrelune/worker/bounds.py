"""Events cut to the mode's output cap before they leave the worker.

A display of 300 MB or an exception whose message is 30 MB would otherwise
cross the event pipe whole, and every process after it (the supervisor, the
codec, the host) would hold it. The worker knows the cap, so it sends at
most `wire.events.message_limit(cap)` bytes an event: plain text keeps its
head and tail with a marker saying how much was cut; any other value that
does not fit (HTML, an image, SVG, JSON: cut, it would be garbage) is left
out and named in `text/plain`. Loaded only for an event over the limit.
The supervisor's caps, and the map of every output bound, are `pyrelune.shaping`'s.
"""

from __future__ import annotations

from pyrelune import fastjson
from pyrelune.wire.events import CellError, Display, Done

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def clip(text: str, room: int) -> str:
    """`text` in at most about `room` characters: head and tail, and what was cut between."""
    if len(text) <= room:
        return text
    half = max(0, room // 2)
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut:,} characters cut: over the output cap ...]\n{text[-half:]}"


def bounded(event: Display | Done, cap: int) -> Display | Done:
    """`event` with every value within `cap` characters (a Done's texts within a quarter each)."""
    if isinstance(event, Done):
        error = event.error
        if error is None:
            return event
        return Done(CellError(error.code, error.ename, clip(error.evalue, cap // 4),
                              clip(error.traceback, cap // 4), error.line, error.column))
    data: dict[str, Any] = {}
    notes = []
    for mime, value in event.data.items():
        if mime == "text/plain" and isinstance(value, str):
            data[mime] = clip(value, cap)
            continue
        size = len(value) if isinstance(value, str) else len(fastjson.dumps(value))
        if size <= cap:
            data[mime] = value
        else:
            notes.append(f"[... {mime} output of {size:,} characters left out: over the cap ...]")
    if notes:
        note = "\n".join(notes)
        data["text/plain"] = f"{data['text/plain']}\n{note}" if "text/plain" in data else note
    return Display(data, event.metadata, event.is_result, event.display_id, event.update,
                   event.origin)


def plain(event: Display | Done, cap: int) -> Display | Done:
    """The last resort for an event still too big: its text/plain only, or its error's summary."""
    if isinstance(event, Done):
        error = event.error
        if error is None:
            return event
        return Done(CellError(error.code, error.ename, clip(error.evalue, cap // 8), "",
                              error.line, error.column))
    text = event.data.get("text/plain")
    kept = clip(text, cap // 8) if isinstance(text, str) else "[display left out: over the cap]"
    return Display({"text/plain": kept}, {}, event.is_result, event.display_id, event.update,
                   event.origin)
