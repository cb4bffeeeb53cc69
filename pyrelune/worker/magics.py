"""IPython's syntax in a cell (magics, shell escapes, `obj?`), made plain Python.

Only a cell that does not compile comes here (see `cell.compile_cell`), so
a plain cell never pays for it. `translate` turns each line of IPython
syntax into one call of this module's, line for line, so tracebacks keep
their line numbers and quote the line as the user wrote it; a line that
starts inside a string, a bracket or a backslash continuation is Python's
and left as it is, and so is any `%` or `!` in a string or a comment. The
calls run where the line was: they find the cell's namespace in their
caller's frame, as IPython's magics find the user's.
"""

from __future__ import annotations

import os
import re
import sys

from pyrelune.wire.events import Clear

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import CodeType, FrameType
    from typing import Any

    from pyrelune.wire.events import Display

#: What a translated line calls: this module, reached whatever the cell imported or defined.
_HERE = "__import__('pyrelune').worker.magics."
#: `x = !cmd`, `a, b = %magic args`: IPython's assignment of an escape's value.
_ASSIGNED = re.compile(r"([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*(?=[!%])")
#: `obj?`, `?obj`, `obj??`, `??obj`: the object's help.
_HELP = re.compile(r"(\?\??)?\s*([A-Za-z_][\w.]*)\s*(\?\??)?")
#: What a shell command or a magic's argument takes from the namespace, as IPython
#: expands it: `$name`, `{expression}`, `$$` for a dollar, `{{` and `}}` for braces.
_EXPANDED = re.compile(r"\$\$|\{\{|\}\}|\$([A-Za-z_]\w*)|\{([^{}]+)\}")


class UsageError(Exception):
    """A magic used in a way pyrelune does not run (IPython's name for it)."""


# Translation -----------------------------------------------------------------------


def translate(source: str) -> str | None:
    """`source` with its IPython lines made calls of this module's, or None if it has none."""
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
            call = _line_call(line)
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
        out.append(_line_call(line) or call)
        out.extend([""] * (taken - 1))
        changed = True
        i += taken
    return "\n".join(out) if changed else None


def compile_translated(
    source: str,
    filename: str,
    failed: SyntaxError,
    compile_cell: Callable[[str, str], tuple[CodeType, str]],
) -> tuple[CodeType, str]:
    """`compile_cell` of the translated `source`, which `failed` to compile as it was.

    `failed` is raised again if there is nothing to translate. The parser's
    warnings (an invalid escape) about the lines before the failure were
    shown by the first attempt: they are not shown twice.
    """
    translated = translate(source)
    if translated is None:
        raise failed
    warnings = _own("warnings")
    caught: list[Any] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            return compile_cell(translated, filename)
    finally:
        for warning in caught:
            if warning.lineno > (failed.lineno or 0):
                warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                       warning.lineno)


def _line_call(line: str) -> str | None:
    """The call a line of IPython syntax becomes (its indentation kept), or None for Python."""
    body = line.strip()
    if not body or body[0] == "#":
        return None
    indent = line[: len(line) - len(line.lstrip())]
    if body[0] in "%!":
        return indent + _escape_call(body, assigned=False)
    assigned = _ASSIGNED.match(body)
    if assigned:
        target = assigned.group(1)
        return f"{indent}{target} = {_escape_call(body[assigned.end() :], assigned=True)}"
    if "?" in body:
        asked = _HELP.fullmatch(body)
        if asked and (asked.group(1) or asked.group(3)):  # `??` too: help() has no more
            return f"{indent}{_HERE}inspect({asked.group(2)!r})"
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


class SList(list[str]):
    """A shell command's output lines, with IPython's ways to join them."""

    @property
    def s(self) -> str:
        """The lines joined by spaces."""
        return " ".join(self)

    @property
    def n(self) -> str:
        """The lines joined by newlines."""
        return "\n".join(self)

    @property
    def l(self) -> list[str]:  # noqa: E743 (IPython's name)
        """The lines as a plain list."""
        return list(self)

    @property
    def p(self) -> list[Any]:
        """The lines that name existing files, as paths."""
        from pathlib import Path

        return [Path(line) for line in self if os.path.exists(line)]

    def grep(self, pattern: str | Callable[[str], bool], prune: bool = False) -> SList:
        """The lines matching `pattern` (a regex or a predicate); `prune` drops them instead."""
        test = pattern if callable(pattern) else re.compile(pattern).search
        return SList(line for line in self if bool(test(line)) != prune)


def system(command: str) -> None:
    """`!cmd`: run it in the shell, its output the cell's as any subprocess's."""
    frame = sys._getframe(1)
    frame.f_globals["_exit_code"] = _shell(_expand(command, frame))


def getoutput(command: str) -> SList:
    """`x = !cmd`: its output lines (stderr with them, as IPython's pseudo-terminal gives)."""
    return _output_lines(_expand(command, sys._getframe(1)))


def _output_lines(command: str) -> SList:
    import subprocess

    _flush()
    done = subprocess.run(_with_pip(command), shell=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, check=False)
    return SList(done.stdout.decode(errors="replace").splitlines())


def line_magic(name: str, line: str) -> Any:
    """`%name line`, run in the caller's namespace."""
    magic = _LINE_MAGICS.get(name)
    if magic is None:
        raise UsageError(f"Line magic function `%{name}` is not supported by pyrelune")
    return magic(line, sys._getframe(1))


