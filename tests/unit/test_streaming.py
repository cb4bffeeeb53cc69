"""The rpc kernel's live output: coalesced per flush interval, in order, capped with a tail.

The clock is passed in (sans-I/O), so every time here is a plain number.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st
from support.strategies import any_text

from pyrelune.shaping import utf8_size
from pyrelune.shaping.livecaps import StreamCap
from pyrelune.shaping.streaming import MAX_HELD, Coalescer
from pyrelune.wire.events import Stream

MARKER = re.compile(r"\n\[\.\.\. ([\d,]+) bytes of (stdout|stderr) omitted \.\.\.\]\n")


def pairs(streams: Iterable[Stream]) -> list[tuple[str, str]]:
    """Streams as comparable values (a Stream has no equality of its own)."""
    return [(s.name, s.text) for s in streams]


def merged(chunks: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Adjacent text of one stream joined, empty text left out: what order means here."""
    out: list[tuple[str, str]] = []
    for name, text in chunks:
        if not text:
            continue
        if out and out[-1][0] == name:
            out[-1] = (name, out[-1][1] + text)
        else:
            out.append((name, text))
    return out


def test_the_first_text_of_a_burst_goes_out_at_once() -> None:
    assert pairs(Coalescer(0.05).add(Stream("stdout", "a"), now=10.0)) == [("stdout", "a")]


def test_text_within_the_interval_waits_and_leaves_as_one() -> None:
    coalescer = Coalescer(0.05)
    coalescer.add(Stream("stdout", "a"), now=10.0)
    assert coalescer.add(Stream("stdout", "b"), now=10.01) == []
    assert coalescer.add(Stream("stdout", "c"), now=10.02) == []
    assert coalescer.flush_at == 10.05  # the timer the caller arms
    assert coalescer.due(10.04) == []
    assert pairs(coalescer.due(10.05)) == [("stdout", "bc")]
    assert coalescer.flush_at is None


def test_stdout_and_stderr_keep_their_order() -> None:
    coalescer = Coalescer(0.05)
    coalescer.add(Stream("stderr", "0"), now=0.0)
    for name, text in [("stdout", "1"), ("stdout", "2"), ("stderr", "e"), ("stdout", "3")]:
        assert coalescer.add(Stream(name, text), now=0.01) == []
    assert pairs(coalescer.due(0.05)) == [("stdout", "12"), ("stderr", "e"), ("stdout", "3")]


def test_flush_lets_everything_out_before_its_time() -> None:
    coalescer = Coalescer(0.05)
    coalescer.add(Stream("stdout", "a"), now=0.0)
    coalescer.add(Stream("stdout", "b"), now=0.01)
    assert pairs(coalescer.flush()) == [("stdout", "b")]
    assert coalescer.flush_at is None and coalescer.due(1.0) == []


