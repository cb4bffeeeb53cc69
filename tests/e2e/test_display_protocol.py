"""IPython's display protocol end to end, in each mode, as each host shows it.

`_ipython_display_`, `_repr_pretty_`, IPython's pretty text for long
containers, display ids and their updates, `clear_output`, the
IPython.display objects and display hooks (sympy's `init_printing`): what a
cell from a notebook shows in Jupyter, each host gets in the best form it
can show. Hosts that cannot update an output (Vix Note, the lines kernel)
get its last state; the rpc kernel, whose host only appends, gets the last
state of the output that follows a clear or an updatable display.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.lines_host import Host as LinesHost
from support.rpc_host import PipeHost, stdout_of
from support.vixhost import VixHost

IPython = pytest.importorskip("IPython")


def ipython_text(obj: object) -> str:
    """The text/plain IPython's own formatter gives `obj`."""
    from IPython.core.formatters import PlainTextFormatter

    return str(PlainTextFormatter()(obj))


def items(events: list[dict[str, Any]]) -> list[Any]:
    """What an rpc host appends to the cell: display items, and stream text as ('name', text)."""
    out: list[Any] = []
    for event in events:
        if event["event"] == "display_data":
            out.append(event["data"]["item"])
        elif event["event"] == "stream":
            name, text = event["data"]["name"], event["data"]["text"]
            if out and isinstance(out[-1], tuple) and out[-1][0] == name:
                out[-1] = (name, out[-1][1] + text)
            else:
                out.append((name, text))
    return out


def outputs(result: Any) -> list[tuple[str, str]]:
    """Vix Note's outputs of a cell, stdout before them included."""
    assert result.ok, result
    return [(kind, text) for kind, text in result.shown if kind != "stderr"]


PRETTY = """\
class Tree:
    def __init__(self, *kids):
        self.kids = kids
    def __repr__(self):
        return "Tree(...)"
    def _repr_pretty_(self, p, cycle):
        with p.group(5, "Tree(", ")"):
            for i, kid in enumerate(self.kids):
                if i:
                    p.text(",")
                    p.breakable()
                p.pretty(kid)
"""
LONG = {
    "list": "list(range(40))",
    "dict": "{f'key{i}': 'value ' * i for i in range(6)}",
    "set": "{'pear', 'apple', 'fig', 'kiwi', 'plum', 'date'}",
    "nested": "[list(range(12)) for _ in range(4)]",
    "many": "list(range(1500))",
}


def expected_long(name: str) -> str:
    return ipython_text(eval(LONG[name]))


@pytest.mark.parametrize("name", sorted(LONG))
def test_long_containers_are_wrapped_as_ipython_wraps_them(host: VixHost, name: str) -> None:
    result = host.run_cell(LONG[name])
    assert outputs(result) == [("stdout", expected_long(name))]


def test_pretty_text_in_the_kernels(lines_kernel: LinesHost, rpc_kernel: PipeHost) -> None:
    for name in ("list", "set"):
        assert lines_kernel.execute(LONG[name])["stdout"] == expected_long(name) + "\n"
        assert items(rpc_kernel.run(LONG[name])) == [expected_long(name)]


def test_repr_pretty_gives_the_text_with_ipythons_printer(
    host: VixHost, lines_kernel: LinesHost, rpc_kernel: PipeHost
) -> None:
    namespace: dict[str, Any] = {}
    exec(PRETTY, namespace)
    tree = namespace["Tree"]
    value = tree(*[tree("leaf" * 3, list(range(8))) for _ in range(3)])
    want = ipython_text(value)
    assert "\n" in want and "Tree(" in want  # wrapped, and not the repr
    cell = PRETTY + "Tree(*[Tree('leaf' * 3, list(range(8))) for _ in range(3)])"
    assert outputs(host.run_cell(cell)) == [("stdout", want)]
    assert lines_kernel.execute(cell)["stdout"] == want + "\n"
    assert items(rpc_kernel.run(cell)) == [want]


IPYTHON_DISPLAY = """\
class Shows:
    def _ipython_display_(self):
        print("shown by itself")
        display({"text/plain": "its own output"}, raw=True)
display(Shows())
Shows()
"""


