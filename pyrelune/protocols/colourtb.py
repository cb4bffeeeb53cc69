"""A cell's traceback as Jupyter shows it: a list of lines, coloured with ANSI escapes.

The worker trims the traceback to the user's frames and formats it as Python
prints it (see `worker.cell`); Jupyter front ends show `error.traceback`
through an ANSI renderer, as IPython colours it: the exception's name in
red, files and line numbers in green, function names in cyan.
"""

from __future__ import annotations

from pyrelune.wire.events import TRACEBACK_PARTS

RED, GREEN, CYAN, BOLD, RESET = "\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[1m", "\x1b[0m"
_FILE = '  File "'


def coloured(traceback: str, ename: str, evalue: str) -> list[str]:
    """The lines of `traceback` (or `ename: evalue` without one), coloured.

    One the worker formatted already (IPython's shell: `TRACEBACK_PARTS`) is its parts:
    none, where IPython said the error its own way (a `UsageError`, on stderr).
    """
    if traceback.startswith(TRACEBACK_PARTS):
        return traceback[1:].split(TRACEBACK_PARTS) if len(traceback) > 1 else []
    text = traceback.rstrip("\n") or (f"{ename}: {evalue}" if ename else evalue)
    return [_line(line, ename) for line in text.split("\n")]


def _line(line: str, ename: str) -> str:
    if line.startswith(_FILE):
        return _frame(line)
    if line.startswith(("Traceback (most recent call last):", "During handling of",
                        "The above exception was")):
        return f"{RED}{line}{RESET}"
    name, colon, rest = line.partition(":")
    if colon and name and not name[0].isspace() and (
            name == ename or name.replace(".", "").replace("_", "").isalnum()):
        return f"{RED}{BOLD}{name}{RESET}:{rest}"
    return line


def _frame(line: str) -> str:
    """`  File "f.py", line 3, in g`, with the file, line and function coloured."""
    path, quote, rest = line[len(_FILE):].partition('", line ')
    if not quote:
        return line
    number, comma, function = rest.partition(", in ")
    text = f'{_FILE}{GREEN}{path}{RESET}", line {GREEN}{number}{RESET}'
    return text + (f", in {CYAN}{function}{RESET}" if comma else "")
