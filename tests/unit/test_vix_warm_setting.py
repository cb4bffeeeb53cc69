"""What `vix install` and `vix doctor` say of warm start, from the launcher's setting: on by
default, off by the user's choice (a note), off by an older launcher (a warning)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pyrelune.vix import discovery, doctor, host, launcher, warmth

ALL = list(warmth.DATA_STACK)


@pytest.fixture(autouse=True)
def unset(monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings of the shell these tests run in (the suite's --warm sets PYRELUNE_WARM)."""
    monkeypatch.delenv("PYRELUNE_WARM", raising=False)
    monkeypatch.delenv("PYRELUNE_WARM_IDLE", raising=False)


def stack(monkeypatch: pytest.MonkeyPatch, found: list[str]) -> None:
    monkeypatch.setattr(warmth, "installed", lambda names=warmth.DATA_STACK: found)


def test_install_says_what_the_default_preloads_its_memory_and_its_idle_exit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    stack(monkeypatch, ALL)
    first, second = warmth.summary("1")
    assert first == ("warm start is on: the first cell starts a process that preloads numpy, "
                     f"pandas and matplotlib (about {warmth.DATA_STACK_MIB} MiB) for the next "
                     "cells; it exits after 10 idle minutes")
    assert "--cold" in second and "pyrelune warm status" in second
    stack(monkeypatch, ["numpy"])
    assert "preloads numpy for the next cells" in warmth.summary("1")[0]
    stack(monkeypatch, [])
    assert "preloads nothing yet (numpy, pandas and matplotlib are not installed here" in \
        warmth.summary("1")[0]
    assert "preloads colorsys and json for the next" in warmth.summary("colorsys,json")[0]


def test_install_says_a_cold_launcher_is_off_in_one_line() -> None:
    assert warmth.summary("0") == ["warm start is off (--cold): each cell imports what it uses "
                                   "itself; `pyrelune vix install` turns it on"]


@pytest.mark.parametrize(("idle", "said"), [
    ("", "it exits after 10 idle minutes"), ("60", "it exits after 1 idle minute"),
    ("90", "it exits after 90 s idle"), ("0", "it stays until `pyrelune warm stop`"),
    ("soon", "it exits after 10 idle minutes"),  # broken: each cell says so, not install
])
def test_the_idle_exit_follows_pyrelune_warm_idle(
        monkeypatch: pytest.MonkeyPatch, idle: str, said: str) -> None:
    monkeypatch.setenv("PYRELUNE_WARM_IDLE", idle)
    assert warmth.idle_exit().startswith(said)


def extension(tmp_path: Path, text: str) -> discovery.Extension:
    command = tmp_path / "pyrelune"
    command.write_text(text)
    return discovery.Extension("me/py", "1", "global", tmp_path, str(command))


def no_cell(command: str, payload: bytes) -> host.Exchange:
    raise AssertionError("warm start is off: no cell is needed to tell")


def test_doctor_notes_a_cold_install_as_a_choice_not_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stack(monkeypatch, ALL)
    check = doctor.warm_check(extension(tmp_path, launcher.render(sys.executable, "0")), no_cell)
    assert (check.passed, check.warning) == (True, False)
    assert check.line() == ("ok   warm start: off (installed with --cold, your choice): each "
                            "cell that imports numpy, pandas and matplotlib pays the import "
                            "again (about half a second); `pyrelune vix install` turns it on")


def test_doctor_notes_pyrelune_warm_0_as_a_choice_over_a_warm_launcher(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stack(monkeypatch, ["pandas"])
    monkeypatch.setenv("PYRELUNE_WARM", "off")
    check = doctor.warm_check(extension(tmp_path, launcher.render(sys.executable, "1")), no_cell)
    assert (check.passed, check.warning) == (True, False)
    assert check.detail.startswith("off (PYRELUNE_WARM=off, your choice): each cell that "
                                   "imports pandas pays")


def test_doctor_warns_of_a_launcher_written_before_warm_start_was_the_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    older = launcher.render(sys.executable, "1").replace("main(warm='1')", "main()")
    stack(monkeypatch, ALL)
    check = doctor.warm_check(extension(tmp_path, older), no_cell)
    assert (check.passed, check.warning) == (True, True)
    assert check.detail.startswith("off: the launcher was written before warm start was on by "
                                   "default: each cell that imports numpy")
    assert check.fix.startswith("rerun `pyrelune vix install`")
    stack(monkeypatch, [])  # nothing a warm process could preload: nothing to warn of
    assert doctor.warm_check(extension(tmp_path, older), no_cell).line() == "ok   warm start: off"


def test_the_docs_state_the_memory_install_states() -> None:
    docs = Path(__file__).parents[2] / "docs"
    for page in ("warm-start.md", "vix-note.md"):
        text = " ".join((docs / page).read_text().split())
        assert f"about {warmth.DATA_STACK_MIB} MiB" in text, page
        assert "10 idle minutes" in text, page
