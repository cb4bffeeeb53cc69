"""HTML as readable text, for a host that would show the markup escaped.

An object that only has `_repr_html_` (a styled table, a widget's fallback)
would show in Vix Note as its tags. This drops the tags and keeps what a
reader needs: block elements and `<br>` end lines, list items start with
`- `, each table row is a line with its cells in aligned columns, `<pre>`
keeps its spacing, scripts, styles and comments go, entities are decoded.

A small scanner rather than `html.parser`, which would load `re` for every
such object; only text with a character reference loads `html` to decode it.
"""

from __future__ import annotations

_BLOCKS = frozenset({
    "address", "article", "aside", "blockquote", "caption", "dd", "details", "div", "dl",
    "dt", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
    "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table",
    "tbody", "tfoot", "thead", "tr", "ul",
})
#: Blocks set apart by an empty line, as a browser sets them apart by a margin.
_PARAGRAPHS = frozenset({"blockquote", "dl", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "ol",
                         "p", "pre", "table", "ul"})
_HIDDEN = frozenset({"script", "style", "template", "head"})
_CELLS = frozenset({"td", "th"})


def html_text(html: str) -> str:
    """The text a reader sees in `html`, line by line."""
    out = _Text()
    at, size = 0, len(html)
    while at < size:
        lt = html.find("<", at)
        if lt < 0:
            out.text(html[at:])
            break
        out.text(html[at:lt])
        if html.startswith("<!--", lt):
            close = html.find("-->", lt + 4)
            at = size if close < 0 else close + 3
            continue
        gt = html.find(">", lt + 1)
        if gt < 0:
            out.text(html[lt:])
            break
        name, closing = _tag(html[lt + 1 : gt])
        at = gt + 1
        if not name:
            if not closing:
                out.text(html[lt:at])  # a lone `<` followed by something that is no tag
            continue
        if name in _HIDDEN and not closing:
            end = html.lower().find(f"</{name}", at)
            at = size if end < 0 else html.find(">", end) + 1 or size
            continue
        out.tag(name, closing)
    return out.result()


def _tag(inside: str) -> tuple[str, bool]:
    """A tag's lower-case name and whether it closes; ('', True) for `<!...>` and `<?...>`."""
    if inside[:1] in ("!", "?"):
        return "", True
    closing = inside.startswith("/")
    body = inside[1:] if closing else inside
    name = body.split(None, 1)[0].rstrip("/").lower() if body.strip() else ""
    return (name, closing) if name.isalnum() else ("", False)


class _Text:
    """The text being built: lines, the current line, and tables being filled."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.line: list[str] = []
        self.pre = 0  # inside <pre>: spacing kept
        self.tables: list[list[list[str]]] = []  # rows of cells, innermost table last
        self.in_cell = False

    def text(self, raw: str) -> None:
        text = _unescape(raw)
        if self.pre:
            first, *rest = text.split("\n")
            self.line.append(first)
            for part in rest:
                self.end_line()
                self.line.append(part)
            return
        words = " ".join(text.split())
        if not words:
            if text and self.line and not self.line[-1].endswith(" "):
                self.line.append(" ")
            return
        if text[:1].isspace() and self.line and not self.line[-1].endswith(" "):
            words = " " + words
        self.line.append(words + " " * text[-1:].isspace())

    def tag(self, name: str, closing: bool) -> None:
        if self.tables and name in _CELLS:
            self._end_cell()
            self.in_cell = not closing
        elif self.tables and name in ("tr", "table"):
            self._end_cell()
            self.in_cell = False
            if name == "table" and closing:
                self.lines.extend(_aligned(self.tables.pop()))
                self.end_line(blank=True)
            elif name == "tr" and not closing:
                self.tables[-1].append([])
            elif name == "table":
                self.tables.append([])
        elif name == "table" and not closing:
            self.end_line(blank=True)
            self.tables.append([])
        elif self.in_cell:
            self.text(" ")  # a line break inside a cell: the cell goes on
        elif name == "br" or name in _BLOCKS:
            self.end_line(blank=name in _PARAGRAPHS)
            if name == "pre":
                self.pre = max(0, self.pre + (-1 if closing else 1))
            elif name == "li" and not closing:
                self.line.append("- ")

    def _end_cell(self) -> None:
        """The text so far is a cell of the current row (text between cells is one too)."""
        text = "".join(self.line).strip()
        self.line = []
        if self.in_cell or text:
            rows = self.tables[-1]
            if not rows:
                rows.append([])
            rows[-1].append(text)

    def end_line(self, blank: bool = False) -> None:
        """The current line is done; `blank`: and an empty line follows, once."""
        text = "".join(self.line)
        self.line = []
        if self.pre:
            self.lines.append(text)
        elif text.strip():
            self.lines.append(text.strip())
        if blank and self.lines and self.lines[-1]:
            self.lines.append("")

    def result(self) -> str:
        while self.tables:
            self._end_cell()
            self.in_cell = False
            self.lines.extend(_aligned(self.tables.pop()))
        self.end_line()
        return "\n".join(self.lines).strip("\n")


def _aligned(rows: list[list[str]]) -> list[str]:
    """A table's rows as lines, its columns padded to one width."""
    rows = [row for row in rows if any(row)]
    widths: list[int] = []
    for row in rows:
        for index, cell in enumerate(row):
            if index == len(widths):
                widths.append(0)
            widths[index] = max(widths[index], len(cell))
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
            for row in rows]


def _unescape(text: str) -> str:
    """Character references decoded; `html` is loaded only for text that has one."""
    if "&" not in text:
        return text
    import html

    return html.unescape(text)