def test_ipython_display_is_called_instead_of_a_bundle(
    host: VixHost, lines_kernel: LinesHost, rpc_kernel: PipeHost
) -> None:
    twice = [("stdout", "shown by itself\n"), ("stdout", "its own output")] * 2
    assert outputs(host.run_cell(IPYTHON_DISPLAY)) == twice
    assert lines_kernel.execute(IPYTHON_DISPLAY)["stdout"] == (
        "shown by itself\nits own output\n" * 2)
    assert items(rpc_kernel.run(IPYTHON_DISPLAY)) == [
        ("stdout", "shown by itself\n"), "its own output"] * 2


UPDATES = """\
from IPython.display import display, update_display, ProgressBar
print("start")
handle = display("state 0", display_id=True)
for i in range(1, 4):
    handle.update(f"state {i}")
display("other", display_id="named")
for i in range(5):
    update_display(f"named {i}", display_id="named")
for _ in ProgressBar(20):
    pass
print("end")
"""
BAR = "[" + "=" * 60 + "] 20/20"


def test_updates_leave_one_output_in_its_last_state(
    host: VixHost, lines_kernel: LinesHost, rpc_kernel: PipeHost
) -> None:
    assert outputs(host.run_cell(UPDATES)) == [
        ("stdout", "start\n"), ("stdout", "'state 3'"), ("stdout", "'named 4'"),
        ("stdout", BAR), ("stdout", "end\n")]
    assert lines_kernel.execute(UPDATES)["stdout"] == (
        f"start\n'state 3'\n'named 4'\n{BAR}\nend\n")
    assert items(rpc_kernel.run(UPDATES)) == [
        ("stdout", "start\n"), "'state 3'", "'named 4'",
        {"kind": "html", "content": "<progress style='width:60ex' max='20' value='20'></progress>"},
        ("stdout", "end\n")]


def test_a_handle_works_without_ipython_imported(host: VixHost) -> None:
    cell = ("h = display(1, display_id=True)\nprint(type(h).__name__)\nh.update(2)\n"
            "from pyrelune import update_display\nupdate_display(3, display_id=h.display_id)")
    assert outputs(host.run_cell(cell)) == [("stdout", "3"), ("stdout", "DisplayHandle\n")]


CLEARING = """\
from IPython.display import clear_output, display
print("before")
display("shown before")
clear_output()
for i in range(5):
    clear_output(wait=True)
    print(f"step {i}")
    display(f"frame {i}")
"""


def test_clear_output_leaves_only_the_last_state(
    host: VixHost, lines_kernel: LinesHost, rpc_kernel: PipeHost
) -> None:
    result = host.run_cell(CLEARING)
    assert outputs(result) == [("stdout", "step 4\n"), ("stdout", "'frame 4'")]
    assert "\x1b" not in result.text()
    assert lines_kernel.execute(CLEARING)["stdout"] == "step 4\n'frame 4'\n"
    shown = items(rpc_kernel.run(CLEARING))
    # What was streamed before the first clear has reached the host: it cannot be taken back.
    assert shown[-2:] == [("stdout", "step 4\n"), "'frame 4'"]
    assert not any("step 3" in str(item) or "frame 3" in str(item) for item in shown)
    assert not any("\x1b" in str(item) or "[2K" in str(item) for item in shown)


def test_a_clear_with_nothing_after_it_keeps_the_output(host: VixHost) -> None:
    cell = "from IPython.display import clear_output\nprint('kept')\nclear_output(wait=True)"
    assert outputs(host.run_cell(cell)) == [("stdout", "kept\n")]


OBJECTS = """\
from IPython.display import Markdown, Latex, JSON, HTML, SVG, Image, display
import base64
display(Markdown("# Title\\n*text*"))
display(Latex(r"$\\frac{a}{b}$"))
display(JSON({"a": [1, 2]}))
display(HTML("<p>para <b>bold</b></p>"))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>'))
display(Image(data=base64.b64decode(PNG), format="png"))
"""
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGA"
       "WjR9awAAAABJRU5ErkJggg==")


def test_ipython_display_objects_come_out_as_each_host_can_show_them(
    host: VixHost, lines_kernel: LinesHost, rpc_kernel: PipeHost
) -> None:
    cell = f"PNG = {PNG!r}\n{OBJECTS}"
    shown = outputs(host.run_cell(cell))
    assert shown[:4] == [("stdout", "# Title\n*text*"), ("stdout", r"$\frac{a}{b}$"),
                         ("application/json", '{"a": [1, 2]}'), ("stdout", "para bold")]
    assert [kind for kind, _ in shown[4:]] == ["image/svg+xml", "image/svg+xml"]
    text = lines_kernel.execute(cell)["stdout"]
    assert text.startswith('# Title\n*text*\n$\\frac{a}{b}$\n{"a": [1, 2]}\npara bold\n')
    got = items(rpc_kernel.run(cell))
    assert got[:4] == ["# Title\n*text*", r"$\frac{a}{b}$", '{"a": [1, 2]}',
                       {"kind": "html", "content": "<p>para <b>bold</b></p>"}]
    assert [item["kind"] for item in got[4:]] == ["image", "image"]


