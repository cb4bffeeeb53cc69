"""IPython's display protocol: an object becomes a MIME bundle, `display()` sends it.

Bundles are built the way IPython's DisplayFormatter builds them, so pandas,
PIL, sympy, matplotlib and friends need no special cases here:
`_repr_mimebundle_(include=, exclude=)` first, then one `_repr_*_` method per
MIME type for what it did not give, then `repr()` for `text/plain`. Any
method may return `(data, metadata)`. IPython's safety rails are kept: an
object that claims every attribute (a proxy answering the canary) gets only
its `repr`, classes are never asked (their `_repr_*_` are unbound), a failing
method is reported on stderr and skipped, `NotImplementedError` is skipped
silently. Bundles are JSON-safe: binary reprs become base64 text, as Jupyter
sends them, and JSON reprs are JSON values.

`display_id` (IPython's `DisplayHandle`, `update_display`, `ProgressBar`)
names an output that later displays replace, and `clear_output` clears
what the cell showed: both are events of their own, which the supervisor
applies to the cell's output list for hosts that cannot update one. An
object's `_ipython_display_` shows it instead of its bundle; `text/plain`
is IPython's pretty text where it differs from `repr` (see `pretty`), and a
display hook a library installs (`sys.displayhook`: sympy's
`init_printing()`) shows the final expression as it chooses.

The bundle holds only what the host shows (`host_shows`, told when the
worker starts): a text-only host gets no figure drawn, no table built.
Libraries are adapted elsewhere (`libraries`): their formatters come in
through `register_formatter`, and this module knows none of them.

Every worker imports this module (`display` is a builtin there), so it
imports nothing up front.
"""

from __future__ import annotations

import builtins
import os
import sys

from pyrelune import fastjson
from pyrelune.wire.events import ANY_MIME, OWN_MIME, Clear, Display, Payload, json_mime
from pyrelune.worker import importhooks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection
    from types import ModuleType
    from typing import Any, TypeAlias

    Bundle: TypeAlias = tuple[dict[str, Any], dict[str, Any]]
    Sink: TypeAlias = Callable[[Display | Clear], None]

