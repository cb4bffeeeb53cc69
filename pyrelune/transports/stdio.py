"""Standard input and output as a transport, at the file-descriptor level.

The host's stdout is the protocol channel. Everything here writes with
`os.write` on the descriptor itself, so no Python buffer sits between the
runtime and the host. `LineBuffer` cuts the bytes of any descriptor into
lines: the pipes between the supervisor and its worker use it too.
"""

from __future__ import annotations

import os

_write = os.write


#: The largest oneshot request read from stdin: 2 MiB, far more than any
#: cell's source, and bounded memory (compiling 1 MiB of statements takes
#: about 300 MB). A larger one is read to its end and dropped, unheld.
MAX_REQUEST = 2 << 20


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
    pieces are joined once, when its newline arrives. It lives in this module
    because every mode imports it before forking a worker: neither process
    pays an import for it.
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
