"""Values written as IPython's pretty printer writes them, without IPython.

IPython's `text/plain` is not `repr`. It looks along each value's class
hierarchy for a printer it has: builtin containers (a group that does not
fit on a line puts each item on a line of its own, indented by each open
bracket's width, outermost groups broken first; sets sorted; a sequence
stops after 1,000 items with `...`), `collections`' Counter, defaultdict,
OrderedDict, deque and UserList as calls (`Counter({'a': 2})`), functions
with their signature (`<function __main__.f(x)>`), classes by dotted name,
exceptions, regular expressions, `SimpleNamespace`; else a `__repr__` the
class defines; else `<module.Class at 0x...>`. This module walks the
hierarchy the same way and lays the text out the same way. An object with
a `_repr_pretty_` method needs IPython's printer itself: `NeedsIPython`
says so (see `display._plain`, which uses IPython's printer where it is
installed and needed).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: IPython's PlainTextFormatter: its width, and the items of a sequence shown.
WIDTH = 79
MAX_ITEMS = 1000


class NeedsIPython(Exception):
    """The value (or one inside it) prints itself with IPython's printer (`_repr_pretty_`)."""


class Group:
    """Items between `opening` and `closing`: one line, or one item a line, indented.

    `indent` is how far the items' lines are indented beyond the group's
    own indentation (IPython's is the opening's width, but for `<super: `).
    """

    __slots__ = ("closing", "indent", "items", "opening")

    def __init__(self, opening: str, items: list[Any], closing: str,
                 indent: int | None = None) -> None:
        self.opening, self.items, self.closing = opening, items, closing
        self.indent = len(opening) if indent is None else indent


class Prefixed:
    """`prefix` then a value on the same line (a dict's `key: `, a call's `name=`)."""

    __slots__ = ("indent", "prefix", "value")

    def __init__(self, prefix: str, value: Any, indent: int = 0) -> None:
        self.prefix, self.value, self.indent = prefix, value, indent


def pretty(obj: Any) -> str:
    """`obj` as IPython's pretty printer writes it."""
    return laid_out(obj)[0]


def laid_out(obj: Any) -> tuple[str, bool]:
    """`obj`'s pretty text, and whether it was wrapped (a group of it broken into lines)."""
    document = _document(obj, set())
    out: list[str] = []
    _write(document, out, 0, 0, 0)
    flat = _flat(document)
    return "".join(out), not isinstance(document, str) and (
        "\n" in flat or len(flat) > WIDTH)


# The document: what to write, as IPython's printers would ---------------------------


def _document(obj: Any, open_ids: set[int]) -> Any:
    """`obj` as text (a str), a Group or a Prefixed; `open_ids`: the containers being written."""
    if obj is None or obj is True or obj is False or obj is ... or obj is NotImplemented:
        return repr(obj)
    kind = type(obj)
    for cls in kind.__mro__:
        printer = _PRINTERS.get(cls)
        if printer is None:
            printer = _BY_NAME.get((getattr(cls, "__module__", None),
                                    getattr(cls, "__name__", None)))
        if printer is not None:
            cycle = id(obj) in open_ids
            open_ids.add(id(obj))
            try:
                return printer(obj, open_ids, cycle)
            finally:
                open_ids.discard(id(obj))
        if "_repr_pretty_" in vars(cls) and callable(getattr(cls, "_repr_pretty_", None)):
            raise NeedsIPython(cls.__qualname__)
        if cls is not object and "__repr__" in vars(cls) and callable(
            getattr(cls, "__repr__", None)
        ):
            return repr(obj)
    if getattr(kind, "__repr__", None) is not object.__repr__:
        return repr(obj)
    return f"<{_type_name(kind)} at 0x{id(obj):x}>"


def _sequence(opening: str, closing: str) -> Any:
    def printer(obj: Any, open_ids: set[int], cycle: bool) -> Any:
        if cycle:
            return f"{opening}...{closing}"
        items: list[Any] = [_document(item, open_ids) for item in _first(obj)]
        if len(obj) == 1 and isinstance(obj, tuple):
            items[0] = Group("", [items[0]], ",", 0)
        return Group(opening, _cut(obj, items), closing)

    return printer


