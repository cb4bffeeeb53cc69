"""What a kernel's session and its worker share about interrupts, in shared memory.

A SIGINT says nothing of which cell it was meant for, and the worker may get
the session's just before that cell starts (sent right after its command)
or just after it ended (a second click on stop), when another cell may be
on its way. So, before it signals, the session notes which cell it
interrupts (`aim`); the worker then raises KeyboardInterrupt in that cell
only: at once if the cell has not started yet, and never in a later one.
A SIGINT the session did not send (the cell's own `signal.raise_signal`,
`_thread.interrupt_main()`, a user's `kill`) interrupts whatever cell runs,
as in plain Python. The worker also notes when it raised the interrupt
(`heard`): a cell that is cleaning up gets longer than one that never
noticed; and which cell it last started (`began`): a worker that died
before it started the cell it was sent (a cell before it broke the
worker's machinery) leaves that cell to a fresh worker, unless the host
had interrupted that cell: then it is over (see `Session.stopped`).

The memory is anonymous and shared, made before the fork: what one side
writes, the other reads. Signals cannot be counted (two pending SIGINTs
are delivered once), so `sent` and `seen` only tell whether one of the
session's is on its way.
"""

from __future__ import annotations

import mmap

_HEARD = 0
_TARGET = slice(1, 9)
_SENT = slice(9, 17)
_SEEN = slice(17, 25)
_BEGAN = slice(25, 33)


def _number(value: bytes) -> int:
    return int.from_bytes(value, "little")


class Interrupts:
    """The board: which cell the session interrupts, and whether the worker raised it."""

    def __init__(self) -> None:
        self._memory = mmap.mmap(-1, 33)
        self._answered = b""  # the worker's: the `sent` of the aim a cell's start answered

    # the session's side -----------------------------------------------------------

    def aim(self, cell: int) -> None:
        """The SIGINT about to be sent is for `cell` (a number the worker gets with it)."""
        memory = self._memory
        memory[_SENT] = (_number(memory[_SENT]) + 1).to_bytes(8, "little")
        memory[_TARGET] = cell.to_bytes(8, "little")

    def heard(self) -> bool:
        """Whether the cell raised the KeyboardInterrupt since `forget()`."""
        return self._memory[_HEARD] == 1

    def forget(self) -> None:
        self._memory[_HEARD] = 0

    def started(self, cell: int) -> bool:
        """Whether the worker has started `cell` (else it never ran any of it)."""
        return _number(self._memory[_BEGAN]) == cell

    def began(self) -> int:
        """The number of the cell the worker (or one before it) started last."""
        return _number(self._memory[_BEGAN])

    def close(self) -> None:
        self._memory.close()

    # the worker's side ------------------------------------------------------------

    def meant_for(self, cell: int) -> bool:
        """On a SIGINT: whether it is to interrupt `cell` (the session's, or anyone's)."""
        memory = self._memory
        sent = memory[_SENT]
        if sent == memory[_SEEN]:
            return True  # not the session's: whoever sent it meant the cell that runs
        memory[_SEEN] = sent
        return _number(memory[_TARGET]) == cell and sent != self._answered

    def aimed_at(self, cell: int) -> bool:
        """As `cell` starts: whether the session has interrupted it already.

        Its SIGINT, if it has not come yet, then interrupts nothing more.
        """
        memory = self._memory
        sent = memory[_SENT]
        if _number(memory[_TARGET]) != cell or sent == self._answered:
            return False
        self._answered = sent
        return True

    def begin(self, cell: int) -> None:
        """`cell` starts now (see `started`)."""
        self._memory[_BEGAN] = cell.to_bytes(8, "little")

    def hear(self) -> None:
        self._memory[_HEARD] = 1
