"""`pyrelune --mode rpc --listen` with a real WebSocket client (websockets): auth, Origin,
TLS, frame size, one client at a time, reconnect, clients without the token that hold on or
flood; every message checked against the schemas. Loopback only."""

from __future__ import annotations

import functools
import json
import os
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.poll import wait_until
from support.rpc_host import (
    TIMEOUT,
    Listener,
    WebSocketHost,
    kernel_command,
    peak_memory,
    stdout_of,
)
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect as ws_connect

TOKEN = "s3cret-token"
#: The server's `--auth-timeout`: no test's guest is dropped for its time on a busy machine
#: (the default 10 s is near what a few connects take there), and an owner let in only once
#: an intruder ran out of it is told from one let in at once. The timeout: its own test.
AUTH_TIMEOUT = 120.0


@pytest.fixture
def server() -> Iterator[Listener]:
    listener = Listener("--auth-timeout", f"{AUTH_TIMEOUT:g}", env={"PYRELUNE_TOKEN": TOKEN})
    yield listener
    listener.close()


def connect(url: str, token: str | None = TOKEN, **options: object) -> WebSocketHost:
    host = WebSocketHost(url, **options)
    ready = host.receive()
    assert ready["event"] == "kernel.ready"
    if token is not None:
        assert ready["data"]["auth_required"] is True
        assert host.call("kernel.auth", {"token": token})["result"]["ok"] is True
    return host


def test_listening_line_names_the_port_it_picked(server: Listener) -> None:
    data = server.announcement["data"]
    assert data["host"] == "127.0.0.1"
    assert data["port"] > 0
    assert server.url == f"ws://127.0.0.1:{data['port']}"


def test_every_request_needs_auth_first(server: Listener) -> None:
    host = connect(server.url, token=None)
    for method, params in [("kernel.info", {}), ("execute.cell", {"source": "1"}),
                           ("kernel.reset", {}), ("execute.interrupt", {})]:
        assert host.call(method, params)["error"]["code"] == -32002
    authed = host.call("kernel.auth", {"token": TOKEN})["result"]
    assert authed == {"ok": True, "state": "idle", "cell_id": None}
    assert host.call("kernel.info", {})["result"]["language"] == "python"
    host.close()


def test_wrong_tokens_fail_and_then_close_the_connection(server: Listener) -> None:
    host = connect(server.url, token=None)
    for _ in range(2):
        reply = host.call("kernel.auth", {"token": "guess"})
        assert reply["error"]["code"] == -32003
        assert "guess" not in reply["error"]["message"]
        assert TOKEN not in reply["error"]["message"]
    assert host.call("kernel.auth", {"token": TOKEN[:-1]})["error"]["code"] == -32003
    with pytest.raises(ConnectionClosed) as closed:
        host.receive(timeout=TIMEOUT)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    connect(server.url).close()  # the kernel still serves the next client
    server.close()
    assert TOKEN not in server.stderr


def test_execute_streams_input_and_done_over_websocket(server: Listener) -> None:
    host = connect(server.url)
    host.call("execute.cell", {"cell_id": "ws", "source":
                               "print('before')\nname = input('who? ')\nshow(name)\nname"})
    events = []
    while (message := host.receive())["event"] != "input_request":
        events.append(message)
    assert stdout_of(events) == "before\n"
    assert message["data"]["prompt"] == "who? "
    host.call("execute.input_reply", {"value": "Grace"})
    events = host.until_done()
    assert [e["data"].get("item") for e in events if e["event"] == "display_data"] == [
        "Grace", "'Grace'"]
    assert events[-1]["data"] == {"cell_id": "ws", "status": "ok"}
    host.close()


def test_interrupt_over_websocket(server: Listener) -> None:
    host = connect(server.url)
    host.call("execute.cell", {"cell_id": "spin", "source":
                               "print('spinning', flush=True)\nwhile True:\n    pass"})
    host.wait_event("stream")
    assert host.call("execute.interrupt", {})["result"]["interrupted"] is True
    assert host.until_done()[-1]["data"]["ename"] == "KeyboardInterrupt"
    host.close()