def _set(opening: str, closing: str) -> Any:
    def printer(obj: Any, open_ids: set[int], cycle: bool) -> Any:
        if cycle:
            return f"{opening}...{closing}"
        if not obj:
            return f"{type(obj).__name__}()"
        ordered = obj if len(obj) >= MAX_ITEMS else _sorted(obj)
        items = [_document(item, open_ids) for item in _first(ordered)]
        return Group(opening, _cut(obj, items), closing)

    return printer


def _mapping(opening: str, closing: str) -> Any:
    def printer(obj: Any, open_ids: set[int], cycle: bool) -> Any:
        if cycle:
            return "{...}"
        items = [Prefixed(_flat(_document(key, open_ids)) + ": ", _document(obj[key], open_ids))
                 for key in _first(obj.keys())]
        return Group(opening, _cut(obj, items), closing)

    return printer


def _first(items: Any) -> list[Any]:
    """The items IPython shows of a sequence: the first `MAX_ITEMS`."""
    shown = []
    for index, item in enumerate(items):
        if index == MAX_ITEMS:
            break
        shown.append(item)
    return shown


def _cut(obj: Any, items: list[Any]) -> list[Any]:
    return [*items, "..."] if len(obj) > MAX_ITEMS else items


def _sorted(items: Any) -> list[Any]:
    try:
        return sorted(items)
    except Exception:
        return list(items)


def _call(name: str, open_ids: set[int], *args: Any, **kwargs: Any) -> Any:
    """`name(args, key=value)`, as IPython's CallExpression: a group indented past `name(`."""
    items = [_document(arg, open_ids) for arg in args]
    items += [Prefixed(f"{key}=", _document(value, open_ids), len(key) + 1)
              for key, value in kwargs.items()]
    return Group(f"{name}(", items, ")")


def _type_name(cls: type) -> str:
    module = getattr(cls, "__module__", None)
    try:
        name = cls.__qualname__
        if not isinstance(name, str):
            raise TypeError
    except Exception:
        name = cls.__name__ if isinstance(cls.__name__, str) else "<unknown type>"
    return name if module in (None, "__builtin__", "builtins", "exceptions") else (
        f"{module}.{name}")


def _type(obj: type, open_ids: set[int], cycle: bool) -> str:
    """A class by its dotted name, unless its metaclass has a repr of its own."""
    own = [m for m in type.__getattribute__(type(obj), "__mro__") if "__repr__" in vars(m)][:1]
    return _type_name(obj) if own == [type] else repr(obj)


def _function(obj: Any, open_ids: set[int], cycle: bool) -> str:
    """`<function module.name(signature)>`; a builtin's without `builtins.`."""
    import inspect

    name = getattr(obj, "__qualname__", obj.__name__)
    module = obj.__module__
    if module and module not in ("__builtin__", "builtins", "exceptions"):
        name = f"{module}.{name}"
    try:
        name += str(inspect.signature(obj))
    except ValueError:
        pass
    return f"<function {name}>"


def _exception(obj: BaseException, open_ids: set[int], cycle: bool) -> Any:
    kind = type(obj)
    name = getattr(kind, "__qualname__", kind.__name__)
    if kind.__module__ not in ("exceptions", "builtins"):
        name = f"{kind.__module__}.{name}"
    return _call(name, open_ids, *getattr(obj, "args", ()))


def _namespace(obj: Any, open_ids: set[int], cycle: bool) -> Any:
    return "namespace(...)" if cycle else _call("namespace", open_ids, **vars(obj))


def _super(obj: Any, open_ids: set[int], cycle: bool) -> Any:
    items = [_document(obj.__thisclass__, open_ids), _document(obj.__self__, open_ids)]
    return Group("<super: ", items, ">", 8)


