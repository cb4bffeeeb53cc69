"""The Jupyter kernel's start: whatever stops it is said in one line, never a traceback.

Each case is a connection file a front end (or a hand) might write, run by the
real `pyrelune --mode jupyter -f FILE`; loopback only.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.launch import SCRIPT
from support.ports import free_ports

TIMEOUT = 60.0
PREFIX = "pyrelune: cannot start the Jupyter kernel: "


def _connection(tmp_path: Path, **changes: Any) -> Path:
    info: dict[str, Any] = {"transport": "tcp", "ip": "127.0.0.1", "key": "k",
                            "signature_scheme": "hmac-sha256",
                            **{f"{c}_port": p for c, p in free_ports().items()}, **changes}
    path = tmp_path / "kernel.json"
    path.write_text(json.dumps(info), encoding="utf-8")
    return path


def _refused(path: Path, code: str | None = None) -> subprocess.CompletedProcess[str]:
    """The kernel started on `path`, ended: its one line of stderr checked."""
    args = ["--mode", "jupyter", "-f", str(path)]
    command = [sys.executable, "-c", code, *args] if code else [SCRIPT, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.stderr.startswith(PREFIX), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    return done


def test_two_channels_on_one_port_are_refused_in_one_line(tmp_path: Path) -> None:
    port = free_ports()["shell"]
    done = _refused(_connection(tmp_path, shell_port=port, iopub_port=port))
    assert done.returncode == 1
    assert "Address already in use" in done.stderr


def test_a_port_in_use_is_refused_in_one_line(tmp_path: Path) -> None:
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = _refused(_connection(tmp_path, control_port=taken.getsockname()[1]))
    finally:
        taken.close()
    assert done.returncode == 1 and "Address already in use" in done.stderr


def test_an_ipc_path_past_the_socket_name_limit_is_refused_in_one_line(tmp_path: Path) -> None:
    done = _refused(_connection(tmp_path, transport="ipc", ip=str(tmp_path / ("k" * 120))))
    assert done.returncode == 1 and "longer than" in done.stderr


@pytest.mark.parametrize("scheme", ["hmac-shake_128", "hmac-shake_256", "hmac-nothing",
                                    "sha256"])
def test_a_signature_scheme_hmac_cannot_use_is_refused_at_start(tmp_path: Path,
                                                                scheme: str) -> None:
    """shake_128 is in hashlib, but HMAC cannot use it: refused before the first message,
    not at its signature."""
    done = _refused(_connection(tmp_path, signature_scheme=scheme))
    assert done.returncode == 2
    assert f"unsupported signature_scheme {scheme!r}" in done.stderr


def test_a_key_with_a_lone_surrogate_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "kernel.json"
    text = _connection(tmp_path).read_text(encoding="utf-8").replace('"key": "k"',
                                                                     '"key": "k\\udc80"')
    path.write_text(text, encoding="utf-8")
    done = _refused(path)
    assert done.returncode == 2 and "key: not text" in done.stderr


@pytest.mark.parametrize("keys", [{"curve_publickey": "short", "curve_secretkey": "x" * 40},
                                  {"curve_secretkey": "x" * 40}])
def test_curve_keys_that_are_not_a_pair_of_keys_are_refused(tmp_path: Path,
                                                            keys: dict[str, str]) -> None:
    done = _refused(_connection(tmp_path, **keys))
    assert done.returncode == 2 and "must be a CurveZMQ key" in done.stderr


def test_curve_keys_with_a_zeromq_built_without_curve_are_refused(tmp_path: Path) -> None:
    """Not served in plain text when the front end asked for encryption."""
    import zmq

    public, secret = zmq.curve_keypair()
    path = _connection(tmp_path, curve_publickey=public.decode(),
                       curve_secretkey=secret.decode())
    code = ("import sys, zmq; zmq.has = lambda feature: feature != 'curve'; "
            "sys.argv[0] = 'pyrelune'; from pyrelune.__main__ import main; main()")
    done = _refused(path, code=code)
    assert done.returncode == 1 and "built without CurveZMQ" in done.stderr
