"""The host harness applies Vix Note's rules: checked against fake runtimes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.vixhost import HostResult, VixHost

FAKE = """#!/bin/sh
cat >/dev/null
printf '%s' "$FAKE_STDOUT"
printf '%s' "$FAKE_STDERR" >&2
eval "$FAKE_THEN"
exit "${FAKE_EXIT:-0}"
"""


def fake(tmp_path: Path, stdout: str, stderr: str = "", code: int = 0, then: str = "",
         hang_after: float = 5.0) -> HostResult:
    script = tmp_path / "runtime"
    script.write_text(FAKE)
    script.chmod(0o755)
    env = {**os.environ, "FAKE_STDOUT": stdout, "FAKE_STDERR": stderr,
           "FAKE_EXIT": str(code), "FAKE_THEN": then}
    host = VixHost(command=str(script), env=env, check=False, hang_after=hang_after)
    return host.run(b'{"source": "x"}')


OK = '{"protocol": "vix-note-extension-1", "ok": true, "stdout": "a", "stderr": "b", "outputs": %s}'


def test_success_in_the_hosts_order(tmp_path: Path) -> None:
    outputs = ('[{"mime": "text/plain", "data": "c"}, {"mime": "application/json", "data": "{}"},'
               ' {"mime": "image/svg+xml", "data": " <svg/>"}]')
    result = fake(tmp_path, OK % outputs, stderr="d")
    assert result.ok and result.schema_errors == []
    assert result.shown == [("stdout", "a"), ("stderr", "b"), ("stdout", "c"),
                            ("application/json", "{}"), ("image/svg+xml", " <svg/>"),
                            ("stderr", "d")]


def test_unsupported_mime_and_bad_svg(tmp_path: Path) -> None:
    outputs = ('[{"mime": "image/png", "data": "x"}, '
               '{"mime": "image/svg+xml", "data": "<?xml version=\\"1.0\\"?><svg/>"}]')
    result = fake(tmp_path, OK % outputs)
    assert ("error", "unsupported output MIME: image/png") in result.shown
    assert ("error", "Invalid SVG output") in result.shown
    assert result.schema_errors  # png is not in the schema's MIME list


@pytest.mark.parametrize(
    ("stdout", "failure"),
    [
        ('{"ok": true, "x": NaN}', "extension returned invalid JSON"),
        ('{"ok": true, "x": "\\ud800"}', "extension returned invalid JSON"),
        ('{"ok": true} {}', "extension returned invalid JSON"),
        ('{"protocol": "other", "ok": true}', "extension returned invalid protocol"),
        ('{"ok": "yes"}', "extension response missing boolean ok"),
        ('{"ok": false, "error": {}}', "extension failed"),
        ('{"ok": false, "error": {"message": "boom"}}', "boom"),
    ],
)
def test_failures(tmp_path: Path, stdout: str, failure: str) -> None:
    result = fake(tmp_path, stdout)
    assert result.failure is not None and result.failure.startswith(failure)


@pytest.mark.parametrize("stdout", ['{"ok": false, "error": "boom"}', "[]",
                                    '{"ok": true, "outputs": [1]}'])
def test_what_would_throw_inside_the_host(tmp_path: Path, stdout: str) -> None:
    assert fake(tmp_path, stdout).crashed


def test_non_zero_exit_shows_stderr(tmp_path: Path) -> None:
    result = fake(tmp_path, OK % "[]", stderr="it broke", code=1)
    assert result.failure == "extension process failed"
    assert result.shown == [("stderr", "it broke")]
    with pytest.raises(AssertionError):
        result.assert_well_behaved()


def test_too_much_output(tmp_path: Path) -> None:
    result = fake(tmp_path, "", then="head -c 2000000 /dev/zero")
    assert result.too_large and result.failure == "extension output is too large"


def test_a_process_left_holding_the_pipes_hangs_the_host(tmp_path: Path) -> None:
    result = fake(tmp_path, OK % "[]", then="sleep 3 &", hang_after=0.5)
    assert result.hung