#: The `_repr_*_` methods after `_repr_mimebundle_`, in IPython's order.
REPR_METHODS = (
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("application/pdf", "_repr_pdf_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
    ("application/javascript", "_repr_javascript_"),
)
#: An attribute no honest object has: one that answers for it claims everything.
_CANARY = "_ipython_canary_method_should_not_exist_"
#: Where IPython defines `display` (8.x, then 7.x): patched as it is imported.
_IPYTHON_MODULES = ("IPython.core.display_functions", "IPython.core.display")
#: IPython's text/plain is its pretty printer's, this wide (PlainTextFormatter.max_width).
PRETTY_WIDTH = 79
#: ...and it shows at most this many items of a sequence.
PRETTY_ITEMS = 1000

_sink: Sink | None = None
#: Where pages go (see `page`): the cell's reply, whatever `diverted` does to displays.
_pager: Callable[[Payload], None] | None = None
_sink_pid = 0  # a process the cell forks must not speak on its parent's channel
#: The types the host shows (see `host_shows`); None: no host said, so every type.
_host: frozenset[str] | None = None
#: pyrelune's own formatters (see `register_formatter`), by the class they format.
_formatters: dict[type, Callable[..., Any] | str] = {}


def connect(sink: Sink, pager: Callable[[Payload], None] | None = None) -> None:
    """Send every display of this process to `sink`, in whichever way a cell asks, and
    every page (see `page`) to `pager`.

    `display` becomes a builtin (as in IPython), and IPython's own `display`
    is replaced if a cell imports IPython.
    """
    global _sink, _sink_pid, _pager
    _sink, _sink_pid, _pager = sink, os.getpid(), pager
    builtins.display = display  # type: ignore[attr-defined]
    for name in _IPYTHON_MODULES:
        importhooks.after_import(name, _patch_ipython)
    if "IPython.display" in sys.modules:  # it re-exports `display`, already imported
        _patch_ipython(sys.modules["IPython.display"])


def moved() -> None:
    """This process took the worker's place (a woken snapshot): its displays are the worker's."""
    global _sink_pid
    if _sink is not None:
        _sink_pid = os.getpid()


def page(data: dict[str, Any]) -> None:
    """Show the bundle `data` in a Jupyter front end's pager (`obj?`): a payload of the
    cell's reply, as IPython's pages are, which a `%%capture` does not keep."""
    if _pager is not None and os.getpid() == _sink_pid:
        _pager(Payload({"source": "page", "data": data, "start": 0}))
    else:  # no pager to show it in: printed, as IPython's pager does without one
        print(data.get("text/plain", ""))


class diverted:  # a context manager, named as `contextlib`'s are
    """Displays go to `sink` instead while the block runs (`%%capture` keeps them)."""

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._saved: Sink | None = None

    def __enter__(self) -> None:
        global _sink
        self._saved, _sink = _sink, self._sink

    def __exit__(self, *exc: object) -> None:
        global _sink
        _sink = self._saved


def host_shows(types: Collection[str]) -> None:
    """The host shows only `types` (see `shown`): no bundle is built of any other.

    Told once, as the worker starts: a lines kernel's host reads text, so a
    figure is never drawn for it, nor a table built for the rpc kernel's.
    """
    global _host
    _host = frozenset(types)


def shown(types: Collection[str] | None, mime: str) -> bool:
    """Whether a host that shows `types` (None: every type) is sent `mime`.

    `text/plain` always: every host falls back on it. `*/*` is every type
    but pyrelune's own, which only a host that names them reads.
    """
    if types is None or mime == "text/plain" or mime in types:
        return True
    return ANY_MIME in types and not mime.startswith(OWN_MIME)


def wanted(mime: str, include: Collection[str] | None = None,
           exclude: Collection[str] | None = None) -> bool:
    """Whether a bundle gets `mime`: asked for by `display()` (include, exclude), shown by the host.

    Formatters that make costly types (a figure's image) ask before they make one.
    """
    return ((include is None or mime in include) and (exclude is None or mime not in exclude)
            and shown(_host, mime))


def register_formatter(cls: type, formatter: str) -> None:
    """Format instances of `cls` (and of its subclasses) with `formatter` too.

    `formatter` is a `module:function` name, imported when first used: a
    library's adapter (see `libraries`) registers it when the library is
    imported, and pays for its own module only once a value is shown. It is
    called as `function(obj, include, exclude)`, and returns a bundle (or
    `(data, metadata)`) of the types it was asked for that are `wanted`.
    """
    _formatters[cls] = formatter


def display(
    *objs: Any,
    include: Collection[str] | None = None,
    exclude: Collection[str] | None = None,
    metadata: dict[str, Any] | None = None,
    transient: dict[str, Any] | None = None,
    display_id: str | bool | None = None,
    raw: bool = False,
    clear: bool = False,
    update: bool = False,
    **ignored: Any,
) -> Any:
    """Show each object as a rich output, in order with what the cell prints.

    The same signature as IPython's `display`: with `raw=True` each object is
    already a MIME bundle; `display_id` (True: a new one) names the outputs,
    and returns a handle whose `update()` replaces them; `update=True`
    replaces the outputs shown under `display_id`; `clear` clears the
    cell's output first (as `clear_output(wait=True)`).
    """
    if display_id is True:
        display_id = _new_id()
    elif not display_id and isinstance(transient, dict):
        display_id = transient.get("display_id")
    named = str(display_id) if display_id else None
    if update and named is None:
        raise TypeError("display_id required for update_display")
    if named is not None:
        if update and named not in _shown_ids:
            return _handle(named)  # no output has this id: Jupyter ignores the update too
        _remember_id(named)
    if clear:
        clear_output(wait=True)
    if not objs and named is not None:
        objs, raw = ({},), True  # an empty output, to be updated later
    for obj in objs:
        if raw:
            data, meta = checked_bundle(obj, {}, obj, "display(raw=True)")
        elif _displays_itself(obj):
            continue
        else:
            data, meta = mime_bundle(obj, include, exclude)
        if metadata:
            meta = {**meta, **metadata}
        if data or named is not None:
            _send(Display(data, meta, False, named, update))
    return None if named is None else _handle(named)


#: The display ids this process showed, oldest first: updates of any other id are ignored.
_shown_ids: dict[str, None] = {}
#: How many ids are remembered (a progress loop may make one per step).
MAX_IDS = 65536


def _remember_id(display_id: str) -> None:
    _shown_ids.pop(display_id, None)
    _shown_ids[display_id] = None
    if len(_shown_ids) > MAX_IDS:
        del _shown_ids[next(iter(_shown_ids))]


def update_display(obj: Any, *, display_id: str, **kwargs: Any) -> None:
    """Replace the outputs shown under `display_id` with `obj` (IPython's `update_display`)."""
    kwargs["update"] = True
    display(obj, display_id=display_id, **kwargs)


def clear_output(wait: bool = False) -> None:
    """Clear what the cell showed so far; with `wait`, once it shows something new."""
    if _sink is not None and os.getpid() == _sink_pid:
        _sink(Clear(wait))


class DisplayHandle:
    """What `display(..., display_id=True)` returns where IPython is not imported."""

    def __init__(self, display_id: str | None = None) -> None:
        self.display_id = display_id or _new_id()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} display_id={self.display_id}>"

    def display(self, obj: Any, **kwargs: Any) -> None:
        display(obj, display_id=self.display_id, **kwargs)

    def update(self, obj: Any, **kwargs: Any) -> None:
        update_display(obj, display_id=self.display_id, **kwargs)


