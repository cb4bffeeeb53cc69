"""pyrelune on a host reached over SSH, as a team runs it: jupyter_server with
gateway_provisioners' DistributedProvisioner, pointed at an sshd of the test's own on a
loopback alias (support/sshd.py: its own host key and port, key auth with a key the test
made). The kernelspec is the one `pyrelune jupyter install --provisioner distributed`
writes; the provisioner runs it over SSH, pyrelune's launcher answers. Through the server's
REST API and the kernel's WebSocket, as a front end: cells run, a busy loop and a
SIGINT-ignoring cell are interrupted, the kernel restarts and shuts down, and no process
started for the kernel is left. ipykernel through gateway_provisioners' own launcher and
kernelspec (`jupyter-ssh-spec`), on the same server and sshd, is the reference: the same
steps, except that its SIGINT-ignoring cell is ended only by a restart.

Every wait has a deadline; the times are printed (`-s`), never asserted.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from support import sshd
from support.launch import SCRIPT
from support.poll import wait_until
from support.processes import gone_soon, running

#: A server, an sshd and two kernels: the full run's.
pytestmark = pytest.mark.long

if (why := sshd.reason()) is not None:
    pytest.skip(why, allow_module_level=True)
pytest.importorskip("gateway_provisioners", reason="needs gateway_provisioners (test extras)")
pytest.importorskip("cryptography", reason="needs cryptography (pyrelune's remote extra)")
pytest.importorskip("jupyter_server", reason="needs jupyter_server (test extras)")
pytest.importorskip("websockets", reason="needs websockets (test extras)")

from websockets.sync.client import connect as ws_connect  # noqa: E402
from websockets.sync.connection import Connection  # noqa: E402

WAIT = 120.0  # a start, a reply or an ending on a busy 2-core machine
BUSY = "while True:\n    pass\n"
STUBBORN = ("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "print('ignoring SIGINT', flush=True)\nwhile True:\n    time.sleep(0.1)\n")
#: A child of the cell that would outlive the kernel but for its launcher.
LEFTOVER = "import subprocess\nprint(subprocess.Popen(['sleep', '300']).pid)"
#: How long ipykernel's SIGINT-ignoring cell is given to end (it cannot) before a restart.
STUBBORN_LOOK = 5.0
#: How long the reference's processes are given to end after a restart or a shutdown (they
#: may not: ipykernel's launcher does not end a kernel stuck in such a cell).
REFERENCE_WAIT = 15.0
PYRELUNE = "pyrelune-ssh"
IPYKERNEL = "ipykernel-ssh"


@dataclass
class Server:
    base: str
    token: str
    log: Path
    kernel_logs: Path

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(
            f"{self.base}{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=WAIT) as response:
            data = response.read()
        return json.loads(data) if data else None

    def said(self) -> str:
        logs = [self.log, *sorted(self.kernel_logs.glob("*.log"))]
        return "\n".join(f"== {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in logs)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("ssh")
    daemon = sshd.Sshd(root / "sshd")
    try:
        yield from _served(root, daemon)
    finally:
        daemon.stop()


def _kernelspecs(prefix: Path) -> None:
    """pyrelune's, as `pyrelune jupyter install` writes it, and ipykernel's, as
    gateway_provisioners' `jupyter-ssh-spec` writes it (its `python` made this one: a
    command run over SSH sees only the system's PATH)."""
    installed = subprocess.run(
        [SCRIPT, "jupyter", "install", "--prefix", str(prefix), "--name", PYRELUNE,
         "--provisioner", "distributed", "--remote-hosts", sshd.HOST],
        capture_output=True, text=True, timeout=WAIT)
    assert installed.returncode == 0, installed.stderr
    reference = subprocess.run(
        [sys.executable, "-m", "gateway_provisioners.cli.ssh_specapp", "install",
         f"--prefix={prefix}", f"--kernel-name={IPYKERNEL}", f"--remote-hosts={sshd.HOST}"],
        capture_output=True, text=True, timeout=WAIT)
    assert reference.returncode == 0, reference.stderr
    path = prefix / "share" / "jupyter" / "kernels" / IPYKERNEL / "kernel.json"
    spec = json.loads(path.read_text())
    assert spec["argv"][0] == "python"
    spec["argv"][0] = sys.executable
    path.write_text(json.dumps(spec))


