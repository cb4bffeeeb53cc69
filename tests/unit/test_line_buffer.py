"""LineBuffer cuts any chunking of a stream into the same lines, in order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pyrelune.wire import LineBuffer

chunks = st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\0", b"\n")), max_size=20)


def taken(buffer: LineBuffer) -> list[bytes]:
    lines = []
    while (line := buffer.pop()) is not None:
        lines.append(line)
    return lines


@given(chunks, st.lists(st.booleans(), max_size=20))
def test_lines_are_the_streams_whatever_its_chunks(pieces: list[bytes], pops: list[bool]) -> None:
    """Popping after some chunks and not others changes nothing: lines wait, in order."""
    buffer = LineBuffer()
    lines: list[bytes] = []
    for i, chunk in enumerate(pieces):
        buffer.feed(chunk)
        if i < len(pops) and pops[i]:
            lines += taken(buffer)
    lines += taken(buffer)
    *complete, unfinished = b"".join(pieces).split(b"\n")
    assert lines == complete
    assert buffer.held == len(unfinished)
    assert buffer.rest() == unfinished
    assert (buffer.rest(), buffer.held, buffer.pop()) == (b"", 0, None)


def test_a_large_line_in_many_chunks_comes_out_whole() -> None:
    buffer = LineBuffer()
    line = bytes(range(256)).replace(b"\n", b"") * 4096  # 1 MiB, fed 64 KiB at a time
    data = b'{"t": "sync"}\n' + line + b"\nnext"
    for start in range(0, len(data), 1 << 16):
        buffer.feed(data[start : start + (1 << 16)])
    assert taken(buffer) == [b'{"t": "sync"}', line]
    assert buffer.held == 4
    assert buffer.rest() == b"next"


def test_a_message_in_one_chunk_is_one_line() -> None:
    buffer = LineBuffer()
    buffer.feed(b'{"op": "continue"}\n')
    assert buffer.pop() == b'{"op": "continue"}'
    assert buffer.pop() is None
    assert buffer.held == 0
