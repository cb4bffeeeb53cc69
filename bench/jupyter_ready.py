"""Start to ready as users meet it, pyrelune's kernel against ipykernel in the same run.

    python bench/jupyter_ready.py [--rounds N]

Each path, with the kernelspec `pyrelune jupyter install --sys-prefix` writes (it
names pyrelune's provisioner) and with the one `pyrelune jupyter install --user`
writes (it does not), against the one `python -m ipykernel install --user` writes:

- start_new_kernel: jupyter_client's `start_new_kernel()` until it returns, as
  nbclient and papermill start a kernel. Its `wait_for_ready` asks kernel_info
  (again a second later while no answer came), wants an IOPub message within
  0.2 s of the reply (else it asks again), then waits for 0.2 s without one;
- server: JupyterLab's way, through one `jupyter server` per kernelspec (a token,
  loopback): `POST /api/kernels`, then its `/api/kernels/<id>/channels` WebSocket,
  whose first message is a kernel_info_request, until its kernel_info_reply and
  the idle status for it have come back. The kernel is deleted after each round.

Target: <= 0.5x of ipykernel on every row. Turns alternate between the kernels, so
this machine's drifting speed hits all alike; medians are reported, after one
round of each that is not counted (the first start writes IPython's profile).
Python's defaults: PYTHONUNBUFFERED and PYTHONDONTWRITEBYTECODE are unset for the
kernels and servers. The kernelspecs, IPython's profile and the servers' files go
into a temporary folder, never the user's own: HOME is one, where both `--user`
kernelspecs are installed, and JUPYTER_PATH names another, holding the
`--sys-prefix` kernelspec.

Public tools only: jupyter_client, jupyter_server, websockets, the standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel
from websockets.sync.client import connect

from pyrelune.jupyter import kernelspec

TIMEOUT = 120.0
TARGET = 0.5
#: The kernelspecs: pyrelune's two, and ipykernel's, which every row is against.
KINDS = ("pyrelune", "pyrelune-user", "ipykernel")
SHOWN = {"pyrelune": "provisioner (--sys-prefix)", "pyrelune-user": "--user kernelspec"}


def environment(folder: Path) -> dict[str, str]:
    """This environment with Python's defaults and a HOME of its own in `folder`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "JUPYTER_DATA_DIR",
                        "JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR",
                        "XDG_DATA_HOME", "JUPYTER_PLATFORM_DIRS")}
    (folder / "home").mkdir()
    (folder / "path" / "kernels" / "bench-pyrelune").mkdir(parents=True)
    env["HOME"] = str(folder / "home")
    env["JUPYTER_PATH"] = str(folder / "path")
    return env


def install(env: dict[str, str]) -> None:
    """The kernelspecs, as their own commands write them (the `--sys-prefix` one into
    JUPYTER_PATH: the environment's own share/jupyter is left alone)."""
    commands = ([sys.executable, "-m", "pyrelune", "jupyter", "install", "--user",
                 "--name", "bench-pyrelune-user"],
                [sys.executable, "-m", "ipykernel", "install", "--user",
                 "--name", "bench-ipykernel"])
    for command in commands:
        subprocess.run(command, env=env, check=True, capture_output=True)
    provisioned = kernelspec.spec(sys.executable, provisioned=True)
    (Path(env["JUPYTER_PATH"]) / "kernels" / "bench-pyrelune" / "kernel.json").write_text(
        json.dumps(provisioned))


def through_start_new_kernel(kind: str) -> float:
    """Seconds jupyter_client's `start_new_kernel()` takes to hand over a ready client."""
    begin = time.perf_counter()
    manager, client = start_new_kernel(startup_timeout=TIMEOUT, kernel_name=f"bench-{kind}",
                                       stderr=subprocess.DEVNULL)
    took = time.perf_counter() - begin
    client.stop_channels()
    manager.shutdown_kernel(now=True)
    return took


class Server:
    """A `jupyter server` on loopback with a token, its kernels started as JupyterLab does."""

    def __init__(self, env: dict[str, str]) -> None:
        self.token = secrets.token_hex(16)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={self.token}", "--ServerApp.open_browser=False",
             f"--ServerApp.root_dir={env['HOME']}",
             *(["--allow-root"] if os.geteuid() == 0 else [])],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                self.call("GET", "/api/status")
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("jupyter server did not start") from None
                time.sleep(0.1)

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            data = response.read()
        return json.loads(data) if data else None

    def ready(self, kind: str) -> float:
        """Seconds from `POST /api/kernels` to the kernel_info_reply and idle status its
        WebSocket brings back; the kernel is deleted afterwards."""
        begin = time.perf_counter()
        kernel = self.call("POST", "/api/kernels", {"name": f"bench-{kind}"})["id"]
        try:
            url = (f"ws://127.0.0.1:{self.port}/api/kernels/{kernel}/channels"
                   f"?session_id={uuid.uuid4().hex}")
            with connect(url, additional_headers={"Authorization": f"token {self.token}"},
                         open_timeout=TIMEOUT, max_size=None) as websocket:
                msg_id = uuid.uuid4().hex
                websocket.send(json.dumps(_request(msg_id)))
                replied = idle = False
                while not (replied and idle):
                    message = json.loads(websocket.recv(timeout=TIMEOUT))
                    if message["parent_header"].get("msg_id") != msg_id:
                        continue
                    replied = replied or message["msg_type"] == "kernel_info_reply"
                    idle = idle or (message["msg_type"] == "status"
                                    and message["content"]["execution_state"] == "idle")
                took = time.perf_counter() - begin
        finally:
            self.call("DELETE", f"/api/kernels/{kernel}")
        return took

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _request(msg_id: str) -> dict[str, Any]:
    """A kernel_info_request as JupyterLab sends it over the WebSocket (JSON, with its channel)."""
    return {"header": {"msg_id": msg_id, "msg_type": "kernel_info_request", "username": "",
                       "session": uuid.uuid4().hex, "date": "", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "content": {}, "buffers": [],
            "channel": "shell"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9, help="starts of each, per path")
    options = parser.parse_args()
    samples: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        env = environment(Path(folder))
        install(env)
        os.environ.clear()
        os.environ.update(env)  # what start_new_kernel's kernels and the servers see
        servers = {kind: Server(env) for kind in KINDS}
        try:
            for turn in range(options.rounds + 1):
                order = list(KINDS) if turn % 2 == 0 else list(reversed(KINDS))
                for kind in order:
                    for path, took in (("start_new_kernel", through_start_new_kernel(kind)),
                                       ("server", servers[kind].ready(kind))):
                        if turn:
                            samples.setdefault((path, kind), []).append(took)
        finally:
            for server in servers.values():
                server.close()
    print(f"{'':46}{'pyrelune':>11}{'ipykernel':>11}{'ratio':>8}  target")
    for path in ("start_new_kernel", "server"):
        theirs = statistics.median(samples[path, "ipykernel"])
        for kind in KINDS[:2]:
            ours = statistics.median(samples[path, kind])
            ratio = ours / theirs
            verdict = f"<= {TARGET}" + (" ok" if ratio <= TARGET else " MISS")
            print(f"{path + ', ' + SHOWN[kind]:46}{ours * 1000:>8.1f} ms{theirs * 1000:>8.1f} ms"
                  f"{ratio:>7.2f}x  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