def _served(root: Path, daemon: sshd.Sshd) -> Iterator[Server]:
    _kernelspecs(root / "prefix")
    logs = root / "kernel-logs"
    logs.mkdir()
    token = secrets.token_hex(16)
    env = {**os.environ,
           "HOME": str(daemon.home),  # paramiko's key and known_hosts: the test's sshd's
           "JUPYTER_PATH": str(root / "prefix" / "share" / "jupyter"),
           "JUPYTER_CONFIG_DIR": str(root / "config"),
           "JUPYTER_DATA_DIR": str(root / "data"),
           "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
           "GP_SSH_PORT": str(daemon.port), "GP_REMOTE_USER": daemon.user,
           "GP_RESPONSE_IP": "127.0.0.1",  # loopback only
           "GP_KERNEL_LOG_DIR": str(logs),
           "GP_LAUNCH_TIMEOUT": str(int(WAIT)),
           "GP_UNAUTHORIZED_USERS": "nobody"}  # the provisioner refuses root by default
    env.pop("SSH_CONNECTION", None)
    log = root / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser", "--port=0",
             "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={root}",
             f"--IdentityProvider.token={token}", "--ServerApp.port_retries=0",
             *(["--allow-root"] if os.geteuid() == 0 else [])],
            env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=root)
    info = root / "runtime" / f"jpserver-{process.pid}.json"
    server = Server("", token, log, logs)
    try:
        def port() -> int | None:
            assert process.poll() is None, server.said()
            try:
                return int(json.loads(info.read_text())["port"])
            except (OSError, ValueError, KeyError):  # not written yet, or half
                return None

        assert wait_until(port, WAIT), f"the server did not say its port: {server.said()}"
        server.base = f"http://127.0.0.1:{port()}"
        assert wait_until(lambda: _status(server), WAIT), server.said()
        specs = server.call("GET", "/api/kernelspecs")["kernelspecs"]
        assert {PYRELUNE, IPYKERNEL} <= set(specs), specs  # their provisioner was found
        yield server
    finally:
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(60)


def _status(server: Server) -> bool:
    try:
        server.call("GET", "/api/status")
        return True
    except OSError:
        return False


class Channels:
    """The kernel's WebSocket (jupyter_server's JSON messages), with deadlines."""

    def __init__(self, ws: Connection) -> None:
        self.ws = ws
        self.session = uuid.uuid4().hex

    def send(self, msg_type: str, content: dict[str, Any], channel: str = "shell") -> str:
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": msg_type, "session": self.session,
                  "username": "test", "version": "5.3", "date": ""}
        self.ws.send(json.dumps({"header": header, "parent_header": {}, "metadata": {},
                                 "content": content, "channel": channel, "buffers": []}))
        return msg_id

    def until(self, done: Callable[[dict[str, Any]], bool], within: float = WAIT
              ) -> list[dict[str, Any]]:
        """Messages up to the first that `done` accepts; AssertionError past `within`."""
        deadline = time.monotonic() + within
        seen: list[dict[str, Any]] = []
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no such message within {within:.0f} s: {seen[-5:]}"
            try:
                message = json.loads(self.ws.recv(timeout=left))
            except TimeoutError:
                continue
            seen.append(message)
            if done(message):
                return seen

    def execute(self, code: str) -> str:
        """Send `code`; its execute_request's id."""
        return self.send("execute_request", {"code": code, "silent": False,
                                             "store_history": True, "user_expressions": {},
                                             "allow_stdin": False, "stop_on_error": True})

    def outcome(self, msg_id: str, within: float = WAIT) -> tuple[dict[str, Any], str]:
        """The execute_reply's content and the cell's stdout, once the kernel is idle."""
        got: dict[str, Any] = {}

        def done(message: dict[str, Any]) -> bool:
            if message["parent_header"].get("msg_id") != msg_id:
                return False
            if message["msg_type"] == "execute_reply":
                got["reply"] = message["content"]
            elif message["msg_type"] == "status" and \
                    message["content"]["execution_state"] == "idle":
                got["idle"] = True
            return len(got) == 2

        seen = self.until(done, within)
        stdout = "".join(m["content"]["text"] for m in seen
                         if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
                         and m["parent_header"].get("msg_id") == msg_id)
        return got["reply"], stdout

    def run(self, code: str) -> str:
        reply, stdout = self.outcome(self.execute(code))
        assert reply["status"] == "ok", reply
        return stdout

    def started(self, msg_id: str, text: str) -> None:
        """Until the cell has printed `text` (it is running)."""
        self.until(lambda m: m["parent_header"].get("msg_id") == msg_id
                   and m["msg_type"] == "stream" and text in m["content"]["text"])



@contextlib.contextmanager
def channels_of(server: Server, kernel_id: str) -> Iterator[Channels]:
    url = server.base.replace("http", "ws", 1)
    with ws_connect(f"{url}/api/kernels/{kernel_id}/channels?session_id={uuid.uuid4().hex}",
                    additional_headers={"Authorization": f"token {server.token}"},
                    open_timeout=WAIT, max_size=None) as ws:
        yield Channels(ws)


