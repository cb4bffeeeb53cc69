"""What crosses the pipes between the supervisor and its worker: both processes import it.

This module itself is the worker's pipes: which descriptors it has
(`WorkerFds`), how bytes go whole onto them (`write_all`), and the lines
(`LineBuffer`). Both processes use them, and the host's edge too
(`transports.stdio`, `transports.pipe`), so every mode loads them before it
forks a worker: in the package itself they cost no module of their own on
the oneshot path (as `shaping`'s cap does).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pyrelune.wire.interrupts import Interrupts
    from pyrelune.wire.ring import OutputRing

_write = os.write


class WorkerFds:
    """The worker's ends of its pipes.

    `lifeline` is the read end of a pipe only the session writes to: it hits
    EOF exactly when the session is gone, however it died. `interrupts`
    (kernels only) is shared with the session (see `interrupts`), and so is
    `ring` (the rpc kernel's stdout, see `wire.ring`). `snapshots`: a kernel's
    socket to the session for its snapshots (see `worker.snapshot`), -1: none.
    """

    __slots__ = ("control", "events", "interrupts", "key", "lifeline", "ring", "snapshots",
                 "stderr", "stdout")

    def __init__(self, stdout: int, stderr: int, events: int, control: int, lifeline: int,
                 key: str, interrupts: Interrupts | None = None,
                 ring: OutputRing | None = None, snapshots: int = -1) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.events = events
        self.control = control
        self.lifeline = lifeline
        self.key = key  # signs every line the worker sends (see `supervisor.process`)
        self.interrupts = interrupts
        self.ring = ring
        self.snapshots = snapshots


def write_all(data: bytes | memoryview, fd: int = 1) -> None:
    """Write every byte of `data` to `fd`.

    With os.write as it was at import: a worker's cells get one that waits
    or flushes first (see `worker.flushfirst`), which the runtime's own
    writes (its events, its ring's overflow) must not.
    """
    view = memoryview(data)
    while view:
        view = view[_write(fd, view) :]


class LineBuffer:
    """Chunks of a byte stream in, its lines (without their newline) out, oldest first.

    The framing of the pipes between the session and its worker, both ways,
    and of the rpc kernel's requests. Adding each chunk to the unfinished line
    and searching it all again for a newline is quadratic (a 40 MiB message
    took 12 s that way): only each new chunk is searched here, and a line's
    pieces are joined once, when its newline arrives. Every mode imports it
    before forking a worker: neither process pays an import for it.
    """

    __slots__ = ("_lines", "_partial", "held")

    def __init__(self) -> None:
        self._lines: list[bytes] = []  # complete lines, newest first: pop() takes the oldest
        self._partial: list[bytes] = []  # the pieces of the line not yet ended
        self.held = 0  # bytes in those pieces: a reader may refuse a line that grows too long

    def feed(self, chunk: bytes) -> None:
        """Take `chunk`; the lines it ends wait for `pop()`."""
        if b"\n" not in chunk:
            self._partial.append(chunk)
            self.held += len(chunk)
            return
        if self._partial:
            self._partial.append(chunk)
            chunk = b"".join(self._partial)
            self._partial = []
        lines = chunk.split(b"\n")
        rest = lines.pop()
        if rest:
            self._partial.append(rest)
        self.held = len(rest)
        lines.reverse()
        if self._lines:  # lines of an earlier chunk not yet taken: they go first
            lines += self._lines
        self._lines = lines

    def pending(self) -> bool:
        """Whether any bytes wait to be taken: whole lines, or the start of one."""
        return bool(self._lines) or self.held > 0

    def pop(self) -> bytes | None:
        """The oldest complete line, or None until a newline ends one."""
        return self._lines.pop() if self._lines else None

    def rest(self) -> bytes:
        """The unfinished line, taken out: the last one of a stream that ends without a newline."""
        rest = b"".join(self._partial)
        self._partial = []
        self.held = 0
        return rest
