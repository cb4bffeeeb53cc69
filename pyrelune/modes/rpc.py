"""rpc kernel mode: the rpc-kernel protocol over a pipe or over WebSocket.

One event loop does everything: it reads the transport, hands lines to the
codec (`pyrelune.protocols.rpc`) and carries out its commands on the kernel
(`pyrelune.supervisor.evented`, which watches the worker on the same loop and
hands its events back as they happen). Over a pipe the loop is a
`loop.reactor.Reactor`: the host waits for `kernel.ready`, and asyncio
alone takes longer to import than the rest of the kernel. WebSocket needs
asyncio (the `websockets` package runs on it); the same `RpcServer` runs on
either loop, with callbacks only, and the coroutines around it are
WebSocket's. A timer flushes the codec's coalesced output.

The kernel outlives its connections: a WebSocket client that reconnects finds
the namespace (and a running cell) as it left them. One client at a time is
served; with a token, connections wait as guests until they send it, and a
guest holds nothing: the first to send the token is served and the others
are dropped, so no one without the token can keep the owner out.
"""

from __future__ import annotations

import _signal
import os
import sys
import time

from pyrelune.loop.reactor import Reactor
from pyrelune.loop.ticker import Ticker
from pyrelune.modes import ConfigError
from pyrelune.protocols import rpc, rpcmessages
from pyrelune.settings import PLAIN
from pyrelune.shaping import STREAM_MAX_OUTPUT
from pyrelune.supervisor.evented import LoopDriver
from pyrelune.supervisor.kernel import Kernel
from pyrelune.transports.pipe import OVERSIZED, LineConnection
from pyrelune.transports.stdio import closed, hold_stderr, say
from pyrelune.wire.commands import INTERRUPT, Admit, CancelInput, Disconnect
from pyrelune.wire.events import Comm, InputRequest, Payload, Reply

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable
    from typing import Any, Protocol

    from pyrelune.loop.reactor import Loop
    from pyrelune.protocols.outcome import Outcome
    from pyrelune.protocols.rpcmessages import Message
    from pyrelune.transports.websocket import WebSocketConnection
    from pyrelune.wire.events import Event

    class Connection(Protocol):
        def send(self, data: bytes) -> None: ...

#: Default largest message (a request line or a WebSocket frame), in bytes.
DEFAULT_MAX_MESSAGE = 16 << 20
#: A WebSocket close code for "try again later": a second client while one is connected.
TRY_AGAIN_LATER = 1013
POLICY_VIOLATION = 1008
#: Seconds a WebSocket connection may wait as a guest before it sends the token.
AUTH_TIMEOUT = 10.0
#: Seconds a WebSocket client may leave the kernel's messages unread (see
#: `transports.websocket`) before it is cut off; meanwhile the cell waits.
DRAIN_TIMEOUT = 30.0
#: Guests at once: one more drops the one that has waited longest. The owner, who sends the
#: token at once, is dropped only if this many others connect before its token arrives.
MAX_GUESTS = 8


class Settings:
    """What the command line decided."""

    def __init__(
        self,
        listen: tuple[str, int] | None = None,
        token: str | None = None,
        allow_origins: tuple[str, ...] = (),
        certfile: str | None = None,
        keyfile: str | None = None,
        max_message: int = DEFAULT_MAX_MESSAGE,
        max_output: int | None = None,
        auth_timeout: float = AUTH_TIMEOUT,
        drain_timeout: float = DRAIN_TIMEOUT,
        shell: str = PLAIN,
        snapshot_max: int = 0,
    ) -> None:
        self.listen = listen
        self.token = token
        self.allow_origins = allow_origins
        self.certfile = certfile
        self.keyfile = keyfile
        self.max_message = max_message
        self.max_output = max_output
        self.auth_timeout = auth_timeout
        self.drain_timeout = drain_timeout
        self.shell = shell  # what runs the cells (PYRELUNE_SHELL: see `settings.shell`)
        self.snapshot_max = snapshot_max  # see `settings.snapshot_max`


