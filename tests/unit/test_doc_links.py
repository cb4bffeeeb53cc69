"""Every relative link in README.md, CONTRIBUTING.md and docs/*.md leads to a file that
exists, and every `#anchor` to a heading of that file, as GitHub names headings; the
package's long description has none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
#: `[text](target)`, outside code; an image's `![...](...)` too.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = CODE.sub(lambda m: m.group(0).strip("`"), heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {anchor(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def links(page: Path) -> list[str]:
    text = CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return [target for target in LINK.findall(text)
            if not re.match(r"[a-z][a-z0-9+.-]*:", target)]  # not https:, mailto:, ...


def test_the_anchor_rule_is_githubs() -> None:
    assert anchor(" rpc kernel (`--mode rpc`)") == "rpc-kernel---mode-rpc"
    assert anchor("Why 8.5 s") == "why-85-s"
    assert anchor("Vix Note (oneshot)") == "vix-note-oneshot"


def long_description() -> Path:
    """The page pyproject.toml gives as the package's long description (its `readme`)."""
    found = re.search(r'^readme = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert found is not None
    return REPO / found.group(1)


def test_the_pages_have_links_to_check() -> None:
    assert len(PAGES) > 5
    assert all(links(page) for page in PAGES if page != long_description())


def test_the_long_description_has_no_relative_link() -> None:
    """A package index shows it apart from the repository, where a relative link (an
    `#anchor` too) leads nowhere."""
    page = long_description()
    assert page != REPO / "README.md" and page.is_file()
    text = page.read_text(encoding="utf-8")
    assert links(page) == [], links(page)
    assert not re.search(r"<(a|img)\b", text), "HTML links or images: check them by hand"
    assert not re.search(r"^\s*\[[^\]]+\]:", text, re.M), "reference-style link definitions"


def broken(page: Path) -> list[str]:
    """The relative links of `page` that lead nowhere, each with what is missing."""
    found = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            found.append(f"{target}: no such file")
        elif fragment and (destination.is_dir() or fragment not in anchors(destination)):
            found.append(f"{target}: no heading #{fragment}")
    return found


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## A `code` part\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n[a](other.md#other-page) [b](other.md#a-code-part) [c](#page)\n"
                    "[d](missing.md) [e](other.md#nowhere) `[f](in-code.md)`\n"
                    "```\n[g](in-a-block.md)\n```\n[h](https://example.org/x.md)\n")
    assert broken(page) == ["missing.md: no such file", "other.md#nowhere: no heading #nowhere"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    assert broken(page) == []