def kernel_processes(text: str) -> set[int]:
    """Processes whose command line holds `text`: a kernel id names the kernel's launcher
    (and pyrelune's kernel, by its connection file)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if text.encode() in argv and running(int(entry.name)):
                found.add(int(entry.name))
    return found


@dataclass
class Run:
    """What one kernel did, for the comparison and the printed times."""

    name: str
    times: dict[str, float] = field(default_factory=dict)
    seen: set[int] = field(default_factory=set)  # every process of the kernel's, ever
    left: dict[str, list[int]] = field(default_factory=dict)  # left running after a step

    def timed(self, what: str, step: Callable[[], Any]) -> Any:
        start = time.monotonic()
        result = step()
        self.times[what] = time.monotonic() - start
        return result


def _interrupt(server: Server, kernel_id: str) -> None:
    server.call("POST", f"/api/kernels/{kernel_id}/interrupt")


def _scenario(server: Server, name: str) -> Run:
    run = Run(name)
    kernel_id = run.timed("start", lambda: server.call("POST", "/api/kernels",
                                                       {"name": name})["id"])
    try:
        _steps(server, kernel_id, run)
    except BaseException:
        print(server.said())
        raise
    finally:
        if any(k["id"] == kernel_id for k in server.call("GET", "/api/kernels")):
            server.call("DELETE", f"/api/kernels/{kernel_id}")
    return run


def _steps(server: Server, kernel_id: str, run: Run) -> None:
    pyrelune = run.name == PYRELUNE
    with channels_of(server, kernel_id) as channels:
        assert channels.run("print(6 * 7)") == "42\n"
        run.seen |= kernel_processes(kernel_id)
        assert run.seen, "no process names the kernel"
        run.seen.add(int(channels.run("import os\nprint(os.getpid())")))
        if pyrelune:  # its launcher ends what cells left (not promised by the reference)
            run.seen.add(int(channels.run(LEFTOVER)))

        busy = channels.execute(BUSY)
        channels.until(lambda m: m["msg_type"] == "status"
                       and m["parent_header"].get("msg_id") == busy
                       and m["content"]["execution_state"] == "busy")

        def interrupted() -> tuple[dict[str, Any], str]:
            _interrupt(server, kernel_id)
            return channels.outcome(busy)

        reply, _ = run.timed("interrupt", interrupted)
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
        assert channels.run("print('after the loop')") == "after the loop\n"

        stubborn = channels.execute(STUBBORN)
        channels.started(stubborn, "ignoring SIGINT")
        _interrupt(server, kernel_id)
        if pyrelune:  # the cell ends, and the kernel goes on
            reply, _ = run.timed("stubborn", lambda: channels.outcome(stubborn))
            assert reply["status"] == "error", reply
            assert channels.run("print('next')") == "next\n"
        else:  # ipykernel: the cell goes on until a restart
            with pytest.raises(AssertionError, match="no such message"):
                channels.outcome(stubborn, within=STUBBORN_LOOK)
        before = kernel_processes(kernel_id)
        run.seen |= before

    run.timed("restart", lambda: server.call("POST", f"/api/kernels/{kernel_id}/restart"))
    run.left["restart"] = left_of(before, pyrelune)
    with channels_of(server, kernel_id) as channels:
        assert channels.run("print('restarted')") == "restarted\n"
        run.seen |= kernel_processes(kernel_id)
        run.seen.add(int(channels.run("import os\nprint(os.getpid())")))
        if pyrelune:
            run.seen.add(int(channels.run(LEFTOVER)))
    run.timed("shutdown", lambda: server.call("DELETE", f"/api/kernels/{kernel_id}"))
    run.left["shutdown"] = left_of(run.seen | kernel_processes(kernel_id), pyrelune)


def left_of(pids: set[int], promised: bool) -> list[int]:
    """Which of `pids` are still running once they have had time to end: WAIT where pyrelune
    promises they end, REFERENCE_WAIT for the reference's, which may not."""
    within = WAIT if promised else REFERENCE_WAIT
    return sorted(pid for pid in pids if not gone_soon(pid, within=within))


def test_pyrelune_over_ssh_through_the_distributed_provisioner_as_ipykernel_does(
        server: Server) -> None:
    ours = _scenario(server, PYRELUNE)
    try:
        reference = _scenario(server, IPYKERNEL)
    finally:
        for pid in kernel_leftovers(IPYKERNEL):  # the reference's, which it may leave
            os.kill(pid, signal.SIGKILL)
    for run in (ours, reference):
        print(f"{run.name}: " + ", ".join(f"{what} {seconds:.2f} s"
                                          for what, seconds in run.times.items())
              + f"; left running after restart, shutdown: {run.left}")
    assert ours.left == {"restart": [], "shutdown": []}
    assert not server.call("GET", "/api/kernels")


def kernel_leftovers(kernelspec: str) -> set[int]:
    """Processes started from `kernelspec`'s folder (its launcher script)."""
    return kernel_processes(f"/kernels/{kernelspec}/")
