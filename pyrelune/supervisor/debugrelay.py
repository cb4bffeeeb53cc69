"""The supervisor's connection to debugpy's adapter in the worker: bytes both ways, on the loop.

The Jupyter debugger's session (`protocols.debugger`) says where the adapter
listens and what to write; this holds the socket, on the kernel's loop
(`add_reader`): what the adapter sends goes to `on_data` as it comes, and the
connection's end (the worker died, and its adapter with it) to `on_lost`, once.
A connection to loopback only: the adapter listens on 127.0.0.1, and the port
is known only to this kernel's processes. Writes are small DAP requests to a
process that reads them at once; each is bounded in time all the same
(`SEND_TIMEOUT`), so a stuck adapter costs its connection, never the loop.
"""

from __future__ import annotations

import socket

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from pyrelune.loop.reactor import Loop

#: Seconds a connection to the adapter, or a write to it, may take.
SEND_TIMEOUT = 5.0


class DebugRelay:
    """One connection at a time to the adapter; a new `connect` replaces the last."""

    def __init__(self, loop: Loop, on_data: Callable[[bytes], None],
                 on_lost: Callable[[], None]) -> None:
        self._loop = loop
        self._on_data = on_data
        self._on_lost = on_lost
        self._socket: socket.socket | None = None

    def connect(self, address: tuple[str, int]) -> None:
        """Connect to the adapter at `address`; a failure is a loss (`on_lost`)."""
        self.close()
        try:
            connection = socket.create_connection(address, timeout=SEND_TIMEOUT)
        except OSError:
            self._loop.call_soon(self._on_lost)
            return
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket = connection
        self._loop.add_reader(connection.fileno(), self._readable, connection)

    def send(self, data: bytes) -> None:
        """Write `data` (framed DAP); without a connection, or on failure, it is lost."""
        connection = self._socket
        if connection is None:
            return
        try:
            connection.sendall(data)
        except OSError:
            self._lose(connection)

    def _readable(self, connection: socket.socket) -> None:
        try:
            data = connection.recv(1 << 16)
        except (BlockingIOError, InterruptedError, TimeoutError):
            return
        except OSError:
            data = b""
        if not data:
            self._lose(connection)
            return
        self._on_data(data)

    def _lose(self, connection: socket.socket) -> None:
        if connection is not self._socket:
            return
        self.close()
        self._on_lost()

    def close(self) -> None:
        connection, self._socket = self._socket, None
        if connection is not None:
            self._loop.remove_reader(connection.fileno())
            connection.close()
