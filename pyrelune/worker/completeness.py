"""Whether a cell is ready to run: Jupyter's `is_complete_request`, as a console decides it.

A console (jupyter console, qtconsole) asks after each Enter whether to run
what was typed or to open another line, and how far to indent it. The answer
is Python's own interactive compiler's (`codeop`, as the REPL uses it), on
the cell with IPython's syntax (magics, `!cmd`) made Python first, with
top-level `await` allowed as cells allow it. In the worker (a `Query`), where
that syntax is translated. As in IPython, a block whose
last line is indented goes on until an empty line ends it.
"""

from __future__ import annotations

import codeop
import warnings

from pyrelune.worker.ipysyntax import translate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

COMPLETE, INCOMPLETE, INVALID = "complete", "incomplete", "invalid"
_TOP_LEVEL_AWAIT = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
#: What opens a block whose next line is indented one step more.
_STEP = "    "


def is_complete(args: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
    """is_complete_reply's content: complete, invalid, or incomplete with an indent."""
    status, indent = completeness(args["code"])
    return {"status": status, "indent": indent} if status == INCOMPLETE else {"status": status}


def completeness(code: str) -> tuple[str, str]:
    """`(status, indent)`: `complete`, `incomplete` with the next line's indent, or `invalid`."""
    if not code.strip():
        return COMPLETE, ""
    lines = code.replace("\r\n", "\n").split("\n")
    if code.lstrip().startswith("%%"):  # a cell magic's body ends with an empty line
        return (COMPLETE, "") if len(lines) > 1 and not lines[-1].strip() else (INCOMPLETE, "")
    source = translate(code) or code
    if source.rstrip("\n").endswith("\\"):
        return INCOMPLETE, _indent(lines)
    compiler = codeop.CommandCompiler()
    compiler.compiler.flags |= _TOP_LEVEL_AWAIT
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invalid escape is the cell's to warn about
            compiled = compiler(source, "<input>", "exec")
    except (SyntaxError, ValueError, OverflowError):
        return INVALID, ""
    if compiled is None or (lines[-1][:1].isspace() and lines[-1].strip()):
        return INCOMPLETE, _indent(lines)  # an indented last line: the block may go on
    return COMPLETE, ""


def _indent(lines: list[str]) -> str:
    """The indent of the next line: the last line's, one step more after a `:`."""
    last = next((line for line in reversed(lines) if line.strip()), "")
    indent = last[: len(last) - len(last.lstrip())]
    code = last.split("#", 1)[0].rstrip()
    return indent + _STEP if code.endswith(":") else indent
