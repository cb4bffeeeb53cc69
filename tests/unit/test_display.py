"""The IPython display protocol on plain objects: bundles, safety rails, display()."""

from __future__ import annotations

import base64
import json
import os
import sys
from typing import Any, ClassVar

import pytest

from pyrelune.wire.events import Clear
from pyrelune.worker import display as rich
from pyrelune.worker.display import REPR_METHODS, display, json_safe, mime_bundle, show_result

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16


class AllReprs:
    """One of each `_repr_*_` method."""

    def _repr_html_(self) -> str:
        return "<b>html</b>"

    def _repr_markdown_(self) -> str:
        return "**md**"

    def _repr_svg_(self) -> str:
        return "<svg></svg>"

    def _repr_png_(self) -> bytes:
        return PNG

    def _repr_jpeg_(self) -> bytes:
        return b"\xff\xd8jpeg"

    def _repr_latex_(self) -> str:
        return "$x$"

    def _repr_json_(self) -> dict[str, Any]:
        return {"a": [1, 2]}

    def _repr_pdf_(self) -> bytes:
        return b"%PDF-1.4"

    def _repr_javascript_(self) -> str:
        return "console.log(1)"

    def __repr__(self) -> str:
        return "AllReprs()"


def test_each_repr_method_gives_its_mime_type() -> None:
    data, metadata = mime_bundle(AllReprs())
    assert set(data) == {mime for mime, _ in REPR_METHODS} | {"text/plain"}
    assert data["text/html"] == "<b>html</b>"
    assert data["text/markdown"] == "**md**"
    assert data["image/svg+xml"] == "<svg></svg>"
    assert data["text/latex"] == "$x$"
    assert data["application/json"] == {"a": [1, 2]}
    assert data["text/plain"] == "AllReprs()"
    assert metadata == {}


def test_binary_reprs_are_base64_text() -> None:
    data, _ = mime_bundle(AllReprs())
    assert base64.b64decode(data["image/png"]) == PNG
    assert base64.b64decode(data["image/jpeg"]) == b"\xff\xd8jpeg"
    json.dumps(data, allow_nan=False)  # the whole bundle travels as JSON


def test_a_plain_object_has_only_its_repr() -> None:
    assert mime_bundle([1, "a"]) == ({"text/plain": "[1, 'a']"}, {})


def test_data_metadata_tuples() -> None:
    class Tupled:
        def _repr_png_(self) -> tuple[bytes, dict[str, int]]:
            return PNG, {"width": 40}

        def _repr_json_(self) -> tuple[dict[str, int], dict[str, bool]]:
            return {"x": 1}, {"expanded": True}

    data, metadata = mime_bundle(Tupled())
    assert base64.b64decode(data["image/png"]) == PNG
    assert data["application/json"] == {"x": 1}
    assert metadata == {"image/png": {"width": 40}, "application/json": {"expanded": True}}


class Bundled:
    """`_repr_mimebundle_` first; `_repr_*_` methods fill in what it did not give."""

    calls: ClassVar[list[tuple[Any, Any]]] = []

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        Bundled.calls.append((include, exclude))
        return {"text/html": "<i>bundle</i>", "image/png": PNG}, {"image/png": {"height": 3}}

    def _repr_html_(self) -> str:
        return "<i>method</i>"

    def _repr_svg_(self) -> str:
        return "<svg/>"


def test_mimebundle_comes_first_and_methods_fill_in() -> None:
    data, metadata = mime_bundle(Bundled())
    assert data["text/html"] == "<i>bundle</i>"
    assert data["image/svg+xml"] == "<svg/>"
    assert base64.b64decode(data["image/png"]) == PNG
    assert metadata == {"image/png": {"height": 3}}


def test_include_and_exclude_reach_the_mimebundle_and_filter_the_result() -> None:
    Bundled.calls.clear()
    data, _ = mime_bundle(Bundled(), include=["text/html", "text/plain"])
    assert set(data) == {"text/html", "text/plain"}
    data, _ = mime_bundle(Bundled(), exclude=["text/html", "image/png"])
    assert set(data) == {"image/svg+xml", "text/plain"}
    assert Bundled.calls == [
        (["text/html", "text/plain"], None), (None, ["text/html", "image/png"])
    ]


