"""The Jupyter kernel's driver on its own loop, its sockets faked: when the worker starts.

The first request is answered before the worker is forked; a request that
needs the worker starts it at once, and an interrupt reaches a cell whose
worker has only just been forked.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator

import pytest
from support.stall import stall_first_worker

from pyrelune.loop.reactor import Reactor
from pyrelune.modes.jupyter import Connection, JupyterServer
from pyrelune.protocols import jupytermessages
from pyrelune.settings import IPYTHON, PLAIN

KEY = b"key"
SIGNER = jupytermessages.Signer(KEY)
CLIENT = jupytermessages.Builder("client-session", "tester")


class FakeSockets:
    """The kernel's sockets as `JupyterServer` uses them: frames queued in, messages out.

    `on_send(channel, message)` sees every message the kernel sends.
    """

    def __init__(self) -> None:
        self.inbox: dict[str, deque[list[bytes]]] = {c: deque() for c in ("control", "shell",
                                                                          "stdin")}
        self.on_send: Callable[[str, jupytermessages.Message], None] = lambda channel, message: None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)

    def deliver(self, channel: str, msg_type: str, content: dict[str, object]) -> str:
        """Queue a request from the front end, waking the loop; its msg_id."""
        message = jupytermessages.Message(CLIENT.header(msg_type), {}, {}, content, [b"front-end"])
        self.inbox[channel].append(jupytermessages.serialize(message, SIGNER))
        os.write(self._wake_w, b"x")
        return message.msg_id

    def fds(self) -> dict[int, str]:
        return {self._wake_r: "shell"}

    incoming = ("control", "shell", "stdin")

    def waiting(self) -> bool:
        return any(self.inbox.values())

    def subscriptions(self) -> list[bytes]:
        return []

    written = 0  # IOPub's bytes written out: none are followed

    def backlog(self) -> int:
        return 0

    def receive(self, channel: str) -> list[bytes] | None:
        try:
            os.read(self._wake_r, 1 << 16)
        except BlockingIOError:
            pass
        return self.inbox[channel].popleft() if self.inbox[channel] else None

    def send(self, channel: str, frames: list[bytes]) -> None:
        self.on_send(channel, jupytermessages.parse(frames, SIGNER))

    def close(self) -> None:
        os.close(self._wake_r)
        os.close(self._wake_w)


def _served(shell: str) -> Iterator[tuple[JupyterServer, FakeSockets, Reactor]]:
    sockets, loop = FakeSockets(), Reactor()
    connection = Connection("tcp", "127.0.0.1", {}, KEY, "hmac-sha256")
    server = JupyterServer(connection, sockets, loop, shell=shell)  # type: ignore[arg-type]
    try:
        yield server, sockets, loop
    finally:
        server.close()
        loop.close()
        sockets.close()


@pytest.fixture
def kernel() -> Iterator[tuple[JupyterServer, FakeSockets, Reactor]]:
    """A kernel with pyrelune's plain shell, whose worker is forked on first need."""
    yield from _served(PLAIN)


@pytest.fixture
def ipython_kernel() -> Iterator[tuple[JupyterServer, FakeSockets, Reactor]]:
    """A kernel with IPython's shell, whose worker is forked as the loop starts."""
    yield from _served(IPYTHON)


def _until_reply(
        loop: Reactor, sockets: FakeSockets, msg_id: str,
        seen: Callable[[str, jupytermessages.Message], None] | None = None,
) -> jupytermessages.Message:
    """Run the loop until the reply to `msg_id` is sent; every message goes to `seen`."""
    replies: list[jupytermessages.Message] = []

    def on_send(channel: str, message: jupytermessages.Message) -> None:
        if seen is not None:
            seen(channel, message)
        if channel != "iopub" and message.parent_header.get("msg_id") == msg_id:
            replies.append(message)
            loop.stop()

    sockets.on_send = on_send
    loop.run()
    (reply,) = replies
    return reply


