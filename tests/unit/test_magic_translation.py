"""The translation of IPython syntax on plain values: which lines change, and into what."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pyrelune.worker.ipysyntax import translate
from pyrelune.worker.shellcmd import SList
from pyrelune.worker.timemagics import TimeitResult, format_time

CALL = "__import__('pyrelune').worker.importhooks.import_own('pyrelune.worker.magics')."


def test_each_escape_becomes_one_call_in_place() -> None:
    assert translate("%pwd") == f"{CALL}line_magic('pwd', '')"
    assert translate("x = 1\n  %time  f(x)  \ny") == (
        f"x = 1\n  {CALL}line_magic('time', 'f(x)')\ny")
    assert translate("!ls -l 'a b'") == f"{CALL}system(\"ls -l 'a b'\")"
    assert translate("!!date") == f"{CALL}getoutput('date')"
    assert translate("files = !ls\na, b = %sx echo") == (
        f"files = {CALL}getoutput('ls')\na, b = {CALL}line_magic('sx', 'echo')")
    assert translate("obj.attr?") == f"{CALL}inspect('obj.attr')"
    assert translate("?obj") == f"{CALL}inspect('obj')"
    assert translate("obj??") == f"{CALL}inspect('obj', 1)"  # the source too, where shown
    assert translate("    %%time later") == f"{CALL}cell_magic('time', 'later', '', 1)"


def test_a_cell_magic_takes_the_whole_cell() -> None:
    assert translate("\n%%timeit -n 2 setup()\nbody()\n'''%x'''") == (
        f"\n{CALL}cell_magic('timeit', '-n 2 setup()', \"body()\\n'''%x'''\", 2)")
    # past the first line, `%%name` is no cell magic: an unknown line magic, said so
    assert translate("x = 1\n%%time") == f"x = 1\n{CALL}line_magic('%time', '')"


def test_python_is_left_alone() -> None:
    assert translate("x = (1\n") is None
    assert translate("s = '''\n%pwd\n!ls\n'''\ny = (") is None
    assert translate('s = "a\\\n%pwd"\nx = ') is None  # a string continued by a backslash
    assert translate("x = (1,\n%2)\ny = ") is None  # inside brackets: Python's modulo
    assert translate("x = 1 + \\\n!2\n(") is None  # a continued line
    assert translate("x = 1  # why?\nprint('what?')\n(") is None
    assert translate("# %matplotlib inline\n(") is None
    assert translate("x = a?b\n") is None  # not an object to ask about


def test_quotes_in_comments_and_raw_strings_do_not_open_strings() -> None:
    assert translate("# it's\n%pwd") == f"# it's\n{CALL}line_magic('pwd', '')"
    assert translate("p = r'\\'\n%pwd") == f"p = r'\\'\n{CALL}line_magic('pwd', '')"
    assert translate("d = {'a': [1,\n 2]}\n%pwd") == (
        f"d = {{'a': [1,\n 2]}}\n{CALL}line_magic('pwd', '')")


def test_an_escaped_line_continued_by_a_backslash_is_one_command() -> None:
    assert translate("!echo a \\\n   b\nx = 1") == f"{CALL}system('echo a  b')\n\nx = 1"


def test_line_numbers_are_kept() -> None:
    source = "a = 1\r\n%pwd\r\n!ls \\\nmore\nb?\n%%time\nc = 2"
    translated = translate(source)
    assert translated is not None
    assert len(translated.split("\n")) == 7
    assert translated.split("\n")[6] == "c = 2"


TEXT = st.text(alphabet=st.sampled_from("%!?#'\"\\ \nab{}$()"), max_size=40)


@given(TEXT, TEXT)
def test_strings_and_comments_holding_escapes_are_never_touched(text: str, comment: str) -> None:
    one_line = comment.replace("\n", " ")
    triple = text.replace("\\", "\\\\").replace('"', '\\"')
    lines = ["%pwd", f"v = {text!r}  # {one_line}", f'w = """{triple}"""', "!echo done"]
    source = "\n".join(lines)
    translated = translate(source)
    assert translated is not None
    out = translated.split("\n")
    assert len(out) == len(source.split("\n"))
    assert out[1:-1] == source.split("\n")[1:-1]
    assert out[-1] == f"{CALL}system('echo done')"
    namespace: dict[str, object] = {}
    exec(compile("\n".join(out[1:-1]), "<t>", "exec"), namespace)
    assert (namespace["v"], namespace["w"]) == (text, text)


@given(st.text(max_size=60))
def test_any_text_translates_to_no_more_lines(source: str) -> None:
    translated = translate(source)
    if translated is not None:
        lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        assert len(translated.split("\n")) <= len(lines)


def test_times_are_written_as_ipython_writes_them() -> None:
    assert format_time(0.0005) == "500 μs"
    assert format_time(0.0123456) == "12.3 ms"
    assert format_time(1.5) == "1.5 s"
    assert format_time(2.5e-8) == "25 ns"
    assert format_time(0) == "0 ns"
    assert format_time(61.5) == "1min 1s"
    assert format_time(3725) == "1h 2min 5s"
    result = TimeitResult(1000, 7, [0.001] * 7)
    assert str(result) == ("1 μs ± 0 ns per loop (mean ± std. dev. of 7 runs, "
                           "1,000 loops each)")
    assert repr(TimeitResult(1, 1, [2.0])).endswith("of 1 run, 1 loop each)>")


def test_shell_lines_join_as_ipythons_do() -> None:
    lines = SList(["a b", "c"])
    assert (lines.s, lines.n, lines.l) == ("a b c", "a b\nc", ["a b", "c"])
    assert lines.grep("^c") == ["c"] and lines.grep("^c", prune=True) == ["a b"]
    assert SList(["/", "/no/such/path"]).p == [__import__("pathlib").Path("/")]


def test_automagic_names_are_the_line_magics() -> None:
    """The compiler's quick check (cell.AUTOMAGIC) knows every line magic and alias."""
    from pyrelune.worker import cell, magics

    assert frozenset(magics._LINE_MAGICS) == cell.AUTOMAGIC


def test_automagic_lines_become_magics_unless_they_assign() -> None:
    names = frozenset({"ls", "pwd", "time"})
    assert translate("ls -l\npwd", names) == (
        f"{CALL}line_magic('ls', '-l')\n{CALL}line_magic('pwd', '')")
    assert translate("ls = 1\nls += 2\nls, x = 1, 2\nls: int = 3\nls == 1", names) is None
    assert translate("time.sleep(1)\nls(3)", names) is None
    assert translate("ls -l", frozenset()) is None  # shadowed: the user's name
