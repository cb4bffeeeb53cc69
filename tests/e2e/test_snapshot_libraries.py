"""The libraries notebooks use, after the kernel resumed from a snapshot (a fork).

For each: a cell uses the library, the kernel forks that cell's snapshot (`kept`), a cell
segfaults, and the next cell uses the library again. Either it works (the values are
intact and the library answers right) or the lost cell's error says what was not kept and
using it fails at once with an error, never waits: every check cell is bounded (a result's
`timeout`, the hosts' read limits, the test's own limit).

- numpy: OpenBLAS's threads ran the matmul before the fork (its fork handler stops them),
  and the matmul after it is right;
- pandas: a DataFrame and a groupby;
- sqlite3: the connection's file was released (the error names it), the connection fails
  with sqlite3's error, a new connection reads what was committed;
- ThreadPoolExecutor: its threads are gone; it starts new ones at the next submit, and the
  task one was running fails instead of never finishing;
- ProcessPoolExecutor and multiprocessing's Pool: their processes died with the worker:
  the pool is broken (or closed) and says so at once, a result it owed fails, and a new
  pool works;
- joblib, and scikit-learn (long): parallel calls, a fit and a cross-validation on loky's
  worker processes, which died with the worker: joblib starts new ones;
- matplotlib (Jupyter): a figure kept open draws and displays again in the inline backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from support import jupyter_host
from support.jupyter_host import Kernel, execute
from support.lines_host import Host as LinesHost
from support.processes import kept

from pyrelune.wire.events import RESUMED

SEGFAULT = "import ctypes\nctypes.string_at(0)"
#: Each test's limit: a restore that left something waiting for ever fails, never holds.
LIMIT = 240


@dataclass(frozen=True)
class Library:
    """A library's cells: `setup` before the loss, `check` after it, which prints `seen`;
    the lost cell's error says each of `said`. `{db}` is a file of the test's."""

    setup: str
    check: str
    seen: str
    said: tuple[str, ...] = ()

    def filled(self, db: Path) -> Library:
        return Library(self.setup.format(db=str(db)), self.check.format(db=str(db)),
                       self.seen.format(db=str(db)),
                       tuple(words.format(db=str(db)) for words in self.said))


LIBRARIES = {
    "numpy": Library(
        "import numpy as np\nm = np.random.default_rng(0).random((1000, 1000))\np = m @ m",
        "q = m @ m\nprint(bool(np.allclose(p, q)), q.shape)",
        "True (1000, 1000)\n"),
    "pandas": Library(
        "import pandas as pd\ndf = pd.DataFrame({{'k': list('abcab'), 'v': range(5)}})\n"
        "sums = df.groupby('k').v.sum().to_dict()",
        "print(df.groupby('k').v.sum().to_dict() == sums, sums, len(df.merge(df, on='k')))",
        "True {{'a': 3, 'b': 5, 'c': 2}} 9\n"),
    "sqlite3": Library(
        "import sqlite3\ncon = sqlite3.connect({db!r})\ncon.execute('create table t (x)')\n"
        "con.execute('insert into t values (42)')\ncon.commit()",
        "try:\n    con.execute('select x from t').fetchall()\nexcept sqlite3.Error as error:\n"
        "    print(type(error).__name__)\n"
        "print(sqlite3.connect({db!r}).execute('select x from t').fetchall())",
        "OperationalError\n[(42,)]\n",
        ("descriptors were released, as if closed: {db}",)),
    "ThreadPoolExecutor": Library(
        "import time\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "pool = ThreadPoolExecutor(2)\nsquares = list(pool.map(pow, range(4), [2] * 4))\n"
        "sleeping = pool.submit(time.sleep, 600)",
        "print(pool.submit(pow, 2, 10).result(timeout=30), list(pool.map(pow, [3], [2], "
        "timeout=30)), squares)\ntry:\n    sleeping.result(timeout=30)\n"
        "except RuntimeError as error:\n    print('lost:', str(error).startswith("
        f"{RESUMED!r}))",
        "1024 [9] [0, 1, 4, 9]\nlost: True\n",
        ("threads are not restored", "a ThreadPoolExecutor starts new threads at its next "
         "submit (a task one was running then fails)")),
    "ProcessPoolExecutor": Library(
        "from concurrent.futures import ProcessPoolExecutor\n"
        "processes = ProcessPoolExecutor(2)\nprint(processes.submit(pow, 2, 3).result())",
        "from concurrent.futures.process import BrokenProcessPool\ntry:\n"
        "    processes.submit(pow, 2, 4)\nexcept BrokenProcessPool as error:\n"
        f"    print('broken:', str(error).startswith({RESUMED!r}))\nprocesses.shutdown()\n"
        "with ProcessPoolExecutor(2) as fresh:\n    print(fresh.submit(pow, 2, 5).result(30))",
        "broken: True\n32\n",
        ("a ProcessPoolExecutor is broken (its processes died with the worker)",)),
    "multiprocessing.Pool": Library(
        "import multiprocessing, time\nworkers = multiprocessing.Pool(2)\n"
        "print(workers.apply(pow, (2, 3)))\nowed = workers.apply_async(time.sleep, (600,))\n"
        "items = workers.imap(time.sleep, [600])",
        "for call in (lambda: workers.apply(pow, (2, 4)), lambda: workers.map(abs, [1])):\n"
        "    try:\n        call()\n    except ValueError as error:\n        print(error)\n"
        "for waiting in (owed.get, items.next):  # owed when the snapshot was taken\n"
        "    try:\n        waiting(30)\n    except RuntimeError as error:\n"
        f"        print('lost:', str(error).startswith({RESUMED!r}))\n"
        "with multiprocessing.Pool(2) as fresh:\n"
        "    print(fresh.apply_async(pow, (2, 5)).get(30))",
        "Pool not running\nPool not running\nlost: True\nlost: True\n32\n",
        ("a multiprocessing Pool is closed", "a result it owed fails")),
    "joblib": Library(
        "import joblib\nsquares = joblib.Parallel(n_jobs=2)(joblib.delayed(pow)(n, 2) "
        "for n in range(4))",
        "print(joblib.Parallel(n_jobs=2)(joblib.delayed(pow)(n, 3) for n in range(4)), "
        "squares)",
        "[0, 1, 8, 27] [0, 1, 4, 9]\n",
        ("joblib starts new worker processes (loky) at its next parallel call",)),
}
#: Its fit and cross-validation start loky's processes: seconds each, for the full run.
SKLEARN = Library(
    "import os\nimport joblib\nfrom sklearn.datasets import make_classification\n"
    "from sklearn.linear_model import LogisticRegression\n"
    "from sklearn.model_selection import GridSearchCV, cross_val_score\n"
    "X, y = make_classification(300, random_state=0)\n"
    "model = GridSearchCV(LogisticRegression(), {{'C': [0.1, 1.0]}}, n_jobs=2).fit(X, y)\n"
    "scores = cross_val_score(LogisticRegression(), X, y, cv=3, n_jobs=2)\n"
    "workers = set(joblib.Parallel(n_jobs=2)(joblib.delayed(os.getpid)() for _ in range(8)))",
    "again = GridSearchCV(LogisticRegression(), {{'C': [0.1, 1.0]}}, n_jobs=2).fit(X, y)\n"
    "print(again.best_params_ == model.best_params_, "
    "bool((cross_val_score(LogisticRegression(), X, y, cv=3, n_jobs=2) == scores).all()), "
    "os.getpid() not in workers)",
    "True True True\n",
    ("joblib starts new worker processes (loky) at its next parallel call",))


def _all_libraries() -> list[object]:
    return [*LIBRARIES, pytest.param("scikit-learn", marks=pytest.mark.long)]


def _library(name: str, tmp_path: Path) -> Library:
    if name == "scikit-learn":
        pytest.importorskip("sklearn")
        return SKLEARN.filled(tmp_path / "kept.db")
    return LIBRARIES[name].filled(tmp_path / "kept.db")


# -- the lines kernel -----------------------------------------------------------


@pytest.mark.timeout(LIMIT)
@pytest.mark.parametrize("name", _all_libraries())
def test_lines_a_library_after_a_restore(lines_kernel: LinesHost, tmp_path: Path,
                                         name: str) -> None:
    library = _library(name, tmp_path)
    setup = kept(lines_kernel.proc.pid, lambda: lines_kernel.execute(library.setup), "cell 1")
    assert setup["error"] is None, setup
    lost = lines_kernel.execute(SEGFAULT)
    assert RESUMED in lost["error"] and "the one cell 1 left" in lost["error"], lost
    for words in library.said:
        assert words in lost["error"], lost["error"]
    after = lines_kernel.execute(library.check)  # its read is bounded: a hang fails
    assert (after["stdout"], after["error"]) == (library.seen, None), after
    assert "Warning" not in after["stderr"], after["stderr"]


# -- the Jupyter kernel ---------------------------------------------------------

#: A check cell's limit in the Jupyter kernel: what it waits for is bounded more tightly.
CELL_LIMIT = 120.0


kernel, client = jupyter_host.module_kernel()


def _restored(kernel: Kernel, client: BlockingKernelClient, setup: str) -> str:
    """The lost cell's error, after `setup` ran and its snapshot was kept."""
    ran = kept(jupyter_host.pid(kernel[0]), lambda: execute(client, setup), jupyter_host.held)
    assert ran.content["status"] == "ok", ran.content
    lost = execute(client, SEGFAULT)
    assert lost.content["ename"] == "WorkerDied", lost.content
    evalue = str(lost.content["evalue"])
    assert RESUMED in evalue and f"In [{ran.content['execution_count']}] left" in evalue
    return evalue


