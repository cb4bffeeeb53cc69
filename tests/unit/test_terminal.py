"""Stream presentation: \\r and \\b applied as a terminal shows them, streaming."""

from __future__ import annotations

import random

import pytest

from pyrelune.shaping import terminal
from pyrelune.shaping.terminal import Presenter
from pyrelune.wire.events import Clear, Display, Stream


def on_screen(text: str) -> str:
    """A character-at-a-time reference: what an (infinitely wide) terminal shows."""
    lines: list[str] = []
    line: list[str] = []
    col = 0
    for char in text:
        if char == "\n":
            lines.append("".join(line) + "\n")
            line, col = [], 0
        elif char == "\r":
            col = 0
        elif char == "\b":
            col = max(0, col - 1)
        else:
            if col == len(line):
                line.append(char)
            else:
                line[col] = char
            col += 1
    return "".join(lines) + "".join(line)


def present(chunks: list[str], name: str = "stdout") -> list[Stream | Display | Clear]:
    out: list[Stream | Display | Clear] = []
    presenter = Presenter(out.append)
    for chunk in chunks:
        presenter.add(Stream(name, chunk))
    presenter.flush()
    return out


def joined(items: list[Stream | Display | Clear]) -> str:
    return "".join(item.text for item in items if isinstance(item, Stream))


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain\nlines\n", "plain\nlines\n"),
        ("50%\r100%\n", "100%\n"),
        ("abcdef\rXY\n", "XYcdef\n"),
        ("abc\b\bX\n", "aXc\n"),
        ("\b\bstart", "start"),
        ("windows\r\nline\r\n", "windows\nline\n"),
        ("no newline\rat end", "at endline"),
    ],
)
def test_carriage_return_and_backspace(text: str, shown: str) -> None:
    assert joined(present([text])) == shown


def test_matches_a_terminal_however_the_text_is_split() -> None:
    rng = random.Random(20240601)
    alphabet = "ab\r\n\b xyz"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        cuts = sorted(rng.sample(range(len(text) + 1), k=min(len(text) + 1, rng.randint(0, 5))))
        chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        assert joined(present(chunks)) == on_screen(text), (text, chunks)


def test_a_progress_bar_ends_as_its_last_line() -> None:
    chunks = [f"\r{i:3d}% |{'#' * (i // 10):<10}|" for i in range(101)] + ["\n", "done\n"]
    assert joined(present(chunks)) == "100% |##########|\ndone\n"


def test_finished_lines_pass_on_at_once_and_the_last_is_held_back() -> None:
    out: list[Stream | Display | Clear] = []
    presenter = Presenter(out.append)
    presenter.add(Stream("stdout", "one\ntwo\nthr"))
    assert joined(out) == "one\ntwo\n"
    presenter.add(Stream("stdout", "ee\r3"))
    assert joined(out) == "one\ntwo\n"
    presenter.flush()
    assert joined(out) == "one\ntwo\n3hree"


def test_a_display_passes_the_held_back_text_on_first() -> None:
    out: list[Stream | Display | Clear] = []
    presenter = Presenter(out.append)
    shown = Display({"text/plain": "1"}, {})
    presenter.add(Stream("stdout", "before "))
    presenter.add(Stream("stderr", "warn"))
    presenter.add(shown)
    presenter.add(Stream("stdout", "\rafter"))
    presenter.flush()
    assert [(type(i).__name__, getattr(i, "text", None)) for i in out] == [
        ("Stream", "before "), ("Stream", "warn"), ("Display", None), ("Stream", "after")
    ]


def test_streams_are_kept_apart() -> None:
    out: list[Stream | Display | Clear] = []
    presenter = Presenter(out.append)
    presenter.add(Stream("stdout", "out 1\r"))
    presenter.add(Stream("stderr", "err\n"))
    presenter.add(Stream("stdout", "out 2\n"))
    presenter.flush()
    assert joined([i for i in out if isinstance(i, Stream) and i.name == "stdout"]) == "out 2\n"
    assert joined([i for i in out if isinstance(i, Stream) and i.name == "stderr"]) == "err\n"


