"""What real notebooks do that IPython allows, in every mode: `__future__` anywhere, pasted
prompts, script cells, a terminal for `!cmd`, IPython's pretty text, and the magics."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from support.lines_host import Host as LinesHost
from support.lines_host import wait_for
from support.modes import Runner, runner
from support.processes import running


def test_a_future_import_after_other_code_applies_to_what_follows(run: Runner) -> None:
    seen = run("x = 1\nfrom __future__ import division\nprint(x)")
    assert seen.error is None and seen.stdout == "1\n", seen
    seen = run("def before(a: int): pass\nfrom __future__ import annotations\n"
               "def after(a: int): pass\n"
               "print(before.__annotations__, after.__annotations__)\n"
               "'last'")
    assert seen.error is None, seen
    assert seen.everything == "{'a': <class 'int'>} {'a': 'int'}\n'last'\n", seen
    seen = run("y = 2\nfrom __future__ import braces")
    assert seen.error is not None and "not a chance" in seen.error, seen


def test_cells_annotations_are_evaluated_unless_the_cell_asks(run: Runner) -> None:
    """pyrelune's own `from __future__ import annotations` must not leak into cells."""
    seen = run("def f(a: int): pass\nprint(f.__annotations__)")
    assert seen.stdout == "{'a': <class 'int'>}\n", seen


def test_pasted_console_prompts_are_stripped(run: Runner) -> None:
    seen = run(">>> x = 2\n>>> for i in range(x):\n...     print(i)\n")
    assert seen.error is None and seen.stdout == "0\n1\n", seen
    seen = run("In [3]: y = 5\n\nIn [4]: def f():\n   ...:     return y * 2\n   ...: \n"
               "In [5]: f()")
    assert seen.error is None and seen.everything == "10\n", seen
    seen = run('def g():\n    """\n    >>> g()\n    """\n    return ">>> kept"\ng()')
    assert seen.everything == "'>>> kept'\n", seen


def test_time_units_are_ipythons(run: Runner) -> None:
    seen = run("%time x = 1")
    assert seen.error is None, seen
    units = re.findall(r"[\d.]+ ([^\s,]+)", seen.stdout)
    assert len(units) == 4 and set(units) <= {"s", "ms", "\u03bcs", "ns"}, seen
    assert "\u00b5" not in seen.stdout, seen


def test_file_is_writefiles_alias(run: Runner, tmp_path: Path) -> None:
    seen = run("%%file mod1.py\nX = 1")
    assert seen.error is None and seen.stdout == "Writing mod1.py\n", seen
    assert (tmp_path / "mod1.py").read_text() == "X = 1\n"


def test_timeit_with_a_bad_count_is_a_usage_error(run: Runner) -> None:
    seen = run("%timeit -n -5 sum(range(10))")
    assert seen.error is not None and "UsageError" in seen.error, seen
    assert "-n takes a whole number of loops, not '-5'" in seen.error, seen
    assert "timeit-src" not in seen.error, seen
    seen = run("%timeit -z pass")
    assert seen.error is not None and "option -z not recognized" in seen.error, seen


def test_an_update_of_a_display_id_never_shown_shows_nothing(run: Runner) -> None:
    seen = run("from IPython.display import update_display\n"
               "update_display('ghost', display_id='never-shown')\nprint('after')")
    assert seen.error is None, seen
    assert (seen.stdout, seen.displays) == ("after\n", []), seen
    seen = run("h = display('first', display_id='kept')\nh.update('second')")
    assert seen.everything == "'second'\n", seen


def test_script_cells_run_their_program(run: Runner) -> None:
    seen = run("%%bash\necho out; echo err >&2\necho $((6 * 7))")
    assert seen.error is None, seen
    assert (seen.stdout, seen.stderr) == ("out\n42\n", "err\n"), seen
    seen = run(f"%%script {sys.executable} -u\nimport sys\nprint('python', sys.version_info[0])")
    assert seen.stdout == "python 3\n", seen
    seen = run("%%sh\necho from sh")
    assert seen.stdout == "from sh\n", seen
    seen = run("%%script bash --out got --err said\necho x; echo y >&2\n")
    assert (seen.stdout, seen.stderr) == ("", ""), seen
    if run.mode != "oneshot":
        assert run("print(repr(got), repr(said))").stdout == "'x\\n' 'y\\n'\n"
    seen = run("%%bash\necho partial\nexit 3")
    assert seen.stdout == "partial\n", seen
    assert seen.error is not None and "returned non-zero exit status 3" in seen.error, seen
    seen = run("%%bash --no-raise-error\nexit 3")
    assert seen.error is None, seen


@pytest.mark.skipif(shutil.which("perl") is None, reason="needs perl")
def test_perl_cells_run_perl(run: Runner) -> None:
    seen = run('%%perl\nprint "perl ", 6 * 7, "\\n";')
    assert seen.error is None and seen.stdout == "perl 42\n", seen


