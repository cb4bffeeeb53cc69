"""One way to run cells in each of the three modes and read back what a user sees.

For tests that check one behaviour everywhere it applies: oneshot (each cell
its own request, as Vix Note sends it), the lines kernel and the rpc kernel
(cells in one namespace, as a notebook tab runs them).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from support.lines_host import Host as LinesHost
from support.rpc_host import PipeHost, stdout_of
from support.vixhost import VixHost

MODES = ("oneshot", "lines", "rpc")


@dataclass
class Seen:
    """One cell's outcome as its host shows it."""

    stdout: str = ""  # for lines, displays are text lines in it, as that protocol sends them
    stderr: str = ""
    #: Each display and the final expression, in order: oneshot's `{mime, data}`,
    #: rpc's item (a string, or a dict such as `{"kind": "image", ...}`). None in lines.
    displays: list[Any] = field(default_factory=list)
    error: str | None = None  # the error as the host gets it (summary or traceback)

    @property
    def texts(self) -> list[str]:
        """Each display's text: text/plain, rpc's string, or its kind for anything else."""
        texts = []
        for shown in self.displays:
            if isinstance(shown, str):
                texts.append(shown)
            elif "mime" in shown:
                texts.append(shown["data"] if shown["mime"] == "text/plain" else shown["mime"])
            else:
                texts.append(f"<{shown.get('kind')}>")
        return texts

    @property
    def everything(self) -> str:
        """stdout, then each display's text on a line: for `in` checks in every mode."""
        return self.stdout + "".join(f"{text}\n" for text in self.texts)


class Runner(Protocol):
    mode: str

    def __call__(self, source: str) -> Seen: ...


class _Oneshot:
    mode = "oneshot"

    def __init__(self, cwd: str | None) -> None:
        self.host = VixHost.roomy()  # timing magics run for seconds on a busy machine
        self.cwd = cwd

    def __call__(self, source: str) -> Seen:
        result = self.host.run_cell(source, cwd=self.cwd)
        result.assert_well_behaved()
        response = result.response
        error = result.headline if not response["ok"] else None
        return Seen(response["stdout"], response["stderr"], response["outputs"], error)


class _Lines:
    mode = "lines"

    def __init__(self) -> None:
        self.kernel = LinesHost()
        self.kernel.ping()

    def __call__(self, source: str) -> Seen:
        response = self.kernel.execute(source)
        return Seen(response["stdout"], response["stderr"], [], response["error"])


class _Rpc:
    mode = "rpc"

    def __init__(self) -> None:
        self.kernel = PipeHost()
        assert self.kernel.receive()["event"] == "kernel.ready"
        self.cells = 0

    def __call__(self, source: str) -> Seen:
        self.cells += 1  # each cell its own id, as a notebook's cells have
        events = self.kernel.run(source, cell_id=f"c{self.cells}")
        done = events[-1]["data"]
        error = None
        if done["status"] != "ok":
            error = f"{done.get('ename')}: {done.get('evalue')}\n{done.get('error')}"
        displays = [e["data"]["item"] for e in events if e["event"] == "display_data"]
        return Seen(stdout_of(events), stdout_of(events, "stderr"), displays, error)


@contextmanager
def _started_in(cwd: str | os.PathLike[str] | None) -> Iterator[None]:
    """The current directory while a kernel process starts (its own from then on)."""
    here = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)


@contextmanager
def runner(mode: str, cwd: str | os.PathLike[str] | None = None) -> Iterator[Runner]:
    """A runner for `mode` whose cells start in `cwd` (default: the test's)."""
    if mode == "oneshot":
        yield _Oneshot(None if cwd is None else str(cwd))
        return
    with _started_in(cwd):
        kernel: _Lines | _Rpc = _Lines() if mode == "lines" else _Rpc()
    try:
        yield kernel
    finally:
        kernel.kernel.close()
