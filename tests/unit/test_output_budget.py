"""OutputBudget: head and tail kept, the rest counted, never a character cut in two; and the
head budget rpc's held output shares with Jupyter's displays."""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st
from support.strategies import any_text

from pyrelune.shaping import Omitted, OutputBudget, clip, notes, utf8_size
from pyrelune.shaping.livecaps import HeadBudget, HeldOutput
from pyrelune.wire.events import Clear, Display, Stream

streams = st.lists(st.tuples(st.sampled_from(["stdout", "stderr"]), any_text), max_size=12)


def kept(budget: OutputBudget) -> dict[str, tuple[str, str]]:
    """Per stream: (text kept before the marker, text kept after it)."""
    out = {"stdout": ["", ""], "stderr": ["", ""]}
    side = 0
    for item in budget.items():
        if isinstance(item, Omitted):
            side = 1
        elif isinstance(item, Stream):
            out[item.name][side] += item.text
    return {name: (a, b) for name, (a, b) in out.items()}


def accounts(
    budget: OutputBudget, chunks: list[tuple[str, str]]
) -> Iterator[tuple[str, str, int, str]]:
    """Per stream: the kept text is a prefix and a suffix; omitted bytes make up the rest."""
    for name, (head, tail) in kept(budget).items():
        full = "".join(text for n, text in chunks if n == name)
        assert full.startswith(head) and full.endswith(tail)
        omitted = budget.omitted.bytes.get(name, 0)
        assert utf8_size(head) + omitted + utf8_size(tail) == utf8_size(full)
        yield head, tail, omitted, full


@given(streams, st.integers(min_value=0, max_value=200))
def test_head_and_tail_are_prefix_and_suffix_and_bytes_add_up(
    chunks: list[tuple[str, str]], limit: int
) -> None:
    budget = OutputBudget(limit)
    for name, text in chunks:
        budget.add(Stream(name, text))
    for head, tail, omitted, full in accounts(budget, chunks):
        if not omitted:
            assert head + tail == full
    total = sum(utf8_size(h) + utf8_size(t) for h, t in kept(budget).values())
    assert budget.kept == total <= limit


def test_under_the_limit_everything_is_kept_in_order() -> None:
    budget = OutputBudget(100)
    items: list[Stream | Display] = [
        Stream("stdout", "a"), Stream("stderr", "b"), Display({"text/plain": "1"}, {}),
        Stream("stdout", "c"),
    ]
    for item in items:
        budget.add(item)
    assert list(budget.items()) == items
    assert not budget.omitted


def test_multibyte_characters_are_never_split() -> None:
    budget = OutputBudget(11)
    budget.add(Stream("stdout", "€" * 100))  # three bytes each
    head, tail = kept(budget)["stdout"]
    assert (head, tail) == ("€", "€€")  # 5 bytes of head, 6 of tail: whole characters only
    assert budget.omitted.bytes == {"stdout": 300 - 9}
    assert budget.omitted.text("stdout") == "\n[... 291 bytes of stdout omitted ...]\n"
    assert budget.omitted.text("stderr") is None


def test_displays_that_do_not_fit_are_counted() -> None:
    budget = OutputBudget(10)
    budget.add(Display({"text/plain": "x" * 50}, {}))
    budget.add(Stream("stdout", "end"))
    assert budget.omitted.displays == 1
    items = list(budget.items())
    assert items[0] is budget.omitted  # the marker stands where the display was
    assert [item.text for item in items[1:] if isinstance(item, Stream)] == ["end"]


@given(streams, st.integers(min_value=20, max_value=200), st.integers(min_value=0, max_value=200))
def test_shrink_keeps_the_counts(chunks: list[tuple[str, str]], limit: int, smaller: int) -> None:
    budget = OutputBudget(limit)
    for name, text in chunks:
        budget.add(Stream(name, text))
    budget.shrink(min(limit, smaller))
    list(accounts(budget, chunks))
    assert budget.kept == sum(utf8_size(h) + utf8_size(t) for h, t in kept(budget).values())


def test_shrink_keeps_the_gap_between_what_the_head_spills_and_the_old_tail() -> None:
    """Found by Hypothesis: the head's last chunk moved to the new tail ran on into the
    old tail as if the omitted bytes between them had never been."""
    chunks = [("stdout", "0\x80\x80\x80"), ("stdout", "0\U00010000" "0\x80\U00010000")]
    budget = OutputBudget(20)
    for name, text in chunks:
        budget.add(Stream(name, text))
    budget.shrink(15)
    [(head, tail, omitted, _)] = [row for row in accounts(budget, chunks) if row[3]]
    assert (head, tail, omitted) == ("0\x80\x80\x80", "0\x80\U00010000", 5)


def test_clip() -> None:
    assert clip("short", 10) == "short"
    assert clip("a" * 10 + "€" + "b" * 10, 10) == "aaaaa\n[... 13 bytes omitted ...]\nbbbbb"
    assert clip("x" * 100, 10, " ") == "xxxxx [... 90 bytes omitted ...] xxxxx"




def shown(budget: OutputBudget) -> list[str]:
    return [item.text if isinstance(item, Stream) else str(item.data.get("text/plain"))
            for item in budget.items() if not isinstance(item, Omitted)]


def test_updates_replace_every_output_under_their_id_in_place() -> None:
    budget = OutputBudget(10_000)
    budget.apply(Display({"text/plain": "a0"}, {}, display_id="a"))
    budget.apply(Stream("stdout", "between\n"))
    budget.apply(Display({"text/plain": "a0 again"}, {}, display_id="a"))
    budget.apply(Display({"text/plain": "a1"}, {}, display_id="a", update=True))
    budget.apply(Display({"text/plain": "b1"}, {}, display_id="b", update=True))  # not shown yet
    budget.apply(Display({"text/plain": "b2"}, {}, display_id="b", update=True))
    assert shown(budget) == ["a1", "between\n", "a1", "b2"]
    assert budget.kept == sum(len(text) for text in shown(budget))


def test_a_clear_clears_now_or_when_the_next_output_comes() -> None:
    budget = OutputBudget(10_000)
    budget.apply(Stream("stdout", "old\n"))
    budget.apply(Clear())
    assert shown(budget) == []
    budget.apply(Stream("stdout", "frame 1\n"))
    budget.apply(Clear(wait=True))
    assert shown(budget) == ["frame 1\n"]  # kept until something replaces it
    budget.apply(Stream("stdout", "frame 2\n"))
    assert shown(budget) == ["frame 2\n"]


def test_a_head_budget_keeps_a_head_and_counts_the_rest() -> None:
    head = HeadBudget(10)
    assert [head.admit(cost) for cost in (4, 4, 3, 1, 0)] == [True, True, False, False, False]
    assert (head.used, head.dropped) == (8, 3)  # after a gap, not even what would fit


def test_held_output_keeps_a_head_and_puts_its_note_where_the_first_dropped_stood() -> None:
    held = HeldOutput(5)
    held.offer("a", 3)
    held.offer("b", 3)  # over: dropped, the note stands here
    held.keep("done")
    held.offer("c", 1)  # after the gap: dropped too
    released = held.release(lambda first, text: f"note for {first}: {text.strip()}")
    assert released == ["a", "note for b: " + notes.messages_dropped(2).strip(), "done"]


def test_held_output_with_nothing_dropped_has_no_note() -> None:
    held = HeldOutput(5)
    held.offer("a", 5)
    assert held.release(lambda first, text: "note") == ["a"]