def test_malformed_json_over_websocket(server: Listener) -> None:
    host = connect(server.url)
    host.send_raw("{oops")
    reply = host.receive()
    assert reply["id"] is None
    assert reply["error"]["code"] == -32700
    host.send_raw('{"kind": "request", "id": "m", "method": "nope", "params": {}}')
    assert host.receive()["error"]["code"] == -32601
    host.close()


def test_a_second_client_is_refused_and_reconnect_finds_the_namespace(server: Listener) -> None:
    first = connect(server.url)
    first.run("kept = 41")
    second = WebSocketHost(server.url)
    ready = second.receive()  # the first message on every connection
    assert ready["event"] == "kernel.ready" and ready["data"]["cell_id"] is None
    refusal = second.receive()
    assert refusal["error"]["code"] == -32001
    assert "Another client" in refusal["error"]["message"]
    with pytest.raises(ConnectionClosed) as closed:
        second.receive()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
    first.close()
    again = connect(server.url)
    assert stdout_of(again.run("print(kept + 1)")) == "42\n"
    again.close()


def state_shown_to_a_guest(url: str) -> str:
    """The kernel's state as its kernel.ready tells a connection without the token."""
    guest = WebSocketHost(url)
    try:
        return str(guest.receive()["data"]["state"])
    finally:
        guest.close()


def test_a_client_without_the_token_sees_nothing_of_the_running_cell(
        server: Listener, tmp_path: Path) -> None:
    go = tmp_path / "go"  # the cell prints once the intruder is in, however slow the machine
    first = connect(server.url)
    first.call("execute.cell", {"cell_id": "secret", "source":
                                f"import os, time\nwhile not os.path.exists({str(go)!r}):\n"
                                "    time.sleep(0.01)\nprint('API_KEY=hunter2')"})
    first.close()
    intruder = WebSocketHost(server.url)
    assert intruder.receive()["data"] == {"version": 1, "state": "running", "cell_id": None,
                                          "auth_required": True}
    assert intruder.call("kernel.auth", {"token": "guess"})["error"]["code"] == -32003
    assert intruder.call("nope", {})["error"]["code"] == -32002
    go.touch()
    assert wait_until(lambda: state_shown_to_a_guest(server.url) == "idle", TIMEOUT), \
        "the cell did not end"
    with pytest.raises(TimeoutError):
        intruder.receive(timeout=1.5)  # the cell printed and ended meanwhile: not for it
    authed = intruder.call("kernel.auth", {"token": TOKEN})["result"]
    assert authed == {"ok": True, "state": "idle", "cell_id": None}
    held = [intruder.receive(), intruder.receive()]  # given the token, it gets what it missed
    assert [m["event"] for m in held] == ["stream", "execute.done"]
    assert held[0]["data"]["text"] == "API_KEY=hunter2\n"
    intruder.close()


def test_a_client_that_never_authenticates_is_dropped() -> None:
    listener = Listener("--auth-timeout", "0.5", env={"PYRELUNE_TOKEN": TOKEN})
    try:
        idle = WebSocketHost(listener.url)
        idle.receive()
        with pytest.raises(ConnectionClosed) as closed:
            idle.receive(timeout=TIMEOUT)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
        connect(listener.url).close()  # the slot is free for the real client
    finally:
        listener.close()


def closed_with(host: WebSocketHost) -> tuple[int, str]:
    """The close code and reason the kernel sent, once `host` has read all that came before."""
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            host.receive(timeout=TIMEOUT)
    assert closed.value.rcvd is not None, "the kernel sent no close frame"
    return closed.value.rcvd.code, closed.value.rcvd.reason


