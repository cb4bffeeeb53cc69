"""Hypothesis strategies for rpc-kernel request lines: ids of every JSON type, known and
unknown methods, params right and wrong, malformed lines."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from pyrelune.protocols.rpcmessages import METHODS
from support.strategies import json_values

#: Integral floats are the ones that once killed the kernel: 1.0, -0.0, 1e2.
ids = json_values | st.sampled_from([1.0, -0.0, 1e2, 7.0, 2**64, -(2**63), 1e300, "", "r"])
#: Cells that end at once, whatever they do: fuzzed text is never run as code.
_sources = st.sampled_from(["1", "print('fuzz')", "x = 1", "raise ValueError('v')", "(",
                            "import sys; sys.stderr.write('e')"])
_params = (st.fixed_dictionaries({"source": _sources, "cell_id": st.text(max_size=8)})
           | st.fixed_dictionaries({"token": json_values, "value": json_values})
           | st.dictionaries(st.sampled_from(["source", "inputs", "token", "value", "cell_id"]),
                             json_values, max_size=3)
           | json_values)


@st.composite
def requests(draw: st.DrawFn) -> Any:
    """Mostly request-shaped objects, some valid, many wrong in one field or more."""
    message: dict[str, Any] = {}
    if draw(st.booleans()):
        message["kind"] = draw(st.sampled_from(["request", "response", "event"]) | json_values)
    if draw(st.integers(0, 9)):
        message["id"] = draw(ids)
    if draw(st.integers(0, 9)):
        message["method"] = draw(st.sampled_from(METHODS) | json_values)
    if draw(st.booleans()):
        message["params"] = draw(_params)
    message.update(draw(st.dictionaries(st.text(max_size=6), json_values, max_size=2)))
    return draw(st.just(message) | json_values)


#: One line as a host may write it (JSON never holds a raw newline), or bytes that are not JSON.
lines = (requests().map(lambda m: json.dumps(m).encode())
         | st.binary(max_size=64).map(lambda b: b.replace(b"\n", b"")))
