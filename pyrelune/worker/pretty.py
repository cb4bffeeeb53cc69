"""Builtin containers wrapped as IPython's pretty printer wraps them, without IPython.

IPython's `text/plain` for a list, tuple, dict, set or frozenset longer than
a line puts each item of a group that does not fit on a line of its own,
indented by the width of each open bracket, outermost groups broken first; sets
are sorted; a sequence stops after 1,000 items with `...`. Where IPython is
installed its own printer is used (see `display._plain`); this gives the
same text without it, for containers of builtin values, classes and objects
that keep `object`'s repr (anything else in them is its `repr`, as IPython
shows objects it has no printer for).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: IPython's PlainTextFormatter: its width, and the items of a sequence shown.
WIDTH = 79
MAX_ITEMS = 1000


def pretty(obj: Any) -> str:
    """`obj` as IPython's pretty printer writes it."""
    out: list[str] = []
    _write(obj, out, 0, 0, 0)
    return "".join(out)


def _flat(obj: Any) -> str:
    """The one-line form of `obj`."""
    opening, closing, items = _parts(obj)
    if opening is None:
        return atom(obj)
    return opening + ", ".join(_items_flat(obj, items)) + closing


def atom(obj: Any) -> str:
    """What IPython writes for an object that is no container: its repr, but for two cases.

    A class whose metaclass keeps `type`'s repr is its dotted name (`int`,
    `collections.OrderedDict`), and an object that keeps `object`'s repr is
    `<module.Class at 0x...>`, without the word "object".
    """
    kind = type(obj)
    if isinstance(obj, type) and vars(type).get("__repr__") is getattr(kind, "__repr__", None):
        module = getattr(obj, "__module__", None)
        name = getattr(obj, "__qualname__", obj.__name__)
        return name if module in (None, "builtins") else f"{module}.{name}"
    if getattr(kind, "__repr__", None) is object.__repr__:
        return f"<{atom(kind)} at 0x{id(obj):x}>"
    return repr(obj)


def _items_flat(obj: Any, items: list[Any]) -> list[str]:
    if isinstance(obj, dict):
        texts = [f"{_flat(key)}: {_flat(value)}" for key, value in items]
    else:
        texts = [_flat(item) for item in items]
    if _cut(obj):
        texts.append("...")
    if type(obj) is tuple and len(obj) == 1:
        texts[0] += ","
    return texts


def _parts(obj: Any) -> tuple[str | None, str, list[Any]]:
    """The brackets around `obj`'s items, and its items (dict: pairs); None for no container."""
    kind = type(obj)
    if kind is list or kind is tuple:
        opening, closing = ("[", "]") if kind is list else ("(", ")")
        return opening, closing, list(obj[:MAX_ITEMS])
    if kind is dict:
        return "{", "}", list(obj.items())[:MAX_ITEMS]
    if kind is set or kind is frozenset:
        if not obj:
            return None, "", []
        try:
            items = sorted(obj)
        except Exception:
            items = list(obj)
        opening, closing = ("{", "}") if kind is set else ("frozenset({", "})")
        return opening, closing, items[:MAX_ITEMS]
    return None, "", []


def _cut(obj: Any) -> bool:
    return len(obj) > MAX_ITEMS


def _write(obj: Any, out: list[str], column: int, indent: int, trailing: int) -> int:
    """Write `obj` at `column`; `trailing`: the text that must follow it on its line.

    Returns the column after it. Flat if it fits with what follows it,
    else broken: one item a line, indented by its opening bracket's width.
    """
    flat = _flat(obj)
    opening, closing, items = _parts(obj)
    if opening is None or column + len(flat) + trailing <= WIDTH:
        out.append(flat)
        return column + len(flat)
    out.append(opening)
    column += len(opening)
    inner = indent + len(opening)  # IPython indents a group by its opening's width
    count = len(items) + (1 if _cut(obj) else 0)
    for index in range(count):
        last = index == count - 1
        follow = (len(closing) + trailing) if last else 1  # `]` and what follows, or `,`
        if index < len(items):
            item = items[index]
            if isinstance(obj, dict):
                key, value = item
                text = f"{_flat(key)}: "
                out.append(text)
                column = _write(value, out, column + len(text), inner, follow)
            else:
                tail = 1 if type(obj) is tuple and len(obj) == 1 else 0
                column = _write(item, out, column, inner, follow + tail)
                if tail:
                    out.append(",")
                    column += 1
        else:
            out.append("...")
            column += 3
        if not last:
            out.append(",\n" + " " * inner)
            column = inner
    out.append(closing)
    return column + len(closing)
