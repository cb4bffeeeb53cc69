"""The settings parser: one rule per setting, whichever mode reads it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyrelune import settings
from pyrelune.protocols.vixnote_outputs import MIME_ORDER
from pyrelune.settings import MAX_SECONDS, SettingError, byte_count, seconds, types


@pytest.mark.parametrize(("text", "expected"), [
    ("0", 0.0), ("9", 9.0), (" 2.5 ", 2.5), ("1e3", 1000.0), (str(MAX_SECONDS), MAX_SECONDS),
])
def test_seconds(text: str, expected: float) -> None:
    assert seconds("PYRELUNE_TIMEOUT", text) == expected


@pytest.mark.parametrize("text", [
    "soon", "-1", "", "inf", "-inf", "Infinity", "nan", "1e309", "1e10", str(MAX_SECONDS + 1),
    "\uff11",  # a fullwidth digit: float() would take it
])
def test_bad_seconds_say_the_rule(text: str) -> None:
    with pytest.raises(SettingError, match=r"^PYRELUNE_TIMEOUT must be seconds, from 0 to "
                                           r"604800 \(0: no deadline\), not "):
        seconds("PYRELUNE_TIMEOUT", text)


def test_a_minimum_of_seconds() -> None:
    assert seconds("--auth-timeout", "0.1", minimum=0.1) == 0.1
    with pytest.raises(SettingError, match=r"^--auth-timeout must be seconds, from 0.1 to 604800, "
                                           r"not '0'$"):
        seconds("--auth-timeout", "0", minimum=0.1)


@pytest.mark.parametrize(("text", "expected"), [("1024", 1024), (" 65536 ", 65536)])
def test_byte_count(text: str, expected: int) -> None:
    assert byte_count("PYRELUNE_MAX_OUTPUT", text) == expected


@pytest.mark.parametrize("text", [
    "12", "1023", "-2048", "x", "1e6", "4096.0", "\uff12\uff10\uff14\uff18",  # fullwidth digits
    str((1 << 40) + 1), "9" * 5000,  # more digits than Python 3.11+ converts
])
def test_bad_byte_counts_say_the_rule(text: str) -> None:
    with pytest.raises(SettingError, match="PYRELUNE_MAX_OUTPUT must be a whole number of bytes"):
        byte_count("PYRELUNE_MAX_OUTPUT", text)


def test_a_bad_value_is_quoted_short() -> None:
    with pytest.raises(SettingError) as caught:
        seconds("--timeout", "x" * 10_000)
    assert len(str(caught.value)) < 200


def test_types() -> None:
    assert types("PYRELUNE_MIME_ORDER", "", MIME_ORDER) == MIME_ORDER
    assert types("PYRELUNE_MIME_ORDER", " text/html , image/svg+xml,text/html", MIME_ORDER) == (
        "text/html", "image/svg+xml", "text/plain")
    with pytest.raises(SettingError, match=r"^PYRELUNE_MIME_ORDER must be types Vix Note shows, "
                                           r"comma-separated \(image/svg\+xml, .*\), not "
                                           r"'image/png'$"):
        types("PYRELUNE_MIME_ORDER", "image/svg+xml,image/png", MIME_ORDER)


@pytest.mark.parametrize(("setting", "expected"), [(None, 7), ("", 7), ("  ", 7), ("2048", 2048)])
def test_unset_means_the_default(monkeypatch: pytest.MonkeyPatch, setting: str | None,
                                 expected: int) -> None:
    for name in ("PYRELUNE_MAX_OUTPUT", "PYRELUNE_TIMEOUT"):
        if setting is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, setting)
    assert settings.max_output(7) == expected
    assert settings.timeout(7.0) == expected


@given(st.text(max_size=30))
def test_any_text_is_a_value_or_a_setting_error(text: str) -> None:
    for parse in (lambda: seconds("s", text), lambda: byte_count("b", text),
                  lambda: types("t", text, MIME_ORDER)):
        try:
            parse()
        except SettingError:
            pass


def test_the_shell_is_ipython_or_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYRELUNE_SHELL", raising=False)
    assert settings.shell(settings.IPYTHON) == "ipython"
    for value in ("plain", " plain ", "ipython"):
        monkeypatch.setenv("PYRELUNE_SHELL", value)
        assert settings.shell(settings.PLAIN) == value.strip()
    monkeypatch.setenv("PYRELUNE_SHELL", "IPython")
    with pytest.raises(settings.SettingError,
                       match="PYRELUNE_SHELL must be 'ipython' or 'plain', not 'IPython'"):
        settings.shell(settings.PLAIN)
    # The command line's --shell wins, and is named when it is wrong.
    assert settings.shell(settings.IPYTHON, "plain") == "plain"
    with pytest.raises(settings.SettingError, match="--shell must be 'ipython' or 'plain'"):
        settings.shell(settings.PLAIN, "bash")



def test_the_iopub_stall_limit_is_seconds_0_waits_for_ever(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYRELUNE_IOPUB_STALL", raising=False)
    assert settings.iopub_stall() == settings.IOPUB_STALL
    for value, expected in (("0", 0.0), (" 2.5 ", 2.5)):
        monkeypatch.setenv("PYRELUNE_IOPUB_STALL", value)
        assert settings.iopub_stall() == expected
    monkeypatch.setenv("PYRELUNE_IOPUB_STALL", "-1")
    with pytest.raises(settings.SettingError, match=r"^PYRELUNE_IOPUB_STALL must be seconds, "
                                                    r"from 0 to 604800 \(0: wait for ever\)"):
        settings.iopub_stall()