def _handle(display_id: str) -> Any:
    """IPython's own DisplayHandle once a cell imported IPython (for `isinstance`), else ours."""
    functions = sys.modules.get(_IPYTHON_MODULES[0])
    handle = getattr(functions, "DisplayHandle", None) or DisplayHandle
    return handle(display_id)


def _new_id() -> str:
    return os.urandom(16).hex()


def show_result(value: Any) -> None:
    """Display a cell's final expression (`Out[n]` in IPython).

    A display hook a library installed (sympy's `init_printing()` outside
    IPython) shows it instead, as the interactive interpreter would let it.
    """
    hook = sys.displayhook
    if hook is not sys.__displayhook__:
        if getattr(hook, "__module__", None) == "__main__":
            hook(value)  # the cell's own: IPython too lets it print as it likes
        else:
            _hooked(hook, value)
        return
    if _displays_itself(value):
        return
    data, metadata = mime_bundle(value)
    _send(Display(data, metadata, True))


def _hooked(hook: Callable[[Any], object], value: Any) -> None:
    """What a library's display hook prints of the value is the cell's result, not stream text.

    Such a hook stands in for the formatters the library would give IPython
    (sympy's `init_printing()` does one or the other), whose text a notebook
    shows as the cell's output. What the hook displays itself, or
    writes to stderr, goes as it would; what another thread prints to stdout
    while the hook runs joins the result.
    """
    import io

    printed = io.StringIO()
    saved, sys.stdout = sys.stdout, printed
    try:
        hook(value)
    finally:
        if sys.stdout is printed:
            sys.stdout = saved
    text = printed.getvalue()
    if text:
        _send(Display({"text/plain": text.removesuffix("\n")}, {}, True))


def _displays_itself(obj: Any) -> bool:
    """Call `obj._ipython_display_()`, if it has one: then it showed itself.

    As in IPython, a failing one is reported and the object is shown from its bundle.
    """
    if type(obj) in _BUILTIN_TYPES:
        return False
    method = _real_method(obj, "_ipython_display_")
    if method is None:
        return False
    try:
        method()
    except NotImplementedError:
        return False
    except Exception as exc:
        _report(obj, "_ipython_display_", "failed", exc)
        return False
    return True


def _send(event: Display) -> None:
    if _sink is not None and os.getpid() == _sink_pid:
        _sink(event)
    else:  # not in a worker (a script, a child of a cell): print as IPython does
        print(event.data.get("text/plain", ""))


#: Types that have only their repr: no formatter, no `_repr_*_` method to look for.
_BUILTIN_TYPES = frozenset({int, float, complex, bool, str, bytes, type(None),
                            list, tuple, dict, set, frozenset, range})


