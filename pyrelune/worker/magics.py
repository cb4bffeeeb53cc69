"""What the lines `ipysyntax` translates call: IPython's magics, shell escapes and `obj?`.

Every magic is reached from the two tables here, pyrelune's and then an
extension's (see `extensions`). Shell commands are `shellcmd`'s; `%time`
and `%timeit` are `timemagics`', `%%capture` `capturemagic`'s, `%run`,
`%prun` and `%debug` `runmagics`', `%who` and friends `namespacemagics`',
each loaded when first used. The calls run where the line was: they find
the cell's namespace in their caller's frame, as IPython's magics find
the user's.
"""

from __future__ import annotations

import os
import sys

from pyrelune.worker.magicbase import Body, UsageError, expand, own, shell

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Any


# What the translated lines call ----------------------------------------------------


def system(command: str) -> None:
    """`!cmd`: run it as a terminal would, its output the cell's (see `shellcmd`)."""
    frame = sys._getframe(1)
    frame.f_globals["_exit_code"] = shell().terminal(expand(command, frame))


def getoutput(command: str) -> Any:
    """`x = !cmd`: its output lines (stderr with them), as an SList."""
    return shell().output_lines(expand(command, sys._getframe(1)))


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
    return added(expand(line, frame))


def cell_magic(name: str, line: str, body: str, first_line: int) -> Any:
    """`%%name line` and the cell's other lines (`body`, from line `first_line` + 1)."""
    return run_cell_magic(name, line, body, sys._getframe(1), first_line)


def run_cell_magic(name: str, line: str, body: str, frame: FrameType,
                   first_line: int = 0) -> Any:
    """`%%name line` with `body` in `frame`'s namespace: pyrelune's magic, or an extension's."""
    magic = _CELL_MAGICS.get(name)
    if magic is not None:
        return magic(line, Body(body, first_line, frame))
    added = _extension_magic("cell", name)
    if added is None:
        raise UsageError(f"Cell magic `%%{name}` is not supported by pyrelune")
    return added(expand(line, frame), body)


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
        from pyrelune.worker.display import page
        from pyrelune.worker.introspect import describe

        page({"text/plain": describe(target, obj, detail)})
        return
    pydoc = own("pydoc")
    text = pydoc.render_doc(obj, "Help on %s:", renderer=pydoc.plaintext)
    sys.stdout.write(text if text.endswith("\n") else f"{text}\n")


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


def _pwd(line: str, frame: FrameType) -> str:
    return os.getcwd()


_previous_dir: list[str] = []


def _cd(line: str, frame: FrameType) -> None:
    """`%cd [-q] [dir|-]`: change the current directory and say which it is now."""
    target = expand(line, frame).strip()
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
    line = expand(line, frame).strip()
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

    frame.f_globals["_exit_code"] = shell().terminal(
        f"{shlex.quote(sys.executable)} -m pip {expand(line, frame)}")
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
    return shell().output_lines(expand(line, frame))


def _elsewhere(module: str, function: str) -> Callable[..., Any]:
    """A magic defined in another module, imported (as the runtime's own) when first used."""

    def magic(*args: Any) -> Any:
        from pyrelune.worker import importhooks

        return getattr(importhooks.import_own(module), function)(*args)

    return magic


def _of_extensions(function: str) -> Callable[[str, FrameType], Any]:
    """`%load_ext` and friends (see `extensions`): the extension's shell runs magics here."""

    def magic(line: str, frame: FrameType) -> Any:
        from pyrelune.worker import extensions

        return getattr(extensions, function)(line, frame, sys.modules[__name__])

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
        rest = expand(line, frame)
        full = command.replace("%l", rest) if "%l" in command else f"{command} {rest}".strip()
        frame.f_globals["_exit_code"] = shell().terminal(full)

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
    "debug": _elsewhere("pyrelune.worker.runmagics", "debug"),
    "env": _env,
    "load_ext": _of_extensions("load"),
    "lsmagic": _lsmagic,
    "matplotlib": _matplotlib,
    "pdoc": _pinfo,
    "pinfo": _pinfo,
    "pinfo2": _pinfo,
    "pip": _pip,
    "prun": _elsewhere("pyrelune.worker.runmagics", "prun"),
    "pwd": _pwd,
    "reload_ext": _of_extensions("reload"),
    "run": _elsewhere("pyrelune.worker.runmagics", "run"),
    "sx": _sx,
    "time": _elsewhere("pyrelune.worker.timemagics", "line_time"),
    "timeit": _elsewhere("pyrelune.worker.timemagics", "line_timeit"),
    "unload_ext": _of_extensions("unload"),
    "who": _of_namespace("who"),
    "who_ls": _of_namespace("who_ls"),
    "whos": _of_namespace("whos"),
    "xmode": _xmode_magic,
}


# Cell magics -------------------------------------------------------------------------


def _cell_prun(line: str, body: Body) -> Any:
    from pyrelune.worker import runmagics

    return runmagics.prun(line, body.frame, body.source)


def _writefile(line: str, body: Body) -> None:
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


#: The programs IPython has a cell magic of their own for: `%%bash` is `%%script bash`.
SCRIPT_PROGRAMS = ("sh", "bash", "perl", "ruby", "python", "python2", "python3", "pypy")
_SCRIPT_VALUES = ("--out", "--err", "--proc")
_SCRIPT_FLAGS = ("--bg", "--no-raise-error")


def _script(line: str, body: Body, name: str = "script") -> None:
    """`%%script [--bg] [--out NAME] [--err NAME] [--proc NAME] [--no-raise-error] PROG ARGS`.

    As IPython's: the body on the program's stdin, a status other than 0 a
    CalledProcessError (unless `--no-raise-error`); `--out`/`--err` keep a
    stream as text in a variable (with `--bg`, the pipe to read).
    """
    import shlex
    import shutil
    import subprocess

    shellcmd = shell()
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
        child = shellcmd.start_background(argv, feed)
        for stream in ("out", "err"):
            pipe = getattr(child, f"std{stream}")
            if stream in values:
                namespace[values[stream]] = pipe
            else:
                pipe.close()
        if "proc" in values:
            namespace[values["proc"]] = child
        return
    status, out, err = shellcmd.run_script(argv, feed, ("out" in values, "err" in values))
    for stream, text in (("out", out), ("err", err)):
        if stream in values:
            namespace[values[stream]] = text
    if status != 0 and "--no-raise-error" not in flags:
        raise subprocess.CalledProcessError(status, feed)


def _named_script(program: str) -> Callable[[str, Body], None]:
    def run(line: str, body: Body) -> None:
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


def _shown_as(name: str) -> Callable[[str, Body], None]:
    mime, kind = _SHOWN_AS[name]

    def show(line: str, body: Body) -> None:
        from pyrelune.worker.display import display

        display({mime: body.source, "text/plain": f"<IPython.core.display.{kind} object>"},
                raw=True)

    show.__doc__ = f"`%%{name}`: the body displayed as {mime}, as IPython's {kind}."
    return show


_CELL_MAGICS: dict[str, Callable[[str, Body], Any]] = {
    **{program: _named_script(program) for program in SCRIPT_PROGRAMS},
    **{name: _shown_as(name) for name in _SHOWN_AS},
    "script": _script,
    "capture": _elsewhere("pyrelune.worker.capturemagic", "capture"),
    "prun": _cell_prun,
    "file": _writefile,  # IPython's alias for it
    "time": _elsewhere("pyrelune.worker.timemagics", "cell_time"),
    "timeit": _elsewhere("pyrelune.worker.timemagics", "cell_timeit"),
    "writefile": _writefile,
}