def test_a_script_cell_in_the_background_gives_its_pipe(run: Runner) -> None:
    seen = run("%%bash --bg --out pipe --proc proc\necho later")
    assert seen.error is None and seen.stdout == "", seen
    if run.mode != "oneshot":
        seen = run("print(pipe.read(), proc.wait())")
        assert seen.stdout == "b'later\\n' 0\n", seen


def test_a_script_cell_for_a_missing_program_is_a_usage_error(run: Runner) -> None:
    seen = run("%%script no-such-program-here\nanything")
    assert seen.error is not None, seen
    assert "UsageError: %%script: cannot run the cell: no program 'no-such-program-here' " \
        "on PATH" in seen.error, seen
    if shutil.which("ruby") is None:
        seen = run("%%ruby\nputs 1")
        assert seen.error is not None and "no program 'ruby' on PATH" in seen.error, seen


def test_shell_commands_run_in_a_terminal(run: Runner) -> None:
    seen = run("!echo out; echo err >&2; echo again; python3 -c \"import sys; "
               "print(sys.stdout.isatty(), sys.stderr.isatty(), sys.stdin.isatty())\"")
    assert seen.error is None, seen
    assert (seen.stdout, seen.stderr) == ("out\nerr\nagain\nTrue True True\n", ""), seen
    # the user's shell runs it; no one types into it: reading stdin ends at once
    seen = run("import os\nos.environ['SHELL'] = 'bash'\n!echo $BASH_VERSION | cut -c1\n!cat\n"
               "print('done')")
    assert re.fullmatch(r"\d\ndone\n", seen.stdout), seen
    # colours kept where the host keeps them (Vix Note shows text raw: it takes them out)
    seen = run("!printf '\\033[31mred\\033[0m\\n'")
    assert seen.stdout == ("red\n" if run.mode == "oneshot" else "\x1b[31mred\x1b[0m\n"), seen
    seen = run("lines = !ls --color=auto -d /\nprint(lines)")  # a pipe: no terminal, no colour
    assert seen.stdout == "['/']\n", seen


def test_a_saved_figure_is_shown_too(run: Runner) -> None:
    seen = run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.savefig('a.png')\n"
               "fig = plt.figure()\nplt.plot([3, 2])\nplt.savefig('b.png')\nplt.close(fig)")
    assert seen.error is None, seen
    if run.mode == "lines":
        assert seen.stdout == "<Figure size 640x480 with 1 Axes>\n", seen
    else:
        assert seen.texts == ["image/svg+xml" if run.mode == "oneshot" else "<image>"], seen


def test_an_empty_figure_is_shown_as_its_text(run: Runner) -> None:
    seen = run("import matplotlib.pyplot as plt\nplt.figure()\nplt.show()\nprint('after')")
    assert seen.error is None, seen
    assert seen.everything.count("<Figure size 640x480 with 0 Axes>\n") == 1, seen


def test_capture_keeps_the_figures_until_shown(run: Runner) -> None:
    seen = run("%%capture cap\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])")
    assert seen.error is None and (seen.stdout, seen.displays) == ("", []), seen
    if run.mode == "oneshot":
        seen = run("%%capture cap\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\n"
                   "%%capture\n")  # nothing but the cell magic's line: still nothing shown
        return
    assert run("len(cap.outputs)").everything == "2\n"
    seen = run("cap()")
    if run.mode == "lines":
        assert re.fullmatch(r"\[<matplotlib\.lines\.Line2D at 0x\w+>\]\n"
                            r"<Figure size 640x480 with 1 Axes>\n", seen.stdout), seen
    else:
        assert len(seen.texts) == 2 and seen.texts[1] == ("<image>"), seen


PNG = ("import base64\npng = base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlE"
       "QVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==')\n")


def test_lines_shows_nothing_for_a_display_without_text(tmp_path: Path) -> None:
    with runner("lines", cwd=tmp_path) as run:
        seen = run(f"{PNG}from IPython.display import display_png, HTML, Javascript\n"
                   "print('before')\ndisplay_png(png, raw=True)\n"
                   "display({'text/html': '<div></div>'}, raw=True)\n"
                   "display({'application/javascript': 'console.log(1)'}, raw=True)\n"
                   "print('after')")
        assert seen.error is None, seen
        assert seen.stdout == "before\nafter\n", seen
        # a text that only names the type is still text, as IPython's text frontends show it
        seen = run("display(HTML('<p>some <b>text</b></p>'), Javascript('1'))")
        assert seen.stdout == "some text\n<IPython.core.display.Javascript object>\n", seen


