"""Responses: strict JSON for the host's parser, the protocol field, exit status 0."""

from __future__ import annotations

from typing import Any

import pytest
from support.vixhost import PROTOCOL, VixHost, strict_loads


@pytest.mark.parametrize(
    "source",
    [
        "print('\\ud800')",
        "import sys\nsys.stderr.write('\\udfff\\n')",
        "'\\ud800'",
        "raise ValueError('\\ud800 lone')",
        "import os\n_ = os.write(1, b'\\xed\\xa0\\x80')",
        "float('nan')",
    ],
)
def test_strict_json_whatever_the_cell_writes(host: VixHost, source: str) -> None:
    result = host.run_cell(source)  # the host's strict parse is part of every run
    assert result.response["protocol"] == PROTOCOL


def test_lone_surrogate_in_an_error_is_replaced(host: VixHost) -> None:
    result = host.run_cell("raise ValueError('bad \\ud800 text')")
    assert result.failure is not None
    assert result.failure.startswith("ValueError: bad ")
    assert result.headline is not None and result.headline.endswith("(line 1)")
    assert "\ud800" not in result.failure


def test_utf8_is_not_escaped(host: VixHost) -> None:
    result = host.run_cell("print('héllo €')")
    assert "héllo €".encode() in result.stdout


@pytest.mark.parametrize(
    "source",
    ["print(1)", "1 / 0", "def f(:", "import os\nos._exit(9)", "import sys\nsys.exit(2)"],
)
def test_always_exit_zero_with_protocol_and_request_id(host: VixHost, source: str) -> None:
    result = host.run_cell(source, requestId="doc:cell-9")
    assert result.returncode == 0
    assert result.response["protocol"] == PROTOCOL
    assert result.response["requestId"] == "doc:cell-9"


def test_failed_response_carries_everything_captured(host: VixHost) -> None:
    result = host.run_cell("import sys\nprint('o')\nprint('e', file=sys.stderr)\nmissing")
    response = result.response
    assert response["ok"] is False
    assert (response["stdout"], response["stderr"], response["outputs"]) == ("o\n", "e\n", [])
    assert set(response["error"]) == {"code", "message", "details"}
    assert response["diagnostics"][0]["line"] == 4


def test_strict_loads_refuses_what_nlohmann_refuses() -> None:
    for bad in (b'{"a": NaN}', b'{"a": Infinity}', b'{"a": "\\ud800"}', b'{"a": "\xff"}'):
        with pytest.raises(ValueError):
            strict_loads(bad)
    assert strict_loads(b'\xef\xbb\xbf{"a": "\\ud83d\\ude00"}') == {"a": "😀"}


def test_a_huge_request_id_is_echoed_bounded(host: VixHost) -> None:
    """The host does not check requestId, but it counts it against its 1 MiB."""
    huge = "id-" + "x" * (3 << 19) + "-end"  # over the host's 1 MiB, under the 2 MiB request cap
    result = host.run_cell("print(1)", requestId=huge)  # the harness fails it past 1 MiB
    echoed = result.response["requestId"]
    assert echoed.startswith("id-x") and echoed.endswith("x-end") and len(echoed) <= 1100
    assert "bytes omitted" in echoed
    assert host.run_cell("print(1)", requestId=":cell-7").response["requestId"] == ":cell-7"


@pytest.mark.parametrize("field", ["requestId", "cellId", "workingDirectory", "documentPath"])
def test_a_huge_value_of_the_wrong_type_is_not_echoed_whole(host: VixHost, field: str) -> None:
    huge: dict[str, Any] = {field: ["x" * (3 << 19)]}  # 1.5 MiB: within the request cap
    result = host.run_cell("print(1)", **huge)
    assert result.error["code"] == "invalid_request"
    assert len(result.stdout) < 64 << 10