def test_a_flood_is_let_out_before_its_time_once_enough_waits() -> None:
    coalescer = Coalescer(0.05)
    coalescer.add(Stream("stdout", "a"), now=0.0)
    line = "x" * 1000
    held = [coalescer.add(Stream("stdout", line), now=0.01) for _ in range(MAX_HELD // 1000)]
    assert all(out == [] for out in held)
    assert pairs(coalescer.add(Stream("stderr", line), now=0.01)) == [
        ("stdout", line * (MAX_HELD // 1000)), ("stderr", line)]
    assert coalescer.flush_at is None
    assert coalescer.add(Stream("stdout", "b"), now=0.02) == []  # held again, for its time


def test_text_after_a_quiet_spell_goes_out_at_once() -> None:
    coalescer = Coalescer(0.05)
    coalescer.add(Stream("stdout", "a"), now=0.0)
    assert pairs(coalescer.add(Stream("stdout", "b"), now=0.5)) == [("stdout", "b")]


chunks = st.lists(
    st.tuples(st.sampled_from(["stdout", "stderr"]), any_text,
              st.integers(min_value=0, max_value=30)),  # milliseconds since the last chunk
    max_size=30,
)


@given(chunks)
def test_nothing_is_lost_or_reordered_and_one_send_per_interval(
    chunks: list[tuple[str, str, int]],
) -> None:
    interval = 0.05
    coalescer = Coalescer(interval)
    sent: list[tuple[float, list[Stream]]] = []
    now = 0.0
    for name, text, gap in chunks:
        now += gap / 1000
        if coalescer.flush_at is not None and coalescer.flush_at <= now:
            sent.append((coalescer.flush_at, coalescer.due(coalescer.flush_at)))  # the timer
        sent.append((now, coalescer.add(Stream(name, text), now)))
    sent = [(when, streams) for when, streams in sent if streams]
    times = [when for when, _ in sent]
    assert all(later - earlier >= interval - 1e-9 for earlier, later in pairwise(times))
    out = [s for _, streams in sent for s in streams] + coalescer.flush()
    assert merged(pairs(out)) == merged((name, text) for name, text, _ in chunks)


def test_under_the_cap_everything_passes() -> None:
    cap = StreamCap(100)
    sent = cap.add(Stream("stdout", "a" * 75))
    assert sent is not None and pairs([sent]) == [("stdout", "a" * 75)]
    assert cap.release() == []


def test_over_the_cap_a_marker_then_the_tail() -> None:
    cap = StreamCap(100)  # 75 bytes go out, then a window of the last 25
    sent = cap.add(Stream("stdout", "a" * 70))
    head = cap.add(Stream("stdout", "b" * 10))
    assert sent is not None and head is not None and head.text == "b" * 5
    assert cap.add(Stream("stdout", "c" * 100)) is None
    assert cap.add(Stream("stderr", "d" * 10)) is None
    assert pairs(cap.release()) == [
        ("stdout", "\n[... 90 bytes of stdout omitted ...]\n"),
        ("stdout", "c" * 15),
        ("stderr", "d" * 10),
    ]
    assert cap.release() == []  # released once
    assert cap.add(Stream("stdout", "e")) is None  # the budget is the cell's, not the flush's


def test_a_new_cell_has_the_whole_budget_again() -> None:
    cap = StreamCap(100)
    cap.add(Stream("stdout", "a" * 200))
    cap.begin()
    sent = cap.add(Stream("stdout", "b" * 75))
    assert sent is not None and sent.text == "b" * 75


def test_a_character_is_never_cut_at_the_cap() -> None:
    cap = StreamCap(100)  # 75 bytes out: 37 two-byte characters, not 37 and a half
    sent = cap.add(Stream("stdout", "é" * 100))
    assert sent is not None and sent.text == "é" * 37
    marker, tail = cap.release()
    assert tail.text == "é" * 12 and marker.text == "\n[... 102 bytes of stdout omitted ...]\n"


@given(st.lists(st.tuples(st.sampled_from(["stdout", "stderr"]), any_text), max_size=12),
       st.integers(min_value=1, max_value=200))
def test_cap_sends_a_head_keeps_a_tail_and_counts_the_rest(
    chunks: list[tuple[str, str]], limit: int,
) -> None:
    cap = StreamCap(limit)
    sent = [s for name, text in chunks if (s := cap.add(Stream(name, text))) is not None]
    released = cap.release()
    omitted = {name: 0 for name in ("stdout", "stderr")}
    tail: dict[str, str] = dict.fromkeys(omitted, "")
    for stream in released:
        if marker := MARKER.fullmatch(stream.text):
            assert marker[2] == stream.name
            omitted[stream.name] = int(marker[1].replace(",", ""))
        else:
            tail[stream.name] += stream.text
    assert sum(utf8_size(s.text) for s in sent) <= limit
    for name in omitted:
        full = "".join(text for n, text in chunks if n == name)
        head = "".join(s.text for s in sent if s.name == name)
        assert full.startswith(head) and full.endswith(tail[name])
        assert utf8_size(head) + omitted[name] + utf8_size(tail[name]) == utf8_size(full)


def test_runs_of_different_cells_are_never_joined() -> None:
    """A thread of an earlier cell's writes between the running cell's lines (`origin`)."""
    coalescer = Coalescer(0.05)
    coalescer.add(Stream("stdout", "0"), now=0.0)
    for text, origin in [("1", None), ("a", "one"), ("b", "one"), ("2", None)]:
        assert coalescer.add(Stream("stdout", text, origin), now=0.01) == []
    assert [(s.text, s.origin) for s in coalescer.due(0.05)] == [
        ("1", None), ("ab", "one"), ("2", None)]
