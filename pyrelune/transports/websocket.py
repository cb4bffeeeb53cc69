"""A WebSocket server as a transport: one text frame per message.

Built on the `websockets` package, which checks the handshake's `Origin`
against `origins` (so a web page the user visits cannot drive a local
kernel) and closes a connection whose frame exceeds `max_size` (close code
1009). This module knows nothing about cells: each accepted connection is
handed to `handler` as a `WebSocketConnection`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ssl
    from collections.abc import Awaitable, Callable, Iterator, Sequence

    from websockets.asyncio.server import Server
    from websockets.typing import Origin


class WebSocketConnection:
    """One client: `receive()` its frames, `send()` without waiting (frames keep their order)."""

    def __init__(self, websocket: ServerConnection) -> None:
        self._websocket = websocket
        self._outgoing: asyncio.Queue[str | None] = asyncio.Queue()
        self._writer = asyncio.create_task(self._write())

    async def _write(self) -> None:
        """Send what is queued, in order; what was queued together leaves in one TCP segment.

        A cell's end is usually three messages at once (the started response,
        its result, execute.done): corked, the client wakes up once, not three times.
        """
        while True:
            batch = [await self._outgoing.get()]
            while not self._outgoing.empty():
                batch.append(self._outgoing.get_nowait())
            with _corked(self._websocket, len(batch) > 1):
                for text in batch:
                    if text is None:
                        return
                    try:
                        await self._websocket.send(text)
                    except ConnectionClosed:
                        return

    async def receive(self) -> bytes | str | None:
        """The next message, or None once the connection is closed."""
        try:
            return await self._websocket.recv()
        except ConnectionClosed:
            return None

    def send(self, data: bytes) -> None:
        self._outgoing.put_nowait(data.decode("utf-8"))

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Send what is queued, then close with `code` and `reason`."""
        self._outgoing.put_nowait(None)
        with contextlib.suppress(ConnectionClosed):
            await self._writer
        await self._websocket.close(code, reason)


@contextlib.contextmanager
def _corked(websocket: ServerConnection, cork: bool) -> Iterator[None]:
    """Hold back partial TCP segments while the block runs (Linux TCP_CORK), if `cork`."""
    sock = websocket.transport.get_extra_info("socket") if cork else None
    option = getattr(socket, "TCP_CORK", None)
    if sock is None or option is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        yield
        return
    sock.setsockopt(socket.IPPROTO_TCP, option, 1)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):  # the connection is gone: nothing to send anyway
            sock.setsockopt(socket.IPPROTO_TCP, option, 0)


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
