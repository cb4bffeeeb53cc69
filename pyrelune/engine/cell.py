"""Compile and run one cell in a namespace, the way a script runs.

Runs inside the worker. The source is parsed with the compiler's own AST flag
(no `ast` module import on the hot path); a final bare expression is split off
and evaluated separately so that its value can be displayed. Top-level `await`
is compiled in, and only a cell that uses it pays for `asyncio`.
"""

from __future__ import annotations

import _ast
import sys

from pyrelune.engine.events import CellError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import CodeType, TracebackType
    from typing import Any

_ONLY_AST = 0x400  # ast.PyCF_ONLY_AST
_TOP_LEVEL_AWAIT = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE

# Sources of the cells this process ran, by filename, so tracebacks can quote
# them. Handed to `linecache` only once something imports it (an error, or the
# cell itself), because importing it up front costs start-up time.
_sources: dict[str, str] = {}
_PACKAGE_DIR = __file__[: -len("engine/cell.py")]


def remember_source(filename: str, source: str) -> None:
    """Make `filename`'s lines available to tracebacks and warnings."""
    _sources[filename] = source
    linecache = sys.modules.get("linecache")
    if linecache is not None:
        _register(linecache, filename, source)


def _register(linecache: Any, filename: str, source: str) -> None:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def register_sources() -> None:
    """Hand the cells' sources to `linecache`: a traceback is about to quote them."""
    import linecache

    for filename, source in _sources.items():
        if filename not in linecache.cache:
            _register(linecache, filename, source)


def run_cell(
    source: str,
    filename: str,
    namespace: dict[str, Any],
    show_result: Callable[[Any], None],
) -> CellError | None:
    """Run `source` in `namespace`; None on success, else what went wrong.

    `show_result` receives the final expression's value when it is not None.
    `SystemExit(0)` or `SystemExit(None)` ends the cell successfully.
    """
    remember_source(filename, source)
    try:
        try:
            body, final = _compile(source, filename)
        except (SyntaxError, ValueError) as exc:
            return syntax_error(exc, filename)
        try:
            value = _execute(body, final, namespace)
            if value is not None:
                namespace["_"] = value
                show_result(value)
        finally:
            if "matplotlib.pyplot" in sys.modules:  # figures the cell left open are shown
                from pyrelune.engine.mplbackend import show_open_figures

                show_open_figures()
    except SystemExit as exc:
        if exc.code is None or exc.code == 0:
            return None
        return exception_error(exc, filename)
    except BaseException as exc:
        return exception_error(exc, filename)
    return None


def _compile(source: str, filename: str) -> tuple[CodeType, CodeType | None]:
    flags = _TOP_LEVEL_AWAIT
    tree = compile(source, filename, "exec", flags | _ONLY_AST)
    final = None
    statements = tree.body
    if statements and isinstance(statements[-1], _ast.Expr):
        last = statements[-1]
        if not _followed_by_semicolon(source, last):
            statements.pop()
            final = compile(_ast.Expression(last.value), filename, "eval", flags)
    return compile(tree, filename, "exec", flags), final


def _followed_by_semicolon(source: str, node: Any) -> bool:
    """True for `x;` as the last statement: IPython's way to hide a result."""
    line = source.splitlines()[node.end_lineno - 1]
    rest = line.encode()[node.end_col_offset :].decode(errors="replace")
    return bool(rest.lstrip().startswith(";"))


def _execute(body: CodeType, final: CodeType | None, namespace: dict[str, Any]) -> Any:
    if not (body.co_flags | (final.co_flags if final else 0)) & _CO_COROUTINE:
        exec(body, namespace)
        return eval(final, namespace) if final is not None else None
    return _execute_async(body, final, namespace)


def _execute_async(body: CodeType, final: CodeType | None, namespace: dict[str, Any]) -> Any:
    """Top-level await: body and final expression share one event loop."""
    import asyncio

    loop = asyncio.new_event_loop()
    try:
        pending = eval(body, namespace)
        if body.co_flags & _CO_COROUTINE:
            loop.run_until_complete(pending)
        if final is None:
            return None
        value = eval(final, namespace)
        if final.co_flags & _CO_COROUTINE:
            value = loop.run_until_complete(value)
        return value
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def syntax_error(exc: SyntaxError | ValueError, filename: str) -> CellError:
    """A cell that does not compile; line and column point into the cell."""
    import traceback

    register_sources()
    if isinstance(exc, SyntaxError):
        details = "".join(traceback.format_exception_only(type(exc), exc))
        return CellError("python_syntax_error", type(exc).__name__, exc.msg or "",
                         details, exc.lineno, exc.offset)
    # Before 3.12 a NUL byte in the source is a ValueError from compile().
    return CellError("python_syntax_error", "SyntaxError", str(exc), f"SyntaxError: {exc}\n")


def exception_error(exc: BaseException, filename: str) -> CellError:
    """An exception raised while the cell ran, traceback trimmed to the cell's frames."""
    import traceback

    register_sources()
    tb = _trim(exc.__traceback__)
    line = _last_cell_line(tb, filename)
    details = "".join(traceback.format_exception(type(exc), exc, tb))
    if isinstance(exc, KeyboardInterrupt):
        return CellError("interrupted", "KeyboardInterrupt", str(exc) or "Execution interrupted",
                         details, line)
    if isinstance(exc, SystemExit):
        status = exc.code if isinstance(exc.code, int) else None
        evalue = f"exit status {status}" if status is not None else str(exc.code)
        return CellError("python_exit", "SystemExit", evalue, details, line)
    code = "python_syntax_error" if isinstance(exc, SyntaxError) else "python_runtime_error"
    column = exc.offset if isinstance(exc, SyntaxError) else None
    return CellError(code, type(exc).__name__, str(exc), details, line, column)


def _trim(tb: TracebackType | None) -> TracebackType | None:
    """The traceback without the runtime's frames.

    Before the first cell frame everything is the runtime's (or asyncio's);
    after it, frames of pyrelune itself (its `input()`, its SIGINT handler)
    are dropped too, so what is left is the user's code and the libraries it
    called.
    """
    first = tb
    while first is not None and first.tb_frame.f_code.co_filename not in _sources:
        first = first.tb_next
    if first is None:
        return tb
    kept = [first]
    node = first.tb_next
    while node is not None:
        if not node.tb_frame.f_code.co_filename.startswith(_PACKAGE_DIR):
            kept[-1].tb_next = node
            kept.append(node)
        node = node.tb_next
    kept[-1].tb_next = None
    return first


def _last_cell_line(tb: TracebackType | None, filename: str) -> int | None:
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
