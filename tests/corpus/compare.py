"""Run the corpus under ipykernel and under pyrelune, and say where a cell differs.

"Behaves the same", for one cell in one mode, means all of these hold after
normalization (below):

- stdout and stderr: the same text. ipykernel's is its stream messages
  (and the pager's text, for `obj?`); what a notebook finally shows, so
  `clear_output` and display updates are applied first, as a notebook
  applies them. For the lines kernel, whose protocol sends displays as text
  lines in stdout, the expected stdout has each display's text/plain in its
  place.
- the displays (`display()`, the final expression, figures): as many, in
  order, and each one the same: a text output has the bundle's text/plain
  (or, for an object whose text/plain is only a default `<... object>`
  repr, the HTML's text stands in); an image, HTML, JSON or other rich
  output is of a kind the bundle has (JSON: the same value). This is what
  each host can show: oneshot one form per output, rpc one item.
- the error: none in both, or the same `Type: message` line.

Normalization, on both sides: ANSI control sequences taken out, `\\r` and
`\\b` applied as a terminal applies them, memory addresses, cell file names
(`/tmp/ipykernel_1/2.py`, `<cell 3>`, `<In[3]>`), the notebook's folder, timings
(`%time`, `%timeit`, tqdm's rates) replaced by placeholders, IPython's
warnings about itself (a missing optional package) and trailing whitespace
dropped.
"""

from __future__ import annotations

import html
import itertools
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from support.modes import Seen, runner

from corpus.cells import Cell, Notebook

_T = TypeVar("_T")

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jupyter_client.blocking.client import BlockingKernelClient

# Normalization ---------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
_CELL_FILE = re.compile(r"/tmp/(?:ipykernel|pyrelune)_\d+/\d+\.py|<cell[^>]*>|\"<cell[^\"]*\""
                        r"|<In\[\d+\][^>]*>")
_TIMINGS = (
    (re.compile(r"CPU times: user [^\n]*"), "<cpu times>"),
    (re.compile(r"Wall time: [^\n]*"), "<wall time>"),
    # a duration is written `%.3g`: 999.7 μs as `1e+03 μs`
    (re.compile(r"[\d.]+(?:e\+03)? \S+ ± [\d.]+(?:e\+03)? \S+ per loop "
                r"\(mean ± std\. dev\. of [^)]*\)"), "<timeit>"),
    (re.compile(r"The slowest run took [^\n]*\n?"), ""),
    (re.compile(r"\[\d\d:\d\d<[^\]]*\]"), "[<elapsed>]"),
    # IPython's own warnings about itself (IPython 8 on 3.10: %cd wants `pickleshare`)
    (re.compile(r"[^\n]*/IPython/[^\n]*: \w*Warning: [^\n]*(?:\n  [^\n]*)?\n?"), ""),
)


def render(text: str) -> str:
    """`text` as a terminal leaves it: each `\\r` returns to the line's start, `\\b` steps back."""
    lines = []
    for line in text.split("\n"):
        screen: list[str] = []
        column = 0
        for char in line:
            if char == "\r":
                column = 0
            elif char == "\b":
                column = max(column - 1, 0)
            else:
                if column < len(screen):
                    screen[column] = char
                else:
                    screen.append(char)
                column += 1
        lines.append("".join(screen))
    return "\n".join(lines)


def normalize(text: str, root: str) -> str:
    """What two runs of the same cell share, whichever runtime ran it (see the module).

    Each run has a folder of its own in `root`: any of them is `<folder>`.
    """
    text = render(_ANSI.sub("", text))
    text = _ADDRESS.sub("0x?", text)
    text = _CELL_FILE.sub("<cell>", text)
    text = re.sub(re.escape(root) + r"/[^/\s'\"]+", "<folder>", text)
    for pattern, placeholder in _TIMINGS:
        text = pattern.sub(placeholder, text)
    return "\n".join(line.rstrip() for line in text.split("\n")).rstrip()


# ipykernel's side --------------------------------------------------------------------


