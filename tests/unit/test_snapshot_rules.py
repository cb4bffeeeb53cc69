"""The snapshots' settings, words and arithmetic, on plain values."""

from __future__ import annotations

import pytest

from pyrelune import settings
from pyrelune.supervisor.snapshots import cell_name, dropped, resumed
from pyrelune.worker.snapshot import gpu_in_use, private_memory, process_name


def test_snapshots_are_on_with_a_quarter_of_memory_by_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYRELUNE_SNAPSHOTS", raising=False)
    monkeypatch.delenv("PYRELUNE_SNAPSHOT_MAX", raising=False)
    assert settings.snapshot_max(memory=8 << 30) == 2 << 30


@pytest.mark.parametrize(("switch", "budget", "expected"), [
    ("0", "", 0), ("0", "4096", 0), ("1", "4096", 4096), ("", "1048576", 1 << 20),
])
def test_the_switch_and_the_budget(monkeypatch: pytest.MonkeyPatch, switch: str, budget: str,
                                   expected: int) -> None:
    monkeypatch.setenv("PYRELUNE_SNAPSHOTS", switch)
    monkeypatch.setenv("PYRELUNE_SNAPSHOT_MAX", budget)
    assert settings.snapshot_max(memory=8 << 30) == expected


@pytest.mark.parametrize(("name", "value"), [
    ("PYRELUNE_SNAPSHOTS", "yes"), ("PYRELUNE_SNAPSHOT_MAX", "12"),
    ("PYRELUNE_SNAPSHOT_MAX", "1GB"),
])
def test_a_bad_value_is_refused_naming_its_rule(monkeypatch: pytest.MonkeyPatch, name: str,
                                                value: str) -> None:
    monkeypatch.delenv("PYRELUNE_SNAPSHOTS", raising=False)
    monkeypatch.setenv(name, value)
    with pytest.raises(settings.SettingError, match=name):
        settings.snapshot_max(memory=8 << 30)


@pytest.mark.parametrize(("filename", "name"), [
    ("<cell 3>", "cell 3"), ("<In[12]>", "In [12]"), ("notebook.py", "notebook.py"),
    ("", "the last cell"),
])
def test_a_cell_is_named_as_its_host_names_it(filename: str, name: str) -> None:
    assert cell_name(filename) == name


def test_the_words_name_the_cell_and_the_threads_not_restored() -> None:
    assert resumed("cell 3", []) == ("the kernel resumed from its snapshot: the namespace is "
                                     "the one cell 3 left (its last finished cell)")
    words = resumed("In [2]", [f"t{n}" for n in range(7)])
    assert "threads are not restored (7 ran then: t0, t1, t2, t3, t4, ...)" in words


def test_the_drop_note_says_both_sizes() -> None:
    note = dropped("cell 2", 3 << 20, 1 << 20)
    assert "cell 2" in note and "3.0 MiB" in note and "PYRELUNE_SNAPSHOT_MAX (1.0 MiB)" in note


def test_private_memory_counts_clean_and_dirty_private_pages() -> None:
    rollup = ("Rss:  900 kB\nShared_Clean:  100 kB\nPrivate_Clean:  20 kB\n"
              "Private_Dirty:  300 kB\nPss:  500 kB\n")
    assert private_memory(rollup) == 320 * 1024


class _Cuda:
    def __init__(self, initialised: bool) -> None:
        self.initialised = initialised

    def is_initialized(self) -> bool:
        return self.initialised


class _Torch:
    def __init__(self, initialised: bool) -> None:
        self.cuda = _Cuda(initialised)


def test_a_gpu_context_stops_snapshots() -> None:
    assert gpu_in_use({"torch": _Torch(False), "numpy": object()}) is None
    assert "torch has initialised CUDA" in (gpu_in_use({"torch": _Torch(True)}) or "")
    assert "cupy" in (gpu_in_use({"cupy": object()}) or "")


@pytest.mark.parametrize(("filename", "name"), [
    ("<In[12]>", b"snap In[12]"),
    ("<cell 3>", b"snap cell 3"),
    ("<cell setup>", b"snap cell setup"),
    ("<cell a-much-longer-id>", b"snap cell a-muc"),  # Linux keeps 15 bytes
    ("plain", b"snap plain"),
])
def test_a_snapshot_is_named_for_its_cell(filename: str, name: bytes) -> None:
    assert process_name(filename) == name
