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
import sys

from pyrelune import fastjson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any, TypeAlias

    Check: TypeAlias = Callable[[Any], bool]

#: The `pyrelune.schemas` folder, found beside this one rather than by
#: importing it: a module import is a cost every oneshot request pays.
SCHEMA_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "schemas")
_cache: dict[str, dict[str, Any]] = {}
_checks: dict[str, Check] = {}
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
    """Why the message `instance` does not match schema `name`, in its sender's words (see
    `explain`): empty when it does."""
    if certainly_valid(instance, name):
        return []
    return [explain(error) for error in _found(instance, schema(name))]


def certainly_valid(instance: Any, name: str) -> bool:
    """The quick check alone against schema `name`: True only if `instance` matches it."""
    check = _checks.get(name)
    if check is None:
        check = _checks[name] = compile_check(schema(name))
    return check(instance)


def authoritative_errors(instance: Any, spec: dict[str, Any]) -> list[str]:
    """jsonschema's verdict, one line per error: `source: 42 is not of type 'string'`."""
    return [f"{_where(e.absolute_path) or '(message)'}: {_shorten(e.message)}"
            for e in _found(instance, spec)]


def _found(instance: Any, spec: dict[str, Any]) -> list[Any]:
    """jsonschema's errors for `instance`, the most relevant first."""
    jsonschema = _jsonschema()
    validator = jsonschema.Draft202012Validator(spec)
    return sorted(validator.iter_errors(instance), key=jsonschema.exceptions.relevance)


#: How `explain` names what a `type` keyword asks for.
_KIND_WORDS = {"object": "an object", "array": "an array", "string": "a string",
               "boolean": "true or false", "null": "null", "integer": "an integer",
               "number": "a number"}


def explain(error: Any) -> str:
    """One jsonschema error as a message's sender reads it: the field named as it is written in
    the message, and what it must be (`"workingDirectory" must be a string, not 5`), rather than
    jsonschema's `workingDirectory: 5 is not of type 'string'` and its `(message)` for the whole."""
    where = _where(error.absolute_path)
    field = f'"{where}"' if where else "the request"
    rule, expected = error.validator, error.validator_value
    if rule == "required":  # one error for each missing name, which only its message tells
        missing = [name for name in expected if name not in error.instance]
        name = next((n for n in missing if error.message.startswith(repr(n))), missing[0])
        return f"{field} has no {fastjson.dumps(name)} field"
    value = fastjson.dumps(error.instance)
    if len(value) > 60:
        value = value[:56] + " ..."
    if rule == "type":
        kinds = [expected] if isinstance(expected, str) else expected
        wanted = " or ".join(_KIND_WORDS.get(kind, kind) for kind in kinds)
        return f"{field} must be {wanted}, not {value}"
    if rule == "const":
        return f"{field} must be {fastjson.dumps(expected)}, not {value}"
    if rule == "minimum":
        return f"{field} must be at least {expected}, not {value}"
    return f"{field}: {_shorten(error.message)}"


def _jsonschema() -> ModuleType:
    """jsonschema, imported without the grammar of its IRI format checks.

    Where `rfc3987_syntax` is installed (in every Jupyter environment, through
    jupyter_events), jsonschema's import builds its lark grammar: 1.2 s of the
    1.3 s that `pyrelune vix install` or a rejected request then took. Formats
    are never checked here (no `format_checker`), so jsonschema is told that
    module is missing while it loads, and afterwards it imports as usual.
    """
    if "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # ImportError
        try:
            import jsonschema
        finally:
            if "rfc3987_syntax" in sys.modules and sys.modules["rfc3987_syntax"] is None:
                del sys.modules["rfc3987_syntax"]
    import jsonschema

    return jsonschema


def _where(path: Any) -> str:
    where = ""
    for part in path:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    return where


def _shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 5] + " ...'"


def quick_valid(instance: Any, spec: dict[str, Any] | bool) -> bool:
    """True only when `instance` certainly satisfies `spec`; False means "ask jsonschema"."""
    return compile_check(spec)(instance)


def compile_check(spec: dict[str, Any] | bool) -> Check:
    """`spec` turned into one function, so a message costs no schema walk.

    A keyword this interpreter does not know makes the whole check answer
    False ("not sure"), which hands every instance to jsonschema.
    """
    if isinstance(spec, bool):
        return _always if spec else _never
    checks = []
    for keyword, value in spec.items():
        if keyword in _ANNOTATIONS:
            continue
        make = _KEYWORDS.get(keyword)
        if make is None:
            return _never
        if (check := make(value, spec)) is not _always:  # `additionalProperties: true`, say
            checks.append(check)
    return _all_of(checks)


