"""Doctor's round trip against launchers that misbehave, faked with pytest-subprocess."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pytest_subprocess import FakeProcess
from pytest_subprocess.fake_popen import FakePopen

from pyrelune.vix import descriptor, doctor, install
from pyrelune.vix.places import Places

ID = "softadastra/pyrelune"


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Places:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    places = Places(tmp_path / "prefix", tmp_path / "home")
    # Cold: these tests are about the round trip, and doctor starts a warm launcher's process.
    target = install.Target(ID, sys.executable, descriptor.load(), warm="0")
    install.apply(install.plan_global_install(places, target))
    return places


@pytest.fixture(autouse=True)
def font_cache_probe(fp: FakeProcess) -> None:
    """Doctor's font cache check, answered as in an environment without matplotlib."""
    fp.register([sys.executable, "-c", fp.any()], stdout=b"null\n")


def round_trip(places: Places) -> doctor.Check:
    checks = doctor.check(places, ID)
    assert [c.passed for c in checks[:-1]] == [True] * (len(checks) - 1), checks
    assert checks[-1].name == "round trip"
    return checks[-1]


def test_a_launcher_that_hangs_is_killed_at_the_host_limit(places: Places,
                                                         fp: FakeProcess) -> None:
    signals: list[int] = []

    def hang(process: FakePopen) -> None:
        raise subprocess.TimeoutExpired(process.args, 10)

    fp.register([str(places.bin_dir / "pyrelune")], callback=hang,
                signal_callback=lambda _, sig: signals.append(sig))
    check = round_trip(places)
    assert not check.passed and "extension execution timed out" in check.detail
    assert signals == [signal.SIGKILL]


@pytest.mark.parametrize(("fake", "shown"), [
    ({"returncode": 1, "stderr": b"Traceback: boom\n"}, "extension process failed"),
    ({"stdout": b"garbage"}, "extension returned invalid JSON"),
    ({"stdout": b'{"protocol": "vix-note-extension-1", "ok": false, "error": "boom"}'},
     "crash: `error` is str"),
    ({"stdout": b'{"ok": true, "stdout": "41\\n"}'}, "showed stdout: 41 instead of 42"),
])
def test_misbehaving_launchers_fail_with_what_vix_note_would_show(
        places: Places, fp: FakeProcess, fake: dict[str, Any], shown: str) -> None:
    requests: list[bytes] = []
    fp.register([str(places.bin_dir / "pyrelune")], stdin_callable=requests.append, **fake)
    check = round_trip(places)
    assert not check.passed and shown in check.detail
    assert b'"source":"print(6 * 7)"' in requests[0]
    if "stderr" in fake:
        assert "Traceback: boom" in check.detail


def test_a_correct_response_passes(places: Places, fp: FakeProcess) -> None:
    fp.register([str(places.bin_dir / "pyrelune")],
                stdout=b'{"protocol": "vix-note-extension-1", "ok": true, "stdout": "42\\n"}')
    check = round_trip(places)
    assert check.passed and " ms " in check.detail
