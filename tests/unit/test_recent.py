"""The bounded set of cell sources both sides of a kernel keep (`wire.recent`)."""

from __future__ import annotations

from pyrelune.wire.recent import Recent


def test_the_least_recently_used_go_first_past_the_budget() -> None:
    kept = Recent(budget=25)
    assert kept.put("a", "x" * 9) == []
    assert kept.put("b", "y" * 9) == []
    assert kept.use("a") == "x" * 9  # now the newest
    assert kept.put("c", "z" * 9) == ["b"]
    assert "b" not in kept and "a" in kept and "c" in kept
    assert kept.size == 20


def test_the_newest_is_kept_whatever_its_size() -> None:
    kept = Recent(budget=10)
    kept.put("a", "x")
    assert kept.put("big", "y" * 100) == ["a"]
    assert [key for key, _ in kept.items()] == ["big"]


def test_putting_a_key_again_replaces_its_value_and_size() -> None:
    kept = Recent(budget=100)
    kept.put("a", "x" * 50)
    kept.put("a", "y")
    assert kept.size == 2 and kept.use("a") == "y"
    assert kept.use("missing") is None


def test_clear_forgets_everything() -> None:
    kept = Recent()
    kept.put("a", "b")
    kept.clear()
    assert kept.size == 0 and "a" not in kept
