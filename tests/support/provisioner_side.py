"""The remote provisioner's side of `pyrelune.jupyter.launcher`, for tests: an RSA key pair,
a response address that receives the launcher's payload, its decryption (gateway_provisioners'
own `ResponseManager._decode_payload` where that package is installed, else an independent one
with `cryptography`), and comm-port requests. Loopback only; every wait is bounded. Tests
that import it skip first where `cryptography` (`pyrelune[remote]`) is missing.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import subprocess
import sys
import time
from types import SimpleNamespace
from typing import Any

from cryptography.hazmat.primitives import padding, serialization
from cryptography.hazmat.primitives.asymmetric import padding as asymmetric
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

#: The provisioners' key size (gateway_provisioners' ResponseManager.KEY_SIZE).
KEY_SIZE = 1024


class KeyPair:
    """The provisioner's RSA keys; `public` as `{public_key}` passes it (a PEM's body)."""

    def __init__(self) -> None:
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_SIZE)
        der = self.private.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        self.public = base64.b64encode(der).decode()

    def pem(self) -> bytes:
        return self.private.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption())


def decrypt_with_gateway(keys: KeyPair, data: bytes) -> dict[str, Any]:
    """gateway_provisioners' own decryption of a launcher's payload (its key comes as bytes)."""
    from Cryptodome.PublicKey import RSA
    from gateway_provisioners.response_manager import ResponseManager

    manager = SimpleNamespace(_private_key=RSA.import_key(keys.pem()),
                              log=logging.getLogger("provisioner"), _response_registry={})
    info: dict[str, Any] = ResponseManager._decode_payload(manager, data.decode())
    return info


def decrypt_independently(keys: KeyPair, data: bytes) -> dict[str, Any]:
    """The version 1 payload, decrypted as its format says, with `cryptography` alone."""
    envelope = json.loads(base64.b64decode(data))
    assert envelope["version"] == 1
    aes_key = keys.private.decrypt(base64.b64decode(envelope["key"]), asymmetric.PKCS1v15())
    decryptor = Cipher(algorithms.AES(aes_key), modes.ECB()).decryptor()
    padded = decryptor.update(base64.b64decode(envelope["conn_info"])) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    info: dict[str, Any] = json.loads(unpadder.update(padded) + unpadder.finalize())
    return info


def decrypt(keys: KeyPair, data: bytes) -> dict[str, Any]:
    """The provisioner's decryption where gateway_provisioners is installed, else ours."""
    try:
        import Cryptodome  # noqa: F401
        import gateway_provisioners  # noqa: F401
    except ImportError:
        return decrypt_independently(keys, data)
    return decrypt_with_gateway(keys, data)


class ResponseAddress:
    """A listener on 127.0.0.1 that takes one payload from the launcher."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"

    def receive(self, launcher: subprocess.Popen[bytes], timeout: float = 60.0) -> bytes:
        """The payload, read to its end; fails if the launcher exits or time runs out first."""
        self.sock.settimeout(0.2)
        deadline = time.monotonic() + timeout
        while True:
            try:
                conn, _ = self.sock.accept()
                break
            except TimeoutError:
                assert launcher.poll() is None, f"the launcher exited ({launcher.returncode})"
                assert time.monotonic() < deadline, "no payload from the launcher"
        with conn:
            conn.settimeout(timeout)
            data = b""
            while chunk := conn.recv(4096):
                data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


def launcher_argv(kernel_id: str, response_address: str, public_key: str,
                  port_range: str = "0..0", *more: str) -> list[str]:
    """The launcher's command line as a kernelspec's argv gives it, substituted."""
    return [sys.executable, "-m", "pyrelune.jupyter.launcher", "--kernel-id", kernel_id,
            "--response-address", response_address, "--public-key", public_key,
            "--port-range", port_range, "--spark-context-initialization-mode", "none", *more]


def send_request(port: int, request: dict[str, Any]) -> bool:
    """One comm-port request, as the provisioner sends it; False when it was refused (the
    launcher is gone: the provisioner's liveness check)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(json.dumps(request).encode())
            sock.shutdown(socket.SHUT_WR)
    except ConnectionRefusedError:
        return False
    return True
