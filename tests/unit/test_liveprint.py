"""The rpc worker's `print`: the builtin's output, errors and effects, in one copy into the ring."""

from __future__ import annotations

import builtins
import contextvars
import io
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from pyrelune.wire.events import Stream
from pyrelune.wire.ring import OutputRing, RingWriter
from pyrelune.worker.liveprint import LivePrint, RingText
from pyrelune.worker.origin import Origins, cell


class Printer:
    """A LivePrint aimed at a ring stream that is sys.stdout, what reached the ring, and
    what went to the session apart (`aside`: another cell's text)."""

    def __init__(self) -> None:
        self.ring = OutputRing(1 << 16)
        self.writer = RingWriter(self.ring)
        self.aside: list[Stream] = []
        self.origins = Origins(self.aside.append)
        self.live = LivePrint(self.writer, self.origins)
        self.stdout = RingText(self.writer, self.live, self.origins)
        self.live.aim(self.stdout)

    def print(self, *args: Any, **kwargs: Any) -> None:
        """The worker's print, with sys.stdout its stream (pytest's capture replaces it)."""
        saved, sys.stdout = sys.stdout, self.stdout
        try:
            self.live.print(*args, **kwargs)
        finally:
            sys.stdout = saved

    def out(self) -> str:
        return self.ring.take(self.ring.written()).decode("utf-8", "backslashreplace")


@pytest.fixture
def printer() -> Iterator[Printer]:
    made = Printer()
    yield made
    made.ring.close()


class Shown:
    def __str__(self) -> str:
        return "shown"


class Broken:
    def __str__(self) -> str:
        raise RuntimeError("no text")


