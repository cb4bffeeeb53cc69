"""The notebook corpus (tests/corpus): each cell behaves in each mode as under ipykernel.

Expected outputs come from running the same notebooks under ipykernel in
this session, so the test needs `ipykernel` and `jupyter_client` (in the
test extras); without them it is skipped. Cells listed in
tests/corpus/known.py are strict xfails: one that starts to match fails
until its entry is removed (`python tests/corpus/report.py` lists them).
"""

from __future__ import annotations

import pytest
from corpus.cells import NOTEBOOKS, cells
from corpus.compare import Runs
from corpus.known import KNOWN
from support.modes import MODES


def _cases() -> list[object]:
    cases: list[object] = []
    for mode in MODES:
        for book, cell in cells():
            if mode == "oneshot" and not cell.alone:
                continue
            reason = KNOWN.get(cell.name, {}).get(mode)
            # One xdist worker runs a notebook's cells: it runs the notebook once per runtime.
            marks = [pytest.mark.xdist_group(f"corpus-{book.name}"), pytest.mark.long]
            if reason:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            cases.append(pytest.param(mode, book.name, cell.name, marks=marks,
                                      id=f"{mode}-{cell.name}"))
    return cases


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    pytest.importorskip("ipykernel")
    pytest.importorskip("jupyter_client")
    return Runs(tmp_path_factory.mktemp("corpus"))


@pytest.mark.parametrize(("mode", "book_name", "cell_name"), _cases())
def test_cell_behaves_as_under_ipykernel(runs: Runs, mode: str, book_name: str,
                                         cell_name: str) -> None:
    book = next(b for b in NOTEBOOKS if b.name == book_name)
    cell = next(c for c in book.cells if c.name == cell_name)
    differences = runs.differences(mode, book, cell)
    assert not differences, f"{cell.source!r}:\n" + "\n".join(differences)


def test_known_differences_name_real_cells_and_modes() -> None:
    names = {cell.name: cell for _, cell in cells()}
    for name, modes in KNOWN.items():
        assert name in names, f"known.py names no cell {name!r}"
        for mode, reason in modes.items():
            assert mode in MODES and reason.strip(), (name, mode)
            assert mode != "oneshot" or names[name].alone, f"{name} does not run in oneshot"


def test_cell_names_are_unique() -> None:
    names = [cell.name for _, cell in cells()]
    assert len(names) == len(set(names))
    assert 40 <= len(names) <= 120  # a small corpus, as the issue asks
