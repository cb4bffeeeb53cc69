"""Standard input and output as a transport, at the file-descriptor level.

The host's stdout is the protocol channel. Everything here writes with
`os.write` on the descriptor itself (`wire.write_all`), so no Python
buffer sits between the runtime and the host; lines are cut as the worker's
pipes are (`wire.LineBuffer`).
"""

from __future__ import annotations

import os

from pyrelune.wire import LineBuffer, write_all

__all__ = ["LineReader", "closed", "hold_stderr", "read_all", "say", "write_all"]


def read_all(fd: int = 0, limit: int | None = None) -> bytes:
    """Everything on `fd` until EOF; past `limit` bytes, only the first `limit + 1`.

    Read before anything else, even a failure: a host that writes the whole
    request before reading (Vix Note) dies of SIGPIPE if we exit first. So
    what is past `limit` is read too, and dropped as it comes.
    """
    chunks = []
    kept = 0
    while chunk := os.read(fd, 1 << 20):
        if limit is None or kept <= limit:
            chunks.append(chunk)
            kept += len(chunk)
    data = b"".join(chunks)
    return data if limit is None else data[:limit + 1]


def closed(fd: int) -> bool:
    """Whether `fd` is not open: a host started us with it closed (`<&-`, `>&-`)."""
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def hold_stderr() -> None:
    """A closed fd 2 is taken by /dev/null: no pipe of ours may get its number and be
    written as stderr."""
    if closed(2):
        os.open(os.devnull, os.O_WRONLY)


def say(message: str) -> None:
    """`pyrelune: message` on stderr, when the host gets no response to say it in."""
    try:
        write_all(f"pyrelune: {message}\n".encode(errors="replace"), 2)
    except OSError:
        pass  # no stderr either: the exit status is all the host gets


class LineReader:
    """Lines from `fd`, read in large chunks so that pipelined requests cost one read.

    Each line comes without its newline; a last line without one still counts.
    """

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._buffer = LineBuffer()
        # From the moment the wait for input ends until the reader's user has
        # dealt with what came (`done_with`): a line is on its way. A signal
        # handler that runs during the wait itself sees False.
        self.holding = False

    def __iter__(self) -> LineReader:
        return self

    def waiting(self) -> bool:
        """Whether a line is on its way: in the pipe, read, or being dealt with."""
        if self.holding or self._buffer.pending():
            return True
        import select

        return bool(select.select([self._fd], [], [], 0)[0])

    def done_with(self) -> None:
        """The last line is dealt with: unless more wait in the buffer, none is on its way."""
        self.holding = self._buffer.pending()

    def __next__(self) -> bytes:
        while (line := self._buffer.pop()) is None:
            # A host running cells back to back sends the next request at once:
            # read it without sleeping first (see `spin`; imported here, as the
            # oneshot runtime, which uses this module too, never waits for input).
            from select import select

            from pyrelune import spin

            if not spin.poll([self._fd]):
                select([self._fd], [], [])  # the wait: a signal here finds no line on its way
            self.holding = True
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                if last := self._buffer.rest():
                    return last
                raise StopIteration
            self._buffer.feed(chunk)
        return line