def test_a_line_without_end_is_passed_on_in_rows_of_bounded_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(terminal, "MAX_LINE", 100)
    out: list[Stream | Display | Clear] = []
    presenter = Presenter(out.append)
    for _ in range(1000):
        presenter.add(Stream("stdout", "x" * 7))
    assert len(joined(out)) >= 7000 - 100  # all but the last row has gone on
    presenter.add(Stream("stdout", "\rY"))
    presenter.flush()
    text = joined(out)
    assert len(text) == 7000 and text.count("Y") == 1  # \r went back to the last row only


@pytest.mark.parametrize(("interleave", "expected"), [
    (False, [("stderr", "b\n"), ("stdout", "ac\n")]),
    (True, [("stdout", "a"), ("stderr", "b\n"), ("stdout", "c\n")]),
])
def test_interleave_passes_a_held_line_on_when_the_other_stream_writes(
    interleave: bool, expected: list[tuple[str, str]]
) -> None:
    runs: list[tuple[str, str]] = []

    def sink(item: Stream | Display | Clear) -> None:
        assert isinstance(item, Stream)
        if runs and runs[-1][0] == item.name:
            runs[-1] = (item.name, runs[-1][1] + item.text)
        else:
            runs.append((item.name, item.text))

    screen = Presenter(sink, interleave=interleave)
    for name, text in [("stdout", "a"), ("stderr", "b\n"), ("stdout", "c\n")]:
        screen.add(Stream(name, text))
    screen.flush()
    assert runs == expected


def test_a_line_rewritten_after_the_other_stream_wrote_keeps_its_carriage_return() -> None:
    out: list[Stream | Display | Clear] = []
    presenter = Presenter(out.append, interleave=True)
    for name, text in [("stderr", "\rbar 0"), ("stdout", "0\n"), ("stderr", "\rbar 1"),
                       ("stderr", "\rbar 2"), ("stdout", "1\n"), ("stderr", "\rbar 3\n")]:
        presenter.add(Stream(name, text))
    presenter.flush()
    assert joined([i for i in out if isinstance(i, Stream) and i.name == "stderr"]) == (
        "bar 0\rbar 2\rbar 3\n")  # each state the host saw is rewritten, not appended
    assert joined([i for i in out if isinstance(i, Stream) and i.name == "stdout"]) == "0\n1\n"


def test_a_clear_passes_the_held_back_text_on_first() -> None:
    out: list[Stream | Display | Clear] = []
    presenter = Presenter(out.append)
    presenter.add(Stream("stdout", "partial"))
    presenter.add(Clear(wait=True))
    assert [type(i).__name__ for i in out] == ["Stream", "Clear"]


def test_a_line_rewritten_from_its_start_keeps_no_piece_of_an_escape_sequence() -> None:
    out: list[Stream | Display | Clear] = []
    presenter = Presenter(out.append, interleave=True)  # as the rpc kernel: colours kept
    presenter.add(Stream("stdout", "\x1b[2K\r0"))
    presenter.add(Stream("stdout", "\r\x1b[32m1\x1b[0m\n"))
    assert joined(out) == "\x1b[32m1\x1b[0m\n"


@pytest.mark.parametrize("interleave", [False, True])
def test_lines_of_different_cells_are_never_joined_nor_rewritten(interleave: bool) -> None:
    """An earlier cell's thread (`origin`) writes between the running cell's progress bar."""
    out: list[Stream | Display | Clear] = []
    presenter = Presenter(out.append, interleave=interleave)
    for text, origin in [("50%", None), ("late ", "one"), ("\r100%\n", None), ("line\n", "one")]:
        presenter.add(Stream("stdout", text, origin))
    presenter.flush()
    shown = [(s.text, s.origin) for s in out if isinstance(s, Stream)]
    mine = "".join(text for text, origin in shown if origin is None)
    theirs = "".join(text for text, origin in shown if origin == "one")
    assert (mine, theirs) == (("50%\r100%\n" if interleave else "100%\n"), "late line\n")
