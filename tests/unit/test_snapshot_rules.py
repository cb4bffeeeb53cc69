"""The snapshots' settings, words and arithmetic, on plain values."""

from __future__ import annotations

import multiprocessing.pool
import threading

import pytest

from pyrelune import settings
from pyrelune.supervisor.snapshots import PATHS_NAMED, cell_name, dropped, resumed
from pyrelune.wire.events import RESUMED
from pyrelune.worker.pools import LOKY, MULTIPROCESSING, THREAD_POOL, _close, pool_kinds
from pyrelune.worker.snapshot import (
    RELEASED_LENGTH,
    gpu_in_use,
    private_memory,
    process_name,
    released_name,
)


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


def test_the_words_say_which_pools_start_anew_and_what_was_released() -> None:
    words = resumed("cell 2", ["ThreadPoolExecutor-0_0"], ["ThreadPoolExecutor", "joblib"],
                    ["/tmp/a.db", "socket", "/tmp/a.db", "pipe", "socket"], 0)
    assert ("threads are not restored (1 ran then: ThreadPoolExecutor-0_0): a "
            "ThreadPoolExecutor starts new threads at its next submit (a task one was running "
            "then fails); joblib starts new worker processes (loky) at its next parallel "
            "call;") in words
    assert words.endswith("; descriptors were released, as if closed: /tmp/a.db, 2 sockets, "
                          "a pipe")


def test_the_released_descriptors_are_named_within_bounds() -> None:
    words = resumed("cell 2", [], [], [f"/data/{n}.csv" for n in range(PATHS_NAMED + 3)], 4)
    assert "threads" not in words
    assert words.endswith(f"/data/{PATHS_NAMED - 1}.csv and 7 more")
    assert resumed("cell 2", [], [], [], 0).endswith("(its last finished cell)")


@pytest.mark.parametrize(("link", "name"), [
    ("/tmp/kept.db", "/tmp/kept.db"), ("socket:[4242]", "socket"), ("pipe:[17]", "pipe"),
    ("/", None), ("anon_inode:[eventpoll]", None),
    ("/" + "d" * 300, "..." + "d" * (RELEASED_LENGTH - 3)),
])
def test_a_released_descriptor_is_named_by_its_link(link: str, name: str | None) -> None:
    assert released_name(link) == name


class _LokyThread(threading.Thread):
    """Stands for loky's manager thread: a Thread subclass of a loky module."""


_LokyThread.__module__ = "joblib.externals.loky.process_executor"


def test_the_pools_are_told_from_their_threads() -> None:
    from concurrent.futures import thread

    threads = [threading.Thread(target=thread._worker), _LokyThread(),
               threading.Thread(target=multiprocessing.pool.Pool._handle_workers),  # type: ignore[attr-defined]
               threading.Thread(target=print)]
    assert pool_kinds(threads) == sorted([LOKY, MULTIPROCESSING, THREAD_POOL])
    assert pool_kinds([]) == []


def test_a_closed_pools_owed_results_fail_and_its_imap_ends_after_what_it_had() -> None:
    """What a woken snapshot does to a multiprocessing Pool (`_close`), here on a ThreadPool
    (a Pool too) whose tasks wait for an event set only at the end."""
    release = threading.Event()
    pool = multiprocessing.pool.ThreadPool(2)
    try:
        owed = pool.apply_async(release.wait)
        items = pool.imap(lambda n: n if n == 0 else release.wait(), [0, 1])
        assert items.next(timeout=30) == 0
        _close(pool)
        with pytest.raises(RuntimeError, match=RESUMED):
            owed.get(timeout=30)
        with pytest.raises(RuntimeError, match=RESUMED):
            items.next(timeout=30)
        with pytest.raises(StopIteration):
            items.next(timeout=30)
        with pytest.raises(ValueError, match="Pool not running"):
            pool.apply(pow, (2, 3))
    finally:
        release.set()
        pool.terminate()
