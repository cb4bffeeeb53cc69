"""`python -m pyrelune.jupyter.launcher`: pyrelune's kernel on a host a remote provisioner
chose (gateway_provisioners' distributed, Kubernetes, Docker or YARN provisioners, Jupyter
Enterprise Gateway).

The provisioners' own launchers run ipykernel inside themselves; this one runs
`pyrelune --mode jupyter` as its child and stands for it: it picks the kernel's ports in
the port range, writes the kernel's connection file (a fresh key, CurveZMQ keys when the
provisioner asks for transport encryption), starts the kernel, sends the connection
information to the response address once the kernel listens (see `remote` for the
format), then serves the comm port until the kernel has ended. A signal request goes to
the kernel (SIGINT is pyrelune's interrupt), SIGTERM and a shutdown request end it (a
shutdown request gives it `GRACE` seconds to end on its own first: the front end's
shutdown_request is on its way), SIGKILL kills it, and whatever the kernel's cells
left in its process group goes with it. The launcher's exit is what the provisioner sees
as the kernel's: its comm port refuses liveness checks once it is gone. The kernel
watches the launcher (`JPY_PARENT_PID`): a launcher killed outright does not leave it
running.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from pyrelune.jupyter import remote

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

#: Seconds the kernel has to end after a shutdown request (its shutdown_request came
#: first), then after SIGTERM (a running cell is interrupted first), before SIGKILL.
GRACE = 5.0
#: Seconds to wait for the kernel to listen before the provisioner is told where it is.
LISTEN_PATIENCE = 30.0
#: Seconds for reaching the response address, and for a comm-port request to arrive whole.
NETWORK_TIMEOUT = 10.0
#: How hard each step of an ending is: waiting, SIGTERM, SIGKILL.
_RANK = {0: 0, signal.SIGTERM: 1, signal.SIGKILL: 2}
#: One line before each reason the launcher gives up.
CANNOT_START = "pyrelune: cannot start the kernel launcher: "


def bind_address(chosen: str | None, response_address: tuple[str, int],
                 env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """Where the kernel listens, and why there: `--ip` if given; else, started over SSH
    (the distributed provisioner), the address this host was reached at (`SSH_CONNECTION`'s
    third field), which is the one the provisioner connects to; else this host's address
    on the route to the provisioner (a loopback provisioner gets a loopback kernel)."""
    if chosen is not None:
        return chosen, "--ip"
    import ipaddress

    fields = (os.environ if env is None else env).get("SSH_CONNECTION", "").split()
    if len(fields) == 4:
        try:
            return str(ipaddress.ip_address(fields[2])), "the address SSH reached this host at"
        except ValueError:
            pass
    family = socket.AF_INET6 if ":" in response_address[0] else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:  # connect() sends nothing
        probe.connect(response_address)
        return str(probe.getsockname()[0]), "the address that reaches the provisioner"


def pick_ports(ip: str, port_range: tuple[int, int], count: int) -> list[socket.socket]:
    """`count` listening-ready TCP sockets bound on `ip` to free ports in `port_range`."""
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    bound: list[socket.socket] = []
    try:
        for _ in range(count):
            taken = {sock.getsockname()[1] for sock in bound}
            for port in remote.candidates(port_range, count):
                if port in taken:
                    continue
                sock = socket.socket(family, socket.SOCK_STREAM)
                try:
                    sock.bind((ip, port))
                except OSError:
                    sock.close()
                    continue
                bound.append(sock)
                break
            else:
                low, high = port_range
                raise remote.LaunchError(f"no {count} free ports in --port-range {low}..{high}"
                                         f" on {ip}")
    except BaseException:
        for sock in bound:
            sock.close()
        raise
    return bound


def curve_keys(policy: str) -> tuple[str, str] | None:
    """CurveZMQ keys for the kernel when the provisioner asks for transport encryption and
    this pyzmq can make them; `LaunchError` when it requires them and cannot have them."""
    if policy not in ("auto", "required"):
        return None
    import zmq

    if zmq.has("curve"):
        public, secret = zmq.curve_keypair()
        return public.decode(), secret.decode()
    why = f"this ZeroMQ (libzmq {zmq.zmq_version()}) was built without CurveZMQ"
    if policy == "required":
        raise remote.LaunchError(f"transport encryption is required and {why}")
    sys.stderr.write(f"pyrelune: launcher: the kernel's transport is not encrypted: {why}\n")
    return None


def write_private(path: str, info: dict[str, object]) -> None:
    """The connection file, readable by this user only (it holds the kernel's keys)."""
    import json

    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(descriptor, "w", encoding="utf-8") as file:
        json.dump(info, file, indent=1)


def listening(ip: str, ports: list[int], kernel: subprocess.Popen[bytes],
              patience: float) -> bool:
    """Whether the kernel accepts connections on `ports` before it exits or time runs out."""
    from pyrelune.transports.addresses import accepts

    target = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(ip, ip)
    deadline = time.monotonic() + patience
    waiting = list(ports)
    while kernel.poll() is None and time.monotonic() < deadline:
        waiting = [port for port in waiting if not accepts(target, port)]
        if not waiting:
            return True
        time.sleep(0.01)
    return False


def send_response(address: tuple[str, int], payload: bytes) -> None:
    with socket.create_connection(address, timeout=NETWORK_TIMEOUT) as sock:
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)