def test_the_first_kernel_info_is_answered_before_the_worker_is_forked(
        kernel: tuple[JupyterServer, FakeSockets, Reactor]) -> None:
    server, sockets, loop = kernel
    workers_when_answered = []
    msg_id = sockets.deliver("shell", "kernel_info_request", {})
    reply = _until_reply(loop, sockets, msg_id,
                         lambda channel, message: workers_when_answered.append(server.kernel))
    assert reply.msg_type == "kernel_info_reply" and reply.content["status"] == "ok"
    assert workers_when_answered and all(k is None for k in workers_when_answered)
    loop.call_soon(loop.stop)  # a turn more: the worker is started once the answer is out
    loop.run()
    assert server.kernel is not None
    run = sockets.deliver("shell", "execute_request", {"code": "print(6 * 7)"})
    streams: list[str] = []
    _until_reply(loop, sockets, run, lambda channel, message: streams.append(
        message.content["text"]) if message.msg_type == "stream" else None)
    assert "".join(streams) == "42\n"


def test_an_execute_sent_first_starts_the_worker_and_runs(
        kernel: tuple[JupyterServer, FakeSockets, Reactor]) -> None:
    server, sockets, loop = kernel
    assert server.kernel is None
    msg_id = sockets.deliver("shell", "execute_request", {"code": "1 + 1"})
    results: list[str] = []
    reply = _until_reply(loop, sockets, msg_id, lambda channel, message: results.append(
        message.content["data"]["text/plain"]) if message.msg_type == "execute_result" else None)
    assert reply.content["status"] == "ok"
    assert results == ["2"]


@pytest.mark.parametrize("stalled", [False, True])
def test_an_interrupt_ends_a_cell_whose_worker_was_just_forked(
        kernel: tuple[JupyterServer, FakeSockets, Reactor], stalled: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Stalled: the worker has not read the cell when the interrupt's grace ends, and is
    killed; the cell is over (it was once sent again, to a fresh worker, and ran on)."""
    if stalled:
        stall_first_worker(monkeypatch)
    server, sockets, loop = kernel
    # Stalled, a cell sent again would be over at once, and the test would fail as soon.
    code = "print('ran')" if stalled else "import time\ntime.sleep(300)"
    msg_id = sockets.deliver("shell", "execute_request", {"code": code})

    def interrupt_at_once(channel: str, message: jupytermessages.Message) -> None:
        if message.msg_type == "execute_input":  # the cell is handed to a worker not yet forked
            assert server.kernel is None
            sockets.deliver("control", "interrupt_request", {})

    reply = _until_reply(loop, sockets, msg_id, interrupt_at_once)
    assert reply.content["status"] == "error"
    assert reply.content["ename"] == "KeyboardInterrupt"


def test_with_ipythons_shell_the_worker_is_forked_as_the_loop_starts(
        ipython_kernel: tuple[JupyterServer, FakeSockets, Reactor]) -> None:
    """It makes IPython's shell meanwhile, while the first kernel_info is answered."""
    server, sockets, loop = ipython_kernel
    assert server.kernel is None
    msg_id = sockets.deliver("shell", "kernel_info_request", {})
    workers_when_answered = []
    reply = _until_reply(loop, sockets, msg_id,
                         lambda channel, message: workers_when_answered.append(server.kernel))
    assert reply.content["status"] == "ok" and all(workers_when_answered)
    run = sockets.deliver("shell", "execute_request", {"code": "print(type(get_ipython()))"})
    streams: list[str] = []
    _until_reply(loop, sockets, run, lambda channel, message: streams.append(
        message.content["text"]) if message.msg_type == "stream" else None)
    assert "ZMQInteractiveShell" in "".join(streams)


def test_an_interrupt_ends_a_cell_sent_while_ipythons_shell_is_being_made(
        ipython_kernel: tuple[JupyterServer, FakeSockets, Reactor]) -> None:
    _, sockets, loop = ipython_kernel
    msg_id = sockets.deliver("shell", "execute_request",
                             {"code": "import time\ntime.sleep(300)"})

    def interrupt_at_once(channel: str, message: jupytermessages.Message) -> None:
        if message.msg_type == "execute_input":  # the worker is still importing IPython
            sockets.deliver("control", "interrupt_request", {})

    reply = _until_reply(loop, sockets, msg_id, interrupt_at_once)
    assert reply.content["status"] == "error"
    assert reply.content["ename"] == "KeyboardInterrupt"


def test_a_shutdown_as_the_first_request_forks_no_worker(
        kernel: tuple[JupyterServer, FakeSockets, Reactor]) -> None:
    server, sockets, loop = kernel
    msg_id = sockets.deliver("control", "shutdown_request", {"restart": False})
    assert _until_reply(loop, sockets, msg_id).content["status"] == "ok"
    loop.call_soon(loop.stop)
    loop.run()
    assert server.stopping is not None and server.kernel is None
