"""The worker's turns of the cells' asyncio loop between cells (`worker.between`), on a real
loop: a task's SystemExit is reported and costs nothing else, whatever came due with it."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator

import pytest

from pyrelune.worker.between import _run_a_while


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    made = asyncio.new_event_loop()
    yield made
    made.close()


def test_a_tasks_systemexit_due_with_the_turns_end_leaves_the_next_turn_whole(
        loop: asyncio.AbstractEventLoop, capsys: pytest.CaptureFixture[str]) -> None:
    """The task wakes just before the turn's timer, both due in one pass of the loop (the
    thread was held past both). With `run_until_complete` the completion the timer scheduled
    was left behind by the SystemExit, and stopped the next turn before its own future was
    done: a RuntimeError that ended the worker between cells, and what it printed with it."""
    async def leave() -> None:
        await asyncio.sleep(0.03)
        raise SystemExit(3)

    read, write = os.pipe()
    try:
        task = loop.create_task(leave())
        _run_a_while(loop, read, 0.0)  # the task's first step: it sleeps
        loop.call_soon(time.sleep, 0.1)  # the next turn's first callback holds the thread
        _run_a_while(loop, read, 0.05)  # its timer comes due just after the task's wake-up
        _run_a_while(loop, read, 0.01)
        _run_a_while(loop, read, 0.01)
    finally:
        os.close(read)
        os.close(write)
    assert task.done() and isinstance(task.exception(), SystemExit)
    reported = capsys.readouterr().err
    assert reported.count("a task raised this between cells; the kernel goes on:") == 1
    assert "SystemExit: 3" in reported


def test_a_turn_ends_when_the_descriptor_is_readable(loop: asyncio.AbstractEventLoop) -> None:
    read, write = os.pipe()
    try:
        os.write(write, b"x")
        ticks: list[float] = []

        def tick() -> None:
            ticks.append(loop.time())
            loop.call_later(0.01, tick)

        loop.call_soon(tick)
        _run_a_while(loop, read, 3600.0)  # returns at once: a command is waiting
        assert len(ticks) == 1
    finally:
        os.close(read)
        os.close(write)