SYMPY = """\
from sympy import init_printing, sqrt, symbols
init_printing()
x = symbols("x")
sqrt(x**2 + 1) / x
"""


def test_a_display_hook_formats_the_final_expression(
    host: VixHost, lines_kernel: LinesHost, rpc_kernel: PipeHost
) -> None:
    sympy = pytest.importorskip("sympy")
    x = sympy.symbols("x")
    want = sympy.pretty(sympy.sqrt(x**2 + 1) / x)
    assert "\n" in want.strip()  # drawn over lines, not `sqrt(x**2 + 1)/x`
    # What the hook prints is the cell's result, as a notebook shows it: an output, not stdout.
    result = host.run_cell(SYMPY)
    assert (result.response["stdout"], result.response["outputs"]) == (
        "", [{"mime": "text/plain", "data": want}]), result
    assert lines_kernel.execute(SYMPY)["stdout"] == want + "\n"
    events = rpc_kernel.run(SYMPY)
    assert stdout_of(events) == "", events
    assert [e["data"]["item"] for e in events if e["event"] == "display_data"] == [want]
    # A hook the cell defines prints as it likes (IPython lets it too).
    hook = "import sys\nsys.displayhook = lambda value: print('hooked', value)\n6 * 7"
    assert host.run_cell(hook).response["stdout"] == "hooked 42\n"
    # One a library installs stands for its formatters: what it prints to stdout is the result.
    library = ("import sys, types\nlib = types.ModuleType('lib')\n"
               "exec('import sys\\ndef hook(value):\\n    print(\"hooked\", value, file=sys.stderr)"
               "\\n    print(\"shown\", value)', lib.__dict__)\nsys.displayhook = lib.hook\n6 * 7")
    result = host.run_cell(library)
    assert (result.response["stdout"], result.response["stderr"], result.response["outputs"]) == (
        "", "hooked 42\n", [{"mime": "text/plain", "data": "shown 42"}]), result


def test_a_progress_bar_redrawn_after_a_print_keeps_its_carriage_return(
    rpc_kernel: PipeHost
) -> None:
    cell = ("import sys\nfor i in range(3):\n"
            "    sys.stderr.write(f'\\rbar {i}'); sys.stderr.flush()\n    print(i, flush=True)\n"
            "sys.stderr.write('\\rbar done\\n')")
    bars = [e["data"]["text"] for e in rpc_kernel.run(cell)
            if e["event"] == "stream" and e["data"]["name"] == "stderr"]
    assert "".join(bars) == "bar 0\rbar 1\rbar 2\rbar done\n"


WIDE = "import pandas as pd\npd.DataFrame({f'column_{i}': [i * 1000.5, i] for i in range(12)})"


def test_pandas_shows_a_wide_frame_as_in_a_notebook(
    host: VixHost, lines_kernel: LinesHost
) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({f"column_{i}": [i * 1000.5, i] for i in range(12)})
    with pd.option_context("display.max_columns", 20):  # Jupyter's: pandas under a kernel
        want = repr(frame)
    assert "column_11" in want and "..." not in want  # every column, wrapped in blocks
    assert outputs(host.run_cell(WIDE)) == [("stdout", want)]
    assert lines_kernel.execute(WIDE)["stdout"] == want + "\n"
    check = "import pandas.core.config_init as c\nprint(hasattr(c, 'get_ipython'))"
    assert lines_kernel.execute(check)["stdout"] == "False\n"  # the answer was pandas' alone


def test_long_containers_are_wrapped_as_ipython_wraps_them_without_ipython(
    host: VixHost, lines_kernel: LinesHost
) -> None:
    cell = "import sys\nsys.modules['IPython'] = None  # as if not installed\n"
    for name in ("list", "dict", "set", "nested", "many"):
        assert outputs(host.run_cell(cell + LONG[name])) == [("stdout", expected_long(name))]
    assert lines_kernel.execute(cell + LONG["nested"])["stdout"] == expected_long("nested") + "\n"