class Intruder(threading.Thread):
    """A client without the token that reconnects the moment it is dropped.

    Bounded: at most `limit` connections, and it stops when `halt` is set.
    """

    def __init__(self, url: str, limit: int = 3000) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.limit = limit
        self.connections = 0
        self.inside = threading.Event()  # its connection is a guest waiting for kernel.auth
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set() and self.connections < self.limit:
            self.inside.clear()
            self.connections += 1
            try:
                with ws_connect(self.url, open_timeout=TIMEOUT) as websocket:
                    told = False
                    while not self.halt.is_set():
                        try:
                            websocket.recv(timeout=0.1)
                        except TimeoutError:
                            if told:  # kernel.ready and then nothing: a guest, not refused
                                self.inside.set()
                            continue
                        told = True
            except (ConnectionClosed, OSError):
                pass  # dropped: straight back in

    def stop(self) -> None:
        self.halt.set()
        self.join(TIMEOUT)


def test_a_client_without_the_token_reconnecting_at_once_cannot_lock_the_owner_out(
        server: Listener) -> None:
    owner = connect(server.url)
    owner.call("execute.cell", {"cell_id": "long", "source":  # until interrupted
                                "import itertools, time\nfor i in itertools.count():\n"
                                "    print(i, flush=True)\n    time.sleep(0.05)"})
    owner.wait_event("stream")
    owner.close()
    intruder = Intruder(server.url)
    intruder.start()

    def back_in(dropped: int) -> bool:
        return intruder.connections > dropped and intruder.inside.is_set()

    try:
        for arrival in range(5):
            # The intruder is back in, waiting, when the owner comes (a fixed
            # pause was once too short on a busy machine).
            assert wait_until(functools.partial(back_in, arrival))
            began = time.monotonic()
            owner = connect(server.url)  # at the first try, without waiting for anyone
            assert time.monotonic() - began < AUTH_TIMEOUT / 2  # not once the intruder's ran out
            assert owner.wait_event("stream")["data"]["cell_id"] == "long"
            owner.close()
        assert wait_until(lambda: intruder.connections > 5)  # refused and back, again and again
        owner = connect(server.url)
        assert owner.call("execute.interrupt", {})["result"]["interrupted"] is True
        done = owner.until_done()[-1]
        assert done["data"]["cell_id"] == "long" and done["data"]["ename"] == "KeyboardInterrupt"
        owner.close()
    finally:
        intruder.stop()


def test_the_client_that_authenticates_displaces_those_still_waiting(server: Listener) -> None:
    waiting = [connect(server.url, token=None) for _ in range(9)]  # one more than may wait
    assert closed_with(waiting[0]) == (1013, "too many connections are waiting for kernel.auth")
    waiting[1].close()  # room for the owner: no one else is dropped when it comes
    owner = connect(server.url)
    for guest in waiting[2:]:
        refusal = guest.receive()
        assert refusal["error"]["code"] == -32001
        assert closed_with(guest) == (1013, "another client is connected")
    assert stdout_of(owner.run("print('mine')")) == "mine\n"
    owner.close()


def test_a_client_may_send_only_so_much_before_kernel_auth(server: Listener) -> None:
    chatty = connect(server.url, token=None)
    for _ in range(64):
        assert chatty.call("kernel.info", {})["error"]["code"] == -32002
    chatty.request("kernel.info", {})
    code, reason = closed_with(chatty)
    assert code == 1008 and "before kernel.auth" in reason
    big = connect(server.url, token=None)
    big.send_raw(json.dumps({"kind": "request", "id": "x" * 70_000, "method": "kernel.info"}))
    code, reason = closed_with(big)
    assert code == 1008 and "before kernel.auth" in reason
    connect(server.url).close()


