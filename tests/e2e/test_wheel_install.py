"""The README's wheel lines as a user runs them, pyrelune never asked of an index: the wheel
`pip wheel --no-deps -w dist .` builds, then `pip install --no-index
'dist/pyrelune-<version>-py3-none-any.whl[jupyter]'` into a fresh environment that has no
pyrelune, whose dependencies are those this environment already has. The installed command
then runs a cell, writes its kernelspec, and a front end runs a cell on that kernel.
(tests/unit/test_install_lines.py checks that every other install line has a form that
needs no index for pyrelune.)"""

from __future__ import annotations

import email
import importlib.metadata
import json
import shutil
import subprocess
import sys
import zipfile
from email.message import Message
from pathlib import Path
from typing import IO

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from support import jupyter_host
from support.environments import fresh_environment

import pyrelune

REPO = Path(__file__).resolve().parent.parent.parent
#: Building, installing and the first start, on a busy 2-core machine.
TIMEOUT = 240
#: What a checkout holds that a wheel is not built from; the build writes its build/ and
#: egg-info into the copy, never into the checkout.
NOT_SOURCE = shutil.ignore_patterns(".git", "tests", "bench", "build", "dist", "*.egg-info",
                                    "__pycache__", ".venv*", ".*_cache")


def run(*command: str | Path, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(part) for part in command], input=stdin, capture_output=True,
                            text=True, timeout=TIMEOUT, cwd=cwd)
    assert result.returncode == 0, f"{command}:\n{result.stdout}\n{result.stderr}"
    return result


def _setuptools_major() -> int:
    """This environment's setuptools' major version; 0 where it has none."""
    try:
        return int(importlib.metadata.version("setuptools").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return 0


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout in which `python3 -m pip wheel --no-deps -w dist .` ran once
    (the module's tests then run on one xdist worker: see conftest.py)."""
    source = tmp_path_factory.mktemp("checkout") / "pyrelune"
    shutil.copytree(REPO, source, ignore=NOT_SOURCE, symlinks=True)
    # setuptools from this environment where it is one pyproject.toml's build-system accepts
    # (77 or newer: the SPDX `license`), else as pip gets a build backend (its cache or the
    # index, as the install that ran these tests did: the backend, never pyrelune)
    offline = ["--no-build-isolation"] if _setuptools_major() >= 77 else []
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *offline, "-w", "dist", ".",
        cwd=source)
    wheels = list((source / "dist").iterdir())
    assert [wheel.name for wheel in wheels] == [
        f"pyrelune-{pyrelune.__version__}-py3-none-any.whl"]  # as the README names it
    return source


def metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as archive:
        name = f"pyrelune-{pyrelune.__version__}.dist-info/METADATA"
        return email.message_from_bytes(archive.read(name))


def test_the_wheels_metadata_describes_the_jupyter_kernel_without_relative_links(
        source: Path) -> None:
    about = metadata(next((source / "dist").iterdir()))
    assert "Jupyter kernel" in str(about["Summary"])
    assert "Framework :: Jupyter" in about.get_all("Classifier", [])
    assert about["Description-Content-Type"] == "text/markdown"
    page = (REPO / "docs" / "package-description.md").read_text(encoding="utf-8")
    body = about.get_payload()
    assert isinstance(body, str) and body.strip() == page.strip()  # test_doc_links checks it


def test_the_wheel_installs_with_its_jupyter_extra_from_no_index(source: Path,
                                                                 tmp_path: Path) -> None:
    _needs_pip_python_option()
    python = fresh_environment(tmp_path / "env")
    wheel = f"dist/pyrelune-{pyrelune.__version__}-py3-none-any.whl[jupyter]"
    installed = run(sys.executable, "-m", "pip", "--python", python, "install", "--no-index",
                    wheel, cwd=source)
    assert "Successfully installed pyrelune" in installed.stdout, installed.stdout
    where = run(python, "-c", "import pyrelune, zmq, IPython; print(pyrelune.__file__)",
                cwd=tmp_path).stdout
    assert where.startswith(str(tmp_path / "env" / "lib")), where

    command = tmp_path / "env" / "bin" / "pyrelune"
    cell = run(command, cwd=tmp_path, stdin='{"source": "x = 6\\nprint(x)\\nx * 7"}').stdout
    response = json.loads(cell)
    assert (response["ok"], response["stdout"]) == (True, "6\n"), response
    assert response["outputs"] == [{"mime": "text/plain", "data": "42"}]

    said = run(command, "jupyter", "install", "--prefix", tmp_path / "prefix", cwd=tmp_path)
    assert "pyzmq is not installed" not in said.stdout + said.stderr
    kernels = tmp_path / "prefix" / "share" / "jupyter" / "kernels"
    spec = json.loads((kernels / "pyrelune" / "kernel.json").read_text(encoding="utf-8"))
    assert spec["argv"][0] == str(python)

    def start(errors: IO[bytes]) -> tuple[KernelManager, BlockingKernelClient]:
        manager = KernelManager(kernel_name="pyrelune",
                                kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]))
        # not in the checkout, whose pyrelune `python -m pyrelune` would find first
        manager.start_kernel(stderr=errors, cwd=str(tmp_path))
        client = manager.blocking_client()
        client.start_channels()
        return manager, client

    with jupyter_host.ready(start, tmp_path / "kernel-stderr", TIMEOUT) as (_, client):
        ran = jupyter_host.execute(client, "import sys, pyrelune\nprint(sys.prefix)\n"
                                           "print(pyrelune.__file__)\nget_ipython()", TIMEOUT)
        assert ran.stdout().splitlines() == [str(tmp_path / "env"), where.strip()]


def _needs_pip_python_option() -> None:
    """`pip --python` (pip 22.3) installs into the fresh environment without pip of its own."""
    version = run(sys.executable, "-m", "pip", "--version", cwd=REPO).stdout.split()[1]
    if tuple(int(part) for part in version.split(".")[:2]) < (22, 3):
        pytest.skip(f"pip {version} has no --python option")
