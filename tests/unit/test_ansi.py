"""ANSI control sequences out, text kept, also when a sequence is cut between two reads."""

from __future__ import annotations

import pytest

from pyrelune.shaping.terminal import MAX_SEQUENCE, AnsiStripper, Presenter
from pyrelune.shaping.terminal import strip_ansi as strip
from pyrelune.wire.events import Clear, Display, Stream


@pytest.mark.parametrize(("text", "shown"), [
    ("plain", "plain"),
    ("\x1b[31mred\x1b[0m", "red"),
    ("\x1b[1;38;5;208mbold orange\x1b[m", "bold orange"),
    ("\x1b[2K\x1b[1Aup", "up"),
    ("\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"),
    ("\x1b]0;window title\x07text", "text"),
    ("\x1b]8;;https://example.org\x1b\\link\x1b]8;;\x1b\\", "link"),
    ("\x1bPdevice control\x1b\\after", "after"),
    ("\x1b(Bcharset\x1b7saved\x1b8", "charsetsaved"),
    ("\x1b[31\nbroken", "\nbroken"),  # a CSI broken by a newline: the newline stays
    ("progress\r\x1b[32m50%\x1b[0m", "progress\r50%"),  # \r is left for the presenter
])
def test_sequences_go_and_text_stays(text: str, shown: str) -> None:
    assert strip(text) == shown


def test_an_unfinished_sequence_at_the_end_of_a_text_is_kept() -> None:
    assert strip("a\x1b[3") == "a\x1b[3"


#: The running cell's stdout, as the stripper keys it.
OUT = ("stdout", None)


@pytest.mark.parametrize("cut", range(1, 12))
def test_a_sequence_cut_between_reads_waits_for_its_end(cut: int) -> None:
    text = "a\x1b]8;;u\x1b\\b\x1b[31mc"
    stripper = AnsiStripper()
    shown = stripper.feed(OUT, text[:cut]) + stripper.feed(OUT, text[cut:])
    assert shown == "abc" and stripper.flush() == []


def test_streams_are_held_apart_and_what_never_ends_is_passed_on() -> None:
    stripper = AnsiStripper()
    assert stripper.feed(OUT, "x\x1b[") == "x"
    assert stripper.feed(("stderr", None), "e\x1b]0;t") == "e"
    assert stripper.feed(("stdout", "an earlier cell"), "1mred") == "1mred"  # not its sequence
    assert stripper.feed(OUT, "1mred") == "red"
    assert stripper.flush() == [(("stderr", None), "\x1b]0;t")]
    unending = "\x1b]0;" + "t" * MAX_SEQUENCE
    assert stripper.feed(OUT, unending) == unending


def test_a_plain_presenter_takes_colours_out_before_applying_carriage_returns() -> None:
    shown: list[Stream | Display | Clear] = []
    screen = Presenter(shown.append, plain=True)
    for text in ("\x1b[32m10%\x1b[0m", "\r\x1b[2K\x1b[3", "2m100%\x1b[0m\n", "end\x1b["):
        screen.add(Stream("stdout", text))
    screen.close()
    assert "".join(s.text for s in shown if isinstance(s, Stream)) == "100%\nend\x1b["
