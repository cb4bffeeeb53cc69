"""A WebSocket server as a transport: one text frame per message.

Built on the `websockets` package, which checks the handshake's `Origin`
against `origins` (so a web page the user visits cannot drive a local
kernel) and closes a connection whose frame exceeds `max_size` (close code
1009). This module knows nothing about cells: each accepted connection is
handed to `handler` as a `WebSocketConnection`.
"""

from __future__ import annotations

import asyncio

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

#: Seconds a connection the kernel drops has to answer the close frame (the library waits 10):
#: one that never reads must not keep what it has sent the kernel for long.
DROP_TIMEOUT = 1.0

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
    makes them; only the coroutine around each one is left out.
    """

    def __init__(self, websocket: ServerConnection) -> None:
        self._websocket = websocket
        self._outgoing: list[bytes] = []
        self._loop = asyncio.get_running_loop()
        self._closing: asyncio.Task[None] | None = None

    async def deliver(self, handler: Callable[[bytes | str], bool]) -> bool:
        """Hand each message to `handler` until the connection closes (True) or it refuses one."""
        try:
            while True:
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
        self._websocket.transport.write(b"".join(protocol.data_to_send()))

    def drop(self, code: int, reason: str) -> None:
        """Send what is queued, then start closing with `code` and `reason`, without waiting.

        For a callback that cannot wait; `close()` then waits for this close, code and all.
        """
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
) -> Server:
    """Start serving; the returned server's sockets say the address actually bound."""

    async def accept(websocket: ServerConnection) -> None:
        connection = WebSocketConnection(websocket)
        try:
            await handler(connection)
        finally:
            await connection.close()

    server: Server = await serve(accept, host, port, origins=origins, max_size=max_size,
                                 ssl=ssl_context, server_header=None, compression=None)
    return server
