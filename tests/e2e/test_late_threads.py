"""Threads a oneshot cell leaves running: waited for as a script's interpreter waits."""

from __future__ import annotations

import os

import pytest
from support.vixhost import DEADLINE_ENV, VixHost

LATE = "import threading, time\n"


def test_a_thread_that_prints_after_the_cell_is_waited_for(host: VixHost) -> None:
    result = host.run_cell(LATE + "threading.Thread(target=lambda: (time.sleep(0.2), "
                           "print('late'))).start()\nprint('first')")
    assert result.ok, result
    assert result.response["stdout"] == "first\nlate\n"


def test_threads_started_by_threads_are_waited_for(host: VixHost) -> None:
    source = LATE + (
        "def inner():\n    time.sleep(0.2)\n    print('inner')\n"
        "def outer():\n    time.sleep(0.1)\n    threading.Thread(target=inner).start()\n"
        "threading.Thread(target=outer).start()")
    result = host.run_cell(source)
    assert result.response["stdout"] == "inner\n", result


def test_an_idle_executor_does_not_hold_the_cell(host: VixHost) -> None:
    source = ("from concurrent.futures import ThreadPoolExecutor\npool = ThreadPoolExecutor(2)\n"
              "print(pool.submit(pow, 6, 2).result())")
    result = host.run_cell(source)
    assert result.ok, result
    assert result.response["stdout"] == "36\n"


def test_a_daemon_thread_is_not_waited_for(host: VixHost) -> None:
    result = host.run_cell(LATE + "threading.Thread(target=time.sleep, args=(60,), "
                           "daemon=True).start()\nprint('done')")
    assert result.ok and result.response["stdout"] == "done\n", result


@pytest.mark.slow  # waits out the runtime's deadline
def test_a_thread_that_never_ends_cannot_make_the_runtime_miss_its_deadline() -> None:
    host = VixHost(env={**os.environ, **DEADLINE_ENV})
    result = host.run_cell(LATE + "def spin():\n    print('spinning', flush=True)\n"
                           "    while True:\n        time.sleep(0.01)\n"
                           "threading.Thread(target=spin, name='spinner').start()")
    assert result.error["code"] == "timeout"
    assert result.response["stdout"] == "spinning\n"
    assert "spinner" in result.error["details"], result.error