def mime_bundle(
    obj: Any, include: Collection[str] | None = None, exclude: Collection[str] | None = None
) -> Bundle:
    """`(data, metadata)` for `obj`; `text/plain` is always there unless excluded."""
    if type(obj) in _BUILTIN_TYPES and include is None and exclude is None:
        return {"text/plain": _plain(obj)}, {}  # nothing else to ask them: skip the protocol

    data: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    formatter = _formatter(obj) if _formatters else None
    if formatter is not None:
        returned = _call(obj, formatter.__name__, formatter, obj, include, exclude)
        _merge_bundle(data, metadata, returned, obj, formatter.__name__)
    method = _real_method(obj, "_repr_mimebundle_")
    if method is not None:
        returned = _call(obj, "_repr_mimebundle_", method, include=_asked(include),
                         exclude=exclude)
        _merge_bundle(data, metadata, returned, obj, "_repr_mimebundle_")
    for mime, name in REPR_METHODS:
        if mime in data or not wanted(mime, include, exclude):
            continue
        method = _real_method(obj, name)
        if method is not None:
            _merge_one(data, metadata, _call(obj, name, method), obj, name, mime)
    if "text/plain" not in data and wanted("text/plain", include, exclude):
        data["text/plain"] = _plain(obj)
    for mime in [mime for mime in data if not wanted(mime, include, exclude)]:
        del data[mime]
        metadata.pop(mime, None)
    return data, metadata


def _real_method(obj: Any, name: str) -> Callable[..., Any] | None:
    """`obj.name` if it is a real method: not on a class, not from a proxy claiming all."""
    if isinstance(obj, type):
        return None
    try:
        if getattr(obj, _CANARY, None) is not None:
            return None
        method = getattr(obj, name, None)
    except Exception:
        return None
    return method if callable(method) else None


def _formatter(obj: Any) -> Callable[..., Any] | None:
    """The formatter registered for `obj`'s class or the nearest base that has one, if any."""
    for cls in type(obj).__mro__:
        formatter = _formatters.get(cls)
        if isinstance(formatter, str):
            module, _, name = formatter.partition(":")
            __import__(module)
            formatter = _formatters[cls] = getattr(sys.modules[module], name)
        if formatter is not None:
            return formatter
    return None


def _asked(include: Collection[str] | None) -> Collection[str] | None:
    """What an object's `_repr_mimebundle_` is asked for: `include`, narrowed to what the
    host shows (as IPython asks for what its front end shows)."""
    host = _host
    if host is None or ANY_MIME in host:
        return include
    return [mime for mime in sorted({"text/plain", *host}) if include is None or mime in include]


