"""The remote kernel provisioners' launcher protocol, as plain values.

Jupyter's remote provisioners (gateway_provisioners 0.5, Jupyter Enterprise Gateway 3)
write no connection file on the host that runs the kernel: they start a launcher there
with a kernel id, a response address, an RSA public key and a port range. The launcher
picks the ports, writes its own connection file, sends the connection information back
to the response address, encrypted, and listens on a comm port for the provisioner's
requests (`{"signum": N}`, where 0 asks only whether it is alive, and `{"shutdown": 1}`).
The process that does so is `pyrelune.jupyter.launcher`; what it reads and writes is here.

The payload is the provisioners' version 1: the connection information as JSON,
AES-128 in ECB mode with PKCS#7 padding under a fresh random key, that key encrypted with
the provisioner's RSA key (PKCS#1 v1.5), both base64 in a JSON object, itself base64.
That is what the provisioner decrypts; it has no integrity check of its own, so the
connection information's secrets (the signing key, the CurveZMQ keys) are only as
private as the provisioner's RSA key. `seal` needs the `cryptography` package
(`pyrelune[remote]`), imported only there.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
from dataclasses import dataclass
from typing import Any

from pyrelune import PyreluneError

#: The payload format the provisioners decrypt (their launchers' LAUNCHER_VERSION).
LAUNCHER_VERSION = 1
#: The connection file's port names, in the order the provisioners' launchers pick them.
PORT_NAMES = ("shell_port", "iopub_port", "stdin_port", "hb_port", "control_port")
#: The transport encryption policies a provisioner passes (`{transport_encryption}`); an
#: empty one (or "disabled") asks for none.
POLICIES = ("", "disabled", "auto", "required")
#: A comm-port request is a small JSON object: anything longer is refused unread.
REQUEST_LIMIT = 1 << 16
#: Random tries for each port in a range before it counts as full.
TRIES_PER_PORT = 64
#: Options the provisioners' Python launcher takes for its own kernel (Spark, Dask, a
#: kernel class): accepted, so that a kernelspec written for it runs, and ignored.
IGNORED = ("spark-context-initialization-mode", "cluster-type", "kernel-class-name")


class LaunchError(PyreluneError):
    """Why the launcher cannot do what it was asked: the message says what to change."""


@dataclass(frozen=True)
class Arguments:
    """What the provisioner (and the kernelspec) tell the launcher."""

    kernel_id: str
    response_address: tuple[str, int]
    public_key: str
    port_range: tuple[int, int]  # (0, 0): any free port
    transport_encryption: str  # one of POLICIES
    ip: str | None  # where the kernel listens; None: the address that reaches the provisioner
    shell: str | None  # the kernel's --shell


@dataclass(frozen=True)
class Request:
    """A comm-port request: a signal for the kernel (0: only whether it is alive), or the
    end of the kernel and its launcher."""

    signum: int | None = None
    shutdown: bool = False


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit; the caller says it in one line
        raise LaunchError(message)


def parse_arguments(argv: list[str]) -> Arguments:
    """The launcher's command line, in the provisioners' spelling (`--kernel-id ID`, or
    Enterprise Gateway's older `--RemoteProcessProxy.kernel-id ID`)."""
    parser = _Parser(prog="python -m pyrelune.jupyter.launcher", add_help=False)

    def option(name: str, **kwargs: Any) -> None:
        parser.add_argument(f"--{name}", f"--RemoteProcessProxy.{name}", **kwargs)

    option("kernel-id", required=True)
    option("response-address", required=True)
    option("public-key", required=True)
    option("port-range", default="0..0")
    # Over SSH the provisioner joins the argv with spaces, so an empty value (no transport
    # encryption asked for) arrives as no value at all: taken as empty, as its launchers do.
    option("transport-encryption", default="", nargs="?", const="")
    for name in IGNORED:
        option(name, nargs="?", const="")
    parser.add_argument("--ip")
    parser.add_argument("--shell")
    given = parser.parse_args(argv)
    policy = given.transport_encryption.strip().lower()
    if policy not in POLICIES:
        raise LaunchError(f"--transport-encryption {given.transport_encryption!r}: expected "
                          "auto, required or disabled")
    if not given.kernel_id or not given.public_key:
        raise LaunchError("--kernel-id and --public-key must not be empty")
    if given.ip is not None and not given.ip:
        raise LaunchError("--ip is empty: give the address the kernel listens on")
    return Arguments(given.kernel_id, parse_address(given.response_address), given.public_key,
                     parse_port_range(given.port_range), policy, given.ip, given.shell)


def parse_address(text: str) -> tuple[str, int]:
    """`IP:PORT`, the provisioner's response address."""
    host, colon, port = text.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise LaunchError(f"--response-address {text!r}: expected IP:PORT")
    return host.strip("[]"), int(port)


def parse_port_range(text: str) -> tuple[int, int]:
    """`LOWER..UPPER`, inclusive; `0..0` leaves the ports to the system."""
    lower, dots, upper = text.partition("..")
    if not dots or not lower.isdigit() or not upper.isdigit():
        raise LaunchError(f"--port-range {text!r}: expected LOWER..UPPER, or 0..0 for any port")
    low, high = int(lower), int(upper)
    if (low, high) != (0, 0) and not 0 < low <= high < 65536:
        raise LaunchError(f"--port-range {text!r}: expected two ports 1-65535, the lower first")
    return low, high


def candidates(port_range: tuple[int, int], count: int,
               rng: random.Random | None = None) -> list[int]:
    """Ports to try, in random order, for one port of `port_range` (`[0]`: any free port)."""
    low, high = port_range
    if (low, high) == (0, 0):
        return [0]
    rng = rng or random.Random()
    size = high - low + 1
    if size <= TRIES_PER_PORT * count:
        ports = list(range(low, high + 1))
        rng.shuffle(ports)
        return ports
    return [rng.randint(low, high) for _ in range(TRIES_PER_PORT)]


def connection_info(ip: str, ports: list[int], key: str,
                    curve: tuple[str, str] | None = None) -> dict[str, Any]:
    """The kernel's connection file: `ports` in `PORT_NAMES`' order."""
    info: dict[str, Any] = dict(zip(PORT_NAMES, ports, strict=True))
    info.update(ip=ip, key=key, transport="tcp", signature_scheme="hmac-sha256",
                kernel_name="")
    if curve is not None:
        info["curve_publickey"], info["curve_secretkey"] = curve
    return info


def response(info: dict[str, Any], kernel_id: str, pid: int, pgid: int,
             comm_port: int) -> dict[str, Any]:
    """What the provisioner is sent: the connection file, the kernel id it waits for, the
    launcher's process (which the provisioner thinks of as the kernel's) and its comm port."""
    return {**info, "kernel_id": kernel_id, "pid": pid, "pgid": pgid, "comm_port": comm_port}


def seal(payload: dict[str, Any], public_key: str, aes_key: bytes | None = None) -> bytes:
    """`payload` encrypted for the provisioner whose RSA public key is `public_key` (a PEM's
    base64 body, as `{public_key}` gives it), in the provisioners' version 1 format."""
    import os

    from cryptography.hazmat.primitives import padding, serialization
    from cryptography.hazmat.primitives.asymmetric import padding as asymmetric
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    try:
        rsa = serialization.load_der_public_key(base64.b64decode(public_key, validate=True))
    except ValueError as exc:
        raise LaunchError(f"--public-key is not an RSA public key: {exc}") from None
    if not isinstance(rsa, RSAPublicKey):
        raise LaunchError("--public-key is not an RSA public key")
    aes_key = aes_key or os.urandom(16)
    padder = padding.PKCS7(128).padder()
    plain = padder.update(json.dumps(payload).encode()) + padder.finalize()
    encryptor = Cipher(algorithms.AES(aes_key), modes.ECB()).encryptor()
    sealed = encryptor.update(plain) + encryptor.finalize()
    envelope = {"version": LAUNCHER_VERSION,
                "key": base64.b64encode(rsa.encrypt(aes_key, asymmetric.PKCS1v15())).decode(),
                "conn_info": base64.b64encode(sealed).decode()}
    return base64.b64encode(json.dumps(envelope).encode())


def read_request(data: bytes) -> Request:
    """A comm-port request, as the provisioner sends it (one JSON object, then the end of
    the connection); `ValueError` for anything else."""
    if len(data) > REQUEST_LIMIT:
        raise ValueError(f"a request of more than {REQUEST_LIMIT} bytes")
    request = json.loads(data)
    if not isinstance(request, dict):
        raise ValueError("a request must be a JSON object")
    signum = request.get("signum")
    if signum is not None and (isinstance(signum, bool) or not isinstance(signum, int)
                               or not 0 <= signum < 65):
        raise ValueError(f"signum {signum!r}: expected a signal number")
    return Request(signum, bool(request.get("shutdown")))