# The closures below loop by hand: a generator per call (`all(... for ...)`)
# cost more than the checks themselves, and every request pays for it.


def _all_of(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda instance: first(instance) and second(instance)

    def all_of(instance: Any) -> bool:
        for check in checks:  # noqa: SIM110 (see above)
            if not check(instance):
                return False
        return True

    return all_of


def _always(instance: Any) -> bool:
    return True


def _never(instance: Any) -> bool:
    return False


def _types(expected: str | list[str]) -> tuple[tuple[type, ...], bool] | None:
    """The Python types a `type` keyword names, and whether a bool must be refused among
    them (bool is an int to Python, not to JSON Schema); None if it names one not known."""
    names = [expected] if isinstance(expected, str) else expected
    if any(name not in _TYPES for name in names):
        return None
    types = tuple(t for name in names for t in _TYPES[name])
    return types, int in types and "boolean" not in names


def _type(expected: str | list[str], _: dict[str, Any]) -> Check:
    if (known := _types(expected)) is None:
        return _never
    types, refuse_bool = known
    if refuse_bool:
        return lambda instance: isinstance(instance, types) and not isinstance(instance, bool)
    return lambda instance: isinstance(instance, types)


#: How `properties` checks a property: by its types, by its constant, or with its own check.
_BY_TYPE, _BY_CONST, _BY_CHECK = 0, 1, 2
_SCALARS = (str, int, float, bool, type(None))


def _property(sub: dict[str, Any] | bool) -> tuple[int, Any, Any]:
    """How to check a property whose schema is `sub`: one that is only a type, or only a
    constant (most are), is checked in `properties`' own loop, without a call."""
    keywords = [k for k in sub if k not in _ANNOTATIONS] if isinstance(sub, dict) else None
    if keywords == ["type"] and isinstance(sub, dict) and (known := _types(sub["type"])):
        return _BY_TYPE, *known
    if keywords == ["const"] and isinstance(sub, dict) and type(sub["const"]) in _SCALARS:
        return _BY_CONST, type(sub["const"]), sub["const"]
    return _BY_CHECK, compile_check(sub), None


def _properties(props: dict[str, Any], _: dict[str, Any]) -> Check:
    checks = [(name, *_property(sub)) for name, sub in props.items()]

    def properties(instance: Any) -> bool:
        if isinstance(instance, dict):
            for name, how, first, second in checks:
                if name not in instance:
                    continue
                value = instance[name]
                if how == _BY_TYPE:  # first: the types, second: whether a bool is refused
                    if not isinstance(value, first) or (second and isinstance(value, bool)):
                        return False
                elif how == _BY_CONST:  # as `_same`: first: the constant's type, second: it
                    if type(value) is not first or value != second:
                        return False
                elif not first(value):
                    return False
        return True

    return properties


def _required(names: list[str], _: dict[str, Any]) -> Check:
    wanted = frozenset(names)
    return lambda instance: not isinstance(instance, dict) or instance.keys() >= wanted


def _additional(sub: dict[str, Any] | bool, spec: dict[str, Any]) -> Check:
    if sub is True:
        return _always
    if "patternProperties" in spec:
        return _never
    known = frozenset(spec.get("properties", {}))
    check = compile_check(sub)

    def additional(instance: Any) -> bool:
        if isinstance(instance, dict) and not known.issuperset(instance):
            for key, value in instance.items():
                if key not in known and not check(value):
                    return False
        return True

    return additional


def _same(a: Any, b: Any) -> bool:
    # JSON equality: true is not 1; anything but plain scalars is left to jsonschema.
    return type(a) is type(b) and isinstance(a, (str, int, float, bool, type(None))) and a == b


def _const(value: Any, _: dict[str, Any]) -> Check:
    return lambda instance: _same(instance, value)


def _enum(values: list[Any], _: dict[str, Any]) -> Check:
    return lambda instance: any(_same(instance, v) for v in values)


def _minimum(value: float, _: dict[str, Any]) -> Check:
    return lambda instance: (
        not isinstance(instance, (int, float)) or isinstance(instance, bool) or instance >= value
    )


def _min_length(value: int, _: dict[str, Any]) -> Check:
    return lambda instance: not isinstance(instance, str) or len(instance) >= value


def _items(sub: dict[str, Any] | bool, _: dict[str, Any]) -> Check:
    check = compile_check(sub)

    def items(instance: Any) -> bool:
        if isinstance(instance, list):
            for value in instance:
                if not check(value):
                    return False
        return True

    return items


_KEYWORDS: dict[str, Callable[[Any, dict[str, Any]], Check]] = {
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
