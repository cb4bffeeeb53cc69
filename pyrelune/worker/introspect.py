"""Questions about the live namespace, asked between cells: completions, help, expressions.

A Jupyter front end completes a name as it is typed (Tab), shows an object's
signature and docstring (Shift+Tab, `obj?`) and evaluates `user_expressions`
after a cell; all of them need the namespace, which lives here, in the
worker. The supervisor sends a `Query`; the answer goes back as one `Reply`
event (a JSON object, the reply's content), then a Done, so a worker that
dies or hangs while answering is handled as a cell's would be.

Completion uses jedi where it is installed (as IPython does), else the
namespace itself: names, attributes of a dotted name, module names after
`import`, paths inside a string.
"""

from __future__ import annotations

import builtins
import keyword
import os
import sys

from pyrelune.wire.events import Done, Reply
from pyrelune.worker import importhooks
from pyrelune.worker.runtime import interrupt_guard

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias

    from pyrelune.wire.commands import Query
    from pyrelune.worker.channel import Channel

    #: A question's answer: its args and the namespace in, the Reply's content out.
    Answers: TypeAlias = dict[str, Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]]

#: The most matches a completion offers, and the most characters of any text answered.
MAX_MATCHES = 2000
MAX_TEXT = 1 << 18
_IDENTIFIER = "_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_RED, _RESET = "\x1b[31m", "\x1b[0m"


def answer(query: Query, namespace: dict[str, Any], channel: Channel,
           answers: Answers | None = None) -> None:
    """Answer `query` with a Reply, then a Done; interruptible, as a cell is.

    `answers`: each kind's answer, if not pyrelune's own (an IPython shell's)."""
    try:
        interrupt_guard.start(query.cell)
        content = content_of(query, namespace, answers)
    finally:
        interrupt_guard.running = False
    channel.send(Reply(content, query.kind))
    channel.send(Done())


def content_of(query: Query, namespace: dict[str, Any],
               answers: Answers | None = None) -> dict[str, Any]:
    """The Reply's content for `query` (on any thread: a subshell's asks too)."""
    # A shell's own answer first (IPython's completer); pyrelune's for what it has none of.
    handler = (answers or {}).get(query.kind) or _ANSWERS.get(query.kind)
    try:
        return handler(query.args, namespace) if handler is not None else {}
    except (Exception, KeyboardInterrupt):
        return _failed(query)  # a failing completer must not fail the kernel


# -- completion ------------------------------------------------------------------------


def complete(args: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
    """complete_reply's content (without status) for `code` at `cursor_pos`."""
    code: str = args["code"]
    cursor: int = args["cursor_pos"]
    found = _with_jedi(code, cursor, namespace)
    if found is None:
        token, matches = _own_matches(code[:cursor], namespace)
        found = (cursor - len(token), matches, [])
    start, matches, types = found
    content: dict[str, Any] = {"matches": matches[:MAX_MATCHES], "cursor_start": start,
                               "cursor_end": cursor, "metadata": {}}
    if types:
        content["metadata"]["_jupyter_types_experimental"] = types[:MAX_MATCHES]
    return content


def _with_jedi(code: str, cursor: int, namespace: dict[str, Any]
               ) -> tuple[int, list[str], list[dict[str, Any]]] | None:
    """jedi's completions, if it is installed and answers."""
    try:
        jedi = importhooks.import_own("jedi")
    except ImportError:
        return None
    try:
        before = code[:cursor]
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1)
        completions = jedi.Interpreter(code, [namespace]).complete(line, column)
    except Exception:
        return None
    if not completions:
        return None
    typed = len(completions[0].name) - len(completions[0].complete)
    start = cursor - typed
    matches: list[str] = []
    types: list[dict[str, Any]] = []
    for completion in completions:
        if len(completion.name) - len(completion.complete) != typed:
            continue  # jedi's fuzzy extras typed over another span
        matches.append(completion.name)
        types.append({"start": start, "end": cursor, "text": completion.name,
                      "type": completion.type})
    return start, matches, types


def _own_matches(before: str, namespace: dict[str, Any]) -> tuple[str, list[str]]:
    """The token being typed at the end of `before`, and what may complete it."""
    line = before.rsplit("\n", 1)[-1]
    quoted = _open_string(line)
    if quoted is not None:
        return quoted, _paths(quoted)
    words = line.split()
    if words and words[0] in ("import", "from"):
        token = line[len(line.rstrip(_IDENTIFIER + ".")):]
        if words[0] == "from" and len(words) >= 3 and words[2] == "import":
            return _word(line), _module_names(words[1], _word(line))
        if "." in token:
            package, _, part = token.rpartition(".")
            return part, _module_names(package, part, submodules=True)
        return token, _top_modules(token)
    token = line[len(line.rstrip(_IDENTIFIER + ".")):]
    if "." in token:
        base, _, part = token.rpartition(".")
        obj = _lookup(base, namespace)
        if obj is _MISSING:
            return part, []
        return part, _attributes(obj, part)
    names = {*namespace, *vars(builtins), *keyword.kwlist}
    return token, sorted(name for name in names if name.startswith(token) and (
        token.startswith("_") or not name.startswith("_")))


def _word(line: str) -> str:
    return line[len(line.rstrip(_IDENTIFIER)):]


def _open_string(line: str) -> str | None:
    """The text of a string literal left open at the end of `line`, if one is."""
    quote: str | None = None
    start = 0
    for at, char in enumerate(line):
        if quote is None and char in "'\"":
            quote, start = char, at + 1
        elif char == quote and line[at - 1] != "\\":
            quote = None
    return line[start:] if quote is not None else None


def _paths(typed: str) -> list[str]:
    """Files and folders whose path begins with `typed` (a folder ends with `/`)."""
    import glob

    expanded = os.path.expanduser(typed)
    matches = []
    for path in sorted(glob.glob(glob.escape(expanded) + "*"))[:MAX_MATCHES]:
        shown = typed + path[len(expanded):]
        matches.append(shown + "/" if os.path.isdir(path) else shown)
    return matches


def _top_modules(prefix: str) -> list[str]:
    import pkgutil

    names = {module.name for module in pkgutil.iter_modules()} | set(sys.builtin_module_names)
    return sorted(name for name in names if name.startswith(prefix))


def _module_names(package: str, prefix: str, submodules: bool = False) -> list[str]:
    """`from package import <prefix>`: its attributes and submodules (importing it)."""
    try:
        module = importhooks.import_own(package) if package in sys.modules else __import__(
            package, fromlist=["*"])
    except Exception:
        return []
    names = set() if submodules else set(_attributes(module, prefix))
    path = getattr(module, "__path__", None)
    if path is not None:
        import pkgutil

        names |= {m.name for m in pkgutil.iter_modules(path) if m.name.startswith(prefix)}
    return sorted(names)


def _attributes(obj: Any, prefix: str) -> list[str]:
    try:
        names = dir(obj)
    except Exception:
        return []
    return sorted(name for name in names if isinstance(name, str) and name.startswith(prefix)
                  and (prefix.startswith("_") or not name.startswith("_")))


class _Missing:
    """No object by that name."""


_MISSING = _Missing()


def _lookup(dotted: str, namespace: dict[str, Any]) -> Any:
    """The object a dotted name names, by lookups only (no call, no evaluation)."""
    first, *rest = dotted.split(".")
    if not first.isidentifier():
        return _MISSING
    obj = namespace.get(first, vars(builtins).get(first, _MISSING))
    for part in rest:
        if obj is _MISSING or not part.isidentifier():
            return _MISSING
        try:
            obj = getattr(obj, part)
        except Exception:
            return _MISSING
    return obj


# -- inspection ----------------------------------------------------------------------


def inspect_object(args: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
    """inspect_reply's content (without status): the help of the name at the cursor.

    `detail_level` 0 is IPython's `obj?` (signature, docstring), 1 its
    `obj??` (the source too).
    """
    name = name_at(args["code"], args["cursor_pos"])
    obj = _lookup(name, namespace) if name else _MISSING
    if obj is _MISSING:
        return {"found": False, "data": {}, "metadata": {}}
    text = describe(name, obj, args.get("detail_level", 0))
    return {"found": True, "data": {"text/plain": text}, "metadata": {}}


def name_at(code: str, cursor: int) -> str:
    """The dotted name the cursor is on, else the callable whose call it is inside."""
    chars = _IDENTIFIER + "."
    start = cursor
    while start > 0 and code[start - 1] in chars:
        start -= 1
    end = cursor
    while end < len(code) and code[end] in _IDENTIFIER:
        end += 1
    name = code[start:end].strip(".")
    if name and not name[0].isdigit():
        return name
    depth = 0
    for at in range(cursor - 1, -1, -1):  # inside `f(x, |`: back to the open parenthesis
        char = code[at]
        if char == ")":
            depth += 1
        elif char == "(":
            if depth == 0:
                return name_at(code, at) if at > 0 and code[at - 1] in chars else ""
            depth -= 1
    return ""


def describe(name: str, obj: Any, detail: int) -> str:
    """What IPython's `obj?` shows: signature, type, string form, file, docstring."""
    inspect = importhooks.import_own("inspect")
    fields: list[tuple[str, str]] = []
    if callable(obj):
        if (signature := _signature(inspect, obj)) is not None:
            fields.append(("Signature", f"{name.rpartition('.')[2]}{signature}"))
    else:
        try:
            fields.append(("String form", _clip(repr(obj), 2000)))
        except Exception:
            pass
    if detail and (source := _source(inspect, obj)):
        fields.append(("Source", source))
    else:
        fields.append(("Docstring", inspect.getdoc(obj) or "<no docstring>"))
    try:
        fields.append(("File", inspect.getfile(obj)))
    except TypeError:
        pass
    fields.append(("Type", type(obj).__name__))
    text = "\n".join(f"{_RED}{label}:{_RESET}{' ' * (12 - len(label))}{value}"
                     if "\n" not in value else f"{_RED}{label}:{_RESET}\n{value}"
                     for label, value in fields)
    return _clip(text, MAX_TEXT)


def _signature(inspect: Any, obj: Any) -> Any:
    """The signature, its annotations evaluated where they can be (`from __future__ import
    annotations` makes them strings)."""
    for evaluated in (True, False):
        try:
            return inspect.signature(obj, eval_str=evaluated)
        except (TypeError, ValueError):
            return None
        except Exception:
            continue  # an annotation that does not evaluate: shown as written
    return None


def _source(inspect: Any, obj: Any) -> str | None:
    try:
        return str(inspect.getsource(obj)).rstrip("\n")
    except (OSError, TypeError):
        return None


def _clip(text: str, size: int) -> str:
    return text if len(text) <= size else text[:size] + "..."


# -- user expressions ------------------------------------------------------------------


def expressions(args: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
    """execute_request's `user_expressions`, each evaluated to a MIME bundle or its error."""
    from pyrelune.worker.display import mime_bundle

    values: dict[str, Any] = {}
    for key, source in args["expressions"].items():
        try:
            data, metadata = mime_bundle(eval(str(source), namespace))
            values[key] = {"status": "ok", "metadata": metadata, "data": {
                mime: _clip(value, MAX_TEXT) if isinstance(value, str) else value
                for mime, value in data.items()}}
        except Exception as exc:
            values[key] = {"status": "error", "ename": type(exc).__name__,
                           "evalue": _clip(str(exc), MAX_TEXT),
                           "traceback": [f"{type(exc).__name__}: {_clip(str(exc), MAX_TEXT)}"]}
    return values


def _is_complete(args: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
    from pyrelune.worker.completeness import is_complete

    return is_complete(args, namespace)


_ANSWERS: Answers = {
    "complete": complete, "inspect": inspect_object, "expressions": expressions,
    "is_complete": _is_complete}


def _failed(query: Query) -> dict[str, Any]:
    """What a question gets when answering it failed (or was interrupted)."""
    if query.kind == "complete":
        cursor = query.args.get("cursor_pos", 0)
        return {"matches": [], "cursor_start": cursor, "cursor_end": cursor, "metadata": {}}
    if query.kind == "inspect":
        return {"found": False, "data": {}, "metadata": {}}
    if query.kind == "is_complete":
        return {"status": "unknown"}
    return {}