def _call(obj: Any, name: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`method(...)`, or None when it fails (reported) or is not implemented (silent)."""
    try:
        return method(*args, **kwargs)
    except NotImplementedError:
        return None
    except Exception as exc:
        _report(obj, name, "failed", exc)
        return None


def _report(obj: Any, name: str, problem: str, exc: BaseException | None = None) -> None:
    """Tell the cell's stderr that a representation was skipped, and why."""
    where = f"{type(obj).__module__}.{type(obj).__qualname__}.{name}"
    text = f"pyrelune: {where} {problem}; skipped\n"
    if exc is not None:
        from pyrelune.worker.cell import exception_text, format_traceback

        tb = exc.__traceback__.tb_next if exc.__traceback__ else None  # not our frame
        text += format_traceback(exc, tb, exception_text(exc))
    sys.stderr.write(text)


def _split_metadata(returned: Any) -> tuple[Any, dict[str, Any]]:
    """`(value, metadata)` from what a formatter returned, which may be either."""
    if isinstance(returned, tuple) and len(returned) == 2:
        value, meta = returned
        return value, meta if isinstance(meta, dict) and fastjson.encodable(meta) else {}
    return returned, {}


def _merge_one(
    data: dict[str, Any], metadata: dict[str, Any], returned: Any, obj: Any, name: str, mime: str
) -> None:
    """Add what a `_repr_*_` method returned for `mime`."""
    if returned is None:
        return
    value, meta = _split_metadata(returned)
    safe = json_safe(mime, value)
    if safe is None:
        _report(obj, name, f"returned {type(value).__name__}, not usable as {mime}{_needs(mime)}")
        return
    data[mime] = safe
    if meta:
        metadata[mime] = meta


def _merge_bundle(
    data: dict[str, Any], metadata: dict[str, Any], returned: Any, obj: Any, name: str
) -> None:
    """Add what a whole-bundle formatter returned; what is already there stays."""
    if returned is None:
        return
    found, meta = checked_bundle(*_split_metadata(returned), obj, name)
    for key, value in found.items():
        data.setdefault(key, value)
    for key, value in meta.items():
        metadata.setdefault(key, value)


def checked_bundle(bundle: Any, metadata: Any, obj: Any, name: str) -> Bundle:
    """The JSON-safe part of a `{mime: value}` bundle, and its metadata if JSON-safe."""
    if not isinstance(bundle, dict):
        _report(obj, name, f"returned {type(bundle).__name__}, not a MIME bundle (a dict)")
        return {}, {}
    data: dict[str, Any] = {}
    for mime, value in bundle.items():
        safe = json_safe(mime, value) if isinstance(mime, str) else None
        if safe is None:
            _report(obj, name, f"returned an unusable {mime!r} value{_needs(mime)}")
        else:
            data[mime] = safe
    return data, metadata if isinstance(metadata, dict) and fastjson.encodable(metadata) else {}


def json_safe(mime: str, value: Any) -> Any:
    """`value` as it can travel in JSON for `mime`, or None when it cannot.

    Images and other binary types become base64 text (a str is taken to be
    base64 already, as IPython's `Image` gives it); JSON types are JSON
    values (a str is parsed); text types are str.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        if _is_text(mime):
            return bytes(value).decode("utf-8", "replace")
        binascii = importhooks.import_own("binascii")
        return binascii.b2a_base64(bytes(value), newline=False).decode("ascii")
    if json_mime(mime):
        if isinstance(value, str):
            try:
                parsed = fastjson.loads(value)
            except (ValueError, RecursionError):
                return None
            return parsed if fastjson.shallow(value, parsed) else None
        return value if fastjson.encodable(value) else None
    return value if isinstance(value, str) else None


def _needs(mime: object) -> str:
    """What a value of `mime` must be, beside a refused one: a list is JSON, if not too deep."""
    json = isinstance(mime, str) and json_mime(mime)
    return f" (JSON nested at most {fastjson.MAX_DEPTH} deep)" if json else ""


def _is_text(mime: str) -> bool:
    return mime.startswith("text/") or mime == "image/svg+xml" or mime.endswith("+xml")


def _plain(obj: Any) -> str:
    """`text/plain` as IPython gives it: its pretty printer's text, not always `repr`.

    `pretty` writes it as IPython does, without importing IPython (0.1 s).
    IPython's own printer is used where it is installed and the text needs
    it: an object with `_repr_pretty_` (inside a container too), or a
    container wrapped on several lines; and whenever a cell imported it.
    """
    if type(obj) in _SCALARS:
        return _repr(obj)
    if "IPython.lib.pretty" in sys.modules:
        return _pretty(obj) or _repr(obj)
    from pyrelune.worker import pretty

    try:
        text, wrapped = pretty.laid_out(obj)
    except pretty.NeedsIPython:
        return _pretty(obj) or _repr(obj)
    except Exception:  # a repr inside failed: the object's own repr reports it
        return _repr(obj)
    return (_pretty(obj) or text) if wrapped else text


#: Types whose text IPython writes as their repr, looked at for every result.
_SCALARS = frozenset({int, float, complex, bool, str, bytes, type(None), range})


def _pretty(obj: Any) -> str | None:
    """IPython's pretty text of `obj`, as its PlainTextFormatter makes it; None without IPython."""
    try:
        from IPython.lib import pretty
    except Exception:  # not installed, or broken
        return None
    printer: Any = pretty.pretty  # untyped
    try:
        text: str = printer(obj, max_width=PRETTY_WIDTH, max_seq_length=PRETTY_ITEMS)
    except Exception as exc:
        _report(obj, "_repr_pretty_", "failed", exc)
        return None
    return text


def _repr(obj: Any) -> str:
    try:
        return repr(obj)
    except Exception as exc:
        _report(obj, "__repr__", "failed", exc)
        return object.__repr__(obj)


def _patch_ipython(module: ModuleType) -> None:
    """IPython's display functions become ours, in each module that defines or re-exports them."""
    for name, ours in (("display", display), ("update_display", update_display),
                       ("clear_output", clear_output)):
        if callable(getattr(module, name, None)):
            setattr(module, name, ours)
