"""The five ZeroMQ sockets of a Jupyter kernel: frames in and out, no messages.

Shell, control and stdin are ROUTER sockets, IOPub an XPUB socket, bound where
the connection file says (`tcp://ip:port`, or `ipc://ip-port`); a TCP port
by taking over the listener opened before ZeroMQ was imported, if there is
one (`transports.prebound`). The heartbeat is a REP socket echoing every
ping from a thread of its own, in a ZeroMQ context of its own (as
ipykernel's): a front end checks that the kernel process is alive, and it
is, whatever a cell is doing, since cells run in the worker. The worker
never holds any of them: it closes every descriptor it inherits (see
`supervisor.process`).

IOPub is XPUB (as ipykernel 7's): it hears each subscriber's subscription
(`XPUB_VERBOSE`: every one, not only a topic's first), so the kernel can
welcome it (`iopub_welcome`, JEP 65) and a front end knows IOPub is
connected instead of guessing from a status that a slow joiner misses.

IOPub is bounded in bytes too, not only in messages (its high-water mark):
ZeroMQ keeps what a subscriber has not read, and says nothing of how much.
So each IOPub message of `TRACKED` bytes or more is handed over zero-copy
with a tracker, which says when ZeroMQ has written it out to every
subscriber (or let go of it: a subscriber that disconnects frees what its
pipe held); `backlog` is the bytes handed over and not yet written. The
driver stops reading the worker while it is over a budget (`IOPUB_BUDGET`),
so the cell waits on its own output until IOPub drains, for a while: see
`transports.iopubflow` for a subscriber that never reads again.

A socket's `FD` is edge-triggered: it says "look" once, and a send on the
socket may consume that. So `receive` reads until nothing is left, and the
driver looks again after each of its own sends (`pending`).

With CurveZMQ keys (the connection file's `curve_publickey` and
`curve_secretkey`, JEP 145) every socket, the heartbeat's too, is a curve
server: a peer that does not know the kernel's public key completes no
handshake, and sees nothing of what is said. No ROUTER hands an identity
over: a peer that reads a front end's session id off IOPub and connects with
it gets nothing that was meant for the front end (libzmq ignores the second
peer while the first is connected).
"""

from __future__ import annotations

import threading
from collections import deque

import zmq

from pyrelune.transports import prebound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

SHELL, CONTROL, STDIN, IOPUB, HEARTBEAT = "shell", "control", "stdin", "iopub", "hb"
#: The channels a request can come in on, the most urgent first.
INCOMING = (CONTROL, SHELL, STDIN)
#: How long closing waits for the last messages (a shutdown_reply) to leave, in ms.
LINGER = 1000
#: How many IOPub messages may wait for ZeroMQ's I/O thread (and a subscriber that reads):
#: past it, PUB drops them unsaid. A cell's output is bounded (at most 2,000 displays,
#: `shaping.JUPYTER_MAX_DISPLAYS`, and capped text), and it comes in a burst that
#: a busy machine's I/O thread can fall 1,000 (ZeroMQ's default) behind: seen, a display
#: flood lost 200 of its 2,000 on the way.
IOPUB_HWM = 20_000
#: IOPub messages from this size on count in `ZmqSockets.backlog` (smaller ones, which a
#: cell's caps bound, only in `IOPUB_HWM`): following one costs a tracker.
TRACKED = 4096
#: The IOPub backlog, in bytes, past which the kernel stops reading its worker (see the
#: module's docstring): 32 images of 1 MiB, which a reading front end takes in well
#: before a cell could produce more.
IOPUB_BUDGET = 32 << 20


def address(transport: str, ip: str, port: int) -> str:
    """A channel's ZeroMQ address, as jupyter_client makes it."""
    return f"tcp://{ip}:{port}" if transport == "tcp" else f"ipc://{ip}-{port}"


#: A curve server's keys: its public and secret key, each 40 characters of Z85.
CurveKeys = tuple[bytes, bytes]


