"""docker/Dockerfile's recipe without Docker (none here): its pip line and its CMD, read from
the file and run as written in a fresh virtual environment (this one's packages linked in,
so pip installs only pyrelune; its build backend comes as for any install), with the
COPY's destination a copy of the checkout and the variables a provisioner starts the image
with. The launcher the CMD starts sends its connection information, a client runs a cell
on the kernel, and a shutdown ends it. The system lines (FROM, the user) are Docker's only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("cryptography", reason="needs cryptography (pyrelune's remote extra)")
from jupyter_client.blocking.client import BlockingKernelClient
from support import provisioner_side
from support.environments import TIMEOUT, fresh_environment
from support.jupyter_host import execute

#: Installing pyrelune and starting its kernel: the full run's.
pytestmark = pytest.mark.long

REPO = Path(__file__).resolve().parent.parent.parent
DOCKERFILE = REPO / "docker" / "Dockerfile"
NOT_SOURCE = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                    ".venv*", ".*_cache")


def instructions(text: str) -> list[tuple[str, str]]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    found = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def test_the_recipe_copies_the_checkout_installs_pyrelune_and_runs_the_launcher() -> None:
    steps = instructions(DOCKERFILE.read_text())
    keywords = [keyword for keyword, _ in steps]
    assert keywords.count("CMD") == 1 and keywords[-1] == "CMD"
    copy = [rest.split() for keyword, rest in steps if keyword == "COPY"]
    assert copy == [[".", "/tmp/pyrelune"]]
    pip = [rest for keyword, rest in steps if keyword == "RUN" and "pip install" in rest]
    assert len(pip) == 1 and '"/tmp/pyrelune[jupyter,remote]"' in pip[0]
    cmd = dict(steps)["CMD"]
    assert cmd.startswith("exec python -m pyrelune.jupyter.launcher ")
    for variable in ("KERNEL_ID", "RESPONSE_ADDRESS", "PUBLIC_KEY", "PORT_RANGE",
                     "TRANSPORT_ENCRYPTION"):  # what the provisioners start their images with
        assert variable in cmd


def test_the_recipes_pip_line_and_cmd_run_the_kernel(tmp_path: Path) -> None:
    steps = instructions(DOCKERFILE.read_text())
    _, destination = next(rest.split() for keyword, rest in steps if keyword == "COPY")
    source = tmp_path / "checkout"
    shutil.copytree(REPO, source, ignore=NOT_SOURCE, symlinks=True)
    python = fresh_environment(tmp_path / "env")
    env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}"}
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "JPY_PARENT_PID", "SSH_CONNECTION"):
        env.pop(name, None)
    pip = next(rest for keyword, rest in steps if keyword == "RUN" and "pip install" in rest)
    installed = subprocess.run(["sh", "-c", pip.replace(destination, str(source))], env=env,
                               cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert not source.exists()  # the recipe removes what it copied

    keys = provisioner_side.KeyPair()
    response = provisioner_side.ResponseAddress()
    started = {**env, "KERNEL_ID": "kernel-in-image", "RESPONSE_ADDRESS": response.address,
               "PUBLIC_KEY": keys.public, "KERNEL_LANGUAGE": "python"}
    try:
        launcher = subprocess.Popen(["sh", "-c", dict(steps)["CMD"]], env=started,
                                    cwd=tmp_path, start_new_session=True)
        info = provisioner_side.decrypt(keys, response.receive(launcher, TIMEOUT))
    finally:
        response.close()
    client = BlockingKernelClient()
    client.load_connection_info(info)  # type: ignore[arg-type]
    client.start_channels()
    try:
        client.wait_for_ready(timeout=TIMEOUT)
        assert info["kernel_id"] == "kernel-in-image" and info["pid"] == launcher.pid
        ran = execute(client, "import sys, pyrelune\nprint(sys.prefix)\nprint(pyrelune.__file__)",
                      TIMEOUT).stdout().splitlines()
        assert ran[0] == str(tmp_path / "env")  # the recipe's pyrelune, not this checkout's
        assert ran[1].startswith(str(tmp_path / "env"))
        client.shutdown()
        assert provisioner_side.send_request(info["comm_port"], {"shutdown": 1})
        assert launcher.wait(TIMEOUT) == 0
    finally:
        client.stop_channels()
        if launcher.poll() is None:
            os.killpg(launcher.pid, 9)
            launcher.wait(TIMEOUT)
