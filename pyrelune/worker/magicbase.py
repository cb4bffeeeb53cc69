"""What every module of magics shares: their error, the cell's values in their arguments,
a body run as the cell itself would run it, and the runtime's own imports.

It imports none of them: `magics` (the table every magic is reached from)
imports the modules of its magics, and they import this.
"""

from __future__ import annotations

import re

from pyrelune import PyreluneError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any

#: What a shell command or a magic's argument takes from the namespace, as IPython
#: expands it: `$name`, `{expression}`, `$$` for a dollar, `{{` and `}}` for braces.
_EXPANDED = re.compile(r"\$\$|\{\{|\}\}|\$([A-Za-z_]\w*)|\{([^{}]+)\}")


class UsageError(PyreluneError):
    """A magic used in a way pyrelune does not run (IPython's name for it)."""


class Body:
    """A cell magic's body, run as the cell itself would run it."""

    def __init__(self, source: str, first_line: int, frame: FrameType) -> None:
        self.source = source
        self.first_line = first_line
        self.frame = frame

    def run(self) -> Any:
        """Run the body; its final expression's value, or None."""
        return run_source(self.source, self.first_line, self.frame)


def run_source(source: str, first_line: int, frame: FrameType) -> Any:
    """Run `source`, starting on cell line `first_line` + 1, as a cell: magics and all."""
    from pyrelune.worker import cell

    code, result = cell.compile_cell("\n" * first_line + source, frame.f_code.co_filename,
                                     frame.f_globals)
    return cell.execute(code, result, frame.f_globals)


def own(name: str) -> Any:
    """A standard module as the runtime's own: a cell's folder may hold one of that name."""
    from pyrelune.worker import importhooks

    return importhooks.import_own(name)


def shell() -> Any:
    """`shellcmd`, loaded when a magic first runs a command."""
    from pyrelune.worker import shellcmd

    return shellcmd


def expand(text: str, frame: FrameType) -> str:
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
