"""The library adapters: registered by name, loaded only with their library, outside display."""

from __future__ import annotations

import subprocess
import sys
import types
from typing import Any

import pytest

from pyrelune.wire.events import Display
from pyrelune.worker import display, importhooks, libraries


def test_every_adapter_names_functions_that_exist() -> None:
    named = [name for adapter in libraries.ADAPTERS.values()
             for name in (adapter.after, adapter.before, *(f for _, f in adapter.formatters))
             if name]
    assert len(named) >= 6
    for name in named:
        assert callable(libraries._named(name)), name


def test_the_display_core_loads_no_adapter_and_no_library() -> None:
    script = ("import sys\nfrom pyrelune.worker import display\n"
              "print(sorted(m for m in sys.modules if m.startswith(("
              "'pyrelune.worker', 'matplotlib', 'pandas', 'numpy', 'rich'))))")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True).stdout
    assert eval(loaded) == ["pyrelune.worker", "pyrelune.worker.display",
                            "pyrelune.worker.importhooks"]


def test_a_formatter_is_imported_by_name_when_first_used(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    module = types.ModuleType("fake_adapter")

    def bundle(obj: Any, include: Any, exclude: Any) -> dict[str, str]:
        calls.append(obj)
        return {"text/html": "<i>t</i>"}

    module.bundle = bundle  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_adapter", module)
    monkeypatch.setattr(display, "_formatters", {})

    class Table:
        pass

    class Wider(Table):
        pass

    display.register_formatter(Table, "fake_adapter:bundle")
    assert display._formatters[Table] == "fake_adapter:bundle"  # not looked up yet
    wider = Wider()
    assert display.mime_bundle(wider)[0]["text/html"] == "<i>t</i>"  # a subclass's too
    assert calls == [wider] and display._formatters[Table] is bundle


def test_an_adapter_registers_its_formatters_and_runs_once_its_module_is_imported(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    module = types.ModuleType("fake_library")

    class Frame:
        pass

    module.Frame = Frame  # type: ignore[attr-defined]
    adapter_module = types.ModuleType("fake_adapter")
    adapter_module.after = lambda m: seen.append(m.__name__)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_adapter", adapter_module)
    monkeypatch.setattr(display, "_formatters", {})
    adapter = libraries.Adapter(after="fake_adapter:after",
                                formatters=(("Frame", "fake_adapter:bundle"), ("Gone", "x:y")))
    monkeypatch.setattr(libraries, "ADAPTERS", {"fake_library": adapter})
    monkeypatch.setenv("MPLBACKEND", "agg")
    monkeypatch.setattr(libraries, "_hooked", False)
    monkeypatch.setattr(importhooks, "_callbacks", {})
    monkeypatch.setattr(importhooks, "_before", {})
    monkeypatch.setitem(sys.modules, "fake_library", module)  # imported already: adapted at once
    libraries.hook()
    assert seen == ["fake_library"] and display._formatters == {Frame: "fake_adapter:bundle"}
    libraries.hook()  # the next cell's: nothing again
    assert seen == ["fake_library"]


def test_diverted_displays_go_to_the_sink_and_come_back(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    outer: list[Any] = []
    kept: list[Any] = []
    monkeypatch.setattr(display, "_sink", outer.append)
    monkeypatch.setattr(display, "_sink_pid", os.getpid())
    with display.diverted(kept.append):
        display.display("inside")
    display.display("after")
    assert [e.data for e in kept] == [{"text/plain": "'inside'"}]
    assert [e.data for e in outer] == [{"text/plain": "'after'"}]
    assert all(isinstance(e, Display) for e in kept + outer)
