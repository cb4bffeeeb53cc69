"""IPython's syntax in a cell (magics, shell escapes, `obj?`), made plain Python.

Only a cell that does not compile comes here, or one with a line that
names a magic without its `%` (IPython's automagic: `ls -l`, `pwd`; see
`cell.compile_cell`), so a plain cell never pays for it. Shell commands
are `shellcmd`'s; `%run`, `%prun` and `%debug` are `runmagics`', `%who`
and friends `namespacemagics`', extensions `extensions`'. `translate`
turns each line of IPython syntax into one call of this module's, line
for line, so tracebacks keep their line numbers and quote the line as the
user wrote it; a line that starts inside a string, a bracket or a
backslash continuation is Python's and left as it is, and so is any `%`
or `!` in a string or a comment. The calls run where the line was: they
find the cell's namespace in their caller's frame, as IPython's magics
find the user's.
"""

from __future__ import annotations

import os
import re
import sys

from pyrelune import PyreluneError
from pyrelune.wire.events import Clear

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Any

    from pyrelune.wire.events import Display
    from pyrelune.worker.cell import Compiled

#: What a translated line calls: this module, reached whatever the cell imported or defined.
_HERE = "__import__('pyrelune').worker.magics."
#: `x = !cmd`, `a, b = %magic args`: IPython's assignment of an escape's value.
_ASSIGNED = re.compile(r"([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*(?=[!%])")
#: `obj?`, `?obj`, `obj??`, `??obj`: the object's help.
_HELP = re.compile(r"(\?\??)?\s*([A-Za-z_][\w.]*)\s*(\?\??)?")
#: What a shell command or a magic's argument takes from the namespace, as IPython
#: expands it: `$name`, `{expression}`, `$$` for a dollar, `{{` and `}}` for braces.
_EXPANDED = re.compile(r"\$\$|\{\{|\}\}|\$([A-Za-z_]\w*)|\{([^{}]+)\}")


class UsageError(PyreluneError):
    """A magic used in a way pyrelune does not run (IPython's name for it)."""


# Translation -----------------------------------------------------------------------


def translate(source: str, automagic: frozenset[str] = frozenset()) -> str | None:
    """`source` with its IPython lines made calls of this module's, or None if it has none.

    A line that starts with a name of `automagic` followed by a space or its
    end, and is no assignment to it, is that line magic (`ls -l`, `pwd`).
    """
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), 0)
    head = lines[first].strip()
    if head.startswith("%%"):
        name, args = _name_and_args(head[2:])
        body = "\n".join(lines[first + 1 :])
        return "\n" * first + f"{_HERE}cell_magic({name!r}, {args!r}, {body!r}, {first + 1})"
    out: list[str] = []
    quote: str | None = None
    depth = 0
    continued = False
    changed = False
    i = 0
    while i < len(lines):
        line = lines[i]
        call: str | None = None
        if quote is None and depth == 0 and not continued:
            call = _line_call(line, automagic)
        if call is None:
            out.append(line)
            quote, depth, continued = _scan(line, quote, depth)
            i += 1
            continue
        # An escaped line continues past a final backslash, as in IPython.
        taken = 1
        while line.endswith("\\") and i + taken < len(lines):
            line = f"{line[:-1]} {lines[i + taken].strip()}"
            taken += 1
        out.append(_line_call(line, automagic) or call)
        out.extend([""] * (taken - 1))
        changed = True
        i += taken
    return "\n".join(out) if changed else None


def compile_translated(
    source: str,
    filename: str,
    failed: SyntaxError | None,
    compiled: tuple[Compiled, str] | None,
    compile_cell: Callable[[str, str], tuple[Compiled, str]],
    automagic: frozenset[str] = frozenset(),
) -> tuple[Compiled, str]:
    """`compile_cell` of the translated `source`, which `failed` to compile as it was
    (or was `compiled`, but may have lines of `automagic`: magics without their `%`).

    With nothing to translate, `failed` is raised again, or `compiled` is the
    cell's. The parser's warnings (an invalid escape) about the lines before
    the failure were shown by the first attempt: they are not shown twice.
    """
    translated = translate(source, automagic)
    if translated is None:
        if failed is not None:
            raise failed
        assert compiled is not None
        return compiled
    warnings = _own("warnings")
    caught: list[Any] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            return compile_cell(translated, filename)
    finally:
        for warning in caught:
            if failed is not None and warning.lineno > (failed.lineno or 0):
                warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                       warning.lineno)


