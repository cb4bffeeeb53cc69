"""The most recently used cell sources, within a byte budget: what tracebacks can quote.

A kernel that keeps every distinct cell it ran grows without end (a hundred
distinct 1 MiB cells held 114 MiB in the lines kernel's supervisor and as
much again in its worker). A traceback needs the source of the cells whose
code it passes through: nearly always the cell that runs and the few that
defined what it calls. So each side keeps the cells it used last, within
the same budget: the supervisor their names by source, the worker their
sources by name.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

#: Characters kept per kernel side; the newest entry is kept whatever its size.
SOURCE_BUDGET = 8 << 20


class Recent:
    """A str-to-str dict that forgets the least recently used entries past its budget.

    An entry's size is its key's length plus its value's.
    """

    __slots__ = ("_budget", "_entries", "_size")

    def __init__(self, budget: int = SOURCE_BUDGET) -> None:
        self._budget = budget
        self._entries: dict[str, str] = {}  # insertion order is use order: oldest first
        self._size = 0

    def put(self, key: str, value: str) -> list[str]:
        """Keep `value` under `key` as the newest; the keys forgotten to make room."""
        old = self._entries.pop(key, None)
        if old is not None:
            self._size -= len(key) + len(old)
        self._entries[key] = value
        self._size += len(key) + len(value)
        forgotten = []
        while self._size > self._budget and len(self._entries) > 1:
            oldest = next(iter(self._entries))
            self._size -= len(oldest) + len(self._entries.pop(oldest))
            forgotten.append(oldest)
        return forgotten

    def use(self, key: str) -> str | None:
        """The value kept under `key`, now the newest; None if it is not kept."""
        value = self._entries.pop(key, None)
        if value is not None:
            self._entries[key] = value
        return value

    def clear(self) -> None:
        self._entries.clear()
        self._size = 0

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def items(self) -> Iterator[tuple[str, str]]:
        return iter(self._entries.items())

    @property
    def size(self) -> int:
        """The characters kept."""
        return self._size
