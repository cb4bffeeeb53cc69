"""Every way around a buffered sys.stdout flushes it first (in a throwaway process)."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: Each exercised in a fresh interpreter where `flush_first` counts its flushes.
ENTRY_POINTS = {
    "os.write": "os.write(1, b'')",
    "os.write to stderr": "os.write(2, b'')",
    "os.writev": "os.writev(1, [b''])",
    "os.system": "os.system('true')",
    "os.fork": "pid = os.fork()\nif pid == 0: os._exit(0)\nos.waitpid(pid, 0)",
    "subprocess": "import subprocess; subprocess.run(['true'])",
    "multiprocessing spawn": (
        "import multiprocessing.util as u\n"
        "os.waitpid(u.spawnv_passfds(b'/bin/true', [b'/bin/true'], ()), 0)"),
    "os.posix_spawn": "os.waitpid(os.posix_spawn('/bin/true', ['true'], {}), 0)",
    "os.kill": "os.kill(os.getpid(), 0)",
}

SCRIPT = """
import os
{before}
from pyrelune.worker.flushfirst import flush_first
flushes = []
flush_first(lambda: flushes.append(1))
{code}
print(len(flushes))
"""


def flushes(code: str, before: str = "") -> int:
    """How many times `code` flushed, run after `before` and `flush_first`."""
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(before=before, code=code)],
                          capture_output=True, text=True, timeout=60, check=True)
    return int(done.stdout.split()[-1])


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_entry_point_flushes_first(name: str) -> None:
    assert flushes(ENTRY_POINTS[name]) >= 1


def test_subprocess_imported_before_flushes_first() -> None:
    # Since 3.11 it binds its fork_exec at import: only the Popen hook sees it.
    assert flushes("subprocess.run(['true'])", before="import subprocess") >= 1


def test_nothing_else_flushes() -> None:
    assert flushes("os.getpid(); os.read(os.open(os.devnull, os.O_RDONLY), 1)\n"
                   "os.write(os.open(os.devnull, os.O_WRONLY), b'elsewhere')") == 0