class Launcher:
    """The comm port's loop: requests and signals to the kernel, until it has ended."""

    def __init__(self, kernel: subprocess.Popen[bytes], comm: socket.socket) -> None:
        self.kernel = kernel
        self.comm = comm
        self.selector = selectors.DefaultSelector()
        self.reading: dict[socket.socket, tuple[bytearray, float]] = {}
        self.kill_at: float | None = None  # when the kernel gets the next, harder signal
        self.hard: list[int] = []  # those signals, in order
        self.stage = -1  # how hard the ending is so far (`_RANK`), -1 before it
        self.wakeup_r, wakeup_w = os.pipe()
        os.set_blocking(self.wakeup_r, False)
        os.set_blocking(wakeup_w, False)
        self._wakeup_w = wakeup_w
        signal.set_wakeup_fd(wakeup_w)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: None)  # the wakeup descriptor carries it
        comm.setblocking(False)
        comm.listen(16)
        self.selector.register(comm, selectors.EVENT_READ)
        self.selector.register(self.wakeup_r, selectors.EVENT_READ)

    def run(self) -> int:
        """Serve until the kernel has ended; its exit status."""
        while (status := self.kernel.poll()) is None:
            now = time.monotonic()
            deadlines = [deadline for _, deadline in self.reading.values()]
            if self.kill_at is not None:
                deadlines.append(self.kill_at)
            timeout = max(0.0, min(deadlines) - now) if deadlines else None
            for key, _ in self.selector.select(timeout):
                if key.fileobj is self.comm:
                    self._accept()
                elif key.fileobj == self.wakeup_r:
                    self._signals()
                else:
                    assert isinstance(key.fileobj, socket.socket)
                    self._read(key.fileobj)
            self._expire(time.monotonic())
        return status

    def _accept(self) -> None:
        try:
            conn, _ = self.comm.accept()
        except BlockingIOError:
            return
        conn.setblocking(False)
        self.reading[conn] = (bytearray(), time.monotonic() + NETWORK_TIMEOUT)
        self.selector.register(conn, selectors.EVENT_READ)

    def _read(self, conn: socket.socket) -> None:
        data, _ = self.reading[conn]
        try:
            chunk = conn.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        data += chunk
        if chunk and len(data) <= remote.REQUEST_LIMIT:
            return
        self._drop(conn)
        if data:
            try:
                self.handle(remote.read_request(bytes(data)))
            except ValueError as exc:
                sys.stderr.write(f"pyrelune: launcher: a comm-port request refused: {exc}\n")

    def _drop(self, conn: socket.socket) -> None:
        self.selector.unregister(conn)
        del self.reading[conn]
        conn.close()

    def _expire(self, now: float) -> None:
        for conn, (_, deadline) in list(self.reading.items()):
            if now >= deadline:
                self._drop(conn)
        if self.kill_at is not None and now >= self.kill_at:
            self._escalate()

    def _signals(self) -> None:
        try:
            received = os.read(self.wakeup_r, 512)
        except BlockingIOError:
            return
        for signum in received:
            if signum == signal.SIGTERM:
                self.end([signal.SIGTERM, signal.SIGKILL])
            elif signum == signal.SIGINT:  # the provisioner signalled the "kernel" it knows
                self.signal_kernel(signal.SIGINT)

    def handle(self, request: remote.Request) -> None:
        """A comm-port request: a signal (0 asks whether the kernel is alive: the accepted
        connection said so), or the end of the kernel."""
        if request.signum == signal.SIGKILL:
            self.end([signal.SIGKILL])
        elif request.signum == signal.SIGTERM:
            self.end([signal.SIGTERM, signal.SIGKILL])
        elif request.signum:
            self.signal_kernel(request.signum)
        if request.shutdown:
            self.end([0, signal.SIGTERM, signal.SIGKILL])

    def end(self, signals: list[int]) -> None:
        """End the kernel with `signals` in turn, `GRACE` seconds apart (0: only wait); an
        ending already under way goes on unless this one starts harder."""
        if _RANK[signals[0]] <= self.stage:
            return
        self.hard = signals
        self._escalate()

    def _escalate(self) -> None:
        signum, self.hard = self.hard[0], self.hard[1:]
        self.stage = _RANK[signum]
        if signum:
            self.signal_kernel(signum)
        self.kill_at = time.monotonic() + GRACE if self.hard else None

    def signal_kernel(self, signum: int) -> None:
        if self.kernel.poll() is None:
            try:
                self.kernel.send_signal(signum)
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        """After the kernel: what its cells left in its process group, then the sockets."""
        try:
            os.killpg(self.kernel.pid, signal.SIGKILL)
        except OSError:
            pass
        for conn in list(self.reading):
            self._drop(conn)
        signal.set_wakeup_fd(-1)
        self.selector.close()
        self.comm.close()
        os.close(self.wakeup_r)
        os.close(self._wakeup_w)


