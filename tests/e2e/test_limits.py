"""Limits: every cell is answered before the host's 10 s, within its 1 MiB."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.launch import SCRIPT
from support.processes import gone_soon, running
from support.vixhost import DEADLINE, DEADLINE_ENV, ROOMY, VixHost, encode_request


def request(source: str) -> bytes:
    return encode_request({"protocol": "vix-note-extension-1", "source": source})


def default_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYRELUNE_")}


@pytest.mark.slow  # waits out the runtime's deadline
def test_default_deadline_answers_before_the_host_kills() -> None:
    result = VixHost(env=default_env()).run(request("print('spinning')\nwhile True: pass"))
    assert result.error["code"] == "timeout"
    # The interrupt usually lands in time to say where the cell was.
    assert result.headline in ("Cell timed out after 8.5 s", "Cell timed out after 8.5 s (line 2)")
    assert result.response["stdout"] == "spinning\n"


@pytest.mark.slow  # waits out the runtime's deadline
@pytest.mark.parametrize(
    "source",
    [
        "while True: pass",
        "import time\ntime.sleep(60)",
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass",
        "import time\nwhile True:\n    try:\n        time.sleep(60)\n"
        "    except KeyboardInterrupt:\n        pass",
        "import os\nos.system('sleep 60')",
    ],
)
def test_deadline(source: str) -> None:
    result = VixHost().run(request("print('so far')\n" + source), env=DEADLINE_ENV)
    assert result.error["code"] == "timeout"
    assert result.failure is not None
    assert result.failure.startswith(f"Cell timed out after {DEADLINE} s")
    assert result.response["stdout"].startswith("so far\n")


@pytest.mark.slow  # waits out the runtime's deadline
def test_deadline_points_at_the_interrupted_line() -> None:
    result = VixHost().run(request("import time\n\ntime.sleep(60)"), env=DEADLINE_ENV)
    assert result.error["code"] == "timeout"
    assert 'line 3' in result.error["details"] and "KeyboardInterrupt" in result.error["details"]
    assert result.response["diagnostics"][0]["line"] == 3


def test_deadline_kills_the_cells_children() -> None:
    source = "import subprocess\np = subprocess.Popen(['sleep', '60'])\nprint(p.pid)\nwhile 1: pass"
    result = VixHost().run(request(source), env=DEADLINE_ENV)
    assert result.error["code"] == "timeout"
    assert gone_soon(int(result.response["stdout"]))



def test_the_cell_and_its_children_die_with_a_killed_runtime(tmp_path: Path) -> None:
    # The host SIGKILLs the runtime process alone; nothing the cell started may outlive it.
    pids = tmp_path / "pids"
    source = ("import os, subprocess\nchild = subprocess.Popen(['sleep', '60'])\n"
              f"open({str(pids) + '.new'!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
              f"os.replace({str(pids) + '.new'!r}, {str(pids)!r})\nwhile True: pass")
    runtime = subprocess.Popen([SCRIPT], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**default_env(), "PYRELUNE_TIMEOUT": "0"})
    assert runtime.stdin is not None
    runtime.stdin.write(request(source))
    runtime.stdin.close()
    started = []
    try:
        while not pids.exists():
            assert runtime.poll() is None, "the runtime ended before the cell started"
            time.sleep(0.05)
        started = [int(pid) for pid in pids.read_text().split()]
        runtime.kill()
        runtime.wait()
        assert all(gone_soon(pid) for pid in started)
    finally:
        for pid in [p for p in started if running(p)]:
            os.kill(pid, signal.SIGKILL)
        if runtime.poll() is None:
            runtime.kill()
            runtime.wait()

@pytest.mark.slow  # waits out the runtime's deadline
def test_timeout_option() -> None:
    proc = subprocess.run(
        [SCRIPT, "--timeout", "0.5"],
        input=request("import time\ntime.sleep(60)"),
        capture_output=True,
        timeout=60,
        env=default_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["error"]["message"].startswith("Cell timed out after 0.5 s")


def test_timeout_zero_means_no_deadline() -> None:
    result = VixHost().run(request("import time\ntime.sleep(0.5)\n'slept'"),
                           env={"PYRELUNE_TIMEOUT": "0"})
    assert result.ok, result


@pytest.mark.parametrize("env", [
    {"PYRELUNE_TIMEOUT": "soon"}, {"PYRELUNE_TIMEOUT": "-1"}, {"PYRELUNE_TIMEOUT": "inf"},
    {"PYRELUNE_TIMEOUT": "1e309"}, {"PYRELUNE_TIMEOUT": "1e10"}, {"PYRELUNE_TIMEOUT": "nan"},
    {"PYRELUNE_MAX_OUTPUT": "12"}, {"PYRELUNE_MAX_OUTPUT": "x"},
    {"PYRELUNE_MAX_OUTPUT": "9" * 5000}, {"PYRELUNE_MIME_ORDER": "text/csv"},
], ids=lambda env: f"{next(iter(env))}={next(iter(env.values()))[:8]}")
def test_bad_configuration_is_an_error(env: dict[str, str]) -> None:
    result = VixHost().run(request("print(1)"), env=env)
    assert result.error["code"] == "invalid_configuration"
    assert next(iter(env)) in result.failure  # type: ignore[operator]


def omitted(text: str, stream: str = "stdout") -> tuple[str, int, str]:
    """(head, bytes omitted, tail) of a capped stream."""
    head, marker, tail = text.partition(f" bytes of {stream} omitted ...]\n")
    assert marker, text[:200]
    head, _, count = head.rpartition("\n[... ")
    return head, int(count.replace(",", "")), tail


def test_output_cap_keeps_head_and_tail() -> None:
    source = "for i in range(100_000):\n    print(f'line {i:06}')"
    result = VixHost.roomy().run(request(source), env={"PYRELUNE_MAX_OUTPUT": "10000"})
    assert result.ok, result
    head, count, tail = omitted(result.response["stdout"])
    assert head.startswith("line 000000\nline 000001\n")
    assert tail.endswith("line 099998\nline 099999\n")
    total = 100_000 * len("line 000000\n")
    assert len(head.encode()) + count + len(tail.encode()) == total
    assert len(result.stdout) <= 10_000


def test_both_streams_and_escapes_stay_under_the_cap() -> None:
    # Control characters grow sixfold as JSON escapes: the cap is on the encoded response,
    # and the output still keeps as much of its head (stdout's start) and its tail
    # (stderr's end) as fits in it.
    source = ("import sys\nprint('out:' + '\\x01' * 3_000_000 + ':out')\n"
              "print('err:' + '\\x02' * 3_000_000 + ':err', file=sys.stderr)")
    result = VixHost.roomy().run(request(source), env={"PYRELUNE_MAX_OUTPUT": str(900 * 1024)})
    assert result.ok, result
    assert len(result.stdout) <= 900 * 1024
    printed = len("out:") + 3_000_000 + len(":out\n")
    head, count, rest = omitted(result.response["stdout"], "stdout")
    assert head.startswith("out:\x01") and len(head) > 20_000 and rest == ""
    assert len(head) + count == printed
    rest, count, tail = omitted(result.response["stderr"], "stderr")
    assert rest == "" and tail.endswith("\x02:err\n") and len(tail) > 20_000
    assert count + len(tail) == printed


def test_huge_error_message_stays_under_the_cap(host: VixHost) -> None:
    result = host.run_cell("raise ValueError('x' * 3_000_000)")
    assert result.headline is not None and result.headline.startswith("ValueError: xxx")
    assert result.headline.endswith("xxx (line 1)")
    assert "bytes omitted ...]" in result.headline
    assert "bytes omitted ...]" in result.error["details"]
    assert len(result.stdout) <= 128 * 1024


def test_a_million_lines(host: VixHost) -> None:
    result = host.run_cell("for i in range(1_000_000):\n    print(i)")
    assert result.ok, result
    head, count, tail = omitted(result.response["stdout"])
    assert head.startswith("0\n1\n2\n") and tail.endswith("999998\n999999\n")
    total = sum(len(f"{i}\n") for i in range(1_000_000))
    assert len(head.encode()) + count + len(tail.encode()) == total


MEASURE = """
import resource, sys
sys.path.insert(0, sys.argv[1])
from support.vixhost import VixHost, encode_request
source = "import sys\\nchunk = 'y' * (1 << 20)\\nfor _ in range(1024): sys.stdout.write(chunk)"
result = VixHost.roomy().run(encode_request({"source": source}))
print(result.ok, result.response["stdout"][-80:].count("y"), result.failure)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def test_a_gigabyte_of_output_in_bounded_memory() -> None:
    # Measured in a fresh process, so that the peak RSS is this run's (the
    # runtime and its worker), not the largest of every test so far.
    tests_dir = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.run([sys.executable, "-c", MEASURE, tests_dir], capture_output=True,
                          text=True, timeout=2 * ROOMY)
    assert proc.returncode == 0, proc.stderr
    verdict, peak_kib = proc.stdout.splitlines()
    assert verdict == "True 80 None", proc.stdout
    assert int(peak_kib) < 100 * 1024  # a gigabyte went through


@pytest.mark.parametrize("value", ["1e10", "inf", "nan", "-1", "soon"])
def test_a_bad_timeout_option_is_a_usage_error(value: str) -> None:
    """Any argument is the command line's (Vix Note passes none): refused as a usage error."""
    proc = subprocess.run([SCRIPT, "--timeout", value], input=request("print(1)"),
                          capture_output=True, timeout=60)
    assert proc.returncode == 2, proc
    assert f"--timeout must be seconds, from 0 to 604800 (0: no deadline), not '{value}'" in (
        " ".join(proc.stderr.decode().replace("│", " ").split())), proc.stderr


@pytest.mark.parametrize(("option", "value", "rule"), [
    ("--max-message-size", "1e9", "must be a whole number of bytes"),
    ("--auth-timeout", "inf", "must be seconds, from 0.1 to 604800"),
])
def test_the_rpc_kernels_numbers_follow_the_same_rules(option: str, value: str, rule: str) -> None:
    proc = subprocess.run([SCRIPT, "--mode", "rpc", option, value], input=b"",
                          capture_output=True, timeout=60)
    assert proc.returncode == 2, proc
    assert f"{option} {rule}" in " ".join(proc.stderr.decode().replace("│", " ").split())
