"""The Jupyter kernel against ipykernel, each row a ratio measured in the same run.

    python bench/jupyter_kernel.py [--runs N] [--round-trips N] [--megabytes M]

Both kernels are started from a kernelspec by jupyter_client's KernelManager
and driven by its BlockingKernelClient, as a front end drives them, with
Python's defaults (PYTHONUNBUFFERED and PYTHONDONTWRITEBYTECODE unset,
whatever this shell sets). Turns alternate between the kernels, so this
machine's drifting speed hits both alike; medians are reported.

- start: `start_kernel()` to the first `kernel_info_reply` (target <= 0.25x), with
  the kernelspec `pyrelune jupyter install --sys-prefix` writes (it names pyrelune's
  provisioner); and, informational, with the one `--user` writes (it does not);
- to first `1+1`: `start_kernel()` until the first cell's reply and idle status,
  the cell sent as soon as kernel_info is answered: what a user waits for before
  anything runs, the worker ready and IPython's shell imported and made (target
  <= 0.5x); and, informational, that first cell alone;
- `1+1`: `execute_request` to its reply and the idle status (target <= 0.5x);
- restart: `restart_kernel()` until the new kernel answers kernel_info and its
  first `1+1` is idle (target <= 0.5x);
- a cell printing M MB (default 20: `print('x' * 99)` M * 10,000 times) until
  its idle status, every IOPub message read (target <= 0.5x);
- idle memory: the proportional set size (PSS, /proc/PID/smaps_rollup) of the
  whole kernel, its process and every process under it, once idle after a
  few cells (target <= 1.0x); and again after the flood (informational).

Start to ready through jupyter_client's `start_new_kernel()` and through
jupyter_server's WebSocket, as nbclient and JupyterLab meet it: bench/jupyter_ready.py.

Public tools only: jupyter_client, ipykernel, the standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from pyrelune.jupyter import kernelspec

TIMEOUT = 120.0
KERNELS = ("pyrelune", "ipykernel")
TARGETS = {"start": 0.25, "to first 1+1": 0.5, "1+1": 0.5,
           "restart": 0.5, "flood": 0.5, "idle PSS": 1.0}


def kernelspecs(data_dir: Path) -> None:
    """pyrelune's two kernelspecs, as `pyrelune jupyter install` writes them, and ipykernel's."""
    specs = {
        "pyrelune": kernelspec.spec(sys.executable, provisioned=True),
        "pyrelune-user": kernelspec.spec(sys.executable, provisioned=False),
        "ipykernel": {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f",
                               "{connection_file}"],
                      "display_name": "ipykernel", "language": "python"},
    }
    for name, spec in specs.items():
        folder = data_dir / "kernels" / f"bench-{name}"
        folder.mkdir(parents=True)
        (folder / "kernel.json").write_text(json.dumps(spec))


def defaults_env() -> dict[str, str]:
    """This environment with Python's defaults: the variables this machine sets are unset."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE")}


class Kernel:
    """One started kernel and its client; `started` is the seconds to the first kernel_info."""

    def __init__(self, name: str) -> None:
        self.manager = KernelManager(kernel_name=f"bench-{name}")
        begin = time.perf_counter()
        self.manager.start_kernel(env=defaults_env())
        self.client: BlockingKernelClient = self.manager.blocking_client()
        self.client.start_channels()
        try:
            msg_id = self.client.kernel_info()
            while True:
                reply = self.client.get_shell_msg(timeout=TIMEOUT)
                if reply["parent_header"].get("msg_id") == msg_id:
                    break
            self.started = time.perf_counter() - begin
            self._iopub_connected()
        except BaseException:
            self.close()
            raise

    def _iopub_connected(self, patience: float = 1.0) -> None:
        """Until IOPub carries our messages: a subscription made late misses what was before.

        `patience`: how long to wait for a kernel_info's IOPub messages before asking again.
        """
        from queue import Empty

        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            msg_id = self.client.kernel_info()
            self.client.get_shell_msg(timeout=TIMEOUT)
            try:
                while True:
                    message = self.client.get_iopub_msg(timeout=patience)
                    if message["parent_header"].get("msg_id") == msg_id:
                        if not (message["msg_type"] == "status"
                                and message["content"]["execution_state"] == "idle"):
                            self.until_idle(msg_id)
                        return
            except Empty:
                continue
        raise TimeoutError("IOPub never carried a message")

    def until_idle(self, msg_id: str) -> int:
        """Read IOPub up to the idle status of `msg_id`; the stream characters seen on the way."""
        chars = 0
        while True:
            message = self.client.get_iopub_msg(timeout=TIMEOUT)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "stream":
                chars += len(message["content"]["text"])
            elif (message["msg_type"] == "status"
                  and message["content"]["execution_state"] == "idle"):
                return chars

    def run(self, code: str) -> tuple[float, int]:
        """Seconds from the request to its reply and idle; the stream characters it sent."""
        begin = time.perf_counter()
        msg_id = self.client.execute(code)
        while self.client.get_shell_msg(timeout=TIMEOUT)["parent_header"].get(
                "msg_id") != msg_id:
            pass
        chars = self.until_idle(msg_id)
        return time.perf_counter() - begin, chars

    def restart(self) -> float:
        """Seconds from `restart_kernel()` until the new kernel has run a `1+1`."""
        begin = time.perf_counter()
        self.manager.restart_kernel(now=False)
        self._iopub_connected(patience=0.01)
        self.run("1+1")
        return time.perf_counter() - begin

    def pss_kib(self) -> int:
        """The PSS of the kernel's process and all its descendants."""
        process = self.manager.provisioner.process  # type: ignore[union-attr]
        return tree_pss_kib(process.pid)

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def tree_pss_kib(root: int) -> int:
    """The PSS of the process `root` and all its descendants, in KiB."""
    return sum(_pss(pid) for pid in _tree(root))


