"""Rich outputs end to end: real cells through `pyrelune`, checked as Vix Note shows them.

Every run goes through the host harness, which applies Vix Note's rules
(the SVG check included: an output it would call "Invalid SVG output"
shows up as an error in `shown`).
"""

from __future__ import annotations

import json

import pytest
from support.cells import DEEP_JSON
from support.vixhost import VixHost


def kinds(result: object) -> list[str]:
    return [kind for kind, _ in result.shown]  # type: ignore[attr-defined]


def svgs(result: object) -> list[str]:
    return [text for kind, text in result.shown if kind == "image/svg+xml"]  # type: ignore[attr-defined]


def test_a_plot_shows_without_show(host: VixHost) -> None:
    result = host.run_cell("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2]);")
    assert result.ok and kinds(result) == ["image/svg+xml"]
    (svg,) = svgs(result)
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<?xml" not in svg and "<!DOCTYPE" not in svg


def test_figures_and_prints_keep_their_order(host: VixHost) -> None:
    source = """\
import matplotlib.pyplot as plt
print("first")
plt.plot([1, 2])
plt.show()
print("between")
fig, ax = plt.subplots()
ax.bar([1, 2], [3, 4])
display(fig)
print("last")
"""
    result = host.run_cell(source)
    assert result.shown[0] == ("stdout", "first\n")
    assert kinds(result) == ["stdout", "image/svg+xml", "stdout", "image/svg+xml", "stdout"]
    assert [text for kind, text in result.shown if kind == "stdout"] == [
        "first\n", "between\n", "last\n"]


def test_a_figure_as_final_expression_is_shown_once_and_empty_ones_as_text(
    host: VixHost,
) -> None:
    source = """\
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot([3, 1])
plt.figure()  # empty: no image, its text (as ipykernel shows it)
fig
"""
    result = host.run_cell(source)
    assert kinds(result) == ["image/svg+xml", "stdout"]
    assert result.shown[1] == ("stdout", "<Figure size 640x480 with 0 Axes>")


def test_each_open_figure_is_shown_at_the_end(host: VixHost) -> None:
    source = """\
import matplotlib.pyplot as plt
for i in range(3):
    plt.figure()
    plt.plot([i, 1])
print(len(plt.get_fignums()))
"""
    result = host.run_cell(source)
    assert kinds(result) == ["stdout", "image/svg+xml", "image/svg+xml", "image/svg+xml"]
    assert len(set(svgs(result))) == 3


def test_the_users_backend_is_respected_and_its_figures_shown(host: VixHost) -> None:
    source = "import matplotlib\nprint(matplotlib.get_backend())\nimport matplotlib.pyplot as plt\n"
    source += "plt.plot([1, 2])\nplt.show()"
    result = host.run(_request(source), env={"MPLBACKEND": "agg"})
    assert kinds(result) == ["stdout", "image/svg+xml"]
    assert result.shown[0] == ("stdout", "agg\n")


def test_a_dataframe_shows_as_a_readable_table(host: VixHost) -> None:
    source = "import pandas as pd\npd.DataFrame({'city': ['Oslo', 'Lima'], 'temp': [3.5, 19.0]})"
    result = host.run_cell(source)
    assert result.shown == [("stdout", "   city  temp\n0  Oslo   3.5\n1  Lima  19.0")]


def test_display_anywhere_in_order_with_print(host: VixHost) -> None:
    source = """\
print("a")
display(1, [2])
for i in range(2):
    print("loop", i)
    display({"i": i})
from pyrelune import display as d
d("end")
"""
    result = host.run_cell(source)
    assert result.shown == [
        ("stdout", "a\n"), ("stdout", "1"), ("stdout", "[2]"), ("stdout", "loop 0\n"),
        ("stdout", "{'i': 0}"), ("stdout", "loop 1\n"), ("stdout", "{'i': 1}"),
        ("stdout", "'end'"),
    ]


