"""Console prompts pasted with the code (`>>> `, `... `, `In [3]: `, `   ...: `), taken off.

IPython's input transformers do this before a cell compiles, so code copied
from a console session or from documentation runs as it is. The rules are
theirs: Python's prompts are stripped when any line outside a triple-quoted
string starts with `>>>` (a line inside such a string keeps its prompt, and
the stripped lines are dedented, as doctests may be indented); IPython's
when the first line starts with `In [N]: ` or the second with either of its
prompts. Lines that match no prompt (a printed result pasted along) stay.
`cell.compile_cell` sends a cell here only when its text holds `>>>` or `In [`.
"""

from __future__ import annotations

import re

#: Python's first prompt, and its prompts as they are taken off (one space after them).
_PYTHON_FIRST = re.compile(r"\s*>>>")
_PYTHON_PS1 = re.compile(r"\s*>>>[ \t]?")
_PYTHON_PS2 = re.compile(r"\s*\.\.\.[ \t]?")
#: IPython's prompts: `In [N]: ` (after a vi mode's `[nav] `/`[ins] `), `...: `.
_IPYTHON = re.compile(r"((\[nav\]|\[ins\])? )?In \[\d+\]: |\s*\.{3,}: ?")
_IPYTHON_FIRST = re.compile(r"((\[nav\]|\[ins\])? )?In \[\d+\]: ")
_TRIPLE = re.compile(r"(?<!\\)(\"\"\"|''')")
_STRING_PREFIX = re.compile(r"(?i)[rubf]*")


def strip(source: str) -> str | None:
    """`source` without the console prompts it was pasted with, or None if it has none."""
    lines = source.split("\n")
    stripped = _ipython(_python(lines))
    return None if stripped == lines else "\n".join(stripped)


def _ipython(lines: list[str]) -> list[str]:
    if _IPYTHON_FIRST.match(lines[0]) or (len(lines) > 1 and _IPYTHON.match(lines[1])):
        return [_IPYTHON.sub("", line, count=1) for line in lines]
    return lines


def _python(lines: list[str]) -> list[str]:
    """Python's prompts off, each run of stripped lines dedented; lines in a string kept."""
    import textwrap

    in_string = _in_strings(lines)
    pairs = list(zip(lines, in_string, strict=True))
    if not any(not kept and _PYTHON_FIRST.match(line) for line, kept in pairs):
        return lines
    out: list[str] = []
    run: list[str] = []
    for line, kept in pairs:
        if kept:
            out += textwrap.dedent("\n".join(run)).split("\n") if run else []
            run = []
            out.append(line)
            continue
        bare = _PYTHON_PS1.sub("", line, count=1) if _PYTHON_PS1.match(line) else (
            _PYTHON_PS2.sub("", line, count=1))
        run.append(bare)
    out += textwrap.dedent("\n".join(run)).split("\n") if run else []
    return out


def _in_strings(lines: list[str]) -> list[bool]:
    """For each line, whether it is inside a triple-quoted string begun by unprompted code.

    Such a string's `>>>` lines are its text (a docstring's example); a
    string begun on a prompted line is pasted code like the rest.
    """
    kept: list[bool] = []
    open_quote: str | None = None
    keep = False
    for line in lines:
        kept.append(open_quote is not None and keep)
        for match in _TRIPLE.finditer(line):
            quote = match.group(1)
            if open_quote is None:
                open_quote = quote
                before = line[: match.start()]
                bare = _PYTHON_PS2.sub("", _PYTHON_PS1.sub("", before, count=1), count=1)
                keep = bare == before and bool(_STRING_PREFIX.fullmatch(bare.strip()))
                kept[-1] = keep
            elif quote == open_quote:
                open_quote = None
                keep = False
    return kept
