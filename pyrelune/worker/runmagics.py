"""`%run`, `%prun` and `%debug`: a script run as the cell's, a profile, a post-mortem.

`%run script.py args` runs the file as `python script.py args` would (its
`__name__` is `"__main__"`, `sys.argv` its arguments), in a namespace of its
own whose names are then the cell's, as IPython does; `-i` runs it in the
cell's namespace itself, `-t` times it, `-n` does not name it `__main__`,
`-e` ignores its `sys.exit()`, `-m` runs a module. `%prun` profiles a
statement with cProfile and prints the table IPython pages. `%debug` is a
post-mortem of the last error with pdb, whose prompts are `input()`'s: only
a host that answers `input()` (the rpc kernel) can take part; elsewhere it
is a UsageError that says so.
"""

from __future__ import annotations

import os
import sys

from pyrelune.worker.magicbase import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Any

_RUN_FLAGS = frozenset("intem")
_RUN_UNSUPPORTED = {"d": "the debugger from the first line", "p": "profiling (use %prun)",
                    "G": "no glob expansion"}


def run(line: str, frame: FrameType) -> None:
    """`%run [-i] [-t [-N n]] [-n] [-e] (script.py | -m module) [args]`."""
    import shlex

    words = shlex.split(line)
    flags: set[str] = set()
    repeat = 1
    while words and words[0].startswith("-") and len(words[0]) > 1:
        word = words.pop(0)
        if word.startswith("-N"):
            repeat = _count(word[2:] or (words.pop(0) if words else ""))
            continue
        for letter in word[1:]:
            if letter in _RUN_UNSUPPORTED:
                raise UsageError(f"%run -{letter} ({_RUN_UNSUPPORTED[letter]}) is not "
                                 "supported by pyrelune")
            if letter not in _RUN_FLAGS:
                raise UsageError(f"%run: option -{letter} not recognized")
            flags.add(letter)
        if "m" in flags:
            break
    if not words:
        raise UsageError("%run: which file? (%run script.py [args])")
    target, args = words[0], words[1:]
    path = _module_file(target) if "m" in flags else _script_file(target)
    with open(path, encoding="utf-8") as file:
        source = file.read()
    code = compile(source, path, "exec", dont_inherit=True)
    import builtins

    namespace: dict[str, Any] = frame.f_globals if "i" in flags else {"__builtins__": builtins}
    saved_name = namespace.get("__name__")
    namespace.update({"__name__": "__main__" if "n" not in flags else _stem(path),
                      "__file__": path})
    saved_argv = sys.argv
    sys.argv = [path, *args]
    try:
        timed = _timed if "t" in flags else _untimed
        timed(lambda: _exec(code, namespace, "e" in flags), repeat)
    finally:
        sys.argv = saved_argv
        if namespace is frame.f_globals:
            namespace["__name__"] = saved_name
    if namespace is not frame.f_globals:
        frame.f_globals.update({name: value for name, value in namespace.items()
                                if not (name.startswith("__") and name.endswith("__"))})


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"%run -N takes a number of runs, not {text!r}")
    return int(text)


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _script_file(name: str) -> str:
    path = os.path.expanduser(name)
    if not os.path.isfile(path) and os.path.isfile(f"{path}.py"):
        path = f"{path}.py"
    if not os.path.isfile(path):
        raise UsageError(f"File {name!r} not found.")
    return os.path.abspath(path)


def _module_file(name: str) -> str:
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        raise UsageError(f"%run -m: no module named {name!r} with a source file")
    return spec.origin


def _exec(code: Any, namespace: dict[str, Any], ignore_exit: bool) -> None:
    try:
        exec(code, namespace)
    except SystemExit as exc:
        if ignore_exit or exc.code in (None, 0):
            return
        raise


def _untimed(run: Callable[[], None], repeat: int) -> None:
    for _ in range(repeat):
        run()


def _timed(run: Callable[[], None], repeat: int) -> None:
    """Run `repeat` times, then IPython's `%run -t` report."""
    import resource
    import time

    before, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    _untimed(run, repeat)
    after = resource.getrusage(resource.RUSAGE_SELF)
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    print("\nIPython CPU timings (estimated):")
    if repeat == 1:
        print(f"  User   : {user:10.2f} s.")
        print(f"  System : {system:10.2f} s.")
    else:
        print("Total runs performed:", repeat)
        print(f"  Times  : {'Total':>10} {'Per run':>10}")
        print(f"  User   : {user:10.2f} s, {user / repeat:10.2f} s.")
        print(f"  System : {system:10.2f} s, {system / repeat:10.2f} s.")
    print(f"Wall time: {time.perf_counter() - wall:10.2f} s.")


#: One `%prun` option: a letter with its value, or a flag.
_PRUN_OPTION = r"-([slTD])\s*(\S+)\s*|-([qr])(?:\s+|$)"


def prun(line: str, frame: FrameType, body: str | None = None) -> Any:
    """`%prun [-s key] [-l limit] [-q] [-r] statement` (or `%%prun [options]` and the body)."""
    import cProfile
    import io
    import pstats
    import re

    options: dict[str, list[str]] = {}
    rest = line.strip()
    while (option := re.match(_PRUN_OPTION, rest)) is not None:
        letter, value, flag = option.groups()
        if flag:
            options[flag] = []
        else:
            options.setdefault(letter, []).append(value)
        rest = rest[option.end() :]
    if {"T", "D"} & set(options):
        raise UsageError("%prun -T and -D (saving to a file) are not supported by pyrelune")
    profile = cProfile.Profile()
    try:
        profile.runctx(rest if body is None else body, frame.f_globals, frame.f_locals)
    except SystemExit:
        pass
    stream = io.StringIO()
    stats = pstats.Stats(profile, stream=stream)
    stats.sort_stats(*(options.get("s") or ["time"]))
    if "q" not in options:
        stats.print_stats(*[_limit(text) for text in options.get("l", [])])
        print(stream.getvalue().rstrip())
    return stats if "r" in options else None


def _limit(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def debug(line: str, frame: FrameType) -> None:
    """`%debug`: pdb's post-mortem of the last error, if the host can answer its prompts."""
    import builtins

    from pyrelune.worker.runtime import NoInput

    if line.strip():
        raise UsageError("%debug runs after an error only (%debug STATEMENT is not supported "
                         "by pyrelune)")
    if isinstance(builtins.input, NoInput):
        raise UsageError(f"%debug needs answers to its prompts, but {builtins.input.message}")
    tb = getattr(sys, "last_traceback", None)
    if tb is None:
        print("No traceback has been produced, nothing to debug.")
        return
    import pdb

    pdb.post_mortem(tb)