@dataclass
class Expected:
    """One cell as a notebook shows it after ipykernel ran it."""

    outputs: list[dict[str, Any]] = field(default_factory=list)  # streams and displays, in order
    error: tuple[str, str] | None = None
    _clear_pending: bool = False

    def hook(self, message: dict[str, Any]) -> None:
        """Apply one iopub message as a notebook frontend does."""
        kind, content = message["msg_type"], message["content"]
        if kind in ("stream", "display_data", "execute_result", "error") and self._clear_pending:
            self.outputs.clear()
            self._clear_pending = False
        if kind == "stream":
            self.stream(content["name"], content["text"])
        elif kind in ("display_data", "execute_result"):
            display_id = content.get("transient", {}).get("display_id")
            self.outputs.append({"kind": "display", "data": content["data"], "id": display_id})
        elif kind == "update_display_data":
            for output in self.outputs:
                if output.get("id") == content["transient"]["display_id"]:
                    output["data"] = content["data"]
        elif kind == "clear_output":
            if content.get("wait"):
                self._clear_pending = True
            else:
                self.outputs.clear()
        elif kind == "error":
            self.error = (content["ename"], content["evalue"])

    def stream(self, name: str, text: str) -> None:
        last = self.outputs[-1] if self.outputs else None
        if last is not None and last["kind"] == "stream" and last["name"] == name:
            last["text"] += text
        else:
            self.outputs.append({"kind": "stream", "name": name, "text": text})

    def text(self, name: str) -> str:
        return "".join(o["text"] for o in self.outputs
                       if o["kind"] == "stream" and o["name"] == name)

    def lines_stdout(self) -> list[list[str]]:
        """stdout as the lines protocol carries it, each display's text on a line.

        One list of the texts that may stand there per part: a display's
        text/plain, and what may stand in for it (see `stand_ins`).
        """
        parts = []
        for o in self.outputs:
            if o["kind"] == "stream" and o["name"] == "stdout":
                parts.append([o["text"]])
            elif o["kind"] == "display":
                bundle = o["data"]
                texts = [bundle.get("text/plain", ""), *stand_ins(bundle)]
                parts.append([f"{text}\n" for text in texts])
        return parts

    def shown(self, mode: str) -> tuple[str, list[dict[str, Any]]]:
        """stdout and the displays, as `mode` carries them.

        A oneshot response has one `stdout` string for what was printed
        before the first display; what is printed after it comes as text
        outputs in its place among the displays (see protocols/vixnote.py).
        """
        stdout, bundles = [], []
        printed: dict[str, Any] | None = None  # the text output stdout goes on in
        for o in self.outputs:
            if o["kind"] == "display":
                bundles.append(o["data"])
            elif o["name"] != "stdout":
                continue
            elif mode != "oneshot" or not bundles:
                stdout.append(o["text"])
            elif printed is not None and printed is bundles[-1]:
                printed["text/plain"] += o["text"]
            else:
                printed = {"text/plain": o["text"]}
                bundles.append(printed)
        return "".join(stdout), bundles


def run_in_ipykernel(book: Notebook, folder: Path) -> dict[str, Expected]:
    """Each cell of `book` run in one fresh ipykernel started in `folder`."""
    from jupyter_client.manager import KernelManager
    from support.jupyter_host import ready

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYRELUNE_")}

    def start(errors: IO[bytes]) -> tuple[KernelManager, BlockingKernelClient]:
        manager = KernelManager(kernel_name="python3")
        manager.start_kernel(cwd=str(folder), env=env, stderr=errors)
        client = manager.blocking_client()
        client.start_channels()
        return manager, client

    results: dict[str, Expected] = {}
    with ready(start, folder.parent / f"{folder.name}-stderr", 120, now=True) as (_, client):
        for cell in book.cells:
            expected = Expected()
            reply = client.execute_interactive(cell.source, output_hook=expected.hook,
                                               timeout=120, stop_on_error=False,
                                               allow_stdin=False)
            for payload in reply["content"].get("payload", []):
                if payload.get("source") == "page":  # `obj?`: IPython's pager
                    expected.stream("stdout", payload["data"].get("text/plain", ""))
            results[cell.name] = expected
    return results


