"""Cells behave as in a Jupyter notebook: the `__main__` module, `_`, warnings, the current
directory, one asyncio loop, `help()`. Each in every mode it applies to, through its host."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from support.lines_host import Host as LinesHost
from support.lines_host import default_env, wait_for
from support.rpc_host import PipeHost
from support.vixhost import VixHost


class Outcome(NamedTuple):
    """What one cell showed, the same way for both kernels."""

    out: str  # stdout, then the final expression's text
    err: str
    error: str | None  # the error's text (lines) or its name and message (rpc)


class Kernel:
    """A lines or rpc kernel, driven one cell at a time."""

    def __init__(self, mode: str, cwd: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.mode = mode
        if mode == "lines":
            self.lines = LinesHost(None, default_env(**(env or {})), cwd)
            self.lines.ping()
        else:
            self.rpc = PipeHost(cwd=cwd, env=env)
            assert self.rpc.receive()["event"] == "kernel.ready"
        self.cells = 0

    def run(self, source: str) -> Outcome:
        if self.mode == "lines":
            response = self.lines.execute(source)
            return Outcome(response["stdout"], response["stderr"], response["error"])
        self.cells += 1
        events = self.rpc.run(source, cell_id=f"c{self.cells}")
        return self._outcome(events)

    def _outcome(self, events: list[dict[str, Any]]) -> Outcome:
        out: list[str] = []
        err: list[str] = []
        for event in events:
            data = event["data"]
            if event["event"] == "stream":
                (out if data["name"] == "stdout" else err).append(data["text"])
            elif event["event"] == "display_data":
                out.append(f"{data['item']}\n")
            assert event["event"] != "input_request", events
        done = events[-1]["data"]
        error = None if done["status"] == "ok" else f"{done['ename']}: {done['evalue']}"
        return Outcome("".join(out), "".join(err), error)

    def value(self, source: str) -> str:
        """The text of `source`'s final expression, which must not fail."""
        outcome = self.run(source)
        assert outcome.error is None, outcome
        return outcome.out.rstrip("\n")

    def reset(self) -> None:
        if self.mode == "lines":
            assert self.lines.request("restart")["error"] is None
        else:
            assert self.rpc.call("kernel.reset", {})["result"] == {"ok": True}

    def interrupt_when(self, marker: Path, source: str) -> Outcome:
        """Run `source`, interrupt it once `marker` exists, as each host does."""
        if self.mode == "lines":
            response = self.lines.interrupt_when(marker, self.lines.send("execute", source))
            return Outcome(response["stdout"], response["stderr"], response["error"])
        self.cells += 1
        self.rpc.call("execute.cell", {"cell_id": f"c{self.cells}", "source": source})
        wait_for(marker.exists, "the cell to start")
        assert self.rpc.call("execute.interrupt", {})["result"]["ok"]
        return self._outcome(self.rpc.until_done())

    def close(self) -> None:
        if self.mode == "lines":
            self.lines.close()
        else:
            self.rpc.close()


@pytest.fixture(params=["lines", "rpc"])
def kernel(request: pytest.FixtureRequest) -> Iterator[Kernel]:
    kernel = Kernel(request.param)
    try:
        yield kernel
    finally:
        kernel.close()


@pytest.fixture
def start_kernel() -> Iterator[Callable[..., Kernel]]:
    started: list[Kernel] = []

    def start(mode: str, **options: Any) -> Kernel:
        started.append(Kernel(mode, **options))
        return started[-1]

    yield start
    for kernel in started:
        kernel.close()


# The cells' namespace is a real `__main__` module: what they define pickles, and is found

POINT = "class Point:\n    def __init__(self, x):\n        self.x = x\n"
SQUARE = "def square(n):\n    return n * n\n"
IN_MAIN = {
    "pickle": (POINT + "import pickle\nprint(pickle.loads(pickle.dumps(Point(7))).x)", "7"),
    "multiprocessing": (SQUARE + "from multiprocessing import Pool\n"
                        "with Pool(2) as pool:\n    print(pool.map(square, [1, 2, 3]))",
                        "[1, 4, 9]"),
    "futures": (SQUARE + "from concurrent.futures import ProcessPoolExecutor\n"
                "with ProcessPoolExecutor(2) as pool:\n"
                "    print(list(pool.map(square, [1, 2, 3])))",
                "[1, 4, 9]"),
    "main": ("import sys\nprint(sys.modules['__main__'].__dict__ is globals())", "True"),
    "type-hints": ("class Edge:\n    end: 'Node'\nclass Node:\n    pass\n"
                   "import typing\nprint(typing.get_type_hints(Edge))",
                   "{'end': <class '__main__.Node'>}"),
}


@pytest.mark.parametrize("case", sorted(IN_MAIN))
def test_what_a_oneshot_cell_defines_is_found_in_main(host: VixHost, case: str) -> None:
    source, printed = IN_MAIN[case]
    result = host.run_cell(source)
    assert result.ok, result
    assert result.response["stdout"] == f"{printed}\n"


