"""The vix-note-extension-1 codec fuzzed on plain values: every request gets one response
that Vix Note handles cleanly (the host harness's rules), whatever the request or the cell.

Bounded: a fixed number of examples, a few seconds in all.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from support.profiles import examples
from support.strategies import any_text, request_bytes
from support.vixhost import MAX_OUTPUT, judge

from pyrelune.protocols import vixnote
from pyrelune.shaping import OutputBudget
from pyrelune.wire import events
from pyrelune.wire.events import CellError, Display, Stream

FUZZ = settings(max_examples=examples(4))


@FUZZ
@given(request_bytes)
def test_any_request_bytes_get_one_response_the_host_handles(raw: bytes) -> None:
    try:
        request = vixnote.parse_request(raw)
    except vixnote.Rejected as error:
        data = vixnote.reject(error)
    else:
        budget = OutputBudget(900 * 1024)
        budget.add(Stream("stdout", request.source))  # as if the cell printed its source
        data = vixnote.respond(budget, None, request.request_id)
    judge(data).assert_well_behaved()


items = st.one_of(
    st.builds(Stream, st.sampled_from(["stdout", "stderr"]), any_text),
    st.builds(lambda text: Display({"text/plain": text}, {}, False), any_text),
)
#: As the worker and the session make them: a cell's codes, something to say (a type, at least).
CELL_CODES = [events.PYTHON_SYNTAX_ERROR, events.PYTHON_RUNTIME_ERROR, events.PYTHON_EXIT,
              events.INTERRUPTED, events.TIMEOUT, events.WORKER_DIED]
errors = st.none() | st.builds(
    CellError, st.sampled_from(CELL_CODES), any_text, any_text, any_text,
    st.none() | st.integers(1, 10**6), st.none() | st.integers(0, 10**6),
).filter(lambda error: error.summary != "")


@FUZZ
@given(st.lists(items, max_size=8), errors, st.none() | any_text | st.just("x" * (2 << 20)),
       st.integers(1024, 1 << 20))
def test_any_cell_end_gets_one_response_the_host_handles(
    output: list[Stream | Display], error: CellError | None, request_id: str | None, limit: int
) -> None:
    budget = OutputBudget(limit)
    for item in output:
        budget.add(item)
    data = vixnote.respond(budget, error, request_id)
    result = judge(data)
    result.assert_well_behaved()
    assert len(data) <= MAX_OUTPUT
    assert result.ok == (error is None)
