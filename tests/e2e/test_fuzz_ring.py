"""Fuzzing the rpc worker's stdout ring from inside: cells write random bytes into its memory.

The ring (`pyrelune.wire.ring`) is shared memory in the worker, which a cell
reaches through sys.stdout (or ctypes). Whatever a cell writes there, the
kernel keeps serving, and what a cell prints is never sent under another
cell. A cell that writes only the ring's header loses later cells nothing;
one that writes its data area may garble what is printed next (those bytes
are output like any other), until a reset, which always starts a fresh ring.

A fixed budget of examples and no deadline per example: it never fails for
being slow.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.profiles import examples
from support.rpc_host import PipeHost, stdout_of

RING = settings(max_examples=examples(0.3),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
#: The ring's header (six 8-byte words used) and its data area (one lap, 1 MiB).
HEADER, DATA = 48, 1 << 20

#: Each cell prints lines that name it alone.
_cells = itertools.count()

_header_writes = st.tuples(st.just("header"), st.integers(0, HEADER - 1),
                           st.binary(min_size=1, max_size=16))
_data_writes = st.tuples(st.just("data"), st.integers(0, DATA - 1),
                         st.binary(min_size=1, max_size=64))


def _write_cell(writes: list[tuple[str, int, bytes]], lines: int, tag: str) -> str:
    """A cell that prints, writes `writes` into the ring, and prints again."""
    return (
        "import sys\n"
        "_w = sys.stdout.buffer._put.__self__\n"
        "_mem = {'header': _w.words.cast('B'), 'data': _w.ring.data}\n"
        f"print('{tag} before')\n"
        f"for _where, _at, _blob in {writes!r}:\n"
        "    _m = _mem[_where]\n"
        "    _m[_at:_at + len(_blob)] = _blob[:len(_m) - _at]\n"
        f"for _i in range({lines}): print('{tag} line', _i)\n"
    )


def _marked(text: str) -> set[str]:
    """The cells whose tags appear in `text`."""
    return {word for word in text.replace("\n", " ").split() if word.startswith("cell-")}


@pytest.fixture(scope="module")
def host() -> Iterator[PipeHost]:
    kernel = PipeHost()
    kernel.wait_event("kernel.ready")
    yield kernel
    assert kernel.close() == 0


def _clean(host: PipeHost, lines: int) -> None:
    """A cell that only prints gets exactly its own lines."""
    tag = f"cell-{next(_cells)}"
    events = host.run(f"for i in range({lines}): print('{tag}', i)", tag)
    assert events[-1]["data"]["status"] == "ok", events[-1]
    assert stdout_of(events) == "".join(f"{tag} {i}\n" for i in range(lines))


def _scribble(host: PipeHost, writes: list[tuple[str, int, bytes]], lines: int) -> None:
    tag = f"cell-{next(_cells)}"
    events = host.run(_write_cell(writes, lines, tag), tag)
    assert events[-1]["event"] == "execute.done"
    assert _marked(stdout_of(events)) <= {tag}, stdout_of(events)


@RING
@given(writes=st.lists(_header_writes, min_size=1, max_size=6),
       lines=st.sampled_from([0, 3, 40000]), after=st.sampled_from([1, 40000]))
def test_header_writes_lose_later_cells_nothing(host: PipeHost,
                                                writes: list[tuple[str, int, bytes]],
                                                lines: int, after: int) -> None:
    _clean(host, 2)
    _scribble(host, writes, lines)
    _clean(host, after)  # 40,000 lines: several laps
    _clean(host, 1)


@RING
@given(writes=st.lists(_header_writes | _data_writes, min_size=1, max_size=8),
       lines=st.sampled_from([0, 3, 40000]))
def test_any_writes_send_nothing_under_another_cell(host: PipeHost,
                                                    writes: list[tuple[str, int, bytes]],
                                                    lines: int) -> None:
    _clean(host, 2)
    _scribble(host, writes, lines)
    tag = f"cell-{next(_cells)}"
    events = host.run(f"for i in range(40000): print('{tag}', i)", tag)
    assert events[-1]["data"]["status"] == "ok", events[-1]
    assert _marked(stdout_of(events)) <= {tag}
    assert host.call("kernel.reset")["result"] is not None
    _clean(host, 40000)
    _clean(host, 1)
