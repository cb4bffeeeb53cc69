"""Every `pip install` a reader or a message is given works as written: pyrelune is on no
package index, so a requirement naming it must be a checkout, a wheel or a `name @ URL`,
never the bare name an index would resolve (to whatever someone may publish under it).
tests/e2e/test_wheel_install.py installs the wheel form, with no index, into a fresh
environment."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

import pyrelune
from pyrelune import extras

REPO = Path(__file__).resolve().parent.parent.parent
PAGES = [REPO / name for name in ("README.md", "CONTRIBUTING.md", "SECURITY.md",
                                 "CHANGELOG.md")] + sorted((REPO / "docs").glob("*.md"))
#: `pip install ...` up to the end of its code span, its shell comment, `&&` or the line.
COMMAND = re.compile(r"pip install ([^`#\n]*?)\s*(?:`|#|&&|$)", re.M)
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
INLINE = re.compile(r"`[^`]+`")
#: pip options that take a value (`-t DIR`); the value is not a requirement.
VALUED = {"-r", "-c", "-e", "-t", "--target", "-f", "--find-links", "-i", "--index-url",
          "--prefix", "--root", "--python"}
#: A requirement an index resolves: a name, extras, versions, nothing that is a path or URL.
BY_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*([<>=!~;].*)?$")


def requirements(command: str) -> list[str]:
    """The requirements `pip install COMMAND` names (options and their values left out)."""
    words = shlex.split(command)
    found, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word in VALUED
        else:
            found.append(word)
    return found


def by_index_name(requirement: str) -> str | None:
    """The name an index would be asked for, or None for a path, a wheel or `name @ URL`."""
    match = BY_NAME.match(requirement)
    return match.group(1) if match and "/" not in requirement else None


def names_pyrelune_by_index(command: str) -> bool:
    found = (by_index_name(requirement) for requirement in requirements(command))
    return any(name is not None and name.lower() == "pyrelune" for name in found)


def commands(page: Path) -> list[str]:
    """The `pip install` lines of `page`: in its code blocks, and in its inline code, whose
    span may wrap across lines in the source."""
    text = page.read_text(encoding="utf-8")
    blocks = FENCE.findall(text)
    prose = INLINE.sub(lambda span: span.group(0).replace("\n", " "), FENCE.sub("", text))
    return [command for part in (*blocks, prose) for command in COMMAND.findall(part)]


def test_the_rule_tells_an_index_name_from_a_checkout_or_a_wheel() -> None:
    for bad in ("pyrelune", "'pyrelune[jupyter]'", "-q 'pyrelune>=0.2'", "-U PyReLune",
                "numpy 'pyrelune[websocket]'"):
        assert names_pyrelune_by_index(bad), bad
    for good in (".", "-q '.[test,dev]'", "'dist/pyrelune-0.2.0-py3-none-any.whl[jupyter]'",
                 "\"pyrelune[jupyter] @ file:///path/to/pyrelune\"", "-e .",
                 "--no-index -f dist 'dist/pyrelune-0.2.0-py3-none-any.whl'",
                 "jupyterlab", "'<pyrelune checkout or wheel>[jupyter]'", "-r pyrelune"):
        assert not names_pyrelune_by_index(good), good


def test_an_install_line_is_found_where_a_reader_sees_one(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Run `pip install\n'pyrelune[jupyter]'` or\n\n```sh\npip install -q . "
                    "# a comment\n```\n`pip install a` and `pip install b`\n")
    assert commands(page) == ["-q .", "'pyrelune[jupyter]'", "a", "b"]


def test_the_pages_have_install_lines_to_check() -> None:
    found = {page.name: commands(page) for page in PAGES}
    assert len(found["README.md"]) >= 6 and found["jupyter.md"] and found["CONTRIBUTING.md"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_no_page_installs_pyrelune_by_name(page: Path) -> None:
    assert [command for command in commands(page) if names_pyrelune_by_index(command)] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_a_wheel_named_in_a_page_is_this_versions(page: Path) -> None:
    """The wheel `pip wheel` builds now, so the line can be pasted after it as it is."""
    wheels = re.findall(r"pyrelune-([^-\s]+)-py3-none-any\.whl", page.read_text("utf-8"))
    assert {version for version in wheels if version != "<version>"} <= {pyrelune.__version__}


def test_no_message_in_the_code_installs_pyrelune_by_name() -> None:
    """Messages are built from `extras.hint`; no other string may name pyrelune to pip."""
    sources = [*(REPO / "pyrelune").rglob("*.py"), *(REPO / "bench").glob("*.py")]
    named = [f"{source.relative_to(REPO)}: {line.strip()}" for source in sources
             for line in source.read_text(encoding="utf-8").splitlines()
             if re.search(r"pip install\W*pyrelune\b", line)]
    assert named == []


@pytest.mark.parametrize(("package", "extra"), [("websockets", "websocket"),
                                                ("pyzmq", "jupyter"), ("ipython", "jupyter"),
                                                ("cryptography", "remote")])
def test_a_hint_names_the_package_with_the_extras_bounds(package: str, extra: str) -> None:
    text = extras.hint(package, extra)
    quoted = [re.match(r"'([^']*)'", piece) for piece in text.split("pip install ")[1:]]
    named = [match.group(1) for match in quoted if match]
    assert len(named) == 2, text
    assert re.fullmatch(rf"{package}>=[0-9.]+(,<[0-9.]+)?", named[0]), named
    assert named[0] == extras.requirement(package, extra)
    assert named[1] == f"<pyrelune checkout or wheel>[{extra}]"
    assert not any(map(names_pyrelune_by_index, map(shlex.quote, named)))


def test_a_requirement_the_metadata_does_not_name_is_the_bare_name() -> None:
    assert extras.requirement("no-such-package", "jupyter") == "no-such-package"
    assert extras.requirement("pyzmq", "no-such-extra") == "pyzmq"


def test_a_jupyter_kernel_without_ipython_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    from pyrelune.modes import jupyter
    from pyrelune.settings import IPYTHON, PLAIN

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "IPython" else real(name, *args))
    assert jupyter._shell(IPYTHON) == PLAIN
    said = capsys.readouterr().err
    assert said.startswith("pyrelune: IPython is not installed, so cells run in pyrelune's "
                           "plain shell: pip install 'ipython>="), said
    assert "[jupyter]'" in said
