"""A test host for the Jupyter kernel: the real `pyrelune --mode jupyter`, driven by jupyter_client.

`kernelspec()` writes a kernelspec for this checkout's pyrelune into a
temporary Jupyter data folder, as `pyrelune jupyter install` would;
`started()` starts a KernelManager on it, as JupyterLab does, and hands over
a BlockingKernelClient whose kernel has answered kernel_info.
`Run` collects one execute request's messages: its reply and what IOPub
said under it, until its idle status, each checked against the messaging
spec's schemas (jupyter_kernel_test's).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from queue import Empty
from typing import IO, Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager
from jupyter_kernel_test.msgspec_v5 import validate_message

from pyrelune.jupyter import kernelspec as kernelspec_module
from pyrelune.wire.events import COMM_TYPES
from support.launch import runtime

TIMEOUT = 60.0  # generous: a noisy 2-core machine
KERNEL_NAME = "pyrelune-test"
#: A started kernel: its manager and a client whose channels are open.
Kernel = tuple[KernelManager, BlockingKernelClient]


def kernelspec(data_dir: Path, interrupt_mode: str = "signal", name: str = KERNEL_NAME,
               env: dict[str, str] | None = None, provisioned: bool = False) -> Path:
    """A kernelspec (`kernels/<name>/kernel.json` under `data_dir`) starting this pyrelune;
    `provisioned` names pyrelune's provisioner, as a `--sys-prefix` install does."""
    folder = data_dir / "kernels" / name
    folder.mkdir(parents=True, exist_ok=True)
    spec: dict[str, Any] = {
        "argv": runtime("--mode", "jupyter", "-f", "{connection_file}"),
        "display_name": "Python (pyrelune, test)",
        "language": "python",
        "interrupt_mode": interrupt_mode,
        "metadata": {"debugger": True,
                     "supported_encryption": list(kernelspec_module.SUPPORTED_ENCRYPTION)},
    }
    if provisioned:
        spec["metadata"] = kernelspec_module.spec("python", provisioned=True)["metadata"]
    if env:
        spec["env"] = env
    (folder / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    return folder


class Run:
    """What one request produced: the reply, and the IOPub messages under it until idle."""

    def __init__(self, reply: dict[str, Any], iopub: list[dict[str, Any]]) -> None:
        self.reply = reply
        self.iopub = iopub

    @property
    def content(self) -> dict[str, Any]:
        return self.reply["content"]  # type: ignore[no-any-return]

    def of(self, msg_type: str) -> list[dict[str, Any]]:
        """The contents of the IOPub messages of `msg_type`."""
        return [m["content"] for m in self.iopub if m["msg_type"] == msg_type]

    def stdout(self, name: str = "stdout") -> str:
        return "".join(c["text"] for c in self.of("stream") if c["name"] == name)

    @property
    def kinds(self) -> list[str]:
        """The IOPub message types in order, status as `status:<state>`."""
        return [f"status:{m['content']['execution_state']}" if m["msg_type"] == "status"
                else m["msg_type"] for m in self.iopub]


def collect(client: BlockingKernelClient, msg_id: str, reply_channel: str = "shell",
            timeout: float = TIMEOUT) -> Run:
    """Wait for the reply to `msg_id` and its IOPub messages up to its idle status."""
    channel = client.shell_channel if reply_channel == "shell" else client.control_channel
    reply = None
    while reply is None:
        message = channel.get_msg(timeout=timeout)
        if message["parent_header"].get("msg_id") == msg_id:
            reply = message
    if reply["content"].get("status") != "aborted":  # ipykernel's word, newer than the spec's
        validate_message(reply, reply["msg_type"], msg_id)
    return Run(reply, until_idle(client, msg_id, timeout))


def until_idle(client: BlockingKernelClient, msg_id: str,
               timeout: float = TIMEOUT) -> list[dict[str, Any]]:
    """The IOPub messages under `msg_id`, up to its idle status (others are skipped)."""
    iopub = []
    while True:
        message = client.get_iopub_msg(timeout=timeout)
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] not in COMM_TYPES:  # the spec's schemas have none for comms
            validate_message(message)
        iopub.append(message)
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return iopub


def send_comm(client: BlockingKernelClient, msg_type: str, content: dict[str, Any]) -> Run:
    """A comm message from the front end on shell, and what IOPub says under it until idle."""
    message = client.session.msg(msg_type, content)
    client.shell_channel.send(message)
    return Run({}, until_idle(client, message["header"]["msg_id"]))


