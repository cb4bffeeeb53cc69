"""A notebook executed by nbclient (as `jupyter nbconvert --execute` and papermill run one)
on pyrelune's kernel and on ipykernel: an Output widget's capture is in the saved widget
state, not in the cell's outputs, the same on both."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from support import jupyter_host, warmhost

nbclient = pytest.importorskip("nbclient", reason="nbclient runs the notebook (test extras)")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipywidgets", reason="the widget is the test")

CELLS = (
    "import ipywidgets\nout = ipywidgets.Output()\ndisplay(out)",
    "with out:\n    print('kept in the widget')\n    display('shown in the widget')\n"
    "print('in the cell')",
)
STATE = "application/vnd.jupyter.widget-state+json"


def executed(kernel: str, folder: Path) -> Any:
    """The notebook as nbclient saves it, run on `kernel`."""
    from traitlets import config as traitlets_config

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)
                                               for source in CELLS])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYRELUNE_")}
    # Sockets as files in a short folder (see tests/e2e/test_corpus_nbclient.py).
    config = traitlets_config.Config({"KernelManager": {
        "transport": "ipc", "ip": str(warmhost.runtime_folder() / "kernel")}})
    client = nbclient.NotebookClient(notebook, kernel_name=kernel, timeout=120,
                                     startup_timeout=120, config=config,
                                     store_widget_state=True,
                                     resources={"metadata": {"path": str(folder)}})
    client.execute(env=env)
    return notebook


def captured(notebook: Any) -> tuple[list[Any], list[Any]]:
    """The Output widget's saved outputs, and the second cell's own."""
    states = notebook.metadata["widgets"][STATE]["state"]
    (output,) = [s["state"] for s in states.values() if s["model_name"] == "OutputModel"]
    return output["outputs"], notebook.cells[1].outputs


def test_the_widget_state_keeps_what_the_output_widget_captured(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    jupyter_host.kernelspec(data, "message", name="pyrelune-state")
    monkeypatch.setenv("JUPYTER_PATH", str(data))
    ours = captured(executed("pyrelune-state", tmp_path))
    theirs = captured(executed("python3", tmp_path))
    widget, cell = ours
    assert [o.get("text") or o["data"]["text/plain"] for o in widget] == [
        "kept in the widget\n", "'shown in the widget'"]
    assert [o["text"] for o in cell] == ["in the cell\n"]
    assert ours == theirs