# pyrelune's side and the comparison --------------------------------------------------


def run_in_pyrelune(mode: str, book: Notebook, folder: Path) -> dict[str, Seen]:
    """`book` run in `mode` (oneshot: its cells that run alone), from `folder`."""
    with runner(mode, cwd=folder) as run:
        return {cell.name: run(cell.source) for cell in book.cells
                if mode != "oneshot" or cell.alone}


_DEFAULT_REPR = re.compile(r"<[\w.]+(?: object)?(?: at 0x\?)?>")


def stand_ins(bundle: dict[str, Any]) -> list[str]:
    """Texts that may stand for a richer form that a default `<... object>` text/plain hides.

    Markdown and LaTeX as their source, JSON as its text, HTML as its text
    with the tags dropped.
    """
    if not _DEFAULT_REPR.fullmatch(_ADDRESS.sub("0x?", bundle.get("text/plain", ""))):
        return []
    texts = [bundle[m] for m in ("text/markdown", "text/latex") if m in bundle]
    if "application/json" in bundle:
        texts.append(json.dumps(bundle["application/json"]))
    if "text/html" in bundle:
        texts.append(html.unescape(re.sub(r"<[^>]*>", "", bundle["text/html"])))
    return texts


def _text_matches(text: str, bundle: dict[str, Any], norm: Callable[[str], str]) -> bool:
    """The text is the bundle's text/plain, or stands in for it (`stand_ins`; HTML: any text)."""
    if norm(text) == norm(bundle.get("text/plain", "")):
        return True
    others = stand_ins(bundle)
    return bool(others) and ("text/html" in bundle or norm(text) in map(norm, others))


def _chosen(seen: str, parts: list[list[str]], norm: Callable[[str], str]) -> str:
    """The expected text: of the ways to take one text per part, the one `seen` is, else the first.

    Few displays have stand-ins, so the ways are few (at most 256 are tried).
    """
    ways = itertools.islice(itertools.product(*parts), 256)
    first = None
    for way in ways:
        text = "".join(way)
        first = text if first is None else first
        if norm(text) == seen:
            return text
    return first or ""


def display_difference(shown: Any, bundle: dict[str, Any],
                       norm: Callable[[str], str]) -> str | None:
    """Why one shown output is not the bundle ipykernel gave, or None when it is."""
    kinds = sorted(bundle)
    if isinstance(shown, str):  # rpc's text item
        shown = {"mime": "text/plain", "data": shown}
    if isinstance(shown, list):  # rpc's JSONML table: its own form of frames and arrays
        return None
    if "kind" in shown:  # rpc's other items
        kind = shown["kind"]
        if kind in ("image", "plot"):
            return None if any(k.startswith("image/") for k in bundle) else f"an image for {kinds}"
        if kind == "html":
            return None if "text/html" in bundle else f"HTML for {kinds}"
        return f"an item of kind {kind!r} for {kinds}"
    mime, data = shown["mime"], shown["data"]
    if mime == "text/plain":
        if _text_matches(data, bundle, norm):
            return None
        return f"text {norm(data)!r:.300} for {norm(bundle.get('text/plain', ''))!r:.300}"
    if mime.startswith("image/"):
        return None if any(k.startswith("image/") for k in bundle) else f"{mime} for {kinds}"
    if mime == "application/json" or mime.endswith("+json"):
        value = json.loads(data) if isinstance(data, str) else data  # oneshot sends JSON text
        same = mime in bundle and json.dumps(bundle[mime], sort_keys=True) == json.dumps(
            value, sort_keys=True)
        return None if same else f"JSON {data!r:.200} for {bundle.get(mime)!r:.200}"
    return None if mime in bundle else f"{mime} for {kinds}"


