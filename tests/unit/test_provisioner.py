"""The provisioner's wait as plain values: which connection files it waits for, and when it
stops waiting (all ports listen, the kernel exited, patience ran out)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("jupyter_client", reason="the provisioner runs beside jupyter_client")

from pyrelune.jupyter.provisioner import tcp_ports, until_listening

NAMES = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")


def info(ports: list[Any], **extra: Any) -> dict[str, Any]:
    return {"transport": "tcp", "ip": "127.0.0.1", **dict(zip(NAMES, ports, strict=False)), **extra}


def test_tcp_ports_names_the_address_and_all_five_ports() -> None:
    assert tcp_ports(info([1, 2, 3, 4, 5])) == ("127.0.0.1", [1, 2, 3, 4, 5])
    assert tcp_ports(info([1, 2, 3, 4, 5], ip="0.0.0.0")) == ("127.0.0.1", [1, 2, 3, 4, 5])
    assert tcp_ports(info([1, 2, 3, 4, 5], ip="10.1.2.3")) == ("10.1.2.3", [1, 2, 3, 4, 5])


@pytest.mark.parametrize("connection", [
    info([1, 2, 3, 4, 5], transport="ipc"),
    info([0, 2, 3, 4, 5]),  # ZeroMQ picks the port: only the kernel knows it
    info([True, 2, 3, 4, 5]),
    info([1, 2, 3, 4, "5"]),
    info([1, 2, 3, 4, 65536]),
    info([1, 2, 3, 4]),
])
def test_nothing_is_waited_for_where_there_is_nothing_to_connect_to(
        connection: dict[str, Any]) -> None:
    assert tcp_ports(connection) is None
    assert asyncio.run(until_listening(connection, lambda: None, 3600.0)) is False


@pytest.fixture
def listeners() -> Iterator[list[socket.socket]]:
    made = []
    for _ in NAMES:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        made.append(sock)
    yield made
    for sock in made:
        sock.close()


def test_the_wait_ends_when_the_last_port_listens(listeners: list[socket.socket]) -> None:
    ports = [sock.getsockname()[1] for sock in listeners]
    looks = 0

    def exited() -> int | None:
        nonlocal looks
        looks += 1
        if looks <= len(listeners):  # one more port listens at each look
            listeners[looks - 1].listen()
        return None

    assert asyncio.run(until_listening(info(ports), exited, 3600.0)) is True
    assert looks == len(listeners)


def test_the_wait_ends_when_the_kernel_exits(listeners: list[socket.socket]) -> None:
    ports = [sock.getsockname()[1] for sock in listeners]  # bound, never listening
    assert asyncio.run(until_listening(info(ports), lambda: 1, 3600.0)) is False


def test_the_wait_ends_when_patience_runs_out(listeners: list[socket.socket]) -> None:
    ports = [sock.getsockname()[1] for sock in listeners]
    assert asyncio.run(until_listening(info(ports), lambda: None, 0.0)) is False


def test_once_a_shutdown_is_asked_a_look_waits_for_the_kernel_to_end(fp: Any) -> None:
    """A kernel that ends soon after the shutdown is seen gone by the first look after it,
    not at jupyter_client's next look; a running kernel with no shutdown asked is running."""
    import subprocess

    from pyrelune.jupyter.provisioner import ListeningProvisioner

    fp.register(["running"], wait=60)
    fp.register(["ending"], wait=0.03)  # well within a look's wait (SHUTDOWN_LOOK)
    provisioner = ListeningProvisioner(kernel_id="k", kernel_spec=None, parent=None)
    provisioner.process = subprocess.Popen(["running"])
    assert asyncio.run(provisioner.poll()) is None
    provisioner.process = subprocess.Popen(["ending"])
    asyncio.run(provisioner.shutdown_requested(restart=True))
    assert asyncio.run(provisioner.poll()) == 0
