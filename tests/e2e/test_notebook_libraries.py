"""Libraries that look for a notebook find one, with no terminal and no widgets, in every mode.

rich prints HTML outputs (with their text) 115 columns wide, as in Jupyter,
and its live displays (`Progress`, `track`, `status`) leave one output in
its last state; tqdm.auto takes its text bar, as it does wherever ipywidgets
cannot be drawn. pandas' case is in test_display_protocol.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Iterator
from typing import Any

import pytest
from support.modes import MODES, Runner, Seen, runner

rich_console = pytest.importorskip("rich.console")
pytest.importorskip("IPython")  # rich prints into a notebook only where IPython's display is

ANSI = re.compile(r"\x1b\[[0-9;]*m")
TAGS = re.compile(r"<[^>]+>")
PRE = re.compile(r"<pre [^>]*>(.*)</pre>\n", re.DOTALL)  # rich's notebook HTML


@pytest.fixture(params=MODES)
def run(request: pytest.FixtureRequest) -> Iterator[Runner]:
    with runner(request.param) as each:
        yield each


def shown(run: Runner, seen: Seen) -> list[str]:
    """The text of each output the host shows: lines has only its stdout, one text."""
    assert seen.error is None, seen
    if run.mode == "lines":
        return [ANSI.sub("", seen.stdout)]
    texts = []
    for item in seen.displays:
        if run.mode == "rpc":
            assert isinstance(item, dict) and item["kind"] == "html", item  # rich's HTML output
            pre = PRE.fullmatch(item["content"])
            assert pre is not None, item
            texts.append(html.unescape(TAGS.sub("", pre.group(1))))
        else:
            texts.append(item["data"] if item["mime"] == "text/plain" else item["mime"])
    return texts


def notebook_text(renderable: Any) -> str:
    """What rich prints for `renderable` at a notebook's width, without colours."""
    out = io.StringIO()
    console = rich_console.Console(file=out, width=rich_console.JUPYTER_DEFAULT_COLUMNS,
                                   force_jupyter=False, color_system=None)
    console.print(renderable)
    return out.getvalue()


def test_rich_prints_an_html_output_at_the_notebook_width(run: Runner) -> None:
    from rich.table import Table

    loaded = "import sys\nprint([m for m in sys.modules if m.startswith(('rich', 'IPython'))])"
    assert run(loaded).stdout == "[]\n"  # a cell that does not use rich pays nothing for it
    table = Table("name", "value", title="Wide", expand=True)
    table.add_row("alpha", "1")
    want = notebook_text(table)
    assert len(want.splitlines()[1]) == rich_console.JUPYTER_DEFAULT_COLUMNS
    cell = ("import rich\nfrom rich.table import Table\n"
            "table = Table('name', 'value', title='Wide', expand=True)\n"
            "table.add_row('alpha', '1')\nrich.print(table)")
    seen = run(cell)
    assert shown(run, seen) == [want + "\n" if run.mode == "lines" else want]
    assert seen.stderr == ""


PROGRESS = """\
import warnings
warnings.simplefilter("always")
from rich.progress import Progress
with Progress() as progress:
    task = progress.add_task("Steps", total=4)
    for _ in range(4):
        progress.advance(task)
        progress.refresh()
"""


@pytest.mark.parametrize("cell", [
    PROGRESS,
    "from rich.progress import track\nfor _ in track(range(3), description='Steps'):\n    pass",
])
def test_a_rich_progress_leaves_one_output_in_its_last_state(run: Runner, cell: str) -> None:
    seen = run(cell)
    (text,) = shown(run, seen)
    assert text.count("Steps") == 1 and "100%" in text, seen
    assert seen.stderr == "", seen  # no 'install "ipywidgets"' warning


def test_a_transient_rich_status_leaves_nothing(run: Runner) -> None:
    cell = "from rich.console import Console\nwith Console().status('Wait'):\n    print('inside')"
    seen = run(cell)
    everything = "".join(shown(run, seen))  # what the cell printed meanwhile is rich's too
    assert "Wait" not in everything and "inside" in everything, seen
    assert seen.stderr == "", seen


def test_rich_prints_as_usual_where_ipython_cannot_be_imported(run: Runner) -> None:
    cell = "import sys\nsys.modules['IPython'] = None\nimport rich\nrich.print('[b]plain[/b]')"
    seen = run(cell)
    assert seen.stdout == "plain\n" and seen.displays == [], seen


TQDM = """\
import warnings
warnings.simplefilter("always")
from tqdm.auto import tqdm
for _ in tqdm(range(50), mininterval=0, ncols=60):
    pass
import sys
print(tqdm.__module__, "tqdm.notebook" in sys.modules)
"""


def test_tqdm_auto_draws_its_text_bar_without_widget_noise(run: Runner) -> None:
    seen = run(TQDM)
    assert seen.error is None, seen
    assert seen.stdout == "tqdm.asyncio False\n", seen  # std's bar (with asyncio), not notebook's
    assert seen.stderr.count("\n") == 1 and "50/50" in seen.stderr.split("\r")[-1], seen
    assert "Warning" not in seen.stderr and "ipywidgets" not in seen.stderr, seen
