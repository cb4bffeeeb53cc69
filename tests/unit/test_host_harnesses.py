"""The kernel hosts' own failures: a hung kernel fails the test with what it wrote on stderr."""

from __future__ import annotations

import sys

import pytest
from support import rpc_host
from support.lines_host import Host, KernelBroken, wait_for

#: A kernel that says something on stderr, without a newline, then never answers.
HUNG = [sys.executable, "-c",
        "import sys, time\nsys.stderr.write('stuck in cell 7')\nsys.stderr.flush()\n"
        "time.sleep(600)"]


def test_a_hung_lines_kernel_fails_with_its_stderr() -> None:
    host = Host(command=HUNG)
    try:
        wait_for(lambda: b"stuck" in host.stderr, "the kernel's stderr")
        host.send("ping")
        with pytest.raises(KernelBroken, match=r"no response in 0\.5 s; .*stuck in cell 7"):
            host.read_line(timeout=0.5)  # the kernel never answers: no race with it
    finally:
        host.kill()


def test_a_hung_rpc_kernel_fails_with_its_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rpc_host, "kernel_command", lambda *args: HUNG)
    host = rpc_host.PipeHost()
    try:
        wait_for(lambda: b"stuck" in host.stderr, "the kernel's stderr")
        host.request("kernel.info")
        with pytest.raises(AssertionError, match=r"in 0\.5 s; .*stuck in cell 7"):
            host.receive(timeout=0.5)
    finally:
        host.process.kill()
        host.process.wait()


#: A listening kernel that accepts WebSocket clients, says something on stderr, never answers.
HUNG_LISTENER = [sys.executable, "-c", """\
import json, sys, time
from websockets.sync.server import serve
with serve(lambda connection: time.sleep(600), "127.0.0.1", 0) as server:
    port = server.socket.getsockname()[1]
    print(json.dumps({"kind": "event", "event": "kernel.listening", "data": {
        "url": f"ws://127.0.0.1:{port}", "host": "127.0.0.1", "port": port}}), flush=True)
    sys.stderr.write("stuck in cell 8")
    sys.stderr.flush()
    server.serve_forever()
"""]


def test_a_hung_websocket_kernel_fails_with_its_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rpc_host, "kernel_command", lambda *args: HUNG_LISTENER)
    listener = rpc_host.Listener()
    try:
        wait_for(lambda: b"stuck" in listener.errors, "the kernel's stderr")
        client = rpc_host.WebSocketHost(listener.url)
        try:
            client.request("kernel.info")
            with pytest.raises(AssertionError, match=r"in 0\.5 s; .*stuck in cell 8"):
                client.receive(timeout=0.5)
        finally:
            client.close()
    finally:
        listener.process.kill()
        listener.close()