def _tree(root: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rpartition(")")[2].split()[1])
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += parents.get(pid, [])
    return found


def _pss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="kernel starts (and floods) each")
    parser.add_argument("--round-trips", type=int, default=40, help="1+1 cells each, per run")
    parser.add_argument("--megabytes", type=int, default=20)
    options = parser.parse_args()
    flood = f"for _ in range({options.megabytes * 10_000}):\n    print('x' * 99)"
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in KERNELS}
    with tempfile.TemporaryDirectory() as folder:
        kernelspecs(Path(folder))
        os.environ["JUPYTER_PATH"] = folder
        for turn in range(options.runs):
            order = list(KERNELS) if turn % 2 == 0 else list(reversed(KERNELS))
            for name in order:
                rows = samples[name]
                kernel = Kernel(name)
                try:
                    rows.setdefault("start", []).append(kernel.started)
                    first = kernel.run("1+1")[0]
                    rows.setdefault("first 1+1", []).append(first)
                    rows.setdefault("to first 1+1", []).append(kernel.started + first)
                    trips = [kernel.run("1+1")[0] for _ in range(options.round_trips)]
                    rows.setdefault("1+1", []).append(statistics.median(trips))
                    time.sleep(1.0)  # settle: memory is measured idle
                    rows.setdefault("idle PSS", []).append(kernel.pss_kib())
                    seconds, chars = kernel.run(flood)
                    rows.setdefault("flood", []).append(seconds)
                    rows.setdefault("flood chars", []).append(chars)
                    time.sleep(1.0)
                    rows.setdefault("PSS after flood", []).append(kernel.pss_kib())
                    rows.setdefault("restart", []).append(kernel.restart())
                finally:
                    kernel.close()
            user = Kernel("pyrelune-user")
            user.close()
            samples["pyrelune"].setdefault("start, user spec", []).append(user.started)
    samples["ipykernel"]["start, user spec"] = samples["ipykernel"]["start"]
    print(f"{'':18}{'pyrelune':>14}{'ipykernel':>14}{'ratio':>9}  target")
    for row in ("start", "start, user spec", "to first 1+1", "first 1+1",
                "1+1", "restart", "flood", "idle PSS", "PSS after flood", "flood chars"):
        ours, theirs = (statistics.median(samples[n][row]) for n in KERNELS)
        unit = _unit(row)
        ratio = ours / theirs if theirs else float("nan")
        target = TARGETS.get(row)
        verdict = "" if target is None else f"<= {target}" + (" ok" if ratio <= target else " MISS")
        print(f"{row:18}{_shown(ours, unit):>14}{_shown(theirs, unit):>14}{ratio:>8.2f}x"
              f"  {verdict}")
    return 0


def _unit(row: str) -> str:
    return "KiB" if "PSS" in row else ("chars" if "chars" in row else "s")


def _shown(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1000:.1f} ms"
    if unit == "KiB":
        return f"{value / 1024:.1f} MiB"
    return f"{value:,.0f}"


if __name__ == "__main__":
    sys.exit(main())