def test_a_flood_without_the_token_that_never_reads_keeps_the_kernel_small(
        server: Listener) -> None:
    connect(server.url).close()
    idle = peak_memory(server.process.pid)
    frame = json.dumps({"kind": "request", "id": "x" * 60_000, "method": "kernel.info"})
    frames = 0  # 2,000 of them: 120 MB of answers if all were answered
    for _ in range(20):
        with ws_connect(server.url, open_timeout=TIMEOUT) as flood:  # never reads
            try:
                while frames < 2000:
                    flood.send(frame)
                    frames += 1
            except ConnectionClosed:
                pass
    assert peak_memory(server.process.pid) - idle < 64 << 20
    connect(server.url).close()


def test_reconnect_while_a_cell_waits_for_input(server: Listener) -> None:
    first = connect(server.url)
    first.call("execute.cell", {"cell_id": "held", "source": "v = input('value? ')\nprint(v)"})
    first.wait_event("input_request")
    first.close()
    second = WebSocketHost(server.url)
    ready = second.receive()
    assert ready["data"]["state"] == "waiting_input"
    assert ready["data"]["cell_id"] is None  # not said before the token is
    authed = second.call("kernel.auth", {"token": TOKEN})["result"]
    assert authed == {"ok": True, "state": "waiting_input", "cell_id": "held"}
    assert second.wait_event("input_request")["data"]["prompt"] == "value? "
    second.call("execute.input_reply", {"value": "resumed"})
    assert stdout_of(second.until_done()) == "resumed\n"
    second.close()


def test_forbidden_origin_is_rejected(server: Listener) -> None:
    with pytest.raises(InvalidStatus) as refused:
        WebSocketHost(server.url, origin="https://evil.example")
    assert refused.value.response.status_code == 403


def test_allowed_origin_is_accepted() -> None:
    listener = Listener("--allow-origin", "https://notebook.example",
                        env={"PYRELUNE_TOKEN": TOKEN})
    try:
        connect(listener.url, origin="https://notebook.example").close()
        with pytest.raises(InvalidStatus):
            WebSocketHost(listener.url, origin="https://other.example")
    finally:
        listener.close()


def test_oversized_frame_closes_the_connection() -> None:
    listener = Listener("--max-message-size", "4096", env={"PYRELUNE_TOKEN": TOKEN})
    try:
        host = connect(listener.url)
        host.send_raw('{"kind": "request", "id": "x", "method": "execute.cell", "params": '
                      '{"source": "' + "1" * 10000 + '"}}')
        with pytest.raises(ConnectionClosed) as closed:
            host.receive()
        assert closed.value.sent is not None and closed.value.sent.code == 1009
        connect(listener.url).close()
    finally:
        listener.close()


def test_token_file(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("from-a-file\n")
    listener = Listener("--token-file", str(token_file))
    try:
        connect(listener.url, token="from-a-file").close()
    finally:
        listener.close()
    command = listener.process.args
    assert isinstance(command, list)
    assert "from-a-file" not in " ".join(map(str, command))


def test_no_token_means_no_auth_on_loopback() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYRELUNE_TOKEN"}
    listener = Listener(env=env)
    try:
        host = connect(listener.url, token=None)
        assert host.call("kernel.info", {})["result"]["state"] == "idle"
        host.close()
    finally:
        listener.close()


def test_refuses_a_public_address_without_a_token() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYRELUNE_TOKEN"}
    result = subprocess.run(kernel_command("--listen", "0.0.0.0:0"), capture_output=True,
                            env=env, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert b"refusing to listen on 0.0.0.0 without a token" in result.stderr
    assert result.stdout == b""


def test_a_token_without_listen_is_a_usage_error() -> None:
    result = subprocess.run(kernel_command("--token", "x"), capture_output=True,
                            timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert b"--listen" in result.stderr


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    listener = Listener("--certfile", str(cert), "--keyfile", str(key),
                        env={"PYRELUNE_TOKEN": TOKEN})
    try:
        assert listener.url.startswith("wss://127.0.0.1:")
        context = ssl.create_default_context(cafile=str(cert))
        host = connect(listener.url, ssl=context)
        assert stdout_of(host.run("print('over tls')")) == "over tls\n"
        host.close()
    finally:
        listener.close()
