"""HTML as the text a reader sees: what an HTML-only object shows in Vix Note."""

from __future__ import annotations

import pytest

from pyrelune.shaping.htmltext import html_text


@pytest.mark.parametrize(("html", "text"), [
    ("<p>only html</p>", "only html"),
    ("<b>bold</b> and <i>it</i>", "bold and it"),
    ("a &amp; b &lt;c&gt; &#233; &eacute;", "a & b <c> é é"),
    ("<h1>Title</h1><p>one<br>two</p>after", "Title\n\none\ntwo\n\nafter"),
    ("<ul><li>x</li><li>y</li></ul>", "- x\n- y"),
    ("<pre>  a\n    b</pre>", "  a\n    b"),
    ("<script>alert(1)</script><style>p {}</style><!-- c -->shown", "shown"),
    ("a < b, <not a tag", "a < b, <not a tag"),
    ("<div>x</div>\n\n   <div>y</div>", "x\ny"),
    ("", ""),
])
def test_text_of_html(html: str, text: str) -> None:
    assert html_text(html) == text


def test_table_rows_are_lines_with_aligned_columns() -> None:
    html = ("<table border=1><thead><tr><th></th><th>city</th><th>temp</th></tr></thead>"
            "<tbody><tr><th>0</th><td>Oslo</td><td>3.5</td></tr>"
            "<tr><th>1</th><td>Lima<br>Peru</td><td>19.0</td></tr></tbody></table>")
    assert html_text(html) == "   city       temp\n0  Oslo       3.5\n1  Lima Peru  19.0"


def test_cells_without_closing_tags_and_an_unclosed_table() -> None:
    assert html_text("<table><tr><td>a<td>b<tr><td>ccc<td>d") == "a    b\nccc  d"