def _pattern(obj: Any, open_ids: set[int], cycle: bool) -> Any:
    """`re.compile(r'...', re.FLAG|...)`: the pattern as a raw string, its flags by name."""
    import re

    text = repr(obj.pattern)
    text = ("ur" + text[1:] if text[:1] in "uU" else "r" + text).replace("\\\\", "\\")
    args = [text]
    if obj.flags:
        names = ("IGNORECASE", "LOCALE", "MULTILINE", "DOTALL", "UNICODE", "VERBOSE", "DEBUG")
        args.append("|".join(f"re.{n}" for n in names if obj.flags & getattr(re, n)))
    return Group("re.compile(", args, ")")


def _collection(shape: str) -> Any:
    """A `collections` class as a call of its name, the way IPython writes each."""

    def printer(obj: Any, open_ids: set[int], cycle: bool) -> Any:
        name = type(obj).__name__
        if cycle:
            return f"{name}(...)"
        if shape == "defaultdict":
            return _call(name, open_ids, obj.default_factory, dict(obj))
        if shape == "deque":
            if obj.maxlen is not None:
                return _call(name, open_ids, list(obj), maxlen=obj.maxlen)
            return _call(name, open_ids, list(obj))
        if shape == "UserList":
            return _call(name, open_ids, obj.data)
        if not obj:
            return f"{name}()"
        if shape == "Counter":
            return _call(name, open_ids, dict(obj.most_common()))
        return _call(name, open_ids, list(obj.items()))  # OrderedDict

    return printer


def _printers() -> dict[type, Any]:
    """IPython's printers by class (those that only repr are left out: the walk finds
    the class's own `__repr__` first). The types are `types`' without importing it
    (it imports functools, which an rpc worker does without)."""
    import os
    import sys

    printers: dict[type, Any] = {
        tuple: _sequence("(", ")"), list: _sequence("[", "]"), dict: _mapping("{", "}"),
        set: _set("{", "}"), frozenset: _set("frozenset({", "})"),
        super: _super, type: _type,
        type(_function): _function, type(len): _function,  # FunctionType, BuiltinFunctionType
        type(sys.implementation): _namespace, BaseException: _exception,
        type(type.__dict__): _mapping("mappingproxy({", "})"),
    }
    printers[type(os.environ)] = _mapping("environ{", "}")
    return printers


_PRINTERS = _printers()
#: IPython's printers for classes it names rather than imports (`re` is not loaded here).
_BY_NAME: dict[tuple[Any, Any], Any] = {
    **{("collections", name): _collection(name)
       for name in ("defaultdict", "OrderedDict", "deque", "Counter", "UserList")},
    ("re", "Pattern"): _pattern,
}


# Layout ---------------------------------------------------------------------------------


def _flat(node: Any) -> str:
    """The one-line form of `node`."""
    if isinstance(node, str):
        return node
    if isinstance(node, Prefixed):
        return f"{node.prefix}{_flat(node.value)}"
    return f"{node.opening}{', '.join(_flat(item) for item in node.items)}{node.closing}"


def _write(node: Any, out: list[str], column: int, indent: int, trailing: int) -> int:
    """Write `node` at `column`; `trailing`: the width of what must follow it on its line.

    Returns the column after it. Flat if it fits with what follows it,
    else broken: one item a line, indented by its group's indentation.
    """
    if isinstance(node, str):
        text = node.replace("\n", "\n" + " " * indent) if "\n" in node else node
        out.append(text)
        return len(text) - text.rfind("\n") - 1 if "\n" in text else column + len(text)
    if isinstance(node, Prefixed):
        out.append(node.prefix)
        return _write(node.value, out, column + len(node.prefix), indent + node.indent,
                      trailing)
    flat = _flat(node)
    if "\n" not in flat and column + len(flat) + trailing <= WIDTH:
        out.append(flat)
        return column + len(flat)
    out.append(node.opening)
    column += len(node.opening)
    inner = indent + node.indent
    for index, item in enumerate(node.items):
        last = index == len(node.items) - 1
        follow = (len(node.closing) + trailing) if last else 1  # the closing, or `,`
        column = _write(item, out, column, inner, follow)
        if not last:
            out.append(",\n" + " " * inner)
            column = inner
    out.append(node.closing)
    return column + len(node.closing)
