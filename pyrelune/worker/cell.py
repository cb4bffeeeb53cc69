"""Compile and run one cell in a namespace, the way a script runs.

Runs inside the worker. A cell that is one expression is compiled as one; any
other is parsed with the compiler's own AST flag (never the `ast` module) and
a final bare expression becomes an assignment whose value is taken back and
displayed. Top-level `await` is compiled in, and only a cell that uses it
pays for `asyncio` (see `eventloop`). The namespace is a `__main__` module's
(see `mainmodule`).
"""

from __future__ import annotations

import sys

from pyrelune.wire.events import (
    INTERRUPTED,
    PYTHON_EXIT,
    PYTHON_RUNTIME_ERROR,
    PYTHON_SYNTAX_ERROR,
    CellError,
)
from pyrelune.worker import importhooks, mainmodule, sources

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import CodeType, TracebackType
    from typing import Any, TypeAlias

    #: A cell's code: one code object, or one per run of statements that a
    #: `from __future__` import past the top starts (see `_compile_parts`).
    Compiled: TypeAlias = CodeType | tuple[CodeType, ...]

_ONLY_AST = 0x400  # ast.PyCF_ONLY_AST
_TOP_LEVEL_AWAIT = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE
#: Every `__future__` feature's compiler flag (CO_FUTURE_DIVISION to CO_FUTURE_ANNOTATIONS).
_FUTURE_FLAGS = 0x1FE0000
#: The features earlier cells imported: they hold for later cells, as in IPython.
_future = 0
#: Where the final expression's value is left for `execute` to take back.
_RESULT = "__pyrelune_result__"
# How a compiled cell gives the value to show (see `_compile`).
_EVALUATED, _ASSIGNED, _NONE = "evaluated", "assigned", "none"

_PACKAGE_DIR = __file__[: -len("worker/cell.py")]


def run_cell(
    source: str,
    filename: str,
    namespace: dict[str, Any],
    show_result: Callable[[Any], None],
    after: Callable[[], None] | None = None,
) -> CellError | None:
    """Run `source` in `namespace`; None on success, else what went wrong.

    `show_result` receives the final expression's value when it is not None;
    `after` runs once the cell's code is over, failed or not, and its own
    failure is the cell's (it shows the figures a cell left open).
    `SystemExit(0)` or `SystemExit(None)` ends the cell successfully.
    """
    sources.remember(filename, source)
    try:
        try:
            code, result = compile_cell(source, filename, namespace)
        except (SyntaxError, ValueError) as exc:
            return syntax_error(exc, filename)
        try:
            _begin(namespace)
            value = execute(code, result, namespace)
            if value is not None:
                released = mainmodule.keep_result(namespace, value)
                show_result(value)
                del value  # dropped as the cell, if `_` does not keep it
                mainmodule.drop(released, namespace, filename, source)
        finally:
            if after is not None:
                after()
    except SystemExit as exc:
        if exc.code is None or exc.code == 0:
            return None
        return exception_error(exc, filename)
    except BaseException as exc:
        error = exception_error(exc, filename)
        _keep_last(exc)
        return error
    return None


def _keep_last(exc: BaseException) -> None:
    """The error as `sys.last_value` (and friends), for `%debug` and `pdb.pm()`, as IPython."""
    tb = _trim(exc.__traceback__)
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
    if sys.version_info >= (3, 12):
        sys.last_exc = exc


def compile_cell(
    source: str, filename: str, namespace: dict[str, Any] | None = None
) -> tuple[Compiled, str]:
    """`_compile`, with IPython's syntax (magics, `!cmd`, `obj?`) made Python.

    Only a cell that does not compile is looked at for it, or one whose
    code names a magic or alias that `namespace` does not define, on a line
    of its own (`ls`, `pwd`, `who`: IPython's automagic), so a plain cell
    never loads the translator (see `ipysyntax`). Console prompts pasted with
    the code are taken off first (see `prompts`), as IPython does.
    """
    if ">>>" in source or "In [" in source:
        prompts = importhooks.import_own("pyrelune.worker.prompts")
        source = prompts.strip(source) or source
    failed: SyntaxError | None = None
    compiled: tuple[Compiled, str] | None = None
    try:
        compiled = _compile(source, filename)
    except SyntaxError as exc:
        failed = exc
    else:
        code = compiled[0]
        names = AUTOMAGIC.intersection(code.co_names if not isinstance(code, tuple) else
                                       [name for part in code for name in part.co_names])
        if not names or not _alone_on_a_line(source, names):
            return compiled
    ipysyntax = importhooks.import_own("pyrelune.worker.ipysyntax")
    return ipysyntax.compile_translated(  # type: ignore[no-any-return]
        source, filename, failed, compiled, _compile, _unshadowed(namespace))