def test_who_lists_the_users_names(run: Runner) -> None:
    seen = run("%who")
    assert seen.stdout == "Interactive namespace is empty.\n", seen
    seen = run("x = 1\nname = 'Ada'\ndef f(a):\n    pass\n_hidden = 2\n%who\n%who int\n%whos\n"
               "%who_ls")
    assert seen.error is None, seen
    assert seen.everything == (
        "f\t name\t x\t \nx\t \n"
        "Variable   Type        Data/Info\n"
        "--------------------------------\n"
        f"f          function    {seen.stdout.split('function    ')[1].split(chr(10))[0]}\n"
        "name       str         Ada\n"
        "x          int         1\n"
        "['f', 'name', 'x']\n"), seen
    assert "<function f at 0x" in seen.stdout, seen
    seen = run("who float")
    assert seen.stdout == "No variables match your requested type.\n", seen


def test_lsmagic_lists_the_magics(run: Runner) -> None:
    seen = run("%lsmagic")
    assert seen.error is None, seen
    text = seen.everything
    assert text.startswith("Available line magics:\n"), seen
    for name in ("%run", "%who", "%ls", "%%bash", "%%html", "%%file", "%%capture"):
        assert f"{name}  " in text or f"{name}\n" in text, (name, seen)


def test_run_runs_a_script_with_its_arguments(run: Runner, tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(
        "import sys\nprint('args', sys.argv[1:], __name__)\nvalue = 42\n"
        "def helper():\n    return seen_before\n")
    seen = run("import sys\nbefore = sys.argv[:]\n%run script.py a 'b c'\n"
               "print(value, sys.argv == before)")  # argv put back after
    assert seen.error is None, seen
    assert seen.stdout == "args ['a', 'b c'] __main__\n42 True\n", seen
    seen = run("seen_before = 'from the cell'\n%run -i -t script.py\nhelper()")
    assert seen.error is None, seen
    assert re.fullmatch(r"args \[\] __main__\n\nIPython CPU timings \(estimated\):\n"
                        r"  User   : +[\d.]+ s\.\n  System : +[\d.]+ s\.\nWall time: +[\d.]+ s\.\n"
                        r"'from the cell'\n", seen.everything), seen
    seen = run("%run nowhere.py")
    assert seen.error is not None and "File 'nowhere.py' not found." in seen.error, seen


def test_prun_prints_the_profile(run: Runner) -> None:
    # work() spends its time in its own frame (a Python loop, not sum()), so that it leads
    # the "internal time" order on a busy machine too; `-l 3` keeps the three first rows.
    seen = run("def work():\n    total = 0\n    for i in range(300_000):\n        total += i\n"
               "    return total\n%prun -l 3 work()")
    assert seen.error is None, seen
    assert re.match(r" +\d+ function calls in [\d.]+ seconds\n\n   Ordered by: internal time\n",
                    seen.stdout), seen
    assert "(work)" in seen.stdout, seen


def test_load_ext_calls_the_extensions_loader(run: Runner, tmp_path: Path) -> None:
    (tmp_path / "shout.py").write_text(
        "def shout(line):\n    return line.upper()\n"
        "def twice(line, cell):\n    print(cell * 2, end='')\n"
        "def load_ipython_extension(ip):\n"
        "    ip.register_magic_function(shout)\n"
        "    ip.register_magic_function(twice, 'cell')\n"
        "    ip.push({'loaded_by': 'shout'})\n")
    (tmp_path / "needy.py").write_text(
        "def load_ipython_extension(ip):\n    ip.events.register('post_execute', print)\n")
    (tmp_path / "plain.py").write_text("X = 1\n")
    seen = run("%load_ext shout\nprint(loaded_by)\n%shout hello")
    assert seen.error is None, seen
    assert seen.everything == "shout\n'HELLO'\n", seen
    if run.mode != "oneshot":
        assert run("%%twice\nab\n").stdout == "ab\nab\n"
    seen = run("%load_ext needy")
    assert seen.error is not None and "UsageError: %load_ext needy: the extension uses " \
        "IPython's shell.events, which pyrelune does not offer" in seen.error, seen
    seen = run("%load_ext plain")
    assert seen.error is not None and "no load_ipython_extension(ipython) function" \
        in seen.error, seen
    seen = run("%load_ext no_such_extension")
    assert seen.error is not None and "No module named 'no_such_extension'" in seen.error


def test_load_ext_registers_an_extensions_magics_class(run: Runner, tmp_path: Path) -> None:
    (tmp_path / "classy.py").write_text(
        "from IPython.core.magic import Magics, magics_class, line_magic\n"
        "@magics_class\nclass Mine(Magics):\n"
        "    @line_magic\n    def hello(self, line):\n        return 'hello ' + line\n"
        "def load_ipython_extension(ip):\n    ip.register_magics(Mine)\n")
    seen = run("%load_ext classy\n%hello world")
    assert seen.error is None and seen.everything == "'hello world'\n", seen


def test_aliases_and_automagic_run_without_a_percent(run: Runner, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("a note\n")
    seen = run("mkdir made\nls -d made\ncat notes.txt\npwd")
    assert seen.error is None, seen
    colourless = re.sub(r"\x1b\[[0-9;]*m", "", seen.everything)
    assert colourless == f"made/\na note\n'{tmp_path}'\n", seen
    seen = run("ls = ['mine']\nprint(ls)")  # an assignment is Python's
    assert seen.stdout == "['mine']\n", seen
    if run.mode != "oneshot":
        assert run("ls").everything == "['mine']\n"  # the user's name shadows the alias


def test_debug_is_answered_where_the_host_answers_input(run: Runner) -> None:
    seen = run("def f(x):\n    return 1 / x\nf(0)")
    assert seen.error is not None and "ZeroDivisionError" in seen.error, seen
    if run.mode != "rpc":
        seen = run("%debug")
        assert seen.error is not None and "UsageError: %debug needs answers to its prompts, " \
            "but input() " in seen.error, seen
        return
    kernel = run.kernel  # type: ignore[attr-defined]
    kernel.call("execute.cell", {"cell_id": "dbg", "source": "%debug"})
    printed = []
    for answer in ("p x", "q"):
        while (event := kernel.receive())["event"] != "input_request":
            printed.append(event)
        assert event["data"]["prompt"] == "(Pdb) ", event
        kernel.call("execute.input_reply", {"value": answer})
    events = kernel.until_done()
    assert events[-1]["data"]["status"] == "ok", events
    text = "".join(e["data"]["text"] for e in printed + events if e["event"] == "stream")
    assert "return 1 / x\n" in text and "\n0\n" in text, text


def test_values_are_shown_as_ipythons_pretty_printer_shows_them(run: Runner) -> None:
    from IPython.lib import pretty as ipython

    counter = "import collections\ncollections.Counter({str(i) * 4: i for i in range(12)})"
    namespace: dict[str, object] = {}
    exec(counter.replace("\ncollections.", "\nvalue = collections."), namespace)
    # written without importing IPython (the kernels import it for the wrapped Counter)
    seen = run("def f(x, *, y=2):\n    pass\nclass Failure(Exception):\n    pass\n"
               "display(f, Failure('no'), len)\nimport sys\n'IPython' in sys.modules")
    assert seen.everything == ("<function __main__.f(x, *, y=2)>\n__main__.Failure('no')\n"
                               "<function len(obj, /)>\nFalse\n"), seen
    seen = run(counter)
    assert seen.everything == ipython.pretty(namespace["value"]) + "\n", seen  # type: ignore[no-untyped-call]
    assert seen.everything.count("\n") == 12, seen  # one item a line


def test_an_interrupt_ends_a_shell_command_in_its_terminal(tmp_path: Path) -> None:
    marker, pidfile = tmp_path / "started", tmp_path / "child.pid"
    kernel = LinesHost()
    try:
        code = (f"open({str(marker)!r}, 'w').close()\n"
                f"!echo $$$$ > {pidfile}; exec sleep 100\nprint('not reached')")  # $$: a dollar
        request_id = kernel.send("execute", code)
        wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), "the child's pid")
        response = kernel.interrupt_when(marker, request_id)
        assert response["error"].startswith("KeyboardInterrupt"), response
        assert "not reached" not in response["stdout"], response
        wait_for(lambda: not running(int(pidfile.read_text())), "the command to end")
        assert kernel.execute("!echo again")["stdout"] == "again\n"
    finally:
        kernel.close()


def test_display_cell_magics_show_their_body(run: Runner) -> None:
    """`%%html`, `%%markdown`, `%%latex`, `%%javascript`: one display each, as the host shows
    that type (Vix Note and the lines kernel the text, rpc HTML as HTML)."""
    seen = run("%%html\n<b>bold</b> text")
    assert seen.error is None, seen
    shown = {"oneshot": ["bold text"], "lines": [], "rpc": ["<html>"]}[run.mode]
    assert seen.texts == shown and (run.mode != "lines" or seen.stdout == "bold text\n"), seen
    for magic, body in (("markdown", "# A *title*"), ("latex", "$\\alpha + 1$")):
        seen = run(f"%%{magic}\n{body}")
        assert seen.error is None and seen.everything == f"{body}\n", (magic, seen)
    seen = run("%%javascript\nconsole.log(1)")
    assert seen.error is None, seen
    if run.mode == "lines":  # no host runs JavaScript: what it shows is the object's type
        assert seen.stdout == "<IPython.core.display.Javascript object>\n", seen
    else:
        assert seen.texts == ["<IPython.core.display.Javascript object>"], seen
