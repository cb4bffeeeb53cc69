"""The ports listened on before ZeroMQ is imported, and the ZeroMQ sockets that take them over.

A front end that connected in between must be served without reconnecting:
its socket here never reconnects (RECONNECT_IVL -1), so a refused first
connection would leave its request unanswered for ever.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq
from support.ports import free_ports

from pyrelune.transports import prebound
from pyrelune.transports.zmqsockets import ZmqSockets

WAIT_MS = 60_000  # generous: a noisy 2-core machine


def _connection_file(tmp_path: Path, ports: dict[str, int], **changes: Any) -> str:
    info = {"transport": "tcp", "ip": "127.0.0.1", "key": "k",
            "signature_scheme": "hmac-sha256",
            **{f"{channel}_port": port for channel, port in ports.items()}, **changes}
    path = tmp_path / "kernel.json"
    path.write_text(json.dumps(info), encoding="utf-8")
    return str(path)


@pytest.fixture(autouse=True)
def released() -> Iterator[None]:
    yield
    prebound.close()


def test_a_front_end_that_connected_before_zeromq_bound_is_served(tmp_path: Path) -> None:
    ports = free_ports()
    prebound.listen(_connection_file(tmp_path, ports))
    context = zmq.Context()
    front_end = context.socket(zmq.DEALER)
    front_end.setsockopt(zmq.RECONNECT_IVL, -1)  # one attempt: it must not be refused
    front_end.linger = 0
    front_end.connect(f"tcp://127.0.0.1:{ports['shell']}")
    front_end.send_multipart([b"<IDS|MSG>", b"request"])
    sockets = ZmqSockets("tcp", "127.0.0.1", ports)
    try:
        assert sockets.ports == ports
        poller = zmq.Poller()
        poller.register(sockets._sockets["shell"], zmq.POLLIN)
        assert poller.poll(WAIT_MS)
        identity, *frames = sockets.receive("shell") or [b""]
        assert frames == [b"<IDS|MSG>", b"request"]
        sockets.send("shell", [identity, b"reply"])
        assert front_end.poll(WAIT_MS) and front_end.recv_multipart() == [b"reply"]
    finally:
        front_end.close()
        context.term()
        sockets.close()
    assert prebound.take("127.0.0.1", ports["shell"]) is None  # taken over, and closed with it


@pytest.mark.parametrize("changes", [
    {"ip": "0.0.0.0", "key": ""},  # refused later: nobody may reach a key-less kernel
    {"transport": "ipc"},
    {"ip": "localhost"},  # a name: ZeroMQ looks it up as it does
    {"ip": "::1"},
], ids=["no key on the network", "ipc", "a host name", "IPv6"])
def test_what_is_not_plainly_safe_and_possible_is_left_to_zeromq(
        tmp_path: Path, changes: dict[str, str]) -> None:
    ports = free_ports()
    prebound.listen(_connection_file(tmp_path, ports, **changes))
    ip = changes.get("ip", "127.0.0.1")
    assert all(prebound.take(ip, port) is None for port in ports.values())


def test_a_port_left_to_zeromq_or_taken_or_a_broken_file_listens_on_nothing(
        tmp_path: Path) -> None:
    ports = free_ports()
    taken = socket.socket()
    taken.bind(("127.0.0.1", ports["stdin"]))
    taken.listen()
    try:
        prebound.listen(_connection_file(tmp_path, {**ports, "shell": 0}))
        assert prebound.take("127.0.0.1", ports["stdin"]) is None
        assert prebound.take("127.0.0.1", 0) is None
        control = prebound.take("127.0.0.1", ports["control"])
        assert control is not None
        os.close(control)
    finally:
        taken.close()
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    prebound.listen(str(broken))
    prebound.listen(str(tmp_path / "missing.json"))


def test_close_lets_the_ports_go(tmp_path: Path) -> None:
    ports = free_ports()
    prebound.listen(_connection_file(tmp_path, ports))
    prebound.close()
    again = socket.socket()
    try:
        again.bind(("127.0.0.1", ports["shell"]))
    finally:
        again.close()