class ZmqSockets:
    """The kernel's sockets, bound; `ports` says where (a port 0 becomes a free one), `curve`
    the keys that encrypt them (None: plain text)."""

    incoming = INCOMING

    def __init__(self, transport: str, ip: str, ports: dict[str, int],
                 curve: CurveKeys | None = None) -> None:
        self.context = zmq.Context()
        self._sockets: dict[str, zmq.Socket[bytes]] = {}
        self.ports: dict[str, int] = {}
        self._unwritten: deque[tuple[zmq.MessageTracker, int]] = deque()  # IOPub's, in order
        self._backlog = 0  # their bytes
        self.written = 0  # the bytes of those written out, so far (as `backlog` last saw)
        try:
            for channel, kind in ((SHELL, zmq.ROUTER), (CONTROL, zmq.ROUTER),
                                  (STDIN, zmq.ROUTER), (IOPUB, zmq.XPUB)):
                socket = self._sockets[channel] = self.context.socket(kind)
                socket.linger = LINGER
                if kind == zmq.XPUB:
                    socket.sndhwm = IOPUB_HWM
                    socket.xpub_verbose = True
                _encrypt(socket, curve)
                self.ports[channel] = _bind(socket, transport, ip, ports[channel])
            self.heartbeat = Heartbeat(transport, ip, ports[HEARTBEAT], curve)
        except BaseException:
            self.close()
            raise
        self.ports[HEARTBEAT] = self.heartbeat.port

    def fds(self) -> dict[int, str]:
        """The descriptors to wait on, each with its channel (IOPub's: its subscriptions)."""
        return {int(self._sockets[channel].getsockopt(zmq.FD)): channel
                for channel in (*INCOMING, IOPUB)}

    def waiting(self) -> bool:
        """Whether a message (or a subscription) waits on a socket: the edge-triggered FDs may
        not say so after a send."""
        return any(int(self._sockets[channel].getsockopt(zmq.EVENTS)) & zmq.POLLIN
                   for channel in (*INCOMING, IOPUB))

    def receive(self, channel: str) -> list[bytes] | None:
        """The next message's frames on `channel`, or None if none waits."""
        try:
            return self._sockets[channel].recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return None

    def subscriptions(self) -> list[bytes]:
        """The topics IOPub's new subscribers subscribed to, since the last call (what they
        unsubscribe is left aside)."""
        topics: list[bytes] = []
        while (frames := self.receive(IOPUB)) is not None:
            topics.extend(frame[1:] for frame in frames if frame[:1] == b"\x01")
        return topics

    def send(self, channel: str, frames: Sequence[bytes]) -> None:
        """Queue `frames` on `channel`; a front end gone (unroutable) loses them silently.
        A large IOPub message is followed until it is written out (`backlog`)."""
        socket = self._sockets[channel]
        size = sum(map(len, frames))
        if channel != IOPUB or size < TRACKED:
            socket.send_multipart(frames)
            return
        *head, last = frames
        for frame in head:
            socket.send(frame, zmq.SNDMORE)
        tracked = zmq.Frame(last, track=True)  # written last: done once the rest is written
        socket.send(tracked, copy=False)
        if (tracker := tracked.tracker) is not None:
            self._unwritten.append((tracker, size))
            self._backlog += size

    def backlog(self) -> int:
        """The bytes of IOPub messages handed to ZeroMQ that it has not yet written out to
        every subscriber (one that stops reading keeps them all)."""
        while self._unwritten and self._unwritten[0][0].done:
            size = self._unwritten.popleft()[1]
            self._backlog -= size
            self.written += size
        return self._backlog

    def close(self) -> None:
        """Close every socket, letting queued messages leave for up to `LINGER` ms."""
        for socket in self._sockets.values():
            socket.close()
        self.context.term()
        if hasattr(self, "heartbeat"):
            self.heartbeat.stop()


def _encrypt(socket: zmq.Socket[bytes], curve: CurveKeys | None) -> None:
    """Make `socket` a CurveZMQ server with `curve`'s keys (before it binds)."""
    if curve is not None:
        socket.curve_publickey, socket.curve_secretkey = curve
        socket.curve_server = True


def _bind(socket: zmq.Socket[bytes], transport: str, ip: str, port: int) -> int:
    """Bind `socket` at `port` (0: a free one); the port it is bound at."""
    if transport == "tcp":
        if port == 0:
            return socket.bind_to_random_port(f"tcp://{ip}")
        _take_over(socket, ip, port)
        socket.bind(address(transport, ip, port))
        return port
    if port == 0:  # ipc: the first unused name from 1 on, as ipykernel picks it
        import os

        port = 1
        while os.path.exists(f"{ip}-{port}"):
            port += 1
    socket.bind(address(transport, ip, port))
    return port


def _take_over(socket: zmq.Socket[bytes], ip: str, port: int) -> None:
    """Have `socket` bind by taking over the listener on `ip:port` the kernel opened before
    it imported ZeroMQ (see `transports.prebound`), with the connections waiting there."""
    if (fd := prebound.take(ip, port)) is None:
        return
    try:
        socket.setsockopt(zmq.USE_FD, fd)
    except (AttributeError, zmq.ZMQError):  # a libzmq without it: bound afresh instead
        import os

        os.close(fd)


class Heartbeat:
    """The REP socket that echoes pings, on a thread of its own."""

    def __init__(self, transport: str, ip: str, port: int,
                 curve: CurveKeys | None = None) -> None:
        self._context = zmq.Context()
        socket = self._context.socket(zmq.REP)
        socket.linger = 0
        try:
            _encrypt(socket, curve)
            self.port = _bind(socket, transport, ip, port)
        except BaseException:
            socket.close()
            self._context.term()
            raise
        self._thread = threading.Thread(target=self._echo, args=(socket,), name="heartbeat",
                                        daemon=True)
        self._thread.start()

    def _echo(self, socket: zmq.Socket[bytes]) -> None:
        try:
            zmq.proxy(socket, socket)  # a REP socket as both ends: every ping comes back
        except zmq.ContextTerminated:
            pass
        finally:
            socket.close()

    def stop(self) -> None:
        self._context.term()
        self._thread.join(timeout=5)