#: The line magics and aliases IPython's automagic runs without `%` (`magics` has them all).
AUTOMAGIC = frozenset({
    "aimport", "autoreload", "cat", "cd", "config", "cp", "debug", "env", "ldir", "lf", "lk", "ll",
    "load_ext", "ls", "lsmagic", "lx", "matplotlib", "mkdir", "mv", "pdoc", "pinfo", "pinfo2",
    "pip", "prun", "pwd", "reload_ext", "rm", "rmdir", "run", "sx", "time", "timeit",
    "unload_ext", "who", "who_ls", "whos", "xmode",
})


def _alone_on_a_line(source: str, names: frozenset[str]) -> bool:
    """Whether a line starts with one of `names` and a space or its end: worth translating."""
    for line in source.split("\n"):
        word = line.strip().split(" ", 1)[0]
        if word in names:
            return True
    return False


def _unshadowed(namespace: dict[str, Any] | None) -> frozenset[str]:
    """The automagic names neither `namespace` nor the builtins define (IPython's rule)."""
    import builtins

    if namespace is None:
        return frozenset()
    return frozenset(name for name in AUTOMAGIC
                     if name not in namespace and not hasattr(builtins, name))


def _begin(namespace: dict[str, Any]) -> None:
    mainmodule.begin_cell(namespace)
    eventloop = sys.modules.get("pyrelune.worker.eventloop")
    if eventloop is not None:  # a cell awaited before: its loop is this cell's too
        eventloop.make_current()


def _compile(source: str, filename: str) -> tuple[Compiled, str]:
    """One code object for the cell, and how it gives its value to show.

    The value is `_EVALUATED` when the whole cell is one expression, compiled
    as such: no syntax tree, and no `_ast` to import (a cost a oneshot cell
    feels). Otherwise a final bare expression becomes an assignment to
    `_RESULT` (`_ASSIGNED`), so the cell is parsed once and compiled once;
    `_NONE` when there is nothing to show.
    """
    flags = _TOP_LEVEL_AWAIT | _future
    if _one_simple_line(source):
        try:
            return compile(source, filename, "eval", flags, dont_inherit=True), _EVALUATED
        except SyntaxError:
            pass  # a statement, not an expression
    import _ast

    tree = compile(source, filename, "exec", flags | _ONLY_AST, dont_inherit=True)
    statements = tree.body
    result = _NONE
    if statements and isinstance(statements[-1], _ast.Expr):
        last = statements[-1]
        if not _followed_by_semicolon(source, last):
            target = _ast.Name(id=_RESULT, ctx=_ast.Store())
            assign = _ast.Assign(targets=[target], value=last.value)
            for node in (target, assign):  # the expression's place, for tracebacks
                node.lineno, node.col_offset = last.lineno, last.col_offset
                node.end_lineno, node.end_col_offset = last.end_lineno, last.end_col_offset
            statements[-1] = assign
            result = _ASSIGNED
    try:
        code = compile(tree, filename, "exec", flags, dont_inherit=True)
    except SyntaxError as exc:
        if exc.msg != _LATE_FUTURE:
            raise
        parts = _compile_parts(tree, filename, flags)
        _keep_future(parts[-1])
        return parts, result
    _keep_future(code)
    return code, result


def _keep_future(code: CodeType) -> None:
    global _future
    _future |= code.co_flags & _FUTURE_FLAGS


#: The compiler's refusal of a `from __future__` import that follows other statements.
_LATE_FUTURE = "from __future__ imports must occur at the beginning of the file"


def _compile_parts(tree: Any, filename: str, flags: int) -> tuple[CodeType, ...]:
    """The cell's statements compiled in runs, each `from __future__` import past the top
    starting one, as IPython compiles a cell statement by statement: the feature applies
    to the statements after it, and to none before.
    """
    runs: list[list[Any]] = [[]]
    for statement in tree.body:
        if _is_future(statement) and not all(_is_future(done) for done in runs[-1]):
            runs.append([])
        runs[-1].append(statement)
    parts = []
    for statements in runs:
        module = type(tree)(body=statements, type_ignores=[])
        code = compile(module, filename, "exec", flags, dont_inherit=True)
        flags |= code.co_flags & _FUTURE_FLAGS  # what this run imported holds for the rest
        parts.append(code)
    return tuple(parts)


def _is_future(statement: Any) -> bool:
    import _ast

    return isinstance(statement, _ast.ImportFrom) and statement.module == "__future__"


def _one_simple_line(source: str) -> bool:
    """Worth trying as one expression: a single line, no `;`, no backslash.

    A backslash could hold an invalid escape, and the parser's warning about
    it would come twice if the expression attempt failed.
    """
    return "\n" not in source.strip() and ";" not in source and "\\" not in source


def _followed_by_semicolon(source: str, node: Any) -> bool:
    """True for `x;` as the last statement: IPython's way to hide a result."""
    # Python's lines, not str.splitlines(): U+2028 or a form feed ends none.
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    line = lines[node.end_lineno - 1]
    rest = line.encode()[node.end_col_offset :].decode(errors="replace")
    return bool(rest.lstrip().startswith(";"))