@pytest.mark.parametrize("case", sorted(IN_MAIN))
def test_what_a_kernel_cell_defines_is_found_in_main(kernel: Kernel, case: str) -> None:
    source, printed = IN_MAIN[case]
    assert kernel.run(source) == (f"{printed}\n", "", None)


def test_joblib_runs_a_cell_function(kernel: Kernel) -> None:
    """joblib's own pickler sends `__main__`'s functions by value: a guard that it still works."""
    pytest.importorskip("joblib")
    kernel.run(SQUARE)
    assert kernel.value("from joblib import Parallel, delayed\n"
                        "Parallel(n_jobs=2)(delayed(square)(n) for n in [1, 2, 3])") == "[1, 4, 9]"


def test_a_reset_gives_a_fresh_main_module(kernel: Kernel) -> None:
    kernel.run("import sys\nold = sys.modules['__main__']\nleftover = 1\n" + POINT)
    kernel.reset()
    fresh = "import sys\nsorted(k for k in vars(sys.modules['__main__']) if not k.startswith('__'))"
    assert kernel.value(fresh) == "['sys']"
    kernel.run(POINT)  # defined anew, and found in the new module
    assert kernel.value("import pickle\npickle.loads(pickle.dumps(Point(3))).x") == "3"


# `_` is the user's once assigned -----------------------------------------------------------


def test_an_assigned_underscore_is_kept(kernel: Kernel) -> None:
    kernel.run("_ = 42")
    assert kernel.value("1 + 1") == "2"
    assert kernel.value("_") == "42"
    kernel.run("del _")
    kernel.value("3")
    assert kernel.value("_") == "3"  # ours again once the user let it go


def test_underscores_keep_the_last_three_results(kernel: Kernel) -> None:
    for n in ("1", "2", "3"):
        kernel.value(n)
    assert kernel.value("_, __, ___") == "(3, 2, 1)"
    assert kernel.value("___") == "2"  # the tuple above is `_` now


def test_gettext_installed_first_keeps_its_underscore(kernel: Kernel) -> None:
    kernel.run("import gettext\ngettext.install('nothing-installed-here')")
    assert kernel.value("_('hello')") == "'hello'"
    assert kernel.value("_('again')") == "'again'"


def test_gettext_keeps_its_underscore(kernel: Kernel) -> None:
    assert kernel.value("6 * 7") == "42"
    kernel.run("import gettext\ngettext.install('nothing-installed-here')")
    assert kernel.value("'after'") == "'after'"
    assert kernel.value("_('hello')") == "'hello'"


# Warnings: the cell's, and shown in each cell ---------------------------------------------


def test_a_coroutine_never_awaited_is_blamed_on_the_cell(kernel: Kernel) -> None:
    kernel.run("async def f():\n    pass")
    kernel.value("f()")
    outcomes = [kernel.run(n) for n in ("1", "2", "3")]  # the third pushes f() out of `___`
    warned = "".join(o.err for o in outcomes)
    assert "RuntimeWarning: coroutine 'f' was never awaited" in warned, outcomes
    assert "pyrelune" not in warned
    assert outcomes[2].err.startswith("<cell"), outcomes


def test_a_result_dropped_at_the_end_of_the_cell_warns_as_the_cell(kernel: Kernel) -> None:
    kernel.run("_ = 'mine'\nasync def f():\n    pass")
    outcome = kernel.run("f()")
    assert "coroutine 'f' was never awaited" in outcome.err, outcome
    assert outcome.err.startswith("<cell") and "pyrelune" not in outcome.err


def test_a_oneshot_result_dropped_warns_as_the_cell(host: VixHost) -> None:
    result = host.run_cell("_ = 'mine'\nasync def f():\n    pass\nf()")
    assert result.ok, result
    stderr = result.response["stderr"]
    assert stderr.startswith("<cell") and "coroutine 'f' was never awaited" in stderr, stderr
    assert "pyrelune" not in stderr


def test_a_warning_is_shown_in_each_cell_that_raises_it(kernel: Kernel) -> None:
    kernel.run("import warnings")
    for _ in range(2):
        assert "UserWarning: again" in kernel.run("warnings.warn('again')").err


# The kernel's current directory is importable ---------------------------------------------


@pytest.mark.parametrize("mode", ["lines", "rpc"])
def test_modules_beside_the_kernel_import(start_kernel: Callable[..., Kernel], tmp_path: Path,
                                          mode: str) -> None:
    (tmp_path / "beside.py").write_text("WHERE = 'beside'\n")
    (tmp_path / "later").mkdir()
    (tmp_path / "later" / "moved.py").write_text("WHERE = 'moved'\n")
    kernel = start_kernel(mode, cwd=tmp_path)
    assert kernel.value("import beside\nbeside.WHERE") == "'beside'"
    assert kernel.value("import sys\nsys.path[0]") == "''"  # not the console script's folder
    kernel.run("import os\nos.chdir('later')")
    assert kernel.value("import moved\nmoved.WHERE") == "'moved'"  # as in Jupyter


