"""Each host gets the MIME types it shows, and its worker builds no other.

A lines kernel prints a figure as its text: it must not be drawn. Only the
rpc kernel shows pyrelune's JSONML tables: no other builds them. A Jupyter
front end still gets every type. Seen from outside: what each host shows,
what the cell counts of the figure's drawing, what `%%capture` kept.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from support import jupyter_host, warmhost
from support.lines_host import Host as LinesHost
from support.rpc_host import PipeHost, stdout_of
from support.vixhost import VixHost

#: A figure displayed, then what drew it: the formats `savefig` was called for.
FIGURE = """\
from matplotlib.figure import Figure
drawn = []
savefig = Figure.savefig
def counted(self, *args, **kwargs):
    drawn.append(kwargs.get("format"))
    return savefig(self, *args, **kwargs)
Figure.savefig = counted
figure = Figure()
figure.subplots().plot([1, 3, 2])
display(figure)
print(drawn)
"""
FIGURE_TEXT = "<Figure size 640x480 with 1 Axes>"
#: A table displayed under `%%capture`, then the types its bundle was built with.
TABLE = ("import pandas\nframe = pandas.DataFrame({'a': [1, 2]})",
         "%%capture kept\ndisplay(frame)",
         "print(sorted(kept.outputs[0].data))")
#: An object of every type IPython's formatters know.
EVERY_TYPE = """\
class Every:
    def _repr_html_(self): return "<b>html</b>"
    def _repr_markdown_(self): return "**md**"
    def _repr_svg_(self): return "<svg></svg>"
    def _repr_png_(self): return b"\\x89PNG\\r\\n\\x1a\\n"
    def _repr_pdf_(self): return b"%PDF"
    def _repr_jpeg_(self): return b"\\xff\\xd8"
    def _repr_latex_(self): return "$x$"
    def _repr_json_(self): return {"a": 1}
    def _repr_javascript_(self): return "1"
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"application/vnd.custom+json": {"c": 1}}
"""
EVERY_MIME = ["application/javascript", "application/json", "application/pdf",
              "application/vnd.custom+json", "image/jpeg", "image/png", "image/svg+xml",
              "text/html", "text/latex", "text/markdown", "text/plain"]
TEXT_MIME = ["application/json", "text/html", "text/latex", "text/markdown", "text/plain"]


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingKernelClient]:
    with jupyter_host.started(tmp_path_factory.mktemp("jupyter")) as (_, client):
        yield client


def _printed(text: str) -> list[str]:
    """The list the cell printed last."""
    return list(ast.literal_eval(text.strip().splitlines()[-1]))


def test_a_lines_kernel_prints_a_figure_as_its_text_and_never_draws_it(
        lines_kernel: LinesHost) -> None:
    response = lines_kernel.execute(FIGURE)
    assert response["error"] is None, response
    assert response["stdout"] == f"{FIGURE_TEXT}\n[]\n"


def test_vix_note_gets_a_figure_drawn_once_as_svg(host: VixHost) -> None:
    result = host.run_cell(FIGURE)
    assert result.ok, result
    assert [mime for mime, _ in result.shown] == ["image/svg+xml", "stdout"]
    assert _printed(result.text("stdout")) == ["svg"]


def test_the_rpc_kernel_gets_a_figure_drawn_once_as_svg(rpc_kernel: PipeHost) -> None:
    events = rpc_kernel.run(FIGURE)
    items = [e["data"]["item"] for e in events if e["event"] == "display_data"]
    assert [(i["kind"], i["format"]) for i in items] == [("image", "svg")]
    assert _printed(stdout_of(events)) == ["svg"]


def test_jupyter_gets_a_figure_as_ipykernel_draws_it(jupyter: BlockingKernelClient) -> None:
    # IPython's shell draws it (matplotlib-inline, once the inline backend is on): once, as PNG.
    drawing = FIGURE.replace("from matplotlib.figure import Figure\n", (
        "%matplotlib inline\nfrom matplotlib.figure import Figure\n"
        "from matplotlib.backend_bases import FigureCanvasBase as Figure_\n")
    ).replace("Figure.savefig", "Figure_.print_figure")
    run = jupyter_host.execute(jupyter, drawing)
    (shown,) = run.of("display_data")
    assert sorted(shown["data"]) == ["image/png", "text/plain"]
    assert _printed(run.stdout()) == ["png"]


def test_a_table_is_built_as_jsonml_for_the_rpc_kernel_alone(
        lines_kernel: LinesHost, rpc_kernel: PipeHost, jupyter: BlockingKernelClient) -> None:
    lines_seen = [lines_kernel.execute(source) for source in TABLE][-1]
    assert _printed(lines_seen["stdout"]) == ["text/html", "text/plain"]
    rpc_seen = [rpc_kernel.run(source, cell_id=f"c{n}") for n, source in enumerate(TABLE)][-1]
    assert _printed(stdout_of(rpc_seen)) == [
        "application/vnd.pyrelune.jsonml+json", "text/html", "text/plain"]
    jupyter_seen = [jupyter_host.execute(jupyter, source) for source in TABLE][-1]
    assert _printed(jupyter_seen.stdout()) == ["text/html", "text/plain"]


def test_jupyter_still_gets_every_type_and_a_text_host_only_text(
        lines_kernel: LinesHost, jupyter: BlockingKernelClient) -> None:
    run = jupyter_host.execute(jupyter, f"{EVERY_TYPE}\nEvery()")
    (result,) = run.of("execute_result")
    assert sorted(result["data"]) == EVERY_MIME
    kept = [EVERY_TYPE, "%%capture kept\ndisplay(Every())", "print(sorted(kept.outputs[0].data))"]
    assert _printed([lines_kernel.execute(source) for source in kept][-1]["stdout"]) == TEXT_MIME


def test_the_warm_worker_forked_ahead_is_told_what_vix_note_shows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Vix Note that shows text alone, served warm (see `warm.ahead`): nothing is drawn."""
    with warmhost.own_runtime() as runtime:  # short: its socket's path fits AF_UNIX's limit
        for name, value in (("XDG_RUNTIME_DIR", str(runtime)), ("PYRELUNE_WARM", "colorsys"),
                            ("PYRELUNE_WARM_DEBUG", "1"), ("PYRELUNE_MIME_ORDER", "text/plain")):
            monkeypatch.setenv(name, value)
        warmhost.start()
        result = VixHost().run_cell(f"import sys\nprint('colorsys' in sys.modules)\n{FIGURE}")
    assert result.ok, result
    assert result.shown == [("stdout", "True\n"), ("stdout", FIGURE_TEXT), ("stdout", "[]\n")]
