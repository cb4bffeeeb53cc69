"""Warm start's settings, each read by one rule: PYRELUNE_WARM (or the launcher's), the flags;
doctor reads them by the same."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pyrelune.settings import SettingError
from pyrelune.vix import doctor
from pyrelune.vix.discovery import Extension
from pyrelune.vix.host import Exchange
from pyrelune.warm.gate import (
    DEFAULT_PRELOAD,
    SOCKET_PATH_MAX,
    flag,
    launcher_settings,
    preload_names,
    warm_paths,
)

WARM_VARIABLES = ("PYRELUNE_WARM_EVERY", "PYRELUNE_WARM_DEBUG", "PYRELUNE_WARM_IDLE")


@pytest.fixture(autouse=True)
def _unset(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in WARM_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(("setting", "expected"), [
    ("", None), ("0", None), ("off", None), ("OFF ", None), (" No", None), ("false\n", None),
    ("1", DEFAULT_PRELOAD), (" on", DEFAULT_PRELOAD), ("TRUE", DEFAULT_PRELOAD),
    ("yes ", DEFAULT_PRELOAD), ("colorsys", "colorsys"), (" numpy , pandas,", "numpy,pandas"),
    ("os.path,xml.dom", "os.path,xml.dom"),
])
def test_a_warm_setting_is_a_switch_or_module_names(setting: str, expected: str | None) -> None:
    assert preload_names(setting) == expected


@pytest.mark.parametrize("setting", ["numpy pandas", "numpy;pandas", "1numpy", ",", "numpy,,-x",
                                     "os..path", "on off", "OFF-"])
def test_anything_else_is_refused_by_name(setting: str) -> None:
    with pytest.raises(SettingError, match=r"^PYRELUNE_WARM must be 0 \(off\), 1 \(numpy,pandas,"
                                           r"matplotlib\) or module names, comma-separated, "
                                           r"not '"):
        preload_names(setting)
    with pytest.raises(SettingError, match=r"^--preload must be "):
        preload_names(setting, "--preload")


@pytest.mark.parametrize(("value", "expected"), [
    (None, False), ("", False), ("0", False), (" Off", False), ("no", False),
    ("1", True), ("ON ", True), ("yes", True), ("true", True),
])
def test_a_flag_is_on_or_off(monkeypatch: pytest.MonkeyPatch, value: str | None,
                             expected: bool) -> None:
    if value is not None:
        monkeypatch.setenv("PYRELUNE_WARM_DEBUG", value)
    assert flag("PYRELUNE_WARM_DEBUG") is expected


@pytest.mark.parametrize("value", ["2", "maybe", "enabled", "-1"])
def test_a_flag_of_another_value_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("PYRELUNE_WARM_EVERY", value)
    with pytest.raises(SettingError, match=rf"^PYRELUNE_WARM_EVERY must be 1 or 0 \(or on/off, "
                                           rf"yes/no, true/false\), not '{value}'$"):
        flag("PYRELUNE_WARM_EVERY")


def test_the_launcher_reads_its_settings_in_one_go(monkeypatch: pytest.MonkeyPatch) -> None:
    assert launcher_settings("OFF ") == (None, False, None)
    assert launcher_settings("colorsys") == ("colorsys", False, None)
    monkeypatch.setenv("PYRELUNE_WARM_EVERY", "yes")
    assert launcher_settings("1") == (DEFAULT_PRELOAD, True, None)


@pytest.mark.parametrize(("setting", "name", "value"), [
    ("numpy pandas", "PYRELUNE_WARM", None), ("1", "PYRELUNE_WARM_EVERY", "sometimes"),
    ("1", "PYRELUNE_WARM_DEBUG", "verbose"), ("1", "PYRELUNE_WARM_IDLE", "abc"),
    ("1", "PYRELUNE_WARM_IDLE", "-5"),
])
def test_a_bad_warm_variable_is_why_the_cell_is_refused(
        monkeypatch: pytest.MonkeyPatch, setting: str, name: str, value: str | None) -> None:
    if value is not None:
        monkeypatch.setenv(name, value)
    preload, every, refusal = launcher_settings(setting)
    assert (preload, every) == (None, False)
    assert refusal is not None and refusal.startswith(f"{name} must be "), refusal


def test_with_warm_start_off_its_other_variables_are_not_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYRELUNE_WARM_IDLE", "abc")
    assert launcher_settings("0") == (None, False, None)


def _extension(tmp_path: Path) -> Extension:
    return Extension(id="softadastra/pyrelune", version="0", source="global", root=tmp_path,
                     command=str(tmp_path / "pyrelune"))


def _no_cell(command: str, request: bytes) -> Exchange:
    raise AssertionError("doctor ran a cell")


@pytest.mark.parametrize("setting", ["OFF ", " 0", "no"])
def test_doctor_reads_a_switch_as_the_launcher_does(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, setting: str) -> None:
    monkeypatch.setenv("PYRELUNE_WARM", setting)
    found = doctor.warm_check(_extension(tmp_path), _no_cell)
    assert found.passed and found.detail.startswith("off"), found


def test_doctor_fails_a_bad_warm_setting_with_its_rule(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYRELUNE_WARM", "numpy pandas")
    found = doctor.warm_check(_extension(tmp_path), _no_cell)
    assert not found.passed
    assert found.detail.startswith("PYRELUNE_WARM must be 0 (off), 1 (numpy,pandas,matplotlib) "
                                   "or module names, comma-separated, not 'numpy pandas'")


@pytest.mark.parametrize("length", [1, 40, 71, 72, 200])
def test_a_socket_path_always_fits_sun_path(monkeypatch: pytest.MonkeyPatch, length: int) -> None:
    runtime = "/run/" + "r" * length
    monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
    socket_path, lock_path = warm_paths("colorsys")
    assert len(socket_path.encode()) <= SOCKET_PATH_MAX
    fits = len(f"{runtime}/pyrelune/warm-0123456789abcdef.sock") <= SOCKET_PATH_MAX
    folder = f"{runtime}/pyrelune" if fits else f"/tmp/pyrelune-{os.getuid()}"
    assert os.path.dirname(socket_path) == os.path.dirname(lock_path) == folder