def _error_line(mode: str, error: str) -> str:
    if mode == "lines":  # the traceback: its last line says what was raised
        return error.rstrip().split("\n")[-1]
    return re.sub(r" \(line \d+(?:, column \d+)?\)$", "", error.split("\n", 1)[0])


def differences(mode: str, expected: Expected, seen: Seen, root: Path) -> list[str]:
    """How `seen` differs from what ipykernel gave (see the module); empty when the same.

    `root` holds the folders both ran in.
    """
    def norm(text: str) -> str:
        return normalize(text, str(root))

    found = []
    want_out, bundles = expected.shown(mode)
    if mode == "lines":
        want_out = _chosen(norm(seen.stdout), expected.lines_stdout(), norm)
    if norm(seen.stdout) != norm(want_out):
        found.append(f"stdout {norm(seen.stdout)!r:.400} for {norm(want_out)!r:.400}")
    if norm(seen.stderr) != norm(expected.text("stderr")):
        found.append(f"stderr {norm(seen.stderr)!r:.400} "
                     f"for {norm(expected.text('stderr'))!r:.400}")
    if mode != "lines":
        if len(seen.displays) != len(bundles):
            found.append(f"{len(seen.displays)} displays for {len(bundles)}: "
                         f"{[sorted(b) for b in bundles]}")
        else:
            for n, (shown, bundle) in enumerate(zip(seen.displays, bundles, strict=True)):
                why = display_difference(shown, bundle, norm)
                if why is not None:
                    found.append(f"display {n + 1}: {why}")
    want_error = None
    if expected.error is not None:
        summary = f"{expected.error[0]}: {expected.error[1]}".rstrip()
        want_error = summary.split("\n")[-1 if mode == "lines" else 0]
    got_error = None if seen.error is None else _error_line(mode, seen.error)
    if (got_error is None) != (want_error is None) or (
            got_error is not None and want_error is not None
            and norm(got_error) != norm(want_error)):
        found.append(f"error {got_error!r:.300} for {want_error!r:.300}")
    return found


class Runs:
    """Each notebook run once per runtime, on first need, each run in a fresh folder.

    A run that failed (an ipykernel that timed out on a busy machine) fails every cell that
    needs it with the same error, not a second run: asking again is idempotent.
    """

    def __init__(self, root: Path | None = None) -> None:
        self.root = (Path(tempfile.mkdtemp(prefix="corpus-")) if root is None else root).resolve()
        self._expected: dict[str, dict[str, Expected] | Exception] = {}
        self._seen: dict[tuple[str, str], dict[str, Seen] | Exception] = {}

    def _folder(self, label: str) -> Path:
        """A folder of its own for one run (`normalize` makes any of them `<folder>`)."""
        return Path(tempfile.mkdtemp(prefix=f"{label}-", dir=self.root))

    def expected(self, book: Notebook) -> dict[str, Expected]:
        if book.name not in self._expected:
            self._expected[book.name] = attempt(
                lambda: run_in_ipykernel(book, self._folder(f"ipykernel-{book.name}")))
        return outcome_of(self._expected[book.name])

    def differences(self, mode: str, book: Notebook, cell: Cell) -> list[str]:
        """How `cell` differs in `mode` from ipykernel (see `differences`)."""
        expected = self.expected(book)[cell.name]
        key = (mode, book.name)
        if key not in self._seen:
            self._seen[key] = attempt(
                lambda: run_in_pyrelune(mode, book, self._folder(f"{mode}-{book.name}")))
        seen = outcome_of(self._seen[key])
        return differences(mode, expected, seen[cell.name], self.root)


def attempt(run: Callable[[], _T]) -> _T | Exception:
    """What `run` returned, or the exception it raised (kept to raise again)."""
    try:
        return run()
    except Exception as error:
        return error


def outcome_of(outcome: _T | Exception) -> _T:
    """What `attempt` kept: the value, or its exception raised (again) as this test's failure."""
    if isinstance(outcome, Exception):
        raise AssertionError(f"the notebook's run failed: {outcome!r}") from outcome
    return outcome
