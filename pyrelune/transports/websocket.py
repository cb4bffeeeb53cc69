"""A WebSocket server as a transport: one text frame per message.

Built on the `websockets` package, which checks the handshake's `Origin`
against `origins` (so a web page the user visits cannot drive a local
kernel) and closes a connection whose frame exceeds `max_size` (close code
1009). This module knows nothing about cells: each accepted connection is
handed to `handler` as a `WebSocketConnection`.

Back-pressure: a client that does not read what it is sent must not make
the kernel hold it all. Once more than `HIGH_WATER` bytes wait in a
connection's write buffer, it is congested: its frames are no longer read
(so its requests stop too, up to the library's small queue and the socket's
buffers) and whoever serves it is told, until the buffer has drained; one
that stays congested for `drain_timeout` seconds is cut off.
"""

from __future__ import annotations

import asyncio

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

#: Seconds a connection the kernel drops has to answer the close frame (the library waits 10):
#: one that never reads must not keep what it has sent the kernel for long.
DROP_TIMEOUT = 1.0
#: Bytes waiting to be written to a client above which it is congested (see above).
HIGH_WATER = 1 << 20

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ssl
    from collections.abc import Awaitable, Callable, Sequence

    from websockets.asyncio.server import Server
    from websockets.typing import Origin


class WebSocketConnection:
    """One client: `deliver()` its frames, `send()` without waiting (frames keep their order).

    What is sent in one turn of the event loop leaves in one write: a cell's
    end is usually three messages at once (the started response, its result,
    execute.done), and the client then wakes up once, not three times. The
    frames are made by the connection's own sans-I/O protocol, as its `send()`
    makes them; only the coroutine around each one is left out. Its
    `protocol` and `transport` are not promised API: pyproject.toml allows
    only the websockets versions this was tested with.
    """

    def __init__(self, websocket: ServerConnection, drain_timeout: float) -> None:
        self._websocket = websocket
        self._drain_timeout = drain_timeout
        self._outgoing: list[bytes] = []
        self._loop = asyncio.get_running_loop()
        self._closing: asyncio.Task[None] | None = None
        self._flowing = asyncio.Event()  # clear while congested
        self._flowing.set()
        self._draining: asyncio.Task[None] | None = None
        self._on_congestion: Callable[[bool], None] | None = None

    @property
    def congested(self) -> bool:
        """More than `HIGH_WATER` bytes wait to be written; nothing is read meanwhile."""
        return not self._flowing.is_set()

    def on_congestion(self, callback: Callable[[bool], None] | None) -> None:
        """Call `callback(True)` when the connection becomes congested, `(False)` when it drains."""
        self._on_congestion = callback

    async def deliver(self, handler: Callable[[bytes | str], bool]) -> bool:
        """Hand each message to `handler` until the connection closes (True) or it refuses one.

        While congested, no message is taken: unread, they stay in the socket.
        """
        try:
            while True:
                await self._flowing.wait()
                if not handler(await self._websocket.recv()):
                    return False
        except ConnectionClosed:
            return True

    def send(self, data: bytes) -> None:
        """Queue one message (UTF-8 JSON text); it leaves at the end of this turn of the loop."""
        if not self._outgoing:
            self._loop.call_soon(self._flush)
        self._outgoing.append(data)

    def _flush(self) -> None:
        batch, self._outgoing = self._outgoing, []
        protocol = self._websocket.protocol
        if protocol.state is not State.OPEN:
            return  # closing: the client is gone, as it would be for any message sent now
        for data in batch:
            protocol.send_text(data)
        transport = self._websocket.transport
        transport.write(b"".join(protocol.data_to_send()))
        if self._draining is None and transport.get_write_buffer_size() > HIGH_WATER:
            self._flowing.clear()
            self._draining = self._loop.create_task(self._drain())
            self._tell(True)

    async def _drain(self) -> None:
        """Wait for the write buffer to drain (then flow again), or cut the connection off."""
        try:  # until the buffer is below the library's own mark
            await asyncio.wait_for(self._websocket.drain(), self._drain_timeout)
        except asyncio.TimeoutError:
            self._websocket.transport.abort()  # what it never read goes with it
        except Exception:  # the connection was lost meanwhile: it ends as it would anyway
            pass
        self._draining = None
        self._flowing.set()
        self._tell(False)

    def _tell(self, congested: bool) -> None:
        if self._on_congestion is not None:
            self._on_congestion(congested)

    def drop(self, code: int, reason: str) -> None:
        """Send what is queued, then start closing with `code` and `reason`, without waiting.

        For a callback that cannot wait; `close()` then waits for this close, code and all.
        A congested connection is cut off at once: its close frame would only
        join what it does not read.
        """
        if self.congested:
            self._websocket.transport.abort()
        self._websocket.close_timeout = DROP_TIMEOUT
        self._closed(code, reason)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Send what is queued, then close with `code` and `reason` (or those of a `drop()`)."""
        await self._closed(code, reason)

    def _closed(self, code: int, reason: str) -> asyncio.Task[None]:
        if self._closing is None:
            self._flush()
            self._closing = self._loop.create_task(self._websocket.close(code, reason))
        return self._closing


async def listen(
    handler: Callable[[WebSocketConnection], Awaitable[None]],
    host: str,
    port: int,
    *,
    origins: Sequence[Origin | None],
    max_size: int,
    ssl_context: ssl.SSLContext | None,
    drain_timeout: float,
) -> Server:
    """Start serving; the returned server's sockets say the address actually bound."""

    async def accept(websocket: ServerConnection) -> None:
        connection = WebSocketConnection(websocket, drain_timeout)
        try:
            await handler(connection)
        finally:
            await connection.close()

    server: Server = await serve(accept, host, port, origins=origins, max_size=max_size,
                                 ssl=ssl_context, server_header=None, compression=None)
    return server
