"""Why no warm process is started, as `route.Start` tells it: a reason, and whether one is busy."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

from pyrelune.warm import route, starts


@pytest.fixture
def lock_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("PYRELUNE_WARM_IDLE", raising=False)
    return str(tmp_path / "warm.lock")


def test_a_free_lock_is_reserved_and_says_starting(lock_path: str) -> None:
    start = route.Start.reserve("colorsys", lock_path)
    try:
        assert starts.Record.read(start.lock).phase == starts.STARTING
    finally:
        os.close(start.lock)


def test_a_lock_someone_holds_is_a_busy_refusal(lock_path: str) -> None:
    holder = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(route.NoStart) as refused:
            route.Start.reserve("colorsys", lock_path)
    finally:
        os.close(holder)
    assert refused.value.busy
    assert str(refused.value) == route.BUSY


def test_a_bad_idle_timeout_is_a_refusal_that_is_not_busy(
        lock_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYRELUNE_WARM_IDLE", "ten")
    with pytest.raises(route.NoStart) as refused:
        route.Start.reserve("colorsys", lock_path)
    assert not refused.value.busy
    assert str(refused.value).startswith("PYRELUNE_WARM_IDLE must be seconds")


def test_starts_that_keep_dying_are_refused_unless_a_person_asks(lock_path: str) -> None:
    lock = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        starts.Record(starts.STARTING, 1, time.time()).write(lock)  # the second death in a row
    finally:
        os.close(lock)
    with pytest.raises(route.NoStart) as refused:
        route.Start.reserve("colorsys", lock_path)
    assert not refused.value.busy and "died 2 times in a row" in str(refused.value)
    start = route.Start.reserve("colorsys", lock_path, patient=False)
    os.close(start.lock)


def test_a_lock_that_cannot_be_opened_is_said(tmp_path: Path) -> None:
    with pytest.raises(route.NoStart, match=r"^lock: No such file or directory$"):
        route.Start.reserve("colorsys", str(tmp_path / "missing" / "warm.lock"))