def cell_magic(name: str, line: str, body: str, first_line: int) -> Any:
    """`%%name line` and the cell's other lines (`body`, from line `first_line` + 1)."""
    magic = _CELL_MAGICS.get(name)
    if magic is None:
        raise UsageError(f"Cell magic `%%{name}` is not supported by pyrelune")
    return magic(line, _Body(body, first_line, sys._getframe(1)))


def inspect(target: str) -> None:
    """`obj?` and `obj??`: the object's help as `help(obj)` prints it, with no pager."""
    _help(target, sys._getframe(1))


def _help(target: str, frame: FrameType) -> None:
    try:
        obj = eval(target, frame.f_globals, frame.f_locals)
    except Exception:
        print(f"Object `{target}` not found.")
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

    code, result = cell.compile_cell("\n" * first_line + source, frame.f_code.co_filename)
    return cell._execute(code, result, frame.f_globals)


# Line magics -------------------------------------------------------------------------


def _matplotlib(line: str, frame: FrameType) -> None:
    """Any `%matplotlib` form: figures are shown as pyrelune shows them.

    A backend that draws in windows is replaced by pyrelune's, as IPython's
    `inline` replaces it; one without windows is shown already and stays.
    """
    from pyrelune.worker.display import MATPLOTLIB_BACKEND

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
    the formats figures are drawn in, as IPython's inline backend takes them."""
    target, equals, value = line.partition("=")
    if target.strip() not in ("InlineBackend.figure_formats", "InlineBackend.figure_format"
                              ) or not equals:
        raise UsageError(f"%config {line.strip()}: only InlineBackend.figure_formats = ... "
                         "is configurable here")
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
    return f"{value:.{precision}g} {('s', 'ms', 'µs', 'ns')[order]}"


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


_TIMEIT_OPTION = re.compile(r"-([nrp])\s*(\d+)\s*|-([qotc]+)\s*")


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

    frame.f_globals["_exit_code"] = _shell(
        f"{shlex.quote(sys.executable)} -m pip {_expand(line, frame)}")
    print("Note: you may need to restart the kernel to use updated packages.")


def _accepted(line: str, frame: FrameType) -> None:
    """`%autoreload`, `%aimport`: accepted; each cell imports what it imports."""


def _load_ext(line: str, frame: FrameType) -> None:
    """`%load_ext autoreload` is accepted; other extensions need IPython itself."""
    for name in line.split():
        if name != "autoreload":
            raise UsageError(f"%load_ext {name}: IPython extensions are not supported here "
                             "(only autoreload is accepted)")


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


def _sx(line: str, frame: FrameType) -> SList:
    return _output_lines(_expand(line, frame))


_LINE_MAGICS: dict[str, Callable[[str, FrameType], Any]] = {
    "aimport": _accepted,
    "autoreload": _accepted,
    "cd": _cd,
    "config": _config,
    "env": _env,
    "load_ext": _load_ext,
    "matplotlib": _matplotlib,
    "pdoc": _pinfo,
    "pinfo": _pinfo,
    "pinfo2": _pinfo,
    "pip": _pip,
    "pwd": _pwd,
    "reload_ext": _load_ext,
    "sx": _sx,
    "time": _time,
    "timeit": _timeit,
    "xmode": _xmode_magic,
}


# Cell magics -------------------------------------------------------------------------


def _cell_time(line: str, body: _Body) -> Any:
    """`%%time`: the cell once, then its times; its final expression is the cell's."""
    return _timed(body.run)


def _cell_timeit(line: str, body: _Body) -> TimeitResult | None:
    return _timeit(line, body.frame, body.source)


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

        _flush()
        self.saved = sys.stdout, sys.stderr, display._sink
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

            display._sink = keep

    def __exit__(self, *exc: object) -> None:
        from pyrelune.worker import display

        sys.stdout, sys.stderr, display._sink = self.saved


_CELL_MAGICS: dict[str, Callable[[str, _Body], Any]] = {
    "capture": _capture,
    "time": _cell_time,
    "timeit": _cell_timeit,
    "writefile": _writefile,
}


# Helpers -----------------------------------------------------------------------------


def _own(name: str) -> Any:
    """A standard module as the runtime's own: a cell's folder may hold one of that name."""
    from pyrelune.worker import importhooks

    return importhooks.import_own(name)


def _flush() -> None:
    """What the cell printed goes out before what a subprocess writes."""
    from pyrelune.worker.runtime import flush_output

    flush_output()


def _fd(stream: Any) -> int | None:
    try:
        return int(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None


def _shell(command: str) -> int:
    """Run `command` with /bin/sh; its exit status.

    Its output goes straight to the capture pipes, live, as any
    subprocess's; where the cell redirected sys.stdout or sys.stderr
    (`%%capture`, `contextlib.redirect_stdout`) it goes there instead.
    """
    import subprocess

    _flush()
    command = _with_pip(command)
    piped = [subprocess.PIPE if _fd(s) != fd else None
             for s, fd in ((sys.stdout, 1), (sys.stderr, 2))]
    if piped == [None, None]:
        return subprocess.call(command, shell=True)
    done = subprocess.run(command, shell=True, stdout=piped[0], stderr=piped[1], check=False)
    for stream, data in ((sys.stdout, done.stdout), (sys.stderr, done.stderr)):
        if data:
            stream.write(data.decode(errors="replace"))
    return done.returncode


def _with_pip(command: str) -> str:
    """`pip ...` as pip of the interpreter that runs the cell, whatever PATH finds first."""
    word, _, rest = command.strip().partition(" ")
    if word not in ("pip", "pip3"):
        return command
    import shlex

    return f"{shlex.quote(sys.executable)} -m pip {rest}"


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