def execute(code: Compiled, result: str, namespace: dict[str, Any]) -> Any:
    """Run the cell; the final expression's value, or None."""
    if isinstance(code, tuple):
        for part in code:
            _evaluate(part, namespace)
        value = None
    else:
        value = _evaluate(code, namespace)
    if result == _EVALUATED:
        return value
    return namespace.pop(_RESULT, None) if result == _ASSIGNED else None


def _evaluate(code: CodeType, namespace: dict[str, Any]) -> Any:
    if code.co_flags & _CO_COROUTINE:
        # As the runtime's own: a cell's folder may hold an `asyncio.py`.
        eventloop = importhooks.import_own("pyrelune.worker.eventloop")
        return eventloop.run(eval(code, namespace))
    return eval(code, namespace)  # runs "exec" code objects too, returning None


def syntax_error(exc: SyntaxError | ValueError, filename: str) -> CellError:
    """A cell that does not compile; line and column point into the cell."""
    if isinstance(exc, SyntaxError):
        details = format_traceback(exc, None, exception_text(exc))
        return CellError(PYTHON_SYNTAX_ERROR, type(exc).__name__, exc.msg or "",
                         details, exc.lineno, exc.offset)
    # Before 3.12 a NUL byte in the source is a ValueError from compile().
    return CellError(PYTHON_SYNTAX_ERROR, "SyntaxError", str(exc), f"SyntaxError: {exc}\n")


def exception_error(exc: BaseException, filename: str) -> CellError:
    """An exception raised while the cell ran, traceback trimmed to the cell's frames.

    User code can raise anything: an exception whose `__str__` fails, a
    SyntaxError whose offset is a string or NaN. The error still says what
    was raised, and carries only positions the protocols can encode.
    """
    tb = _trim(exc.__traceback__)
    _trim_chain(exc)
    line = _last_cell_line(tb, filename)
    evalue = exception_text(exc)
    details = format_traceback(exc, tb, evalue)
    if isinstance(exc, KeyboardInterrupt):
        return CellError(INTERRUPTED, "KeyboardInterrupt", evalue or "Execution interrupted",
                         details, line)
    if isinstance(exc, SystemExit):
        status = exc.code if isinstance(exc.code, int) else None
        evalue = f"exit status {status}" if status is not None else evalue
        return CellError(PYTHON_EXIT, "SystemExit", evalue, details, line)
    code = PYTHON_SYNTAX_ERROR if isinstance(exc, SyntaxError) else PYTHON_RUNTIME_ERROR
    column = _column(exc.offset) if isinstance(exc, SyntaxError) else None
    return CellError(code, type(exc).__name__, evalue, details, line, column)


def exception_text(exc: BaseException) -> str:
    """`str(exc)`, or what Python's traceback prints when the exception's `__str__` fails."""
    try:
        return str(exc)
    except Exception:
        return "<exception str() failed>"


def format_traceback(exc: BaseException, tb: TracebackType | None, evalue: str) -> str:
    """The traceback as Python prints it, quoting the cells' lines.

    `traceback` itself fails on some attributes user code may set (a
    SyntaxError's offset that is not a number), and a cell may have imported
    a module of its own as `traceback` or `linecache`: the frames and the
    exception's one line (`evalue`) are then all there is to say.
    """
    try:
        traceback = importhooks.import_own("traceback")
        sources.register_all()
        return "".join(traceback.format_exception(type(exc), exc, tb))
    except Exception:
        frames = []
        while tb is not None:
            code = tb.tb_frame.f_code
            frames.append(f'  File "{code.co_filename}", line {tb.tb_lineno}, in {code.co_name}\n')
            tb = tb.tb_next
        header = ["Traceback (most recent call last):\n"] if frames else []
        return "".join([*header, *frames, f"{type(exc).__name__}: {evalue}\n"])


#: The largest column an error carries: beyond it a JSON reader may lose
#: digits, and past 4300 digits Python cannot even write it.
_MAX_COLUMN = (1 << 53) - 1


def _column(offset: object) -> int | None:
    """A raised SyntaxError's offset as the schemas allow a column, else None.

    User code may put anything there: NaN, -5, "abc".
    """
    return offset if type(offset) is int and 0 <= offset <= _MAX_COLUMN else None


def _trim(tb: TracebackType | None) -> TracebackType | None:
    """The traceback without the runtime's frames.

    Before the first cell frame everything is the runtime's (or asyncio's);
    after it, frames of pyrelune itself (its `input()`, its SIGINT handler)
    are dropped too, so what is left is the user's code and the libraries it
    called.
    """
    first = tb
    while first is not None and not sources.is_cell(first.tb_frame.f_code.co_filename):
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


def _trim_chain(exc: BaseException) -> None:
    """Trim the exceptions `exc` was raised from or while handling, as they are shown too."""
    seen = {id(exc)}
    linked = [exc.__cause__, exc.__context__]
    while linked:
        other = linked.pop()
        if other is None or id(other) in seen:
            continue
        seen.add(id(other))
        other.__traceback__ = _trim(other.__traceback__)
        linked += [other.__cause__, other.__context__]


def _last_cell_line(tb: TracebackType | None, filename: str) -> int | None:
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
