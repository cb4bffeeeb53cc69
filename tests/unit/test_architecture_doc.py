"""docs/architecture.md shows the state tables the code consults, not an older copy of them."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from pyrelune.protocols import jupyter, rpc
from pyrelune.supervisor import session

DOC = Path(__file__).resolve().parent.parent.parent / "docs" / "architecture.md"


def rendered(table: dict[tuple[str, str], str]) -> str:
    """The table as the doc shows it: a Markdown table, then a Mermaid state diagram."""
    rows = [f"| `{state}` | `{event}` | `{after}` |" for (state, event), after in table.items()]
    arrows = [f"    {state} --> {after}: {event}" for (state, event), after in table.items()]
    return "\n".join(["| state | event | next state |", "| --- | --- | --- |", *rows, "",
                      "```mermaid", "stateDiagram-v2", *arrows, "```"])


@pytest.mark.parametrize("module", [rpc, jupyter, session], ids=lambda module: module.__name__)
def test_the_doc_shows_the_codes_table(module: ModuleType) -> None:
    text = DOC.read_text(encoding="utf-8")
    marker = f"<!-- table: {module.__name__} -->\n"
    assert marker in text
    shown = text.split(marker, 1)[1].split("\n<!-- end table -->", 1)[0]
    expected = rendered(module.TRANSITIONS)
    assert shown == expected, f"paste this under {marker.strip()}:\n{expected}"