@pytest.mark.timeout(LIMIT)
@pytest.mark.parametrize("name", _all_libraries())
def test_jupyter_a_library_after_a_restore(kernel: Kernel, client: BlockingKernelClient,
                                           tmp_path: Path, name: str) -> None:
    library = _library(name, tmp_path)
    evalue = _restored(kernel, client, library.setup)
    for words in library.said:
        assert words in evalue, evalue
    after = execute(client, library.check, timeout=CELL_LIMIT)
    assert after.content["status"] == "ok", after.content
    assert after.stdout() == library.seen
    assert "Warning" not in after.stdout("stderr")


@pytest.mark.timeout(LIMIT)
def test_jupyter_an_open_figure_draws_after_a_restore(kernel: Kernel,
                                                      client: BlockingKernelClient) -> None:
    """matplotlib's inline backend: a figure the snapshot holds (shown at the end of its
    cell, and kept in the namespace) draws again and displays, and so does a new one."""
    pytest.importorskip("matplotlib")
    _restored(kernel, client, "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
              "ax.plot([1, 2, 3]);")
    shown = execute(client, "ax.plot([3, 2, 1])\nfig", timeout=CELL_LIMIT)
    assert shown.content["status"] == "ok", shown.content
    assert "image/png" in shown.of("execute_result")[0]["data"], shown.kinds
    drawn = execute(client, "plt.plot([1, 4, 9])\nplt.title('again');", timeout=CELL_LIMIT)
    assert [d for d in drawn.of("display_data") if "image/png" in d["data"]], drawn.kinds
    assert execute(client, "print(len(ax.lines))").stdout() == "2\n"