#: What after a magic's name makes the line Python: an assignment to it, or a comparison.
_ASSIGNING = re.compile(r"\s+(?:[-+*/%&|^@<>!]|//|\*\*|<<|>>)?=|\s*[,:]")


def _line_call(line: str, automagic: frozenset[str] = frozenset()) -> str | None:
    """The call a line of IPython syntax becomes (its indentation kept), or None for Python."""
    body = line.strip()
    if not body or body[0] == "#":
        return None
    indent = line[: len(line) - len(line.lstrip())]
    if body[0] in "%!":
        return indent + _escape_call(body, assigned=False)
    word, _, _ = body.partition(" ")
    if word in automagic and not _ASSIGNING.match(body, len(word)):
        return indent + _escape_call(f"%{body}", assigned=False)
    assigned = _ASSIGNED.match(body)
    if assigned:
        target = assigned.group(1)
        return f"{indent}{target} = {_escape_call(body[assigned.end() :], assigned=True)}"
    if "?" in body:
        asked = _HELP.fullmatch(body)
        if asked and (asked.group(1) or asked.group(3)):
            more = ", 1" if "??" in (asked.group(1) or "", asked.group(3) or "") else ""
            return f"{indent}{_HERE}inspect({asked.group(2)!r}{more})"
    return None


def _escape_call(body: str, assigned: bool) -> str:
    """The call for `%magic args`, `!cmd` or `!!cmd`; an assigned `!cmd` gives its lines."""
    if body.startswith("!!") or (assigned and body.startswith("!")):
        return f"{_HERE}getoutput({body.lstrip('!')!r})"
    if body.startswith("!"):
        return f"{_HERE}system({body[1:]!r})"
    name, args = _name_and_args(body[1:])  # `%%name` past the first line: `%name` unknown
    return f"{_HERE}line_magic({name!r}, {args!r})"


def _name_and_args(text: str) -> tuple[str, str]:
    name, _, args = text.strip().partition(" ")
    return name, args.strip()


def _scan(line: str, quote: str | None, depth: int) -> tuple[str | None, int, bool]:
    """Python's state after `line`: the string still open, the bracket depth, a continuation.

    Enough of the tokenizer to know where the next line starts: strings
    (prefixes are letters and change nothing here; a backslash always skips
    the next character, as in raw strings too), comments and brackets.
    """
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if quote is not None:
            if c == "\\":
                i += 2
            elif line.startswith(quote, i):
                i += len(quote)
                quote = None
            else:
                i += 1
            continue
        if c == "#":
            return None, depth, False
        if c in "'\"":
            quote = c * 3 if line.startswith(c * 3, i) else c
            i += len(quote)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(depth - 1, 0)
        elif c == "\\" and i == n - 1:
            return None, depth, True
        i += 1
    if quote is not None and len(quote) == 1 and i <= n:
        quote = None  # a one-line string left open (a syntax error), unless escaped at the end
    return quote, depth, False


# What the translated lines call ----------------------------------------------------


def system(command: str) -> None:
    """`!cmd`: run it as a terminal would, its output the cell's (see `shellcmd`)."""
    frame = sys._getframe(1)
    frame.f_globals["_exit_code"] = _shellcmd().terminal(_expand(command, frame))


def getoutput(command: str) -> Any:
    """`x = !cmd`: its output lines (stderr with them), as an SList."""
    return _shellcmd().output_lines(_expand(command, sys._getframe(1)))


def line_magic(name: str, line: str) -> Any:
    """`%name line`, run in the caller's namespace."""
    return run_line_magic(name, line, sys._getframe(1))


def run_line_magic(name: str, line: str, frame: FrameType) -> Any:
    """`%name line` in `frame`'s namespace: pyrelune's magic, or an extension's."""
    magic = _LINE_MAGICS.get(name)
    if magic is not None:
        return magic(line, frame)
    added = _extension_magic("line", name)
    if added is None:
        raise UsageError(f"Line magic function `%{name}` is not supported by pyrelune")
    return added(_expand(line, frame))


def cell_magic(name: str, line: str, body: str, first_line: int) -> Any:
    """`%%name line` and the cell's other lines (`body`, from line `first_line` + 1)."""
    return run_cell_magic(name, line, body, sys._getframe(1), first_line)


