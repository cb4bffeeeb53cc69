"""When the Jupyter kernel's cells wait on IOPub, and when they stop waiting on it.

IOPub's large messages are counted in bytes until ZeroMQ has written them out
to every subscriber (`zmqsockets.ZmqSockets.backlog`); over a budget, the
kernel stops reading its worker, so a cell waits on its own output instead of
the kernel growing. But IOPub is one XPUB socket: ZeroMQ keeps a message until
every subscriber's pipe has taken it, so one subscriber that reads nothing (a
console suspended with Ctrl-Z, any peer that subscribes and stops) would hold
every front end's cells for ever. ZeroMQ offers no way round it per
subscriber: its high-water mark drops per pipe but counts messages, not bytes
(IOPub's must be high, for floods of small ones: `zmqsockets.IOPUB_HWM`), and
an XPUB cannot single out a peer to let go of.

So the wait has a limit (`settings.iopub_stall`): when nothing at all has been
written out for that long while the budget is full, a subscriber has stalled.
The worker is read again; while the budget stays full, large messages are not
sent, to anyone, but counted (`unsent`), and small ones (status, short
streams, replies' IOPub side) go on flowing, bounded by the high-water mark;
the front ends are told what they missed (`note`). Once the budget drains to
half (the subscriber read again, or went, which frees what its pipe held),
everything is sent again. Memory stays bounded throughout.

No ZeroMQ here: the driver hands in the backlog, the bytes written so far, and
the time.
"""

from __future__ import annotations

#: Sending as usual.
OPEN = "open"
#: Over the budget: the worker is not read; nothing written out for `stall` seconds: STALLED.
HELD = "held"
#: A subscriber reads nothing: the worker is read, large messages are counted, not sent.
STALLED = "stalled"

MIB = 1 << 20


class IopubFlow:
    """IOPub's state: `budget` bytes may wait unwritten; `stall` seconds with nothing written,
    over it, means a subscriber has stalled (0: never, the cell waits for ever); messages of
    `large` bytes and more are the ones counted."""

    def __init__(self, budget: int, stall: float, large: int) -> None:
        self.budget = budget
        self.stall = stall
        self.large = large
        self.state = OPEN
        self._progress = (0, 0.0)  # bytes written by then, and when
        self.unsent = 0  # large messages not sent since the last note
        self.unsent_bytes = 0

    def sent(self, backlog: int, written: int, now: float) -> bool:
        """After a send: whether the worker must now wait (the budget is over, just now)."""
        if self.state != OPEN or backlog <= self.budget:
            return False
        self.state = HELD
        self._progress = (written, now)
        return True

    def look(self, backlog: int, written: int, now: float) -> str:
        """While HELD or STALLED: the state now (OPEN: drained, the worker may go on; STALLED
        from HELD: the worker may go on too, without that subscriber)."""
        if backlog <= self.budget // 2:
            self.state = OPEN
        elif self.state == HELD:
            if written != self._progress[0]:
                self._progress = (written, now)
            elif self.stall and now - self._progress[1] >= self.stall:
                self.state = STALLED
        return self.state

    def admit(self, size: int) -> bool:
        """Whether an IOPub message of `size` bytes goes out; one that does not is counted."""
        if self.state != STALLED or size < self.large:
            return True
        self.unsent += 1
        self.unsent_bytes += size
        return False

    def note(self) -> str | None:
        """What the front ends were not sent since the last note, said once; None: nothing."""
        if not self.unsent:
            return None
        count, size = self.unsent, self.unsent_bytes
        self.unsent = self.unsent_bytes = 0
        outputs = "output was" if count == 1 else "outputs were"
        return (f"pyrelune: {count} {outputs} not sent ({_size(size)}): a front end connected "
                f"to IOPub stopped reading, and {_size(self.budget)} wait for it; outputs are "
                "sent again once it reads or disconnects\n")


def _size(count: int) -> str:
    return f"{count / MIB:.1f} MiB" if count >= MIB else f"{count / 1024:.0f} KiB"
