"""Check messages against the JSON Schemas in `schemas/`.

`jsonschema` is the authority, but importing it costs more than a whole
oneshot start-up. So a well-formed message is accepted by a small interpreter
of the keywords our schemas use, reading the same schema files; it answers
only "certainly valid" or "not sure". Whenever it is not sure (a failed check,
a keyword it does not know), `jsonschema` decides and words the errors. Tests
prove the two agree.
"""

from __future__ import annotations

import os

import pyrelune.schemas
from pyrelune import fastjson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

SCHEMA_DIR = os.path.dirname(pyrelune.schemas.__file__ or "")
_cache: dict[str, dict[str, Any]] = {}
_ANNOTATIONS = frozenset({"$schema", "$id", "title", "description", "default", "examples"})
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "null": (type(None),),
    "integer": (int,),
    "number": (int, float),
}


def schema(name: str) -> dict[str, Any]:
    """The schema `schemas/<name>.json`, loaded once."""
    if name not in _cache:
        with open(os.path.join(SCHEMA_DIR, name + ".json"), encoding="utf-8") as f:
            _cache[name] = fastjson.loads(f.read())
    return _cache[name]


def errors(instance: Any, name: str) -> list[str]:
    """Why `instance` does not match schema `name`: empty when it does."""
    if quick_valid(instance, schema(name)):
        return []
    return authoritative_errors(instance, schema(name))


def authoritative_errors(instance: Any, spec: dict[str, Any]) -> list[str]:
    """jsonschema's verdict, one line per error: `source: 42 is not of type 'string'`."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(spec)
    found = sorted(validator.iter_errors(instance), key=jsonschema.exceptions.relevance)
    return [f"{_where(e.absolute_path)}: {_shorten(e.message)}" for e in found]


def _where(path: Any) -> str:
    where = ""
    for part in path:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    return where or "(message)"


def _shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 5] + " ...'"


def quick_valid(instance: Any, spec: dict[str, Any] | bool) -> bool:
    """True only when `instance` certainly satisfies `spec`; False means "ask jsonschema"."""
    if isinstance(spec, bool):
        return spec
    for keyword, value in spec.items():
        if keyword in _ANNOTATIONS:
            continue
        check = _KEYWORDS.get(keyword)
        if check is None or not check(instance, value, spec):
            return False
    return True


def _type(instance: Any, expected: str | list[str], _: dict[str, Any]) -> bool:
    names = [expected] if isinstance(expected, str) else expected
    for name in names:
        types = _TYPES.get(name)
        if types is None:
            return False
        if isinstance(instance, types) and (name == "boolean" or not isinstance(instance, bool)):
            return True
    return False


def _properties(instance: Any, props: dict[str, Any], _: dict[str, Any]) -> bool:
    if not isinstance(instance, dict):
        return True
    return all(quick_valid(instance[k], sub) for k, sub in props.items() if k in instance)


def _required(instance: Any, names: list[str], _: dict[str, Any]) -> bool:
    return not isinstance(instance, dict) or all(name in instance for name in names)


def _additional(instance: Any, sub: dict[str, Any] | bool, spec: dict[str, Any]) -> bool:
    if not isinstance(instance, dict) or sub is True:
        return True
    known = spec.get("properties", {})
    if "patternProperties" in spec:
        return False
    return all(quick_valid(v, sub) for k, v in instance.items() if k not in known)


def _same(a: Any, b: Any) -> bool:
    # JSON equality: true is not 1; anything but plain scalars is left to jsonschema.
    return type(a) is type(b) and isinstance(a, (str, int, float, bool, type(None))) and a == b


def _const(instance: Any, value: Any, _: dict[str, Any]) -> bool:
    return _same(instance, value)


def _enum(instance: Any, values: list[Any], _: dict[str, Any]) -> bool:
    return any(_same(instance, v) for v in values)


def _minimum(instance: Any, value: float, _: dict[str, Any]) -> bool:
    numeric = isinstance(instance, (int, float)) and not isinstance(instance, bool)
    return not numeric or instance >= value


def _min_length(instance: Any, value: int, _: dict[str, Any]) -> bool:
    return not isinstance(instance, str) or len(instance) >= value


def _items(instance: Any, sub: dict[str, Any] | bool, _: dict[str, Any]) -> bool:
    return not isinstance(instance, list) or all(quick_valid(v, sub) for v in instance)


_KEYWORDS: dict[str, Callable[[Any, Any, dict[str, Any]], bool]] = {
    "type": _type,
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional,
    "const": _const,
    "enum": _enum,
    "minimum": _minimum,
    "minLength": _min_length,
    "items": _items,
}