def execute(client: BlockingKernelClient, code: str, timeout: float = TIMEOUT,
            **options: Any) -> Run:
    """Run `code` and collect what it produced (stdin requests are not answered)."""
    return collect(client, client.execute(code, **options), timeout=timeout)


def module_kernel(*interrupt_modes: str) -> tuple[Any, Any]:
    """A test module's `kernel` fixture (one kernel for the module, started as `started` does;
    one per interrupt mode given, "signal" when none is) and its `client` fixture (that
    kernel's client, IOPub drained of earlier tests' messages).

    In the module: `kernel, client = jupyter_host.module_kernel("message")`.
    """

    @pytest.fixture(scope="module", params=list(interrupt_modes or ("signal",)))
    def kernel(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
        with started(tmp_path_factory.mktemp("jupyter"), interrupt_mode=request.param) as pair:
            yield pair

    @pytest.fixture
    def client(kernel: Kernel) -> BlockingKernelClient:
        drain_iopub(kernel[1])
        return kernel[1]

    return kernel, client


def drain_iopub(client: BlockingKernelClient) -> None:
    """Forget what IOPub said so far."""
    while True:
        try:
            client.get_iopub_msg(timeout=0.2)
        except Empty:
            return


#: Starts tried when a port jupyter_client chose was taken by another process before
#: the kernel could bind it (parallel suites on one machine; ipykernel fails so too).
STARTS = 3


@contextlib.contextmanager
def started(data_dir: Path, interrupt_mode: str = "signal", env: dict[str, str] | None = None,
            provisioned: bool = False,
            **options: Any) -> Iterator[tuple[KernelManager, BlockingKernelClient]]:
    """A kernel started from a kernelspec in `data_dir`, as a front end starts it, and a
    client whose channels are open once kernel_info was answered; shut down after.
    `options` go to the KernelManager (`transport="ipc"`, `ip`). The kernel's stderr is
    shown on the test's own once the kernel ends."""
    kernelspec(data_dir, interrupt_mode, env=env, provisioned=provisioned)
    with ready(lambda errors: _start(data_dir, errors, options), data_dir / "kernel-stderr",
               TIMEOUT) as (manager, client):
        yield manager, client


def pid(manager: KernelManager) -> int:
    """The kernel's process id (the one jupyter_client started)."""
    return manager.provisioner.process.pid  # type: ignore[union-attr, no-any-return]


def held(run: Run) -> str:
    """The name of the cell `run` was, as its snapshot is named for it: `In[3]`."""
    return f"In[{run.content['execution_count']}]"


@contextlib.contextmanager
def ready(start: Callable[[IO[bytes]], tuple[KernelManager, BlockingKernelClient]],
          logs: Path, timeout: float,
          now: bool = False) -> Iterator[tuple[KernelManager, BlockingKernelClient]]:
    """What `start(stderr)` started (any kernel: pyrelune's, ipykernel), once kernel_info
    was answered; started again (at most `STARTS` times) only when it died saying a port
    was taken. Its stderr goes to `logs`-N, then to the test's; `now`: shut down at once."""
    for attempt in range(1, STARTS + 1):
        log = logs.with_name(f"{logs.name}-{attempt}")
        with open(log, "wb") as errors:  # open for the manager's life: a restart reuses it
            manager, client = start(errors)
            try:
                try:
                    client.wait_for_ready(timeout=timeout)
                except RuntimeError:
                    if "Address already in use" in log.read_text(errors="replace") \
                            and attempt < STARTS:
                        continue
                    raise
                yield manager, client
                return
            finally:
                client.stop_channels()
                manager.shutdown_kernel(now=now)
                sys.stderr.write(log.read_text(errors="replace"))


def _start(data_dir: Path, errors: IO[bytes],
           options: dict[str, Any]) -> tuple[KernelManager, BlockingKernelClient]:
    """Start the kernel as a front end does, its stderr to `errors`, and open a client's
    channels."""
    saved = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(data_dir)
    try:
        manager = KernelManager(kernel_name=KERNEL_NAME, **options)
        manager.start_kernel(stderr=errors)
    finally:
        if saved is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = saved
    client = manager.blocking_client()
    client.start_channels()
    return manager, client