def run_cell_magic(name: str, line: str, body: str, frame: FrameType,
                   first_line: int = 0) -> Any:
    """`%%name line` with `body` in `frame`'s namespace: pyrelune's magic, or an extension's."""
    magic = _CELL_MAGICS.get(name)
    if magic is not None:
        return magic(line, _Body(body, first_line, frame))
    added = _extension_magic("cell", name)
    if added is None:
        raise UsageError(f"Cell magic `%%{name}` is not supported by pyrelune")
    return added(_expand(line, frame), body)


def _extension_magic(kind: str, name: str) -> Callable[..., Any] | None:
    """A magic an extension registered (see `extensions`), if any was loaded."""
    extensions = sys.modules.get("pyrelune.worker.extensions")
    return None if extensions is None else extensions.registered[kind].get(name)


def inspect(target: str, detail: int = 0) -> None:
    """`obj?` and `obj??` (`detail` 1): the object's help as `help(obj)` prints it, with no
    pager; or, for a Jupyter front end ($PYRELUNE_PAGER=payload), IPython's summary (with the
    source for `??`) as a page its pager shows."""
    _help(target, sys._getframe(1), detail)


def _help(target: str, frame: FrameType, detail: int = 0) -> None:
    try:
        obj = eval(target, frame.f_globals, frame.f_locals)
    except Exception:
        print(f"Object `{target}` not found.")
        return
    if os.environ.get("PYRELUNE_PAGER") == "payload":
        from pyrelune.wire.events import PAGE
        from pyrelune.worker.display import display
        from pyrelune.worker.introspect import describe

        display({"text/plain": describe(target, obj, detail)}, raw=True, metadata={PAGE: True})
        return
    pydoc = _own("pydoc")
    text = pydoc.render_doc(obj, "Help on %s:", renderer=pydoc.plaintext)
    sys.stdout.write(text if text.endswith("\n") else f"{text}\n")


class _Body:
    """A cell magic's body, run as the cell itself would run it."""

    def __init__(self, source: str, first_line: int, frame: FrameType) -> None:
        self.source = source
        self.first_line = first_line
        self.frame = frame

    def run(self) -> Any:
        """Run the body; its final expression's value, or None."""
        return _run(self.source, self.first_line, self.frame)


def _run(source: str, first_line: int, frame: FrameType) -> Any:
    """Run `source`, starting on cell line `first_line` + 1, as a cell: magics and all."""
    from pyrelune.worker import cell

    code, result = cell.compile_cell("\n" * first_line + source, frame.f_code.co_filename,
                                     frame.f_globals)
    return cell._execute(code, result, frame.f_globals)


# Line magics -------------------------------------------------------------------------


def _matplotlib(line: str, frame: FrameType) -> None:
    """Any `%matplotlib` form: figures are shown as pyrelune shows them.

    A backend that draws in windows is replaced by pyrelune's, as IPython's
    `inline` replaces it; one without windows is shown already and stays.
    """
    from pyrelune.worker.libraries import MATPLOTLIB_BACKEND

    matplotlib = sys.modules.get("matplotlib")
    if matplotlib is None:
        os.environ["MPLBACKEND"] = MATPLOTLIB_BACKEND
    elif matplotlib.get_backend().lower() in _WINDOWED_BACKENDS:
        matplotlib.use(MATPLOTLIB_BACKEND)
    if not line.strip():
        print(f"Using matplotlib backend: {os.environ.get('MPLBACKEND', MATPLOTLIB_BACKEND)}")


_WINDOWED_BACKENDS = frozenset(
    f"{kit}{renderer}" for kit in ("gtk3", "gtk4", "qt", "qt5", "tk", "wx")
    for renderer in ("agg", "cairo")
) | {"macosx", "nbagg", "webagg", "ipympl", "widget"}


def _config(line: str, frame: FrameType) -> None:
    """`%config InlineBackend.figure_formats = {'png', 'svg'}` (or `.figure_format = 'retina'`):
    the formats figures are drawn in, as IPython's inline backend takes them.

    Other settings of IPython's (`Completer.use_jedi = False`, common in notebooks) are
    accepted and have no effect: there is no IPython shell to configure.
    """
    target, equals, value = line.partition("=")
    if not equals:
        raise UsageError(f"%config {line.strip()}: expected %config Class.trait = value")
    if target.strip() not in ("InlineBackend.figure_formats", "InlineBackend.figure_format"):
        return
    chosen = eval(value, frame.f_globals, frame.f_locals)
    names = [chosen] if isinstance(chosen, str) else list(chosen)
    known = ("png", "retina", "svg", "jpeg", "jpg")
    if not names or any(not isinstance(n, str) or n.lower() not in known for n in names):
        raise UsageError(f"%config: figure formats are {', '.join(known)}, not {chosen!r}")
    os.environ["PYRELUNE_FIGURE_FORMATS"] = ",".join(n.lower() for n in names)


