"""The kernelspecs `pyrelune jupyter install --provisioner kubernetes|docker --image IMAGE`
writes, checked as far as a machine with no cluster and no Docker daemon allows: against
what gateway_provisioners' own tools (jupyter-k8s-spec, jupyter-docker-spec) write for
ipykernel, then through jupyter_client's provisioner factory into the provisioner itself,
whose pre_launch fills in the argv and the image as it would before starting a pod or a
container. What the image then runs is tests/e2e/test_kernel_image.py's.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.launch import SCRIPT

gateway = pytest.importorskip("gateway_provisioners", reason="needs gateway_provisioners "
                              "(test extras)")
pytest.importorskip("kubernetes", reason="needs gateway-provisioners[k8s] (test extras)")
docker_swarm = pytest.importorskip("gateway_provisioners.docker_swarm",
                                   reason="needs gateway-provisioners[docker] (test extras)")

IMAGE = "registry.example.org/pyrelune-kernel:1"
#: Their tool for each provisioner, and the class jupyter_client loads for its kernelspec.
TOOLS = {"kubernetes": ("gateway_provisioners.cli.k8s_specapp", "KubernetesProvisioner"),
         "docker": ("gateway_provisioners.cli.docker_specapp", "DockerProvisioner")}


def install(prefix: Path, provisioner: str) -> tuple[Path, Path]:
    """Ours and theirs, side by side in `prefix`: their kernelspec folders."""
    ours = subprocess.run([SCRIPT, "jupyter", "install", "--prefix", str(prefix), "--name",
                           f"pyrelune-{provisioner}", "--provisioner", provisioner,
                           "--image", IMAGE], capture_output=True, text=True, timeout=120)
    assert ours.returncode == 0, ours.stderr
    module, _ = TOOLS[provisioner]
    theirs = subprocess.run([sys.executable, "-m", module, "install", f"--prefix={prefix}",
                             f"--kernel-name=ipykernel-{provisioner}", f"--image-name={IMAGE}"],
                            capture_output=True, text=True, timeout=120)
    assert theirs.returncode == 0, theirs.stderr
    kernels = prefix / "share" / "jupyter" / "kernels"
    return kernels / f"pyrelune-{provisioner}", kernels / f"ipykernel-{provisioner}"


@pytest.mark.parametrize("provisioner", ["kubernetes", "docker"])
def test_the_kernelspec_is_written_as_gateway_provisioners_writes_its_own(
        tmp_path: Path, provisioner: str) -> None:
    ours, theirs = install(tmp_path, provisioner)
    spec = json.loads((ours / "kernel.json").read_text())
    reference = json.loads((theirs / "kernel.json").read_text())
    # the same provisioner and image; the same script, copied beside the kernelspec
    assert spec["metadata"]["kernel_provisioner"]["provisioner_name"] == \
        reference["metadata"]["kernel_provisioner"]["provisioner_name"]
    assert spec["metadata"]["kernel_provisioner"]["config"]["image_name"] == IMAGE
    assert Path(spec["argv"][1]) == ours / "scripts" / Path(reference["argv"][1]).name
    assert sorted(p.name for p in (ours / "scripts").iterdir()) == \
        sorted(p.name for p in (theirs / "scripts").iterdir())
    for script in (ours / "scripts").iterdir():
        assert script.read_bytes() == (theirs / "scripts" / script.name).read_bytes()
    # the same placeholders, without ipykernel's kernel class (the image runs pyrelune)
    assert reference["argv"][-2] == "--kernel-class-name"
    assert spec["argv"][2:] == reference["argv"][2:-2]
    assert Path(spec["argv"][0]).is_absolute()  # not their `python`: whatever PATH has
    assert spec["metadata"]["supported_encryption"] == ["curve"]


@pytest.mark.parametrize("provisioner", ["kubernetes", "docker"])
def test_the_provisioner_loads_the_kernelspec_and_fills_in_its_launch(
        tmp_path: Path, provisioner: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.provisioning.factory import KernelProvisionerFactory

    ours, _ = install(tmp_path, provisioner)
    # No Docker daemon here: the client the Docker provisioner makes at once is a stand-in.
    monkeypatch.setattr(docker_swarm.DockerClient, "from_env", staticmethod(lambda: None))
    monkeypatch.setattr(gateway.response_manager, "response_ip", "127.0.0.1")  # loopback
    spec = KernelSpec.from_resource_dir(str(ours))
    factory = KernelProvisionerFactory.instance()
    assert factory.is_provisioner_available(spec)
    provisioner_object: Any = factory.create_provisioner_instance("kernel-1", spec, None)
    assert type(provisioner_object).__name__ == TOOLS[provisioner][1]
    assert provisioner_object.image_name == IMAGE
    launch = asyncio.run(provisioner_object.pre_launch(env={"KERNEL_USERNAME": "alice"},
                                                       cwd=str(tmp_path)))
    command, env = launch["cmd"], launch["env"]
    assert not [arg for arg in command if arg.startswith("{")], command  # all filled in
    assert Path(command[1]).is_file()
    given = dict(zip(command[2::2], command[3::2], strict=True))
    assert given["--kernel-id"] == "kernel-1" and given["--port-range"] == "0..0"
    assert given["--response-address"].startswith("127.0.0.1:") and given["--public-key"]
    assert env["KERNEL_IMAGE"] == IMAGE and env["KERNEL_ID"] == "kernel-1"