def test_repr_methods_choose_the_output(host: VixHost) -> None:
    source = """\
class Chart:
    def _repr_svg_(self):
        return '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><circle r="3"/></svg>'
class Data:
    def _repr_json_(self):
        return {"rows": [1, 2], "ok": True}
class Doc:
    def _repr_markdown_(self):
        return "# Heading"
class Page:
    def _repr_html_(self):
        return "<p>only html</p>"
display(Chart(), Data(), Doc(), Page())
"""
    result = host.run_cell(source)
    assert kinds(result) == ["image/svg+xml", "application/json", "stdout", "stdout"]
    assert json.loads(result.shown[1][1]) == {"rows": [1, 2], "ok": True}
    assert result.shown[2:] == [("stdout", "# Heading"), ("stdout", "only html")]


def test_raster_only_objects_show_as_images(host: VixHost) -> None:
    source = """\
from PIL import Image
display(Image.new("RGB", (12, 8), "red"))
class Photo:
    def _repr_jpeg_(self):
        import io
        buffer = io.BytesIO()
        Image.new("RGB", (5, 7)).save(buffer, "JPEG")
        return buffer.getvalue()
Photo()
"""
    result = host.run_cell(source)
    assert kinds(result) == ["image/svg+xml", "image/svg+xml"]
    png, jpeg = svgs(result)
    assert 'width="12" height="8"' in png and "data:image/png;base64," in png
    assert 'width="5" height="7"' in jpeg and "data:image/jpeg;base64," in jpeg


def test_json_with_nan_falls_back_to_text(host: VixHost) -> None:
    source = "class J:\n    def _repr_json_(self):\n        return {'x': float('nan')}\n"
    source += "    def __repr__(self):\n        return 'J(nan)'\nJ()"
    result = host.run_cell(source)
    assert result.shown == [("stdout", "J(nan)")]


def test_json_nested_too_deep_falls_back_to_text(host: VixHost) -> None:
    """The worker encodes it under the cell's recursion limit; the runtime could not read it."""
    result = host.run_cell(DEEP_JSON)
    assert result.ok and kinds(result) == ["stderr", "stdout"]
    assert result.shown[1] == ("stdout", "Deep()")
    assert "nested at most 500 deep" in result.text("stderr")


def test_failing_reprs_are_reported_and_skipped(host: VixHost) -> None:
    source = """\
class Flaky:
    def _repr_svg_(self):
        raise ValueError("no svg today")
    def _repr_html_(self):
        raise NotImplementedError
    def __repr__(self):
        return "Flaky()"
Flaky()
"""
    result = host.run_cell(source)
    assert result.ok
    assert ("stdout", "Flaky()") in result.shown
    stderr = result.text("stderr")
    assert "Flaky._repr_svg_ failed; skipped" in stderr
    assert "ValueError: no svg today" in stderr and "raise ValueError" in stderr
    assert "_repr_html_" not in stderr


def test_proxies_and_classes_get_only_their_repr(host: VixHost) -> None:
    source = """\
class Everything:
    def __getattr__(self, name):
        return lambda *a, **k: "<svg/>"
    def __repr__(self):
        return "Everything()"
class WithSvg:
    def _repr_svg_(self):
        return "<svg/>"
display(Everything(), WithSvg)
"""
    result = host.run_cell(source)
    # a class's text is IPython's: its dotted name
    assert result.shown == [("stdout", "Everything()"), ("stdout", "__main__.WithSvg")]


def test_ipython_display_lands_in_the_outputs(host: VixHost) -> None:
    pytest.importorskip("IPython")
    source = """\
from IPython.display import display, SVG, JSON, Markdown
print("before")
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" width="2" height="2"/>'))
display(JSON({"k": [1]}), Markdown("**bold**"))
import IPython.display
IPython.display.display({"text/plain": "raw bundle"}, raw=True)
"""
    result = host.run_cell(source)
    assert kinds(result) == ["stdout", "image/svg+xml", "application/json", "stdout", "stdout"]
    assert result.shown[-2:] == [("stdout", "**bold**"), ("stdout", "raw bundle")]


