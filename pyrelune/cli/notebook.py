"""`pyrelune run NOTEBOOK.ipynb`: a notebook's code cells, in order, in one namespace.

As a terminal shows a script's run: what cells print goes to stdout and
stderr as it comes, each display as its text, and the first failing cell's
traceback ends the run (as `jupyter nbconvert --execute` stops there).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from pyrelune import PyreluneError
from pyrelune.protocols.lines import error_text
from pyrelune.shaping import LINES_MAX_OUTPUT
from pyrelune.shaping.textform import best
from pyrelune.supervisor.kernel import Kernel
from pyrelune.wire.commands import Execute
from pyrelune.wire.events import TEXT_FORMS, Display, Done, Stream
from pyrelune.wire.profile import HostProfile


class NotANotebook(PyreluneError):
    """The file is not a notebook this command can run; the message says why."""


def code_cells(document: bytes) -> list[str]:
    """The sources of a Jupyter notebook's (nbformat 4) code cells, in order."""
    try:
        notebook = json.loads(document)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotANotebook(f"not a notebook: it is not JSON ({exc})") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise NotANotebook("not a notebook: no list of \"cells\" (nbformat 4 is read)")
    sources = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotANotebook(f"cell {number}: its source is neither text nor a list of lines")
        sources.append(source)
    return sources


def run(sources: list[str], write: Callable[[int, str], None]) -> int:
    """Run `sources` in one fresh kernel; `write(fd, text)` shows output. 0, or 1 at a failure."""
    kernel = Kernel(HostProfile(LINES_MAX_OUTPUT, shown=TEXT_FORMS))  # a terminal shows text alone
    try:
        for number, source in enumerate(sources, 1):
            kernel.apply(Execute(source, f"<cell {number}>"))
            failure = None
            for event in kernel.events():
                if isinstance(event, Stream):
                    write(1 if event.name == "stdout" else 2, event.text)
                elif isinstance(event, Display) and event.data:
                    write(1, best(event.data) + "\n")  # no terminal updates one in place
                elif isinstance(event, Done):
                    failure = error_text(event.error)
            if failure is not None:
                write(2, f"{failure.rstrip()}\n(in code cell {number} of {len(sources)}: "
                         "the cells after it did not run)\n")
                return 1
    finally:
        kernel.close()
    return 0