class Tagged(str):
    def __str__(self) -> str:
        return "tagged"


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("x" * 99,), {}),
    ((), {}),
    ((1, 2.5, None, [3], Shown()), {}),
    (("a", "b"), {"sep": "-", "end": "|\n"}),
    (("a", "b"), {"sep": "", "end": ""}),
    (("a", "b"), {"sep": None, "end": None}),
    (("é", "ü", "\u2603"), {"flush": True}),
    (("lone \udc80 surrogate",), {}),
    (("nul\0inside",), {}),
    ((Tagged("plain"),), {}),
    (("end only",), {"end": "\r\n"}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_the_same_text_as_the_builtin(printer: Printer, args: tuple[Any, ...],
                                      kwargs: dict[str, Any]) -> None:
    expected = io.StringIO()
    builtins.print(*args, file=expected, **kwargs)
    printer.print(*args, **kwargs)
    assert printer.out() == expected.getvalue().encode("utf-8", "backslashreplace").decode()


def test_it_prints_to_the_ring_in_one_copy(printer: Printer) -> None:
    printer.print("a", "b", sep="-")
    assert printer.ring.data[:4] == b"a-b\n"


@pytest.mark.parametrize("kwargs", [{"sep": 5}, {"end": b"\n"}, {"flush": 1, "sep": 2}])
def test_bad_arguments_fail_as_the_builtins_do(printer: Printer, kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError) as theirs:
        builtins.print("x", file=io.StringIO(), **kwargs)
    with pytest.raises(TypeError) as ours:
        printer.print("x", **kwargs)
    assert str(ours.value) == str(theirs.value)
    assert printer.out() == ""


def test_a_failing_value_leaves_what_the_builtin_writes_before_it(printer: Printer) -> None:
    expected = io.StringIO()
    with pytest.raises(RuntimeError):
        builtins.print("a", 1, Broken(), "z", sep=", ", file=expected)
    with pytest.raises(RuntimeError, match="no text"):
        printer.print("a", 1, Broken(), "z", sep=", ")
    assert printer.out() == expected.getvalue() == "a, 1, "
    with pytest.raises(RuntimeError):
        printer.print(Broken())
    assert printer.out() == ""


def test_other_files_get_the_builtins_print(printer: Printer) -> None:
    other = io.StringIO()
    printer.print("elsewhere", 1, file=other, sep="+")
    assert other.getvalue() == "elsewhere+1\n"
    assert printer.out() == ""


def test_a_replaced_sys_stdout_gets_it(printer: Printer, monkeypatch: pytest.MonkeyPatch) -> None:
    replaced = io.StringIO()
    monkeypatch.setattr(sys, "stdout", replaced)
    printer.live.print("redirected")
    assert replaced.getvalue() == "redirected\n"
    assert printer.out() == ""


def test_an_explicit_file_that_is_the_stream_goes_into_the_ring(printer: Printer) -> None:
    printer.print("explicit", file=printer.stdout)
    assert printer.out() == "explicit\n"


def test_a_due_switch_is_made_before_the_print(printer: Printer) -> None:
    switches: list[str] = []

    def switch() -> None:
        switches.append("stdout")
        printer.live.aim(printer.stdout)

    printer.live.aim(printer.stdout, switch)
    printer.print("first")
    printer.print("second")
    assert switches == ["stdout"]
    assert printer.out() == "first\nsecond\n"


def test_writes_to_the_stream_itself_keep_their_place(printer: Printer) -> None:
    printer.print("one")
    printer.stdout.write("two ")
    printer.stdout.buffer.write(b"three\n")
    printer.print("four")
    assert printer.out() == "one\ntwo three\nfour\n"


def test_it_is_shown_and_pickled_as_the_builtin(printer: Printer) -> None:
    import pickle

    assert repr(printer.live.print).startswith("<function print at ")
    saved = builtins.print
    printer.live.install()
    try:
        assert pickle.loads(pickle.dumps(printer.live.print)) is printer.live.print
    finally:
        builtins.print = saved
    assert pickle.loads(pickle.dumps(print)) is saved


@pytest.mark.parametrize(("changes", "text", "expected"), [
    ({"encoding": "latin-1"}, "caf\u00e9", "caf\u00e9\n".encode("latin-1")),
    ({"encoding": "ascii", "errors": "replace"}, "caf\u00e9", b"caf?\n"),
    ({"newline": "\r\n"}, "a", b"a\r\n"),
    ({"encoding": "UTF8"}, "\u20ac", "\u20ac\n".encode()),
])
def test_it_writes_as_the_stream_is_reconfigured(printer: Printer, changes: dict[str, Any],
                                                  text: str, expected: bytes) -> None:
    printer.stdout.reconfigure(**changes)
    printer.print(text)
    assert printer.ring.take(printer.ring.written()) == expected


def test_an_encoding_the_stream_cannot_write_fails_as_the_builtin_does(printer: Printer) -> None:
    printer.stdout.reconfigure(encoding="latin-1")
    with pytest.raises(UnicodeEncodeError):
        printer.print("\u20ac")
    printer.stdout.reconfigure(encoding="utf-8")
    printer.print("\u20ac")
    assert printer.out() == "\u20ac\n"


def in_cell(origin: str | None, do: Any) -> None:
    """`do()` in a context of the cell `origin`, as a thread or task of that cell runs."""

    def run() -> None:
        cell.set(origin)
        do()

    contextvars.Context().run(run)


def test_another_cells_print_goes_apart_whole_and_switches_nothing(printer: Printer) -> None:
    """A thread of cell "one" prints while cell "two" runs (see `worker.origin`)."""
    switches: list[str] = []
    printer.live.aim(printer.stdout, lambda: switches.append("stdout"))
    printer.origins.running = "two"
    in_cell("one", lambda: printer.print("a", 1, sep="-"))
    in_cell("one", lambda: printer.stdout.write("written"))
    assert [(s.name, s.text, s.origin) for s in printer.aside] == [
        ("stdout", "a-1\n", "one"), ("stdout", "written", "one")]
    assert printer.out() == "" and switches == []  # the running cell's switch is still due


def test_the_running_cells_print_and_a_print_of_no_cell_go_into_the_ring(
        printer: Printer) -> None:
    printer.origins.running = "two"
    in_cell("two", lambda: printer.print("own"))
    in_cell(None, lambda: printer.print("of no cell"))  # a thread started by other means
    assert printer.out() == "own\nof no cell\n" and printer.aside == []


def test_while_no_cell_runs_every_cells_print_goes_apart(printer: Printer) -> None:
    in_cell("one", lambda: printer.print("idle"))
    assert [(s.text, s.origin) for s in printer.aside] == [("idle\n", "one")]


def test_another_cells_failing_print_sends_what_the_builtin_writes_before_it(
        printer: Printer) -> None:
    def fail() -> None:
        with pytest.raises(RuntimeError, match="no text"):
            printer.print("a", Broken())

    in_cell("one", fail)
    assert [s.text for s in printer.aside] == ["a "]