# One asyncio event loop per kernel --------------------------------------------------------

TICKER = (
    "import asyncio\nticks = 0\n"
    "async def tick():\n    global ticks\n    while True:\n"
    "        ticks += 1\n        await asyncio.sleep(0.001)\n"
)


def test_a_task_goes_on_when_a_later_cell_awaits(kernel: Kernel) -> None:
    kernel.run(TICKER + "task = asyncio.create_task(tick())\nawait asyncio.sleep(0)")
    assert kernel.value("seen = ticks\nawait asyncio.sleep(0.05)\nticks > seen") == "True"
    assert kernel.value("task.done()") == "False"


def test_a_future_scheduled_by_a_plain_cell_is_awaited_later(kernel: Kernel) -> None:
    kernel.run("import asyncio\nlater = asyncio.ensure_future(asyncio.sleep(0, 'later'))")
    assert kernel.value("await later") == "'later'"


def test_asyncio_run_and_await_live_together(kernel: Kernel) -> None:
    kernel.run(TICKER + "task = asyncio.create_task(tick())\nawait asyncio.sleep(0)")
    assert kernel.value("asyncio.run(asyncio.sleep(0, 'ran'))") == "'ran'"
    assert kernel.value("asyncio.get_event_loop() is task.get_loop()") == "True"
    assert kernel.value("seen = ticks\nawait asyncio.sleep(0.05)\nticks > seen") == "True"


def test_an_interrupt_stops_an_awaiting_cell_for_good(kernel: Kernel, tmp_path: Path) -> None:
    kernel.run("import asyncio\ngate = asyncio.Event()")
    marker = tmp_path / "started"
    source = (f"resumed = False\nopen({str(marker)!r}, 'w').close()\n"
              "await gate.wait()\nresumed = True")
    outcome = kernel.interrupt_when(marker, source)
    assert outcome.error is not None and "KeyboardInterrupt" in outcome.error, outcome
    # The gate opens: a cell left pending would now go on.
    awaits = "gate.set()\nfor _ in range(3):\n    await asyncio.sleep(0)\n'awaits again'"
    assert kernel.value(awaits) == "'awaits again'"
    assert kernel.value("resumed") == "False"


def test_a_reset_stops_the_tasks_of_before(kernel: Kernel) -> None:
    kernel.run("import asyncio, sys\nsys.ticks = []\nasync def tick():\n    try:\n"
               "        while True:\n            sys.ticks.append(1)\n"
               "            await asyncio.sleep(0)\n    finally:\n        sys.cancelled = True\n"
               "task = asyncio.create_task(tick())\nawait asyncio.sleep(0)")
    kernel.reset()
    awaits = "import asyncio, sys\nseen = len(sys.ticks)\nfor _ in range(3):\n" \
             "    await asyncio.sleep(0)\n(len(sys.ticks) - seen, sys.cancelled)"
    assert kernel.value(awaits) == "(0, True)"


def test_a_oneshot_cells_tasks_end_as_asyncio_run_ends_them(host: VixHost) -> None:
    result = host.run_cell("import asyncio\nasync def forever():\n    try:\n"
                           "        await asyncio.sleep(600)\n    finally:\n"
                           "        print('cancelled')\n"
                           "asyncio.ensure_future(forever())\nawait asyncio.sleep(0)")
    assert result.ok, result
    assert (result.response["stdout"], result.response["stderr"]) == ("cancelled\n", "")


def test_a_oneshot_cell_ends_its_loop_as_asyncio_run_does(host: VixHost) -> None:
    result = host.run_cell("async def numbers():\n    try:\n        yield 1\n"
                           "    finally:\n        print('finalized')\n"
                           "started = numbers()\nawait started.__anext__()")
    assert result.ok, result
    assert result.response["stdout"] == "finalized\n"


# help() prints into the cell ------------------------------------------------------------

PAGERS = {"PAGER": "less", "MANPAGER": "less", "TERM": "xterm-256color"}
HELP = "help(len)"
HELP_TEXT = "Help on built-in function len in module builtins:"


def test_help_prints_into_a_oneshot_cell(host: VixHost) -> None:
    result = host.run_cell(HELP, env=PAGERS)
    assert result.ok, result
    assert result.response["stdout"].startswith(HELP_TEXT)


@pytest.mark.parametrize("mode", ["lines", "rpc"])
def test_help_prints_into_a_kernel_cell(start_kernel: Callable[..., Kernel], mode: str) -> None:
    kernel = start_kernel(mode, env=PAGERS)
    outcome = kernel.run(HELP)  # an rpc prompt would fail `_outcome`
    assert outcome.out.startswith(HELP_TEXT) and outcome.error is None, outcome
    assert "Return the number of items in a container." in outcome.out