def launch(args: remote.Arguments, folder: str) -> int:
    """Start the kernel with its connection file in `folder`, tell the provisioner, serve."""
    ip, why = bind_address(args.ip, args.response_address)
    if args.ip is None:
        sys.stderr.write(f"pyrelune: launcher: the kernel listens on {ip}, {why} (--ip "
                         "chooses another)\n")
    sockets = pick_ports(ip, args.port_range, len(remote.PORT_NAMES) + 1)
    comm = sockets.pop()
    try:
        import secrets

        ports = [sock.getsockname()[1] for sock in sockets]
        info = remote.connection_info(ip, ports, secrets.token_hex(32),
                                      curve_keys(args.transport_encryption))
        path = os.path.join(folder, f"kernel-{args.kernel_id}.json")
        write_private(path, info)
        reply = remote.response(info, args.kernel_id, os.getpid(), os.getpgid(0),
                                comm.getsockname()[1])
        payload = remote.seal(reply, args.public_key)
        for sock in sockets:  # the kernel binds them now
            sock.close()
        kernel = start_kernel(path, args.shell)
    except BaseException:
        comm.close()
        raise
    launcher = Launcher(kernel, comm)
    try:
        if listening(ip, ports, kernel, LISTEN_PATIENCE):
            try:
                send_response(args.response_address, payload)
            except OSError as exc:
                host, port = args.response_address
                sys.stderr.write(f"{CANNOT_START}the provisioner's response address "
                                 f"{host}:{port} refused the connection information: {exc}\n")
                launcher.end([signal.SIGTERM, signal.SIGKILL])
        elif kernel.poll() is None:
            sys.stderr.write(f"{CANNOT_START}the kernel did not listen within "
                             f"{LISTEN_PATIENCE:.0f} s\n")
            launcher.end([signal.SIGTERM, signal.SIGKILL])
        status = launcher.run()
    finally:
        launcher.close()
    return status if status >= 0 else 128 - status  # killed by a signal: as a shell says it


def start_kernel(path: str, shell: str | None) -> subprocess.Popen[bytes]:
    """`pyrelune --mode jupyter`, in a session of its own (its process group is ended with
    it), watching this process as its parent."""
    argv = [sys.executable, "-m", "pyrelune", "--mode", "jupyter", "-f", path]
    if shell is not None:
        argv += ["--shell", shell]
    env = {**os.environ, "JPY_PARENT_PID": str(os.getpid())}
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=env, start_new_session=True)


def main(argv: Sequence[str] | None = None) -> int:
    """The launcher; its exit status is the kernel's (2 for arguments it refuses, 1 for
    what this host refuses)."""
    import importlib.util

    if importlib.util.find_spec("cryptography") is None:
        from pyrelune.extras import hint

        sys.stderr.write(f"{CANNOT_START}it encrypts the connection information with the "
                         f"cryptography package, which is not installed here: "
                         f"{hint('cryptography', 'remote')}\n")
        return 2
    try:
        args = remote.parse_arguments(list(sys.argv[1:] if argv is None else argv))
    except remote.LaunchError as exc:
        sys.stderr.write(f"{CANNOT_START}{exc}\n")
        return 2
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="pyrelune-kernel-")
    try:
        return launch(args, folder)
    except remote.LaunchError as exc:
        sys.stderr.write(f"{CANNOT_START}{exc}\n")
        return 1
    except OSError as exc:
        sys.stderr.write(f"{CANNOT_START}{exc}\n")
        return 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
