"""The notebook corpus (tests/corpus) run by nbclient, as `jupyter nbconvert --execute` and
papermill run notebooks: on pyrelune's Jupyter kernel and on ipykernel, each notebook top to
bottom in a fresh folder, and every cell's outputs the same under the corpus's rules
(`corpus.compare`: streams, displays, the error, after normalization)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from corpus.cells import JUPYTER_NOTEBOOKS, NOTEBOOKS, Notebook, cells
from corpus.compare import Expected, attempt, differences, outcome_of
from corpus.known import KNOWN
from support import jupyter_host, warmhost
from support.modes import Seen

#: Whole notebooks on two kernels: the full run's (`--full`).
pytestmark = pytest.mark.long

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
traitlets_config = pytest.importorskip("traitlets.config")

#: The richest form first: the one a page shows (compared as the corpus compares rpc's item).
_SHOWN = ("image/png", "image/svg+xml", "image/jpeg", "text/html", "application/json",
          "text/markdown", "text/latex")



#: The rpc kernel's known differences the Jupyter kernel does not have, as IPython's own shell
#: runs its cells: `obj?` goes to the pager (a payload of the reply, as ipykernel sends it),
#: which nbclient keeps from neither; `_` is IPython's.
_NOT_IN_JUPYTER = {"m_help_mark", "g_install"}


#: Every notebook of the corpus, and those only a Jupyter kernel runs.
BOOKS = NOTEBOOKS + JUPYTER_NOTEBOOKS


def _cases() -> list[object]:
    cases: list[object] = []
    for book, cell in cells(BOOKS):
        # The rpc kernel's known differences are the Jupyter kernel's, but for those above.
        reason = None if cell.name in _NOT_IN_JUPYTER else KNOWN.get(cell.name, {}).get("rpc")
        # One xdist worker runs a notebook's cells: it runs the notebook once per kernel.
        marks = [pytest.mark.xdist_group(f"nbclient-{book.name}")]
        if reason:
            marks.append(pytest.mark.xfail(strict=True, reason=reason))
        cases.append(pytest.param(book.name, cell.name, marks=marks, id=cell.name))
    return cases


class NotebookRuns:
    """Each notebook run once per kernel with nbclient, on first need."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        kernels = self.root / "jupyter-data"
        jupyter_host.kernelspec(kernels, "message", name="pyrelune-corpus")
        os.environ["JUPYTER_PATH"] = str(kernels)  # for this session's kernel managers
        self._outputs: dict[tuple[str, str], dict[str, list[dict[str, Any]]] | Exception] = {}

    def outputs(self, kernel: str, book: Notebook) -> dict[str, list[dict[str, Any]]]:
        """Each cell's outputs; a run that failed fails each cell with its error, once run."""
        key = (kernel, book.name)
        if key not in self._outputs:
            self._outputs[key] = attempt(lambda: self._run(kernel, book))
        return outcome_of(self._outputs[key])

    def _run(self, kernel: str, book: Notebook) -> dict[str, list[dict[str, Any]]]:
        folder = Path(tempfile.mkdtemp(prefix=f"{kernel}-{book.name}-", dir=self.root))
        notebook = nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_code_cell(cell.source, id=cell.name.replace("_", "-"))
            for cell in book.cells])
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYRELUNE_")}
        # Sockets as files (the ipc transport), in a short folder of their own (AF_UNIX's
        # 107 bytes): the five TCP ports jupyter_client picks can be taken by another test's
        # process before the kernel binds them, and the kernel then dies before it answers.
        sockets = warmhost.runtime_folder()
        config = traitlets_config.Config(
            {"KernelManager": {"transport": "ipc", "ip": str(sockets / "kernel")}})
        client = nbclient.NotebookClient(
            notebook, kernel_name=kernel, timeout=120, startup_timeout=120, config=config,
            allow_errors=True, resources={"metadata": {"path": str(folder)}})
        log = folder.with_name(f"{folder.name}-stderr")
        with open(log, "wb") as errors:  # the kernel's stderr, on the failing test's
            try:
                client.execute(env=env, stderr=errors)
            finally:
                sys.stderr.write(log.read_text(errors="replace"))
        return {cell.name: list(run.outputs)
                for cell, run in zip(book.cells, notebook.cells, strict=True)}


def as_expected(outputs: list[dict[str, Any]]) -> Expected:
    """ipykernel's cell as the corpus reads it (nbformat's outputs, already as a page has them)."""
    expected = Expected()
    for output in outputs:
        kind = output["output_type"]
        if kind == "stream":
            expected.stream(output["name"], output["text"])
        elif kind in ("display_data", "execute_result"):
            expected.outputs.append({"kind": "display", "data": dict(output["data"]),
                                     "id": None})
        elif kind == "error":
            expected.error = (output["ename"], output["evalue"])
    return expected


def as_seen(outputs: list[dict[str, Any]]) -> Seen:
    """pyrelune's cell as the corpus compares a host's: each display in its richest form."""
    expected = as_expected(outputs)
    seen = Seen(stdout=expected.text("stdout"), stderr=expected.text("stderr"))
    for output in expected.outputs:
        if output["kind"] == "display":
            bundle = output["data"]
            mime = next((m for m in _SHOWN if m in bundle), "text/plain")
            seen.displays.append({"mime": mime, "data": bundle.get(mime, "")})
    if expected.error is not None:
        seen.error = f"{expected.error[0]}: {expected.error[1]}"
    return seen


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> NotebookRuns:
    pytest.importorskip("ipykernel")
    return NotebookRuns(tmp_path_factory.mktemp("nbclient"))


@pytest.mark.parametrize(("book_name", "cell_name"), _cases())
def test_cell_has_ipykernels_outputs_under_nbclient(runs: NotebookRuns, book_name: str,
                                                     cell_name: str) -> None:
    book = next(b for b in BOOKS if b.name == book_name)
    cell = next(c for c in book.cells if c.name == cell_name)
    expected = as_expected(runs.outputs("python3", book)[cell_name])
    seen = as_seen(runs.outputs("pyrelune-corpus", book)[cell_name])
    # "rpc": a host that shows each display once, in its richest form, and stdout as streamed.
    found = differences("rpc", expected, seen, runs.root)
    assert not found, f"{cell.source!r}:\n" + "\n".join(found)
