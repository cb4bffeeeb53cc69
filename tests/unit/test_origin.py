"""Whose output it is: a thread, a task or an executor job goes with the cell that started it."""

from __future__ import annotations

import contextvars
import threading
import types
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pyrelune.wire.events import Stream
from pyrelune.worker import origin
from pyrelune.worker.origin import PIECE, Origins, cell


def in_cell(name: str | None, do: Callable[[], Any]) -> Any:
    """`do()` in a fresh context of the cell `name`, as a cell's code runs."""

    def run() -> Any:
        cell.set(name)
        return do()

    return contextvars.Context().run(run)


def test_only_another_cells_context_is_elsewhere() -> None:
    origins = Origins(print)
    origins.running = "two"
    assert [in_cell(name, origins.elsewhere) for name in ("one", "two", None)] == [
        "one", None, None]
    origins.end()  # no cell runs: every cell's context is another's
    assert in_cell("two", origins.elsewhere) == "two"


def test_text_goes_in_bounded_pieces_as_the_streams_would_write_it() -> None:
    sent: list[Stream] = []
    Origins(sent.append).write("stderr", "é" * (2 * PIECE + 10) + "\udc80", "one")
    assert [len(s.text) for s in sent] == [PIECE, PIECE, 10 + len("\\udc80")]
    assert {(s.name, s.origin) for s in sent} == {("stderr", "one")}
    assert "".join(s.text for s in sent) == "é" * (2 * PIECE + 10) + "\\udc80"
    Origins(sent.append).write("stdout", "", "one")
    assert len(sent) == 3  # nothing to send, nothing sent


def patched(**classes: type) -> Any:
    """A module with subclasses of `classes`, for the patches to change (not the real ones)."""
    module = types.ModuleType("patched")
    for name, kind in classes.items():
        setattr(module, name, type(name, (kind,), {}))
    return module


def test_a_thread_and_its_threads_go_with_the_cell_that_started_them() -> None:
    module = patched(Thread=threading.Thread)
    origin._threads_inherit(module)
    seen: list[str | None] = []

    def inner() -> None:
        seen.append(cell.get())

    def outer() -> None:
        seen.append(cell.get())
        child = module.Thread(target=inner)
        child.start()
        child.join()

    def start() -> Any:
        thread = module.Thread(target=outer)
        thread.start()
        return thread

    in_cell("one", start).join()
    assert seen == ["one", "one"]
    unnamed = module.Thread(target=inner)
    unnamed.start()  # started by no cell: it has none
    unnamed.join()
    assert seen[-1] is None and "run" not in vars(unnamed)


def test_an_executor_job_goes_with_its_submitter_whoever_started_the_pool() -> None:
    module = patched(ThreadPoolExecutor=ThreadPoolExecutor)
    origin._jobs_inherit(module)
    with module.ThreadPoolExecutor(1) as pool:
        in_cell("zero", lambda: pool.submit(int).result())  # the pool's thread starts
        assert in_cell("one", lambda: pool.submit(cell.get).result()) == "one"
        assert in_cell("one", lambda: list(pool.map(lambda n: (n, cell.get()), [1]))) == [
            (1, "one")]
        assert pool.submit(cell.get).result() is None  # of no cell
