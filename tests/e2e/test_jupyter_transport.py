"""The Jupyter kernel's transport against peers that should get nothing: CurveZMQ
encryption (JEP 145) as jupyter_client provisions it, and a peer that takes the front
end's identity. Through jupyter_client and the real process, on loopback; every wait
bounded."""

from __future__ import annotations

import json
from pathlib import Path
from queue import Empty

import pytest
import zmq
from jupyter_client.blocking.client import BlockingKernelClient
from support import jupyter_host
from support.jupyter_host import TIMEOUT, collect, execute
from zmq.utils.monitor import recv_monitor_message

#: How long a peer that should get nothing is listened to (it would get it in milliseconds).
SILENCE = 3.0


def test_a_front_end_that_requires_encryption_runs_a_cell(tmp_path: Path) -> None:
    with jupyter_host.started(tmp_path, transport_encryption="required") as (manager, client):
        info = json.loads(Path(manager.connection_file).read_text(encoding="utf-8"))
        assert len(info["curve_publickey"]) == len(info["curve_secretkey"]) == 40
        assert client.curve_publickey is not None
        assert execute(client, "print(6 * 7)").stdout() == "42\n"
        assert client.is_alive()  # the heartbeat answers an encrypting client
    assert "not encrypted" not in (tmp_path / "kernel-stderr-1").read_text(encoding="utf-8")


def test_a_client_without_the_server_key_gets_nothing_back(tmp_path: Path) -> None:
    """It has the HMAC key and the ports (all a plain-text kernel asks for): no reply, no
    IOPub, no heartbeat, while the front end with the key is served."""
    with jupyter_host.started(tmp_path, transport_encryption="required") as (manager, client):
        stranger = BlockingKernelClient()
        stranger.load_connection_file(manager.connection_file)
        stranger.curve_publickey = stranger.curve_secretkey = None
        stranger.start_channels(hb=False)
        context = zmq.Context()
        heartbeat = context.socket(zmq.REQ)
        heartbeat.linger = 0
        try:
            heartbeat.connect(f"tcp://127.0.0.1:{manager.hb_port}")
            heartbeat.send(b"ping")
            stranger.kernel_info()
            assert execute(client, "print('served')").stdout() == "served\n"
            with pytest.raises(Empty):
                stranger.get_shell_msg(timeout=SILENCE)
            with pytest.raises(Empty):
                stranger.get_iopub_msg(timeout=0.1)
            assert not heartbeat.poll(100)
        finally:
            heartbeat.close()
            context.term()
            stranger.stop_channels()


def test_a_peer_with_the_front_ends_identity_takes_none_of_its_replies(tmp_path: Path) -> None:
    """IOPub needs no key, and every message on it names the front end's session, which is
    its identity on shell and stdin: a peer connecting with it must not take over its
    replies or its input_request (libzmq's router_handover would hand them over)."""
    with jupyter_host.started(tmp_path) as (manager, client):
        context = zmq.Context()
        thieves = []
        try:
            for port in (manager.shell_port, manager.stdin_port):
                thief = context.socket(zmq.DEALER)
                thief.linger = 0
                thief.identity = client.session.bsession
                monitor = thief.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
                thief.connect(f"tcp://127.0.0.1:{port}")
                assert monitor.poll(int(TIMEOUT * 1000)), "the thief never connected"
                assert recv_monitor_message(monitor)["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED
                thief.disable_monitor()
                monitor.close()
                thieves.append(thief)
            msg_id = client.execute("import time; time.sleep(0.3); print(input('name? '))",
                                    allow_stdin=True)
            request = client.get_stdin_msg(timeout=TIMEOUT)
            assert request["content"]["prompt"] == "name? "
            client.input("pyrelune")
            run = collect(client, msg_id)
            assert run.content["status"] == "ok" and run.stdout() == "pyrelune\n"
            assert not any(thief.poll(100) for thief in thieves)
        finally:
            for thief in thieves:
                thief.close()
            context.term()


def test_each_iopub_subscriber_is_welcomed(tmp_path: Path) -> None:
    """`iopub_welcome` (JEP 65) to every subscriber that connects, under the topic it chose:
    a front end knows IOPub is connected without waiting for a status it may have missed.
    Then the kernel's state, for one (jupyter_server's) that waits for a status."""
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    with jupyter_host.started(tmp_path) as (manager, client):
        for topic in (b"", b"kernel."):  # a second subscriber of "" too: XPUB_VERBOSE
            for _ in range(2):
                socket = context.socket(zmq.SUB)
                socket.subscribe(topic)
                socket.connect(f"tcp://127.0.0.1:{manager.iopub_port}")
                received = []
                try:
                    for _ in range(2):
                        assert socket.poll(int(TIMEOUT * 1000))
                        _, frames = client.session.feed_identities(socket.recv_multipart())
                        received.append(client.session.deserialize(frames))
                finally:
                    socket.close(linger=0)
                welcome, status = received
                assert welcome["msg_type"] == "iopub_welcome"
                assert welcome["content"] == {"subscription": topic.decode()}
                assert status["msg_type"] == "status" and not status["parent_header"]
                assert status["content"] == {"execution_state": "idle"}
