"""The remote provisioners' launcher protocol on plain values (`pyrelune.jupyter.remote`):
its arguments, the port range, the connection information and its encryption (decrypted by
gateway_provisioners' own code where installed, and independently), comm-port requests;
and the launcher's port picking, bind address and parent watch."""

from __future__ import annotations

import random
import socket
from types import SimpleNamespace
from typing import Any

import pytest

from pyrelune.jupyter import kernelspec, launcher, remote
from pyrelune.modes.jupyter import watched_parent

REQUIRED = ["--kernel-id", "k-1", "--response-address", "10.0.0.5:8877",
            "--public-key", "MIGfMA0G"]


def test_the_provisioners_arguments_are_read_and_their_kernel_options_ignored() -> None:
    args = remote.parse_arguments([
        *REQUIRED, "--port-range", "40000..41000", "--transport-encryption", "auto",
        "--spark-context-initialization-mode", "none", "--cluster-type", "spark",
        "--kernel-class-name", "ipykernel.ipkernel.IPythonKernel"])
    assert args == remote.Arguments("k-1", ("10.0.0.5", 8877), "MIGfMA0G", (40000, 41000),
                                    "auto", None, None)


def test_an_empty_value_the_ssh_command_line_lost_is_taken_as_empty() -> None:
    # the distributed provisioner runs `... --transport-encryption ` over SSH, joined by spaces
    for tail in (["--transport-encryption"], ["--transport-encryption", "--cluster-type"]):
        args = remote.parse_arguments([*REQUIRED, *tail])
        assert args.transport_encryption == ""
    assert remote.parse_arguments(["--transport-encryption", *REQUIRED]).kernel_id == "k-1"


def test_enterprise_gateways_older_spelling_and_pyrelunes_own_options() -> None:
    args = remote.parse_arguments([
        "--RemoteProcessProxy.kernel-id", "k", "--RemoteProcessProxy.response-address",
        "127.0.0.1:9", "--RemoteProcessProxy.public-key", "K", "--ip", "0.0.0.0",
        "--shell=plain"])
    assert (args.kernel_id, args.port_range, args.transport_encryption) == ("k", (0, 0), "")
    assert (args.ip, args.shell) == ("0.0.0.0", "plain")


@pytest.mark.parametrize(("argv", "said"), [
    (REQUIRED[2:], "--kernel-id"),
    ([*REQUIRED, "--response-address", "nowhere"], "expected IP:PORT"),
    ([*REQUIRED, "--response-address", "h:70000"], "expected IP:PORT"),
    ([*REQUIRED, "--port-range", "5..1"], "the lower first"),
    ([*REQUIRED, "--port-range", "1000"], "LOWER..UPPER"),
    ([*REQUIRED, "--transport-encryption", "maybe"], "auto, required or disabled"),
    ([*REQUIRED, "--ip", ""], "--ip is empty"),
    ([*REQUIRED, "--what"], "unrecognized"),
])
def test_arguments_it_refuses_say_why(argv: list[str], said: str) -> None:
    with pytest.raises(remote.LaunchError, match=said):
        remote.parse_arguments(argv)


def test_the_provisioners_placeholders_left_empty_mean_no_encryption() -> None:
    args = remote.parse_arguments([*REQUIRED, "--transport-encryption", ""])
    assert args.transport_encryption == ""
    assert remote.parse_address("[::1]:80") == ("::1", 80)


def test_port_candidates_stay_in_the_range() -> None:
    rng = random.Random(7)
    assert remote.candidates((0, 0), 6, rng) == [0]
    small = remote.candidates((5000, 5009), 6, rng)
    assert sorted(small) == list(range(5000, 5010))  # each once, in random order
    large = remote.candidates((40000, 49999), 6, rng)
    assert len(large) == remote.TRIES_PER_PORT and all(40000 <= p <= 49999 for p in large)


def test_ports_are_picked_in_the_range_and_a_full_range_is_said() -> None:
    with socket.socket() as probe:  # a free block is unknowable: take the system's pick's range
        probe.bind(("127.0.0.1", 0))
        base = probe.getsockname()[1]
    low, high = max(1024, base - 500), min(65535, base + 500)
    picked = launcher.pick_ports("127.0.0.1", (low, high), 6)
    try:
        ports = [sock.getsockname()[1] for sock in picked]
        assert len(set(ports)) == 6 and all(low <= port <= high for port in ports)
        with pytest.raises(remote.LaunchError, match=f"no 2 free ports in --port-range "
                           f"{ports[0]}..{ports[0]}"):
            launcher.pick_ports("127.0.0.1", (ports[0], ports[0]), 2)
    finally:
        for sock in picked:
            sock.close()


def test_the_kernel_listens_where_it_is_told_or_where_the_provisioner_is_reached() -> None:
    ssh = {"SSH_CONNECTION": "10.0.0.1 51234 10.0.0.9 22"}
    assert launcher.bind_address("10.1.2.3", ("127.0.0.1", 9), ssh)[0] == "10.1.2.3"
    assert launcher.bind_address(None, ("127.0.0.1", 9), {})[0] == "127.0.0.1"
    # over SSH: where the provisioner reached this host, which is where it will connect
    assert launcher.bind_address(None, ("127.0.0.1", 9), ssh)[0] == "10.0.0.9"
    assert launcher.bind_address(None, ("127.0.0.1", 9),
                                 {"SSH_CONNECTION": "::1 5 ::1 22"})[0] == "::1"
    for odd in ("", "10.0.0.1 51234", "a b not-an-address 22"):
        assert launcher.bind_address(None, ("127.0.0.1", 9),
                                     {"SSH_CONNECTION": odd})[0] == "127.0.0.1"


