"""JSON through CPython's C accelerator, without importing `json`.

`import json` pulls in `re` and `enum` and costs about 40% of a bare
interpreter start, which is most of the oneshot start-up budget. The C
scanner and encoder that `json` itself uses are reachable directly; this
module drives them exactly as `json.loads` and `json.dumps` do (tests prove
the same output), and imports `json` only to word an error.
"""

from __future__ import annotations

import _json
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class _ScanContext:
    """The attributes `_json.make_scanner` reads, as `json.JSONDecoder` sets them."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


class _StrictContext(_ScanContext):
    """JSON as RFC 8259 has it: `NaN` and `Infinity` are Python's extensions, not JSON."""

    @staticmethod
    def parse_constant(name: str) -> float:
        raise ValueError(f"{name} is not a JSON value (numbers must be finite)")


_scanners = {True: _json.make_scanner(_ScanContext()),  # type: ignore[arg-type]
             False: _json.make_scanner(_StrictContext())}  # type: ignore[arg-type]
_WHITESPACE = " \t\n\r"


def _unserializable(obj: object) -> Any:
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _encoder(ensure_ascii: bool, allow_nan: bool) -> Any:
    quote = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    return _json.make_encoder({}, _unserializable, quote, None, ": ", ", ", False, False, allow_nan)


_encoders = {(a, n): _encoder(a, n) for a in (False, True) for n in (False, True)}


def loads(text: str, allow_nan: bool = True) -> Any:
    """`json.loads(text)`; raises `json.JSONDecodeError` (or RecursionError) like it.

    Without `allow_nan`, `NaN`, `Infinity` and `-Infinity` raise ValueError:
    what a host sends is held to the JSON standard.
    """
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scanners[allow_nan](text, start)
    except (StopIteration, SystemError):
        # SystemError: before 3.12 the scanner words some errors with
        # json.decoder.JSONDecodeError only if `json.decoder` is already
        # imported, and otherwise fails without an exception.
        value, end = None, -1
    if end < 0 or text[end:].strip(_WHITESPACE):
        # In a worker, a cell's folder is on sys.path: borrow the runtime's own
        # json there, not a cell's json.py. The supervisor never loads worker code.
        hooks = sys.modules.get("pyrelune.worker.importhooks")
        json = hooks.import_own("json") if hooks is not None else __import__("json")
        return json.loads(text)  # raises the error json would, with its wording
    return value


#: How deep the JSON pyrelune sends may nest. Readers recurse once a level
#: (Python's own, the session's included, under a default recursion limit of
#: 1000): a cell that raised its process's limit must not make JSON they choke on.
MAX_DEPTH = 500
_CONTAINERS = (dict, list, tuple)  # what becomes a JSON object or array


def encodable(obj: Any, allow_nan: bool = True) -> bool:
    """Whether `dumps` takes `obj` (no foreign types, NaN if allowed) and readers take it back.

    That is, it nests at most `MAX_DEPTH` deep, whatever this process's recursion limit.
    """
    try:
        text = dumps(obj, allow_nan=allow_nan)
    except (TypeError, ValueError, RecursionError):
        return False
    return shallow(text, obj)


def shallow(text: str, value: Any) -> bool:
    """Whether `value`, which is `text` as JSON, nests at most `MAX_DEPTH` deep.

    Each level opens a bracket, so a short text, or one with few brackets, is
    settled at once (the usual case); otherwise the value is walked a level at
    a time, not recursively.
    """
    if len(text) <= MAX_DEPTH or text.count("[") + text.count("{") <= MAX_DEPTH:
        return True
    level = [value] if isinstance(value, _CONTAINERS) else []
    for _ in range(MAX_DEPTH):
        if not level:
            return True
        level = [inner for outer in level
                 for inner in (outer.values() if isinstance(outer, dict) else outer)
                 if isinstance(inner, _CONTAINERS)]
    return not level


def dumps(obj: Any, ensure_ascii: bool = True, allow_nan: bool = True) -> str:
    """`json.dumps(obj, ensure_ascii=..., allow_nan=...)` with default separators."""
    if isinstance(obj, str):
        quote = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
        return str(quote(obj))
    return "".join(_encoders[ensure_ascii, allow_nan](obj, 0))


#: `dumps_utf8`'s encoder: not ASCII-only, no NaN, and without `json`'s check for
#: circular references (`check_circular=False`): what the protocols encode is built
#: from decoded JSON and their own dicts, which cannot hold a cycle.
_tree_encoder = _json.make_encoder(None, _unserializable, _json.encode_basestring, None,
                                   ": ", ", ", False, False, False)


def dumps_utf8(obj: Any) -> bytes:
    """Strict JSON in UTF-8, as strict parsers want it: lone surrogates become U+FFFD.

    NaN and infinities are refused (ValueError) rather than written as the
    bare words `json` uses, which are not JSON. A message a protocol sends
    costs this one call: the encoder is driven directly.
    """
    text = "".join(_tree_encoder(obj, 0))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8")