def test_a_failing_repr_is_reported_on_stderr_and_skipped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class Failing:
        def _repr_html_(self) -> str:
            raise ValueError("html is broken")

        def _repr_svg_(self) -> str:
            return "<svg/>"

        def __repr__(self) -> str:
            return "Failing()"

    data, _ = mime_bundle(Failing())
    assert data == {"image/svg+xml": "<svg/>", "text/plain": "Failing()"}
    err = capsys.readouterr().err
    assert "Failing._repr_html_ failed; skipped" in err
    assert "ValueError: html is broken" in err
    assert "worker/display.py" not in err  # the traceback is the method's, not ours



def test_a_repr_raising_what_traceback_cannot_format_is_still_reported(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class Odd:
        def _repr_html_(self) -> str:
            # an offset that is not a number is what traceback cannot format
            raise SyntaxError("bad html", ("f.py", 1, "abc", "x"))  # type: ignore[arg-type]

        def __repr__(self) -> str:
            return "Odd()"

    assert mime_bundle(Odd())[0] == {"text/plain": "Odd()"}
    err = capsys.readouterr().err
    assert "Odd._repr_html_ failed; skipped" in err
    assert err.endswith("SyntaxError: bad html (f.py, line 1)\n")

def test_not_implemented_is_skipped_silently(capsys: pytest.CaptureFixture[str]) -> None:
    class Declines:
        def _repr_html_(self) -> str:
            raise NotImplementedError

        def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
            raise NotImplementedError

    data, _ = mime_bundle(Declines())
    assert set(data) == {"text/plain"}
    assert capsys.readouterr().err == ""


def test_a_failing_repr_falls_back_to_the_default_repr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class NoRepr:
        def __repr__(self) -> str:
            raise RuntimeError("no repr today")

    data, _ = mime_bundle(NoRepr())
    assert data["text/plain"].startswith("<") and "NoRepr object at 0x" in data["text/plain"]
    assert "RuntimeError: no repr today" in capsys.readouterr().err


def test_wrong_return_types_are_reported_and_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    class Wrong:
        def _repr_svg_(self) -> int:
            return 42

        def _repr_json_(self) -> object:
            return object()

        def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
            return ["not", "a", "dict"]

    data, _ = mime_bundle(Wrong())
    assert set(data) == {"text/plain"}
    err = capsys.readouterr().err
    assert "Wrong._repr_svg_ returned int, not usable as image/svg+xml; skipped" in err
    assert "Wrong._repr_json_ returned object" in err
    assert "Wrong._repr_mimebundle_ returned list, not a MIME bundle" in err


def test_a_proxy_claiming_every_attribute_gets_only_its_repr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class Proxy:
        def __getattr__(self, name: str) -> Any:
            return lambda *args, **kwargs: "<b>claimed</b>"

        def __repr__(self) -> str:
            return "Proxy()"

    assert mime_bundle(Proxy()) == ({"text/plain": "Proxy()"}, {})
    assert capsys.readouterr().err == ""


def test_a_proxy_whose_getattr_raises_gets_only_its_repr() -> None:
    class Exploding:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError(name)

        def __repr__(self) -> str:
            return "Exploding()"

    assert mime_bundle(Exploding()) == ({"text/plain": "Exploding()"}, {})


def test_classes_are_not_asked_for_reprs() -> None:
    data, _ = mime_bundle(AllReprs)  # its text/plain is IPython's: the dotted name
    assert data == {"text/plain": f"{AllReprs.__module__}.{AllReprs.__qualname__}"}


@pytest.mark.parametrize(
    ("mime", "value", "expected"),
    [
        ("application/json", '{"a": 1}', {"a": 1}),
        ("application/json", "not json", None),
        ("application/json", {"s": {1, 2}}, None),
        ("application/vnd.custom+json", [1, 2], [1, 2]),
        ("text/html", b"<b>\xc3\xa9</b>", "<b>é</b>"),
        ("image/svg+xml", b"<svg/>", "<svg/>"),
        ("image/png", "aGk=", "aGk="),
        ("image/png", b"hi", "aGk="),
        ("application/pdf", b"hi", "aGk="),
        ("text/plain", 42, None),
    ],
)
def test_json_safe(mime: str, value: Any, expected: Any) -> None:
    assert json_safe(mime, value) == expected


class DeepJson:
    """Encodes under the raised recursion limit, but no reader could parse it back."""

    def _repr_json_(self) -> list[Any]:
        value: list[Any] = []
        for _ in range(5000):
            value = [value]
        return value


@pytest.mark.usefixtures("deep_recursion")
def test_json_nested_too_deep_is_refused_and_said(capsys: pytest.CaptureFixture[str]) -> None:
    deep = DeepJson()._repr_json_()
    assert json_safe("application/json", deep) is None
    as_text = "[" * 5001 + "]" * 5001  # as json.dumps(deep) writes it (3.12 cannot: too deep)
    assert json_safe("application/vnd.custom+json", as_text) is None
    data, _ = mime_bundle(DeepJson())
    assert set(data) == {"text/plain"}
    assert ("DeepJson._repr_json_ returned list, not usable as application/json "
            "(JSON nested at most 500 deep); skipped") in capsys.readouterr().err


def test_display_sends_each_object_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[Any] = []
    monkeypatch.setattr(rich, "_sink", events.append)
    monkeypatch.setattr(rich, "_sink_pid", os.getpid())
    display(1, AllReprs(), include=["text/plain", "text/html"], metadata={"tag": "x"})
    display({"text/markdown": "# raw", "image/png": PNG}, raw=True, display_id="d")
    show_result("done")
    sent = [(e.data, e.metadata, e.is_result, e.display_id) for e in events]
    assert sent[0] == ({"text/plain": "1"}, {"tag": "x"}, False, None)
    assert sent[1] == (
        {"text/html": "<b>html</b>", "text/plain": "AllReprs()"}, {"tag": "x"}, False, None
    )
    assert sent[2][0]["text/markdown"] == "# raw" and sent[2][3] == "d"
    assert base64.b64decode(sent[2][0]["image/png"]) == PNG
    assert sent[3] == ({"text/plain": "'done'"}, {}, True, None)


def test_display_of_nothing_showable_sends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[Any] = []
    monkeypatch.setattr(rich, "_sink", sent.append)
    monkeypatch.setattr(rich, "_sink_pid", os.getpid())
    display(1, exclude=["text/plain"])
    assert sent == []


def test_display_outside_a_worker_prints_the_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(rich, "_sink", None)
    display(AllReprs(), [3])
    assert capsys.readouterr().out == "AllReprs()\n[3]\n"


def test_pyrelune_display_is_lazy_and_is_the_engine_display() -> None:
    import pyrelune
    from pyrelune import display as exported

    assert exported is display
    with pytest.raises(AttributeError):
        pyrelune.no_such_thing  # noqa: B018


def test_text_plain_is_ipythons_pretty_text_where_it_differs_from_repr() -> None:
    pytest.importorskip("IPython")
    from IPython.core.formatters import PlainTextFormatter

    for value in (list(range(50)), {"b", "a", "c"}, [1, 2], {"k" * 40: "v" * 40, "x": 1}):
        assert mime_bundle(value)[0]["text/plain"] == PlainTextFormatter()(value)

    class Pretty:
        def _repr_pretty_(self, p: Any, cycle: bool) -> None:
            p.text("pretty text")

    assert mime_bundle(Pretty())[0]["text/plain"] == "pretty text"


def test_display_hooks_and_ipython_display_take_over(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[Any] = []
    monkeypatch.setattr(rich, "_sink", events.append)
    monkeypatch.setattr(rich, "_sink_pid", os.getpid())
    hooked: list[Any] = []
    monkeypatch.setattr(sys, "displayhook", hooked.append)
    show_result(42)
    assert hooked == [42] and events == []  # it printed nothing: nothing to show
    def library_hook(value: Any) -> None:
        print(f"<{value}>")

    library_hook.__module__ = "lib"  # not the cell's own
    monkeypatch.setattr(sys, "displayhook", library_hook)
    show_result(42)
    assert [(e.data, e.is_result) for e in events] == [({"text/plain": "<42>"}, True)]
    events.clear()
    monkeypatch.setattr(sys, "displayhook", sys.__displayhook__)

    class Itself:
        def _ipython_display_(self) -> None:
            display("its own")

    show_result(Itself())
    display(Itself())
    assert [e.data for e in events] == [{"text/plain": "'its own'"}] * 2


def test_a_handle_updates_and_clear_output_is_an_event(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[Any] = []
    monkeypatch.setattr(rich, "_sink", events.append)
    monkeypatch.setattr(rich, "_sink_pid", os.getpid())
    # Not imported (in a worker, IPython's handle would call our display: see the e2e tests).
    monkeypatch.delitem(sys.modules, "IPython.core.display_functions", raising=False)
    handle = display(1, display_id=True)
    handle.update(2)
    rich.clear_output(wait=True)
    with pytest.raises(TypeError, match="display_id required"):
        display(3, update=True)
    first, second, clear = events
    assert first.display_id == second.display_id == handle.display_id
    assert (first.update, second.update, second.data) == (False, True, {"text/plain": "2"})
    assert isinstance(clear, Clear) and clear.wait