def test_the_connection_information_and_the_response() -> None:
    info = remote.connection_info("10.0.0.7", [1, 2, 3, 4, 5], "secret", ("P" * 40, "S" * 40))
    assert info == {"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "hb_port": 4,
                    "control_port": 5, "ip": "10.0.0.7", "key": "secret", "transport": "tcp",
                    "signature_scheme": "hmac-sha256", "kernel_name": "",
                    "curve_publickey": "P" * 40, "curve_secretkey": "S" * 40}
    reply = remote.response(info, "k-1", 100, 99, 6)
    assert reply == {**info, "kernel_id": "k-1", "pid": 100, "pgid": 99, "comm_port": 6}
    assert "curve_publickey" not in remote.connection_info("h", [1, 2, 3, 4, 5], "k")


@pytest.mark.parametrize(("data", "expected"), [
    (b'{"signum": 0}', remote.Request(0)),
    (b'{"signum": 2}', remote.Request(2)),
    (b'{"shutdown": 1}', remote.Request(None, True)),
    (b"{}", remote.Request()),
])
def test_comm_port_requests(data: bytes, expected: remote.Request) -> None:
    assert remote.read_request(data) == expected


@pytest.mark.parametrize("data", [b"[2]", b'{"signum": "2"}', b'{"signum": true}',
                                  b'{"signum": 99}', b"not json",
                                  b" " * (remote.REQUEST_LIMIT + 1)])
def test_comm_port_requests_it_refuses(data: bytes) -> None:
    with pytest.raises(ValueError):
        remote.read_request(data)


def test_the_payload_is_what_the_provisioner_decrypts() -> None:
    pytest.importorskip("cryptography")
    from support import provisioner_side

    keys = provisioner_side.KeyPair()
    reply = remote.response(remote.connection_info("h", [1, 2, 3, 4, 5], "k"), "k-9", 1, 1, 6)
    sealed = remote.seal(reply, keys.public)
    assert provisioner_side.decrypt_independently(keys, sealed) == reply
    assert remote.seal(reply, keys.public, b"k" * 16) != remote.seal(reply, keys.public,
                                                                     b"k" * 16)  # RSA's padding
    pytest.importorskip("gateway_provisioners")
    pytest.importorskip("Cryptodome")
    # The provisioner's own decryption gives the key as bytes (jupyter_client's Session's).
    assert provisioner_side.decrypt_with_gateway(keys, sealed) == {**reply, "key": b"k"}


def test_a_public_key_that_is_not_one_is_said() -> None:
    pytest.importorskip("cryptography")
    with pytest.raises(remote.LaunchError, match="--public-key is not an RSA public key"):
        remote.seal({}, "bm90IGEga2V5")


def test_without_cryptography_the_launcher_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "cryptography" else real(name, *a))
    assert launcher.main(REQUIRED) == 2
    said = capsys.readouterr().err
    assert said.startswith(launcher.CANNOT_START) and "[remote]" in said and said.count("\n") == 1


@pytest.mark.parametrize(("value", "watched"), [
    (None, False), ("", False), ("0", False), ("1", False), ("x", False), ("4242", True)])
def test_the_kernel_watches_its_parent_only_when_asked(value: str | None, watched: bool) -> None:
    env = {} if value is None else {"JPY_PARENT_PID": value}
    assert (watched_parent(env) is not None) is watched


def test_the_distributed_kernelspec_passes_the_provisioners_own_checks() -> None:
    python = "/opt/py/bin/python"
    kernel = kernelspec.distributed(kernelspec.spec(python), "a, b,", python)
    assert kernel["argv"][:3] == [python, "-m", "pyrelune.jupyter.launcher"]
    assert "{connection_file}" not in kernel["argv"]
    assert kernel["metadata"]["kernel_provisioner"] == {
        "provisioner_name": "distributed-provisioner", "config": {"remote_hosts": ["a", "b"]}}
    given = {"{kernel_id}": "k", "{port_range}": "0..0", "{response_address}": "127.0.0.1:1",
             "{public_key}": "K", "{transport_encryption}": ""}  # as the provisioner fills them
    args = remote.parse_arguments([given.get(arg, arg) for arg in kernel["argv"][3:]])
    assert (args.kernel_id, args.public_key) == ("k", "K")
    gateway = pytest.importorskip("gateway_provisioners.remote_provisioner")
    provisioner: Any = SimpleNamespace(kernel_spec=SimpleNamespace(**kernel))
    base = gateway.RemoteProvisionerBase
    assert base._kernel_spec_supports_curve(provisioner)
    assert base._kernel_spec_passes_policy(provisioner)


@pytest.mark.parametrize(("hosts", "python", "said"), [
    (" , ", "/usr/bin/python3", "--remote-hosts is empty"),
    ("a", "python3", "give an absolute path"),
])
def test_the_distributed_kernelspec_refuses(hosts: str, python: str, said: str) -> None:
    with pytest.raises(kernelspec.KernelspecError, match=said):
        kernelspec.distributed(kernelspec.spec(python), hosts, python)