def test_a_tqdm_bar_ends_as_its_final_line(host: VixHost) -> None:
    source = "from tqdm import tqdm\nfor _ in tqdm(range(2000), mininterval=0, ncols=60):\n    pass"
    result = host.run_cell(source)
    stderr = result.response["stderr"]
    assert stderr.count("\n") == 1 and "\r" not in stderr
    assert "2000/2000" in stderr


def test_carriage_returns_apply_before_the_output_cap(host: VixHost) -> None:
    source = "for i in range(200_000):\n    print(f'\\r{i:>8}', end='')\nprint()"
    result = host.run(_request(source), env={"PYRELUNE_MAX_OUTPUT": "4096"})
    assert result.response["stdout"] == "  199999\n"


def test_an_output_over_the_budget_becomes_a_note(host: VixHost) -> None:
    svg = '<svg xmlns="http://www.w3.org/2000/svg">' + " " * 50_000 + "</svg>"
    source = f"class Big:\n    def _repr_svg_(self):\n        return {svg!r}\n"
    source += "    def __repr__(self):\n        return 'Big()'\nBig()"
    result = host.run(_request(source), env={"PYRELUNE_MAX_OUTPUT": "8192"})
    (text,) = [text for kind, text in result.shown if kind == "stdout"]
    note = f"[... image/svg+xml output of {len(svg):,} bytes omitted: over the output budget ...]"
    assert text == f"Big()\n{note}"


def test_a_big_plot_stays_under_the_host_limit(host: VixHost) -> None:
    source = "import matplotlib.pyplot as plt\nplt.scatter(range(20_000), range(20_000))"
    result = host.run_cell(source)  # the harness fails the run at 1 MiB
    assert result.ok and "image/svg+xml output of" in result.text("stdout")


def test_the_mime_order_is_configurable(host: VixHost) -> None:
    source = "class P:\n    def _repr_html_(self):\n        return '<i>p</i>'\n"
    source += "    def __repr__(self):\n        return 'P()'\nP()"
    html_first = host.run(_request(source), env={"PYRELUNE_MIME_ORDER": "text/html,text/plain"})
    assert html_first.shown == [("text/html", "<i>p</i>")]
    bad = host.run(_request(source), env={"PYRELUNE_MIME_ORDER": "image/png"})
    assert bad.error["code"] == "invalid_configuration"
    assert "image/png" in bad.failure  # type: ignore[operator]


@pytest.mark.cold_start  # a warm cell finds the preloaded modules in sys.modules, by design
def test_a_cell_that_displays_nothing_loads_no_display_machinery(host: VixHost) -> None:
    result = host.run_cell("import sys\nprint(' '.join(sorted(sys.modules)))")
    loaded = set(result.response["stdout"].split())
    heavy = {"pyrelune.worker.mplbackend", "matplotlib", "IPython", "PIL", "numpy", "base64",
             "binascii", "traceback", "linecache", "weakref", "json", "inspect", "typing"}
    assert "pyrelune.worker.display" in loaded  # `display` is there to be called...
    assert loaded & heavy == set()  # ...but nothing it would need is loaded before it is


def test_display_is_ready_for_a_cell_but_matplotlib_is_not_imported(host: VixHost) -> None:
    source = "import os, sys\nprint(os.environ['MPLBACKEND'], 'matplotlib' in sys.modules)"
    result = host.run(_request(source), env={"MPLBACKEND": ""})
    assert result.shown == [("stdout", "module://pyrelune.worker.mplbackend False\n")]


def _request(source: str) -> bytes:
    from support.vixhost import encode_request

    return encode_request({"protocol": "vix-note-extension-1", "source": source})


def test_a_process_the_cell_forks_displays_as_text(host: VixHost) -> None:
    source = """\
import multiprocessing
def child():
    display("from the child")
process = multiprocessing.get_context("fork").Process(target=child)
process.start()
process.join()
display("from the cell")
"""
    result = host.run_cell(source)
    assert result.shown == [("stdout", "'from the child'\n"), ("stdout", "'from the cell'")]
