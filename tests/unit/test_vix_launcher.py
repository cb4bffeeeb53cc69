"""The launcher's two forms, chosen by the interpreter path."""

from __future__ import annotations

import pytest

from pyrelune.vix import launcher


def test_short_plain_path_gets_a_python_shebang() -> None:
    text = launcher.render("/venv/bin/python3", "1")
    assert text.startswith("#!/venv/bin/python3\n")
    assert launcher.is_launcher(text)
    assert launcher.interpreter_of(text) == "/venv/bin/python3"
    assert "from pyrelune.__main__ import main" in text


@pytest.mark.parametrize("path", ["/my envs/py env/bin/python", "/" + "x" * 130 + "/python",
                                  "/tab\there/python"])
def test_paths_a_shebang_cannot_carry_get_a_sh_wrapper(path: str) -> None:
    text = launcher.render(path, "1")
    assert text.startswith("#!/bin/sh\n")
    assert launcher.interpreter_of(text) == path


def test_relative_interpreter_is_refused() -> None:
    with pytest.raises(ValueError):
        launcher.render("python3", "1")


@pytest.mark.parametrize("text", ["", "#!/bin/sh\nexec vix\n", "#!/usr/bin/env python\nimport x\n"])
def test_other_files_are_not_launchers(text: str) -> None:
    assert not launcher.is_launcher(text)
    assert launcher.interpreter_of(text) is None


def test_a_warm_launcher_passes_its_setting_and_says_which() -> None:
    for interpreter in ("/venv/bin/python3", "/my venv/bin/python3"):
        text = launcher.render(interpreter, "numpy,pandas")
        assert launcher.warm_of(text) == "numpy,pandas"
        assert launcher.interpreter_of(text) == interpreter
    assert launcher.warm_of(launcher.render("/venv/bin/python3", "0")) == "0"
    before_the_default = launcher.render("/venv/bin/python3", "1").replace("main(warm='1')",
                                                                           "main()")
    assert launcher.warm_of(before_the_default) == ""
    for setting in ("x');import os;('", ""):
        with pytest.raises(ValueError):
            launcher.render("/venv/bin/python3", setting)
