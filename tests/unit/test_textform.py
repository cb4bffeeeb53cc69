"""Which text a text-only host shows for a bundle: never a repr that only names the type."""

from __future__ import annotations

import pytest

from pyrelune.shaping.textform import best, default_repr


@pytest.mark.parametrize("text", [
    "<__main__.Page object at 0x7f00aa>", "<__main__.Page at 0x7f00aa>",
    "<IPython.core.display.Markdown object>", "<matplotlib.lines.Line2D at 0x7f1>",
])
def test_reprs_that_only_name_the_type(text: str) -> None:
    assert default_repr(text)


@pytest.mark.parametrize("text", [
    "<b>bold</b>", "<Point x=1 at 0x10>", "Page()", "[<a.B at 0x1>, <a.B at 0x2>]",
])
def test_reprs_that_say_more(text: str) -> None:
    assert not default_repr(text)


def test_html_text_stands_for_ipythons_default_repr() -> None:
    assert best({"text/plain": "<__main__.Page at 0x7f00aa>",
                 "text/html": "<p>only html</p>"}) == "only html"
    assert best({"text/plain": "Page()", "text/html": "<p>only html</p>"}) == "Page()"
