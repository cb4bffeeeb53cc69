"""Every way around a buffered sys.stdout flushes it first (in a throwaway process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

#: Each exercised in a fresh interpreter where `flush_first` counts its flushes.
ENTRY_POINTS = {
    "os.write": "os.write(1, b'')",
    "os.write to stderr": "os.write(2, b'')",
    "os.writev": "os.writev(1, [b''])",
    "os.system": "os.system('true')",
    "os.fork": "pid = os.fork()\nif pid == 0: os._exit(0)\nos.waitpid(pid, 0)",
    "subprocess": "import subprocess; subprocess.run(['true'])",
    "subprocess already imported": "subprocess.run(['true'])",
    "multiprocessing spawn": (
        "import multiprocessing.util as u\n"
        "os.waitpid(u.spawnv_passfds(b'/bin/true', [b'/bin/true'], ()), 0)"),
    "os.posix_spawn": "os.waitpid(os.posix_spawn('/bin/true', ['true'], {}), 0)",
    "os.kill": "os.kill(os.getpid(), 0)",
}

SCRIPT = """
import os, subprocess
from pyrelune.engine.flushfirst import flush_first
flushes = []
flush_first(lambda: flushes.append(1))
{code}
print(len(flushes))
"""


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_entry_point_flushes_first(name: str) -> None:
    script = SCRIPT.format(code=ENTRY_POINTS[name])
    if name != "subprocess already imported":
        script = script.replace("import os, subprocess", "import os")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=60, check=True)
    assert int(done.stdout.split()[-1]) >= 1, done.stderr


def test_nothing_else_flushes() -> None:
    script = SCRIPT.format(code="os.getpid(); os.read(os.open(os.devnull, os.O_RDONLY), 1)\n"
                                "os.write(os.open(os.devnull, os.O_WRONLY), b'elsewhere')")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.split()[-1] == "0"