def parse_listen(value: str) -> tuple[str, int]:
    """`HOST:PORT`, `[IPv6]:PORT`, `:PORT` or `PORT` (host 127.0.0.1)."""
    host, _, port = value.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise ConfigError(f"--listen {value!r}: expected HOST:PORT") from None
    if not 0 <= number <= 65535:
        raise ConfigError(f"--listen {value!r}: port must be 0-65535")
    return host, number


class RpcServer:
    """Connects the codec, the kernel and whichever client is connected."""

    def __init__(self, settings: Settings, loop: Loop) -> None:
        self.settings = settings
        self.loop = loop
        self.protocol = rpc.RpcCodec(settings.token, settings.max_output)
        cap = STREAM_MAX_OUTPUT if settings.max_output is None else settings.max_output
        self.kernel = Kernel(rpc.profile(cap, settings.shell, settings.snapshot_max))
        self.driver = LoopDriver(loop, self.kernel, self._on_event)
        self.client: Connection | None = None  # the one served: it may see the cells
        self._guests: dict[WebSocketConnection, rpc.Guest] = {}  # oldest first
        self._when_settled: Callable[[], None] | None = None  # once no cell runs, no reset
        self._input_ended = False  # the pipe's input is over: no input() can be answered
        self._ticker = Ticker(loop, self._flush)  # the codec's coalesced stream text

    # -- connections ---------------------------------------------------------

    def serve_pipe(self, connection: LineConnection, finished: Callable[[], None]) -> None:
        """Serve the host at the other end of the pipe; `finished()` once it is done with us.

        That is when its input has ended (the host closed our stdin but
        still reads our stdout) and the running cell has ended too, its
        events sent; an `input()` it waits in, or calls later, gets EOFError.
        """
        self.client = connection
        self._send_all(self.protocol.connect().messages)
        connection.deliver(self._take, lambda at_end: self._input_over(connection, finished))

    def _input_over(self, connection: LineConnection, finished: Callable[[], None]) -> None:
        self._input_ended = True
        if self.protocol.state == rpc.WAITING_INPUT:
            self.kernel.apply(CancelInput())

        def done() -> None:
            self._leave(connection)
            finished()

        self._when_settled = done
        self._settle()

    def _settle(self) -> None:
        """Call back who waits for the kernel to settle, if it has (after this turn's writes)."""
        if self._when_settled is not None and not self.protocol.busy:
            self.loop.call_soon(self._when_settled)
            self._when_settled = None

    async def serve(self, connection: WebSocketConnection) -> None:
        """Serve `connection`, which needs no token, until it closes."""
        self.client = connection
        try:
            self._send_all(self.protocol.connect().messages)
            await connection.deliver(self._take)
        finally:
            self._leave(connection)

    async def welcome(self, connection: WebSocketConnection) -> None:
        """A WebSocket connection that must send the token: a guest until it does, then served.

        A guest is dropped (close code 1008) when its `--auth-timeout` is over,
        after too many wrong tokens or past its budget (`rpc.Guest`); (1013)
        when another client is served,
        or when `MAX_GUESTS` newer ones wait.
        """
        self._guests[connection] = rpc.Guest()
        if len(self._guests) > MAX_GUESTS:
            self._drop(next(iter(self._guests)), TRY_AGAIN_LATER,
                       "too many connections are waiting for kernel.auth")
        for message in self.protocol.connect().messages:
            connection.send(rpcmessages.encode(message))
        expiry = self.loop.call_later(self.settings.auth_timeout, self._drop, connection,
                                      POLICY_VIOLATION, "no kernel.auth in time")
        try:
            await connection.deliver(lambda raw: self._visit(connection, raw))
        finally:
            expiry.cancel()
            self._guests.pop(connection, None)
            self._leave(connection)

    def _visit(self, connection: WebSocketConnection, raw: bytes | str) -> bool:
        """One message from a connection that began as a guest.

        Once it is dropped, what it still sends is read and thrown away until
        it closes: left unread, it would pile up in the connection's queue.
        """
        if connection is self.client:
            return self._take(raw)
        guest = self._guests.get(connection)
        if guest is None:
            return True
        outcome = self.protocol.knock(guest, raw)
        for message in outcome.messages:
            connection.send(rpcmessages.encode(message))
        for command in outcome.commands:
            if isinstance(command, Admit):
                self._admit(connection)
            elif isinstance(command, Disconnect):
                self._drop(connection, POLICY_VIOLATION, command.reason)
        return True

    def _admit(self, connection: WebSocketConnection) -> None:
        """`connection` sent the token: it is served, and every other guest is dropped."""
        del self._guests[connection]
        self.client = connection
        self.congestion(connection, connection.congested)
        for other in list(self._guests):
            other.send(rpcmessages.encode(rpcmessages.another_client()))
            self._drop(other, TRY_AGAIN_LATER, "another client is connected")

    def _drop(self, connection: WebSocketConnection, code: int, reason: str) -> None:
        """Start closing a guest's connection; nothing it sends from now on is answered."""
        if self._guests.pop(connection, None) is not None:
            connection.drop(code, reason)

    def congestion(self, connection: WebSocketConnection, congested: bool) -> None:
        """Back-pressure: while the served client does not read, the worker is not read either.

        A guest's congestion only stops its own frames being read (the
        transport does that); a cell's output never goes to a guest.
        """
        if connection is not self.client:
            return
        if congested:
            self.driver.hold()
        else:
            self.driver.release()

    def _leave(self, connection: Connection) -> None:
        if self.client is connection:
            self.client = None
            self.protocol.leave()
            self.driver.release()  # no one to wait for: the cell's output is held within its cap

    def _take(self, raw: bytes | str) -> bool:
        """One message from the served client (it is never dropped for what it sends)."""
        if raw == OVERSIZED:
            self._send(rpcmessages.error(None, rpcmessages.INVALID_REQUEST,
                                 f"Invalid request: message larger than "
                                 f"{self.settings.max_message} bytes"))
        else:
            self._apply(self.protocol.receive(raw))
        return True

    def _send(self, message: dict[str, Any]) -> None:
        if self.client is not None:  # else a reconnecting client starts from kernel.ready
            self.client.send(rpcmessages.encode(message))

    def _send_all(self, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            self._send(message)

    # -- the codec's outcomes --------------------------------------------------

    def _apply(self, outcome: Outcome[Message]) -> None:
        """Send the messages to the served client, carry out the commands on the kernel."""
        for message in outcome.messages:
            self._send(message)
        for command in outcome.commands:
            self.kernel.apply(command)
        self._ticker.arm(self.protocol.flush_at)
        self._settle()

    def _flush(self) -> None:
        self._send_all(self.protocol.tick(time.monotonic()).messages)
        self._ticker.arm(self.protocol.flush_at)

    # -- the kernel's events ------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        """One event of the running cell (or reset), in order, as the kernel reads it."""
        if isinstance(event, Comm):
            return  # this protocol has no comms (its workers make none: see `worker.comms`)
        if isinstance(event, (Reply, Payload)):
            return  # the answer to a Query, which this protocol never asks; an IPython note
        if isinstance(event, InputRequest) and self._input_ended:
            self.kernel.apply(CancelInput())
        self._apply(self.protocol.output(event, time.monotonic()))

    def interrupt_or_stop(self, stop: Callable[[], None]) -> None:
        """SIGINT to the kernel process: interrupt the running cell; idle, stop if listening."""
        if self.protocol.state != rpc.IDLE:
            self.kernel.apply(INTERRUPT)
        elif self.settings.listen is not None:
            stop()

    def close(self) -> None:
        self.kernel.close()


def _serve_pipe(settings: Settings, out_fd: int) -> int:
    """Serve the host on stdin and `out_fd` until its input ends and its cell is over, or
    SIGTERM; or until the host is gone (it closed its end of stdout), which ends the cell too.

    The status is 1 when a message could not be written (a full disk), said on stderr.
    """
    reactor = Reactor()
    server = RpcServer(settings, reactor)
    status = 0

    def lost(error: OSError | None) -> None:
        nonlocal status
        if error is not None:
            status = 1
            say(f"cannot write to stdout: {error.strerror or error}; the rpc kernel stops "
                "its cell and exits")  # on fd 2: fd 1 is stderr too by now
        reactor.stop()

    try:
        reactor.add_signal_handler(_signal.SIGTERM, reactor.stop)
        reactor.add_signal_handler(_signal.SIGINT, server.interrupt_or_stop, reactor.stop)
        connection = LineConnection(reactor, 0, out_fd, settings.max_message, lost)
        server.serve_pipe(connection, reactor.stop)
        reactor.run()
    finally:
        server.close()
        reactor.close()
    return status



async def _serve_websocket(settings: Settings, out_fd: int) -> None:
    """Serve WebSocket clients until SIGTERM, or SIGINT while idle."""
    import asyncio

    loop = asyncio.get_running_loop()
    server = RpcServer(settings, loop)
    stop = asyncio.Event()
    loop.add_signal_handler(_signal.SIGTERM, stop.set)
    loop.add_signal_handler(_signal.SIGINT, server.interrupt_or_stop, stop.set)
    try:
        await _listen(server, out_fd, stop)
    finally:
        server.close()


async def _listen(server: RpcServer, out_fd: int, stop: asyncio.Event) -> None:
    """Accept connections and print where, until `stop`."""
    import ssl

    from pyrelune.transports.websocket import listen

    settings = server.settings
    assert settings.listen is not None
    context = None
    if settings.certfile:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(settings.certfile, settings.keyfile)

    async def handle(connection: WebSocketConnection) -> None:
        connection.on_congestion(lambda congested: server.congestion(connection, congested))
        if server.client is not None:
            for message in server.protocol.refuse():
                connection.send(rpcmessages.encode(message))
            await connection.close(TRY_AGAIN_LATER, "another client is connected")
        elif server.protocol.needs_token:
            await server.welcome(connection)
        else:
            await server.serve(connection)

    origins: list[Any] = [None, *settings.allow_origins]
    host, port = settings.listen
    websocket_server = await listen(handle, host, port, origins=origins,
                                    max_size=settings.max_message, ssl_context=context,
                                    drain_timeout=settings.drain_timeout)
    bound = websocket_server.sockets[0].getsockname()
    scheme = "wss" if context else "ws"
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    line = rpcmessages.event("kernel.listening", {"url": f"{scheme}://{shown}:{bound[1]}",
                                          "host": bound[0], "port": bound[1]})
    os.write(out_fd, rpcmessages.encode(line) + b"\n")
    try:
        await stop.wait()
    finally:
        websocket_server.close()
        await websocket_server.wait_closed()


def serve(settings: Settings) -> int:
    """Run the kernel until its input ends and its cell is over (pipe), or SIGTERM / SIGINT while
    idle (WebSocket); the exit status."""
    # The streams it speaks on must be there: a closed one's number goes to the
    # next descriptor made (a pipe of ours), which would then be read as the host.
    hold_stderr()
    if settings.listen is None and closed(0):
        raise ConfigError("stdin is closed: the rpc kernel reads its requests there")
    if closed(1):
        raise ConfigError("stdout is closed: the rpc kernel writes its messages there")
    # The protocol owns stdout: anything else this process prints goes to stderr.
    out_fd = os.dup(1)
    os.dup2(2, 1)
    if settings.listen is None:
        return _serve_pipe(settings, out_fd)
    import asyncio

    asyncio.run(_serve_websocket(settings, out_fd))
    return 0


def main(settings: Settings) -> int:
    """Start the rpc kernel with `settings` as `cli.rpcargs.settings` checked them; the exit
    status is 2 for streams it cannot use, 1 when its messages cannot be written."""
    try:
        return serve(settings)
    except ConfigError as exc:
        sys.stderr.write(f"pyrelune: {exc}\n")
        return 2
    except OSError as exc:  # the address is taken, the certificate cannot be read, ...
        sys.stderr.write(f"pyrelune: cannot start the rpc kernel: {exc}\n")
        return 1
