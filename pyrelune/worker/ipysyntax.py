"""IPython's syntax in a cell (magics, shell escapes, `obj?`), made plain Python: text only.

Only a cell that does not compile comes here, or one with a line that
names a magic without its `%` (IPython's automagic: `ls -l`, `pwd`; see
`cell.compile_cell`), so a plain cell never pays for it. `translate`
turns each line of IPython syntax into one call of `magics`', line for
line, so tracebacks keep their line numbers and quote the line as the
user wrote it; a line that starts inside a string, a bracket or a
backslash continuation is Python's and left as it is, and so is any `%`
or `!` in a string or a comment. The calls run where the line was: they
find the cell's namespace in their caller's frame, as IPython's magics
find the user's. A console's completeness check translates too (see
`completeness`), and runs nothing.
"""

from __future__ import annotations

import re

from pyrelune.worker import importhooks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    #: What `compile_cell` makes of a cell (`cell.Compiled`): passed back as it is.
    Compiled = TypeVar("Compiled")

#: What a translated line calls: `magics`, reached whatever the cell imported or defined, and
#: imported (as the runtime's own) by the first line that runs: translating loads none of it.
_HERE = "__import__('pyrelune').worker.importhooks.import_own('pyrelune.worker.magics')."
#: `x = !cmd`, `a, b = %magic args`: IPython's assignment of an escape's value.
_ASSIGNED = re.compile(r"([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*(?=[!%])")
#: `obj?`, `?obj`, `obj??`, `??obj`: the object's help.
_HELP = re.compile(r"(\?\??)?\s*([A-Za-z_][\w.]*)\s*(\?\??)?")


def translate(source: str, automagic: frozenset[str] = frozenset()) -> str | None:
    """`source` with its IPython lines made calls of `magics`', or None if it has none.

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
    warnings = importhooks.import_own("warnings")
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