def _time(line: str, frame: FrameType) -> Any:
    """`%time statement`: run it once, then IPython's CPU and wall times."""
    return _timed(lambda: _run(line, frame.f_lineno - 1, frame))


def _timed(run: Callable[[], Any]) -> Any:
    resource = _own("resource")
    time = _own("time")
    before, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    value = run()
    wall, after = time.perf_counter() - wall, resource.getrusage(resource.RUSAGE_SELF)
    user, system_ = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    print(f"CPU times: user {format_time(user)}, sys: {format_time(system_)}, "
          f"total: {format_time(user + system_)}")
    print(f"Wall time: {format_time(wall)}")
    return value


def format_time(seconds: float, precision: int = 3) -> str:
    """A duration as IPython's timing magics write it: `1.5 ms`, `2min 3s`."""
    if seconds >= 60:
        parts = []
        left = seconds
        for suffix, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
            whole = int(left // size)
            if whole:
                parts.append(f"{whole}{suffix}")
                left -= whole * size
            if left < 1:
                break
        return " ".join(parts)
    order = 3  # ns, for nothing measured
    if seconds > 0:
        import math

        order = min(-(math.floor(math.log10(seconds)) // 3), 3)
    value = seconds * (1000**order)
    return f"{value:.{precision}g} {('s', 'ms', _micro(), 'ns')[order]}"


def _micro() -> str:
    """IPython's unit for microseconds: `μs` (GREEK SMALL LETTER MU), `us` where stdout cannot."""
    try:
        "\u03bc".encode(sys.stdout.encoding or "ascii")
    except (LookupError, UnicodeEncodeError, AttributeError, TypeError):
        return "us"
    return "\u03bcs"


class TimeitResult:
    """What `%timeit -o` returns, with IPython's attributes and text."""

    def __init__(self, loops: int, repeat: int, all_runs: list[float], precision: int = 3):
        self.loops = loops
        self.repeat = repeat
        self.all_runs = all_runs
        self.timings = [run / loops for run in all_runs]
        self.best = min(self.timings)
        self.worst = max(self.timings)
        self._precision = precision

    @property
    def average(self) -> float:
        return sum(self.timings) / len(self.timings)

    @property
    def stdev(self) -> float:
        mean = self.average
        return float((sum((t - mean) ** 2 for t in self.timings) / len(self.timings)) ** 0.5)

    def __str__(self) -> str:
        runs = "run" if self.repeat == 1 else "runs"
        loops = "loop" if self.loops == 1 else "loops"
        return (f"{format_time(self.average, self._precision)} ± "
                f"{format_time(self.stdev, self._precision)} per loop (mean ± std. dev. of "
                f"{self.repeat} {runs}, {self.loops:,} {loops} each)")

    def __repr__(self) -> str:
        return f"<TimeitResult : {self}>"


_TIMEIT_OPTION = re.compile(r"-([nrp])\s*(\d+)(?!\S)\s*|-([qotc]+)(?!\S)\s*")
#: An option `_TIMEIT_OPTION` did not take: a bad count, or a letter %timeit does not know.
_TIMEIT_BAD = re.compile(r"-([A-Za-z])\s*(\S*)")
_TIMEIT_COUNTS = {"n": "loops", "r": "repeats", "p": "precision"}


def _timeit(line: str, frame: FrameType, body: str | None = None) -> TimeitResult | None:
    """`%timeit [-n N -r R -p P -q -o] statement` (or `%%timeit [options] setup`, the body)."""
    counts: dict[str, int] = {"r": 7, "p": 3}
    flags = ""
    rest = line.strip()
    while (option := _TIMEIT_OPTION.match(rest)) is not None:
        if option.group(1):
            counts[option.group(1)] = int(option.group(2))
        else:
            flags += option.group(3)
        rest = rest[option.end() :]
    if (bad := _TIMEIT_BAD.match(rest)) is not None:
        letter, value = bad.groups()
        if letter not in _TIMEIT_COUNTS:
            raise UsageError(f"%timeit: option -{letter} not recognized "
                             "(the options are -n N -r R -p P -q -o -t -c)")
        raise UsageError(f"%timeit: -{letter} takes a whole number of {_TIMEIT_COUNTS[letter]}"
                         f", not {value or 'nothing'!r}")
    if counts["r"] < 1 or counts["p"] < 1:
        raise UsageError("%timeit: -r and -p must be at least 1")
    statement, setup = (rest, "pass") if body is None else (body, rest or "pass")
    timeit = _own("timeit")
    timer = timeit.Timer(statement, setup, globals=frame.f_globals)
    loops = counts.get("n", 0)
    tuning = 0.0
    if not loops:  # IPython's autorange: powers of ten until a batch takes 0.2 s
        for power in range(10):
            loops = 10**power
            tuning = timer.timeit(loops)
            if tuning >= 0.2:
                break
    result = TimeitResult(loops, counts["r"], timer.repeat(counts["r"], loops), counts["p"])
    if "q" not in flags:
        worst = max(tuning / loops, result.worst)
        if worst > 4 * result.best and result.best > 0 and worst > 1e-6:
            print(f"The slowest run took {worst / result.best:0.2f} times longer than the "
                  "fastest. This could mean that an intermediate result is being cached.")
        print(result)
    return result if "o" in flags else None


def _pwd(line: str, frame: FrameType) -> str:
    return os.getcwd()


_previous_dir: list[str] = []


def _cd(line: str, frame: FrameType) -> None:
    """`%cd [-q] [dir|-]`: change the current directory and say which it is now."""
    target = _expand(line, frame).strip()
    quiet = target == "-q" or target.startswith("-q ")
    if quiet:
        target = target[2:].strip()
    if target == "-":
        if not _previous_dir:
            raise UsageError("%cd -: no previous directory to change to")
        target = _previous_dir[-1]
    elif len(target) > 1 and target[0] == target[-1] and target[0] in "'\"":
        target = target[1:-1]
    here = os.getcwd()
    try:
        os.chdir(os.path.expanduser(target or "~"))
    except OSError as exc:
        print(exc)  # as IPython: said, not raised
        return
    _previous_dir[:] = [here]
    if not quiet:
        print(os.getcwd())


_SECRETS = ("key", "token", "secret")


def _env(line: str, frame: FrameType) -> Any:
    """`%env` (all, secrets hidden), `%env NAME`, `%env NAME=value` or `%env NAME value`."""
    line = _expand(line, frame).strip()
    if not line:
        return {name: "<hidden>" if any(s in name.lower() for s in _SECRETS) else value
                for name, value in os.environ.items()}
    name, separator, value = line.partition("=" if "=" in line else " ")
    if not separator:
        if line not in os.environ:
            raise UsageError(f"Environment does not have key: {line}")
        return os.environ[line]
    name, value = name.strip(), value.strip()
    os.environ[name] = value
    print(f"env: {name}={value}")
    return None


def _pip(line: str, frame: FrameType) -> None:
    """`%pip args`: pip of the interpreter that runs the cell."""
    import shlex

    frame.f_globals["_exit_code"] = _shellcmd().terminal(
        f"{shlex.quote(sys.executable)} -m pip {_expand(line, frame)}")
    print("Note: you may need to restart the kernel to use updated packages.")


def _accepted(line: str, frame: FrameType) -> None:
    """`%autoreload`, `%aimport`: accepted; each cell imports what it imports."""


_XMODES = ("Plain", "Context", "Verbose", "Minimal")
_xmode = ["Context"]


def _xmode_magic(line: str, frame: FrameType) -> None:
    """`%xmode [mode]`: accepted; tracebacks stay as pyrelune writes them."""
    mode = line.strip().capitalize()
    if not mode:
        mode = _XMODES[(_XMODES.index(_xmode[0]) + 1) % len(_XMODES)]
    if mode not in _XMODES:
        raise UsageError(f"%xmode {line.strip()}: the modes are {', '.join(_XMODES)}")
    _xmode[0] = mode
    print(f"Exception reporting mode: {mode}")


def _pinfo(line: str, frame: FrameType) -> None:
    _help(line.strip(), frame)


def _sx(line: str, frame: FrameType) -> Any:
    return _shellcmd().output_lines(_expand(line, frame))


def _elsewhere(module: str, function: str) -> Callable[[str, FrameType], Any]:
    """A magic defined in another module, imported when it is first used."""

    def magic(line: str, frame: FrameType) -> Any:
        import importlib

        return getattr(importlib.import_module(f"pyrelune.worker.{module}"), function)(
            line, frame)

    return magic


def _of_namespace(function: str) -> Callable[[str, FrameType], Any]:
    """`%who` and friends, on the caller's namespace (see `namespacemagics`)."""

    def magic(line: str, frame: FrameType) -> Any:
        from pyrelune.worker import namespacemagics

        return getattr(namespacemagics, function)(frame.f_globals, line)

    return magic


#: IPython's default shell aliases (Linux's `ls` options; BSD's elsewhere): `ls` is
#: `!ls -F --color`, with `%l` standing for the arguments.
_LS = "ls -F --color" if sys.platform.startswith("linux") else "ls -F -G"
_LONG = _LS.replace("-F", "-F -o") if sys.platform.startswith("linux") else "ls -F -l -G"
ALIASES = {
    **{name: name for name in ("mkdir", "rmdir", "mv", "rm", "cp", "cat")},
    "ls": _LS, "ll": _LONG, "lf": f"{_LONG} %l | grep ^-", "lk": f"{_LONG} %l | grep ^l",
    "ldir": f"{_LONG} %l | grep /$", "lx": f"{_LONG} %l | grep ^-..x",
}


def _alias(command: str) -> Callable[[str, FrameType], None]:
    def magic(line: str, frame: FrameType) -> None:
        rest = _expand(line, frame)
        full = command.replace("%l", rest) if "%l" in command else f"{command} {rest}".strip()
        frame.f_globals["_exit_code"] = _shellcmd().terminal(full)

    magic.__doc__ = f"IPython's alias: `!{command}`."
    return magic


class MagicList:
    """What `%lsmagic` returns: its text, as IPython's MagicsDisplay shows it."""

    def __repr__(self) -> str:
        line = sorted(set(_LINE_MAGICS) | set(_extension_names("line")))
        cell = sorted(set(_CELL_MAGICS) | set(_extension_names("cell")))
        return (f"Available line magics:\n{'  '.join('%' + name for name in line)}\n\n"
                f"Available cell magics:\n{'  '.join('%%' + name for name in cell)}\n\n"
                "Automagic is ON, % prefix IS NOT needed for line magics.")


def _extension_names(kind: str) -> list[str]:
    extensions = sys.modules.get("pyrelune.worker.extensions")
    return [] if extensions is None else list(extensions.registered[kind])


def _lsmagic(line: str, frame: FrameType) -> MagicList:
    return MagicList()


_LINE_MAGICS: dict[str, Callable[[str, FrameType], Any]] = {
    **{name: _alias(command) for name, command in ALIASES.items()},
    "aimport": _accepted,
    "autoreload": _accepted,
    "cd": _cd,
    "config": _config,
    "debug": _elsewhere("runmagics", "debug"),
    "env": _env,
    "load_ext": _elsewhere("extensions", "load"),
    "lsmagic": _lsmagic,
    "matplotlib": _matplotlib,
    "pdoc": _pinfo,
    "pinfo": _pinfo,
    "pinfo2": _pinfo,
    "pip": _pip,
    "prun": _elsewhere("runmagics", "prun"),
    "pwd": _pwd,
    "reload_ext": _elsewhere("extensions", "reload"),
    "run": _elsewhere("runmagics", "run"),
    "sx": _sx,
    "time": _time,
    "timeit": _timeit,
    "unload_ext": _elsewhere("extensions", "unload"),
    "who": _of_namespace("who"),
    "who_ls": _of_namespace("who_ls"),
    "whos": _of_namespace("whos"),
    "xmode": _xmode_magic,
}


# Cell magics -------------------------------------------------------------------------


def _cell_time(line: str, body: _Body) -> Any:
    """`%%time`: the cell once, then its times; its final expression is the cell's."""
    return _timed(body.run)


def _cell_timeit(line: str, body: _Body) -> TimeitResult | None:
    return _timeit(line, body.frame, body.source)


def _cell_prun(line: str, body: _Body) -> Any:
    from pyrelune.worker import runmagics

    return runmagics.prun(line, body.frame, body.source)


def _writefile(line: str, body: _Body) -> None:
    """`%%writefile [-a] file`: the body into the file, as IPython writes it."""
    import shlex

    words = shlex.split(line)
    append = bool({"-a", "--append"} & set(words))
    names = [w for w in words if w not in ("-a", "--append")]
    if len(names) != 1:
        raise UsageError("%%writefile takes one file name (and -a to append)")
    filename = os.path.expanduser(names[0])
    if os.path.exists(filename):
        print(f"{'Appending to' if append else 'Overwriting'} {filename}")
    else:
        print(f"Writing {filename}")
    text = body.source if body.source.endswith("\n") else f"{body.source}\n"
    with open(filename, "a" if append else "w", encoding="utf-8") as file:
        file.write(text)


class RichOutput:
    """One display `%%capture` kept: shown again by `display()` or `.show()`."""

    def __init__(self, data: dict[str, Any], metadata: dict[str, Any],
                 display_id: str | None = None) -> None:
        self.data = data
        self.metadata = metadata
        self.display_id = display_id

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        return self.data, self.metadata

    def display(self) -> None:
        from pyrelune.worker.display import display

        display(self)


class CapturedIO:
    """What `%%capture name` kept of the cell: `.stdout`, `.stderr`, `.outputs`, `.show()`."""

    def __init__(self, stdout: Any, stderr: Any, outputs: list[RichOutput]) -> None:
        self._stdout = stdout
        self._stderr = stderr
        self._outputs = outputs

    @property
    def stdout(self) -> str:
        return self._stdout.getvalue() if self._stdout is not None else ""

    @property
    def stderr(self) -> str:
        return self._stderr.getvalue() if self._stderr is not None else ""

    @property
    def outputs(self) -> list[RichOutput]:
        return list(self._outputs)

    def show(self) -> None:
        """Write the captured streams and show the displays again, as IPython's does."""
        sys.stdout.write(self.stdout)
        sys.stderr.write(self.stderr)
        for output in self._outputs:
            output.display()

    __call__ = show

    def __str__(self) -> str:
        return self.stdout


def _capture(line: str, body: _Body) -> Any:
    """`%%capture [--no-stdout] [--no-stderr] [--no-display] [name]`."""
    import io

    from pyrelune.worker import display

    words = line.split()
    names = [w for w in words if not w.startswith("-")]
    outputs: list[RichOutput] = []
    stdout = io.StringIO() if "--no-stdout" not in words else None
    stderr = io.StringIO() if "--no-stderr" not in words else None
    keep_displays = "--no-display" not in words
    captured = CapturedIO(stdout, stderr, outputs)
    value = None
    with _redirected(stdout, stderr, outputs if keep_displays else None):
        value = body.run()
        if value is not None and keep_displays:
            display.show_result(value)  # kept with the rest, as IPython's display hook is
            value = None
        if "matplotlib.pyplot" in sys.modules:  # the body's figures are its displays too
            from pyrelune.worker.mplbackend import show_open_figures

            show_open_figures()
    if names:
        body.frame.f_globals[names[0]] = captured
    return value


class _redirected:
    """sys.stdout, sys.stderr and the displays diverted for `%%capture`, then put back."""

    def __init__(self, stdout: Any, stderr: Any, outputs: list[RichOutput] | None) -> None:
        self.streams = stdout, stderr
        self.outputs = outputs

    def __enter__(self) -> None:
        from pyrelune.worker import display

        _shellcmd().flush()
        self.saved = sys.stdout, sys.stderr
        self.diversion: display.diverted | None = None
        stdout, stderr = self.streams
        if stdout is not None:
            sys.stdout = stdout
        if stderr is not None:
            sys.stderr = stderr
        outputs = self.outputs
        if outputs is not None:
            def keep(event: Display | Clear) -> None:
                """Displays kept in the order shown, updates in place, as the host would."""
                if isinstance(event, Clear):
                    outputs.clear()
                elif event.update:
                    for index, kept in enumerate(outputs):
                        if kept.display_id == event.display_id:
                            outputs[index] = RichOutput(event.data, event.metadata,
                                                        event.display_id)
                elif event.data:
                    outputs.append(RichOutput(event.data, event.metadata, event.display_id))

            self.diversion = display.diverted(keep)
            self.diversion.__enter__()

    def __exit__(self, *exc: object) -> None:
        sys.stdout, sys.stderr = self.saved
        if self.diversion is not None:
            self.diversion.__exit__()


#: The programs IPython has a cell magic of their own for: `%%bash` is `%%script bash`.
SCRIPT_PROGRAMS = ("sh", "bash", "perl", "ruby", "python", "python2", "python3", "pypy")
_SCRIPT_VALUES = ("--out", "--err", "--proc")
_SCRIPT_FLAGS = ("--bg", "--no-raise-error")


def _script(line: str, body: _Body, name: str = "script") -> None:
    """`%%script [--bg] [--out NAME] [--err NAME] [--proc NAME] [--no-raise-error] PROG ARGS`.

    As IPython's: the body on the program's stdin, a status other than 0 a
    CalledProcessError (unless `--no-raise-error`); `--out`/`--err` keep a
    stream as text in a variable (with `--bg`, the pipe to read).
    """
    import shlex
    import shutil
    import subprocess

    shell = _shellcmd()
    values: dict[str, str] = {}
    flags: set[str] = set()
    argv: list[str] = []
    words = iter(shlex.split(line))
    for word in words:
        option, equals, value = word.partition("=")
        if option in _SCRIPT_VALUES:
            given = value if equals else next(words, None)
            if not given:
                raise UsageError(f"%%{name}: {option} needs a variable name")
            values[option[2:]] = given
        elif word in _SCRIPT_FLAGS:
            flags.add(word)
        else:
            argv.append(word)
    if not argv:
        raise UsageError(f"%%{name}: which program runs the cell? (%%script bash, %%script "
                         "python3 -u, ...)")
    if shutil.which(argv[0]) is None:
        raise UsageError(f"%%{name}: cannot run the cell: no program {argv[0]!r} on PATH")
    namespace = body.frame.f_globals
    source = body.source if body.source.endswith("\n") else f"{body.source}\n"
    feed = source.encode("utf-8", "replace")
    if "--bg" in flags:
        child = shell.start_background(argv, feed)
        for stream in ("out", "err"):
            pipe = getattr(child, f"std{stream}")
            if stream in values:
                namespace[values[stream]] = pipe
            else:
                pipe.close()
        if "proc" in values:
            namespace[values["proc"]] = child
        return
    status, out, err = shell.run_script(argv, feed, ("out" in values, "err" in values))
    for stream, text in (("out", out), ("err", err)):
        if stream in values:
            namespace[values[stream]] = text
    if status != 0 and "--no-raise-error" not in flags:
        raise subprocess.CalledProcessError(status, feed)


def _named_script(program: str) -> Callable[[str, _Body], None]:
    def run(line: str, body: _Body) -> None:
        _script(f"{program} {line}", body, program)

    run.__doc__ = f"`%%{program} [options]`: `%%script {program}`."
    return run


#: `%%html` and friends: the body shown as one MIME type, with IPython's object's repr.
_SHOWN_AS = {
    "html": ("text/html", "HTML"),
    "javascript": ("application/javascript", "Javascript"),
    "js": ("application/javascript", "Javascript"),
    "latex": ("text/latex", "Latex"),
    "markdown": ("text/markdown", "Markdown"),
    "svg": ("image/svg+xml", "SVG"),
}


def _shown_as(name: str) -> Callable[[str, _Body], None]:
    mime, kind = _SHOWN_AS[name]

    def show(line: str, body: _Body) -> None:
        from pyrelune.worker.display import display

        display({mime: body.source, "text/plain": f"<IPython.core.display.{kind} object>"},
                raw=True)

    show.__doc__ = f"`%%{name}`: the body displayed as {mime}, as IPython's {kind}."
    return show


_CELL_MAGICS: dict[str, Callable[[str, _Body], Any]] = {
    **{program: _named_script(program) for program in SCRIPT_PROGRAMS},
    **{name: _shown_as(name) for name in _SHOWN_AS},
    "script": _script,
    "capture": _capture,
    "prun": _cell_prun,
    "file": _writefile,  # IPython's alias for it
    "time": _cell_time,
    "timeit": _cell_timeit,
    "writefile": _writefile,
}


# Helpers -----------------------------------------------------------------------------


def _own(name: str) -> Any:
    """A standard module as the runtime's own: a cell's folder may hold one of that name."""
    from pyrelune.worker import importhooks

    return importhooks.import_own(name)


def _shellcmd() -> Any:
    from pyrelune.worker import shellcmd

    return shellcmd


def _expand(text: str, frame: FrameType) -> str:
    """`text` with `$name` and `{expression}` taken from the cell, as IPython expands them.

    A `$name` the cell does not define is left for the shell; if any
    expression fails, the whole text is left as it is, as in IPython.
    """
    if "$" not in text and "{" not in text and "}" not in text:
        return text
    namespace = {**frame.f_globals, **frame.f_locals}

    def one(match: re.Match[str]) -> str:
        whole, name, expression = match.group(0), match.group(1), match.group(2)
        if whole in ("$$", "{{", "}}"):
            return whole[0]
        if name is not None:
            return str(namespace[name]) if name in namespace else whole
        return str(eval(expression, namespace))

    try:
        return _EXPANDED.sub(one, text)
    except Exception:
        return text

