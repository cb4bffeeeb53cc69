"""Warm start (PYRELUNE_WARM): served warm, cold whenever it cannot be the same, and safe.

Each test has its own XDG_RUNTIME_DIR (so its own warm process, ended after
it) and preloads `colorsys`, which a cold runtime never imports: a cell that
prints `"colorsys" in sys.modules` says which path served it.
PYRELUNE_WARM_DEBUG makes the launcher say on stderr why a cell ran cold.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from support import warmhost
from support.launch import SCRIPT
from support.poll import wait_until
from support.vixhost import HostResult, VixHost, encode_request

from pyrelune.warm import gate, route, starts

PRELOAD = "colorsys"
WHICH = "import sys\nprint('warm' if 'colorsys' in sys.modules else 'cold')"


class Warm:
    """One test's warm setting: its runtime folder and the paths of its socket and lock."""

    def __init__(self, runtime: Path) -> None:
        self.runtime = runtime
        self.folder = runtime / "pyrelune"
        self.host = VixHost()

    @property
    def socket(self) -> Path:
        sockets = list(self.folder.glob("*.sock"))
        assert len(sockets) == 1, sockets
        return sockets[0]

    def lock(self) -> Path:
        locks = list(self.folder.glob("*.lock"))
        assert len(locks) == 1, locks
        return locks[0]

    def start(self) -> dict[str, object]:
        return warmhost.start()

    def which(self, **fields: object) -> tuple[str, HostResult]:
        """'warm' or 'cold', and the whole result, of a cell run as Vix Note runs it."""
        env = fields.pop("env", None)
        result = self.host.run_cell(WHICH, env=env, **fields)  # type: ignore[arg-type]
        return result.text().strip(), result

    def processes(self) -> list[int]:
        return warmhost.processes(self.runtime)


@pytest.fixture
def warm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Warm]:
    with warmhost.own_runtime() as runtime:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        monkeypatch.setenv("PYRELUNE_WARM", PRELOAD)
        monkeypatch.setenv("PYRELUNE_WARM_DEBUG", "1")
        yield Warm(runtime)


def cold_reason(result: HostResult) -> str:
    lines = [line for line in result.stderr.decode().splitlines()
             if line.startswith("pyrelune warm: cold")]
    assert len(lines) == 1, result
    return lines[0]


# --- served warm, as cold would -------------------------------------------------------------


def test_a_running_warm_process_serves_the_cell_with_the_cold_answer(warm: Warm) -> None:
    source = ("x = 6\nprint(x)\nimport colorsys, os, sys\n"
              "print(sys.argv[0] == os.environ['LAUNCHER'])\nx * 7")
    env = {"LAUNCHER": SCRIPT}
    cold = VixHost().run_cell(source, env={**env, "PYRELUNE_WARM": "0"})
    warm.start()
    which, result = warm.which()
    assert which == "warm", result
    served = warm.host.run_cell(source, env=env)
    assert served.stdout == cold.stdout  # byte for byte
    assert served.text() == "6\nTrue\n42"
    assert served.stderr == b""


def test_first_use_runs_cold_and_starts_one_warm_process_that_serves_the_next(warm: Warm) -> None:
    which, result = warm.which()
    assert which == "cold"
    assert cold_reason(result).endswith("(starting a warm process)")
    assert wait_until(lambda: warmhost.status() is not None)
    assert warm.which()[0] == "warm"
    assert len(warm.processes()) == 1


def test_first_use_starts_the_warm_process_only_once_the_cell_has_answered(warm: Warm) -> None:
    """While the cold cell runs, its runtime has one child (the worker), no starter beside it."""
    cell = ("import os\nrt = os.getppid()\n"
            "print(open(f'/proc/{rt}/task/{rt}/children').read().split() == [str(os.getpid())])")
    result = warm.host.run_cell(cell)
    assert result.text() == "True\n", result
    assert cold_reason(result).endswith("(starting a warm process)")
    assert wait_until(lambda: warmhost.status() is not None)


def test_two_cells_racing_at_first_use_start_one_warm_process(warm: Warm) -> None:
    results: list[tuple[str, HostResult]] = []
    cells = [threading.Thread(target=lambda: results.append(warm.which())) for _ in range(4)]
    for cell in cells:
        cell.start()
    for cell in cells:
        cell.join()
    assert [which for which, _ in results] == ["cold"] * 4
    reasons = sorted(cold_reason(result) for _, result in results)
    assert sum(reason.endswith("(starting a warm process)") for reason in reasons) == 1, reasons
    assert wait_until(lambda: warmhost.status() is not None)
    time.sleep(0.5)  # any second warm process would be running by now
    assert len(warm.processes()) == 1


@pytest.mark.parametrize("source", ["print(2 + 3)", "x = [1, 2]\nx * 2", "1 / 0",
                                    "import math\nprint(math.pi)",
                                    "from collections import Counter\nCounter('aab')"])
def test_a_cell_that_uses_no_preloaded_module_runs_cold_with_the_same_answer(
        warm: Warm, source: str) -> None:
    cold = VixHost().run_cell(source, env={"PYRELUNE_WARM": "0"})
    warm.start()
    routed = warm.host.run_cell(source)
    assert cold_reason(routed).endswith("(the cell uses no preloaded module)")
    assert routed.stdout == cold.stdout
    served = warm.host.run_cell(source, env={"PYRELUNE_WARM_EVERY": "1"})
    assert b"pyrelune warm: cold" not in served.stderr, served  # served warm, on request
    assert served.stdout == cold.stdout


@pytest.mark.parametrize("source", ["print(repr(colorsys))", "print('%d' % 5)",
                                    "print(__import__('sys').version_info[0])",
                                    "import os\nimport no_such_module_beyond_the_stdlib"])
def test_a_cell_that_names_a_preloaded_module_or_imports_is_served_warm(
        warm: Warm, source: str) -> None:
    cold = VixHost().run_cell(source, env={"PYRELUNE_WARM": "0"})
    warm.start()
    served = warm.host.run_cell(source)
    assert b"pyrelune warm: cold" not in served.stderr, served
    assert served.stdout == cold.stdout


def test_a_cell_that_uses_no_preloaded_module_still_starts_the_warm_process(warm: Warm) -> None:
    result = warm.host.run_cell("print(2 + 3)")
    assert result.text() == "5\n"
    assert cold_reason(result).endswith("(starting a warm process)")
    assert wait_until(lambda: warmhost.status() is not None)
    assert warm.which()[0] == "warm"


def test_without_debug_too_a_cell_that_uses_no_preloaded_module_starts_the_warm_process(
        warm: Warm, monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher's short way to cold (no PYRELUNE_WARM_DEBUG) still notices first use."""
    monkeypatch.delenv("PYRELUNE_WARM_DEBUG")
    result = warm.host.run_cell("print(2 + 3)")
    assert result.text() == "5\n"
    assert result.stderr == b""
    assert wait_until(lambda: warmhost.status() is not None)
    assert warm.which()[0] == "warm"


def imported(result: HostResult) -> set[str]:
    """The modules the launcher's process imported, as PYTHONPROFILEIMPORTTIME lists them."""
    lines = result.stderr.decode().splitlines()
    names = {line.rpartition("|")[2].strip() for line in lines if line.startswith("import time:")}
    names.discard("package")  # the header line
    assert "pyrelune.modes.oneshot" in names, result
    return names


def test_a_cell_that_uses_no_preloaded_module_imports_what_a_cold_start_imports(
        warm: Warm, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a warm process running, the launcher decides with nothing of warm start but its gate
    (which a cold launcher, `--cold`'s or PYRELUNE_WARM=0's, does not import)."""
    monkeypatch.delenv("PYRELUNE_WARM_DEBUG")
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    warm.start()
    cold = VixHost().run_cell("print(2 + 3)", env={"PYRELUNE_WARM": "0"})
    routed = warm.host.run_cell("print(2 + 3)")
    assert routed.stdout == cold.stdout
    warm_modules = {name for name in imported(routed) if name.startswith("pyrelune.warm")}
    assert warm_modules == {"pyrelune.warm", "pyrelune.warm.gate"}
    assert imported(routed) == imported(cold) | warm_modules
    assert warmhost.status() is not None  # running all along: the socket was there


def test_the_cell_gets_the_callers_directory_environment_umask_and_limits(
        warm: Warm, tmp_path: Path) -> None:
    warm.start()
    here = tmp_path / "here"
    here.mkdir()
    script = tmp_path / "launch"
    script.write_text(f"#!/bin/sh\numask 027\nulimit -n 200\nexec {SCRIPT}\n")
    script.chmod(0o755)
    source = ("import os, resource, sys\n"
              "print('colorsys' in sys.modules, os.path.basename(os.getcwd()), "
              "os.environ['ONLY_HERE'], oct(os.umask(0)), "
              "resource.getrlimit(resource.RLIMIT_NOFILE)[0])")
    result = VixHost(command=str(script)).run_cell(source, cwd=here, env={"ONLY_HERE": "yes"},
                                                   workingDirectory="")
    assert result.text() == "True here yes 0o27 200\n"


def test_random_state_is_fresh_in_every_warm_cell(warm: Warm) -> None:
    pytest.importorskip("numpy")
    os.environ["PYRELUNE_WARM"] = "numpy"
    warm.start()
    source = "import random, sys, numpy\nprint('numpy' in sys.modules, random.random(), " \
             "numpy.random.random())"
    first, second = (warm.host.run_cell(source).text().split() for _ in range(2))
    assert first[0] == second[0] == "True"
    assert first[1] != second[1] and first[2] != second[2]


# --- cold whenever warm cannot be the same ----------------------------------------------------


@pytest.mark.parametrize("name", ["PYTHONPATH", "MPLBACKEND", "OMP_NUM_THREADS", "LANG",
                                  "LC_ALL", "TZ", "HOME", "PATH", "PYTHONHASHSEED"])
def test_an_environment_the_preloaded_modules_read_differently_runs_cold(
        warm: Warm, name: str) -> None:
    warm.start()
    value = {"PYTHONHASHSEED": "7", "PATH": os.environ["PATH"] + ":/nowhere"}.get(name, "C")
    which, result = warm.which(env={name: value})
    assert which == "cold"
    assert cold_reason(result).endswith(f"(environment differs: {name})")
    assert warm.which()[0] == "warm"  # the warm process is still there for the others


@pytest.mark.parametrize("entry", ["colorsys.py", "colorsys/__init__.py",
                                   "colorsys.cpython-311-x86_64-linux-gnu.so"])
def test_a_module_in_the_working_directory_shadowing_a_preloaded_one_runs_cold(
        warm: Warm, tmp_path: Path, entry: str) -> None:
    warm.start()
    project = tmp_path / "project"
    (project / entry).parent.mkdir(parents=True, exist_ok=True)
    (project / entry).write_text("")
    which, result = warm.which(workingDirectory=str(project))
    assert which == "cold"
    assert "would shadow a preloaded module" in cold_reason(result)


def test_a_module_beside_the_note_shadowing_a_preloaded_one_runs_cold(
        warm: Warm, tmp_path: Path) -> None:
    warm.start()
    (tmp_path / ".git").mkdir()
    notes = tmp_path / "analysis"
    notes.mkdir()
    (notes / "a.vixnote").write_text("")
    (notes / "colorsys.py").write_text("")
    which, result = warm.which(note="analysis/a.vixnote", cwd=tmp_path)
    assert which == "cold"
    assert "analysis/colorsys.py would shadow" in cold_reason(result)
    (notes / "colorsys.py").unlink()
    (notes / "colorsys").mkdir()  # a folder without __init__.py shadows nothing
    assert warm.which(note="analysis/a.vixnote", cwd=tmp_path)[0] == "warm"


def test_installing_or_removing_a_package_ends_the_warm_process_and_runs_cold(
        warm: Warm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A packages folder of this test's own on sys.path, not the shared venv's
    # site-packages: a package "installed" there would send every other test's
    # warm process cold as well, as it should.
    packages = tmp_path / "site-packages"
    packages.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(packages))
    warm.start()
    pid = warm.processes()
    installed = packages / "pyrelune_test_warm-0.dist-info"
    installed.mkdir()
    installed.rmdir()
    which, result = warm.which()
    assert which == "cold"
    assert cold_reason(result).endswith("(installed packages changed)")
    assert wait_until(lambda: not any(p in warm.processes() for p in pid), 30)
    assert not list(warm.folder.glob("*.sock"))


def test_a_warm_process_that_is_gone_means_cold_and_a_new_one(warm: Warm) -> None:
    first = warm.start()["pid"]
    assert isinstance(first, int)
    os.kill(first, signal.SIGKILL)  # leaves its socket behind
    assert wait_until(lambda: not warm.processes(), 30)
    assert warm.which()[0] == "cold"
    assert wait_until(lambda: warmhost.status() is not None)
    # The new one serves: a cell may still run cold while it settles on a busy
    # machine (the launcher never waits long for a handshake), never for good.
    assert wait_until(lambda: warm.which()[0] == "warm", 30)


def test_a_warm_process_still_starting_means_cold_and_no_second_one(warm: Warm) -> None:
    warm.start()
    warmhost.command("stop")
    lock = os.open(warm.lock(), os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as a warm process does while it preloads
        which, result = warm.which()
        assert which == "cold"
        assert cold_reason(result).endswith("(warm process starting)")
        time.sleep(0.5)
        assert warm.processes() == []
    finally:
        os.close(lock)


def test_a_warm_process_that_refuses_means_cold(warm: Warm) -> None:
    warm.start()
    path = warm.socket
    warmhost.command("stop")
    refuser = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    refuser.bind(str(path))
    refuser.listen()

    def refuse() -> None:
        conn, _ = refuser.accept()
        conn.close()

    thread = threading.Thread(target=refuse)
    thread.start()
    try:
        which, result = warm.which()
    finally:
        thread.join()
        refuser.close()
    assert which == "cold"
    assert "warm process" in cold_reason(result)


# --- security -------------------------------------------------------------------------------


def test_a_runtime_folder_too_long_for_a_socket_falls_back_to_a_short_one(
        warm: Warm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A socket's path has at most 107 bytes: past that, /tmp/pyrelune-<uid>, made 0700."""
    runtime = tmp_path / ("r" * 120)
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    # A preload of its own: the fallback folder is shared, its warm process must not be.
    preload = f"{PRELOAD},pyrelune_test_long_{os.getpid()}"
    monkeypatch.setenv("PYRELUNE_WARM", preload)
    socket_path, lock_path = gate.warm_paths(preload)
    folder = Path(socket_path).parent
    assert folder == Path(f"/tmp/pyrelune-{os.getuid()}")
    try:
        which, result = warm.which()
        assert which == "cold" and cold_reason(result).endswith(f"({route.STARTING})")
        assert wait_until(lambda: os.path.exists(socket_path))
        which, result = warm.which()
        assert which == "warm", result
        assert folder.stat().st_mode & 0o777 == 0o700
    finally:
        warmhost.stop_all(runtime)
        for leftover in (lock_path, starts.log_path(lock_path)):
            Path(leftover).unlink(missing_ok=True)


def test_a_socket_folder_others_can_enter_is_refused(warm: Warm) -> None:
    warm.start()
    warm.folder.chmod(0o755)
    which, result = warm.which()
    assert which == "cold"
    assert "lets others in (mode 755)" in cold_reason(result)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user takes root")
@pytest.mark.parametrize("what", ["folder", "socket"])
def test_a_socket_or_folder_of_another_user_is_refused(warm: Warm, what: str) -> None:
    warm.start()
    os.chown(warm.folder if what == "folder" else warm.socket, 65534, -1)
    which, result = warm.which()
    assert which == "cold"
    assert "belongs to uid 65534, not to this user" in cold_reason(result)


@pytest.mark.skipif(os.geteuid() != 0, reason="connecting as another user takes root")
def test_another_user_can_neither_run_code_nor_read_output(
        warm: Warm, monkeypatch: pytest.MonkeyPatch) -> None:
    # A runtime folder the other user can reach: the peer check alone must stop them.
    runtime = Path(tempfile.mkdtemp(prefix="pyrelune-peer-", dir="/tmp"))
    runtime.chmod(0o711)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    other = Warm(runtime)
    try:
        other.start()
        other.folder.chmod(0o711)
        other.socket.chmod(0o777)
        proof = runtime / "ran"
        request = encode_request({"source": f"open({str(proof)!r}, 'w').close()"})
        done = subprocess.run([sys.executable, "-c", INTRUDER, str(other.socket)],
                              input=request, capture_output=True, timeout=60)
        assert done.returncode == 0, done
        assert done.stdout.strip() == b"b''", done  # nothing answered, nothing to read
        time.sleep(0.5)
        assert not proof.exists()
        other.folder.chmod(0o700)
        assert other.which()[0] == "warm"
    finally:
        warmhost.stop_all(runtime)
        shutil.rmtree(runtime)


#: Another user (nobody) speaking the client's protocol to a socket it can reach.
INTRUDER = f"""
import os, socket, sys
sys.path[:0] = {sys.path!r}
from pyrelune.warm import frames
request = sys.stdin.buffer.read()
os.setgid(65534)
os.setuid(65534)
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(sys.argv[1])
answer = b""
try:
    conn.sendall(frames.RUN + frames.pack(b"x", b"18", b"", b"", request))
    conn.settimeout(10)
    while chunk := conn.recv(4096):
        answer += chunk
        if answer[:1] == frames.ACCEPT:
            socket.send_fds(conn, [frames.GO], [0, 1, 2, os.open("/", os.O_RDONLY)])
except OSError:
    pass
print(repr(answer))
"""


# --- hygiene --------------------------------------------------------------------------------


def test_the_warm_process_holds_none_of_the_descriptors_of_the_cell_that_started_it(
        warm: Warm) -> None:
    """Vix Note's sockets are open in the runtime: the warm process it starts closes them."""
    kept_r, kept_w = os.pipe()
    proc = subprocess.Popen([SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, pass_fds=(kept_w,))
    assert proc.stdout is not None and proc.stderr is not None
    host_pipes = {f"pipe:[{os.fstat(f).st_ino}]"
                  for f in (kept_r, proc.stdout.fileno(), proc.stderr.fileno())}
    out, _ = proc.communicate(encode_request({"source": WHICH}))
    os.close(kept_w)
    assert json.loads(out)["stdout"] == "cold\n"
    assert wait_until(lambda: warmhost.status() is not None)
    os.set_blocking(kept_r, False)
    assert os.read(kept_r, 1) == b""  # EOF: no process holds the write end any more
    os.close(kept_r)
    assert warm.which()[0] == "warm"
    (pid,) = warm.processes()
    targets = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    assert targets & host_pipes == set(), targets
    assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
    assert os.getsid(pid) != os.getsid(0)  # a session of its own


def test_the_host_reads_eof_as_soon_as_a_warm_cell_ends(warm: Warm) -> None:
    """The warm process keeps no copy of the host's pipes (VixHost reports `hung` else)."""
    warm.start()
    result = warm.host.run_cell(WHICH + "\nimport subprocess\n_ = subprocess.run(['true'])")
    assert result.text() == "warm\n"
    assert not result.hung


def test_sigkill_of_the_launcher_kills_the_cells_whole_process_group(
        warm: Warm, tmp_path: Path) -> None:
    warm.start()
    pids = tmp_path / "pids"
    source = ("import os, subprocess, time, sys\n"
              "child = subprocess.Popen(['sleep', '600'])\n"
              f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}} "
              "{\"colorsys\" in sys.modules}')\n"
              "time.sleep(600)")
    proc = subprocess.Popen([SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(encode_request({"source": source}))
    proc.stdin.close()
    assert wait_until(lambda: pids.exists() and len(pids.read_text().split()) == 3, 60)
    worker, child, served_warm = pids.read_text().split()
    assert served_warm == "True"
    proc.kill()
    proc.wait()

    def gone(pid: str) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        return state == "Z"

    assert wait_until(lambda: gone(worker) and gone(child), 30)
    assert proc.stdout is not None and proc.stdout.read() == b""  # EOF: nobody holds it
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stderr.close()


def test_an_idle_warm_process_exits_and_leaves_no_socket(warm: Warm,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # Long enough that a busy machine's next cell still comes before it.
    monkeypatch.setenv("PYRELUNE_WARM_IDLE", "5")
    warm.start()
    assert warm.which()[0] == "warm"
    assert wait_until(lambda: not warm.processes(), 30)
    assert list(warm.folder.glob("*.sock")) == []


# --- the command line ------------------------------------------------------------------------


def test_warm_status_and_stop_say_what_runs(warm: Warm) -> None:
    assert warmhost.command("status").stdout == "not running\n"
    pid = warm.start()["pid"]
    warm.which()
    shown = warmhost.command("status")
    assert shown.returncode == 0, shown
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"running: pid {pid} (")
    assert lines[1] == "preloaded: colorsys (asked: colorsys)"
    assert lines[2].startswith("memory: ") and "MiB resident" in lines[2]
    assert lines[3].startswith("idle: ") and lines[3].endswith("cells served: 1")
    assert warmhost.command("stop").stdout == f"stopped pid {pid}\n"
    assert warm.processes() == []
    assert list(warm.folder.glob("*.sock")) == []
    assert warmhost.command("stop").stdout == "not running\n"


def vix(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, "vix", *args], capture_output=True, text=True,
                          timeout=warmhost.START_WITHIN + 60)


@pytest.fixture
def vix_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME and Vix prefix of the test's own; the cells' PYRELUNE_WARM is the launcher's."""
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VIX_GLOBAL_PREFIX", str(tmp_path / "vix"))
    monkeypatch.delenv("PYRELUNE_WARM")
    return tmp_path / "vix"


def test_vix_install_warm_writes_a_launcher_that_serves_cells_warm(
        warm: Warm, vix_home: Path) -> None:
    installed = vix("install", "--warm", "--preload", PRELOAD)
    assert installed.returncode == 0, installed
    launcher = vix_home / "bin" / "pyrelune"
    assert "main(warm='colorsys')" in launcher.read_text()
    host = VixHost(command=str(launcher))
    assert host.run_cell(WHICH).text() == "cold\n"  # first use: starts it
    assert wait_until(lambda: warmhost.status(PRELOAD) is not None)
    assert host.run_cell(WHICH).text() == "warm\n"
    assert host.run_cell(WHICH, env={"PYRELUNE_WARM": "0"}).text() == "cold\n"
    assert vix("install", "--cold").returncode == 0
    assert "main(warm='0')" in launcher.read_text()
    assert host.run_cell(WHICH).text() == "cold\n"
    assert vix("install").returncode == 0  # on again, with the default preload
    assert "main(warm='1')" in launcher.read_text()


def test_doctor_reports_warm_start_working_and_notes_it_when_turned_off(
        warm: Warm, vix_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Its round trip (`print(6 * 7)`) runs cold by choice, which the debug line would say.
    monkeypatch.delenv("PYRELUNE_WARM_DEBUG")
    assert vix("install", "--cold").returncode == 0
    off = vix("doctor")
    assert off.returncode == 0, off
    assert "ok   warm start: off (installed with --cold, your choice)" in off.stdout
    assert "warn" not in off.stdout
    assert vix("install", "--preload", PRELOAD).returncode == 0
    on = vix("doctor")
    assert on.returncode == 0, on
    (pid,) = warm.processes()
    assert (f"ok   warm start: on (the launcher): warm process {pid} serves cells "
            "(preloaded: colorsys;") in on.stdout


# --- faults of the warm process -----------------------------------------------------------------


def in_background(call: Callable[[], HostResult]) -> Future[HostResult]:
    pool = ThreadPoolExecutor(1)
    future = pool.submit(call)
    pool.shutdown(wait=False)
    return future


def resume(pid: int, group: bool = False) -> None:
    try:
        (os.killpg if group else os.kill)(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_cell_handed_over_as_the_warm_process_dies_is_answered(
        warm: Warm, tmp_path: Path, signum: int) -> None:
    """Stopped, the warm process cannot hear that its spare took the cell; then it goes."""
    pid = warm.start()["pid"]
    assert isinstance(pid, int)
    began, go = tmp_path / "began", tmp_path / "go"
    source = (f"{WHICH}\nimport os, time\nopen({str(began)!r}, 'w').close()\n"
              f"while not os.path.exists({str(go)!r}):\n    time.sleep(0.01)\nprint('done')")
    os.kill(pid, signal.SIGSTOP)
    try:
        answer = in_background(lambda: warm.host.run_cell(source))
        assert wait_until(began.exists, 60)
        os.kill(pid, signum)
    finally:
        resume(pid)
    assert wait_until(lambda: pid not in warm.processes(), 30)
    go.touch()
    result = answer.result(timeout=120)
    assert result.text() == "warm\ndone\n", result


def test_a_stalled_warm_process_means_cold_and_holds_no_pipe_of_the_host(
        warm: Warm, tmp_path: Path) -> None:
    """The warm process and its spare stopped: the cell runs cold, the host reads its EOF
    (VixHost reports `hung` else), and the stale request, once they resume, runs nothing."""
    pid = warm.start()["pid"]
    assert isinstance(pid, int)
    ran = tmp_path / "ran"
    source = f"{WHICH}\n_ = open({str(ran)!r}, 'a').write('x')"
    os.killpg(pid, signal.SIGSTOP)
    try:
        result = warm.host.run_cell(source)
    finally:
        resume(pid, group=True)
    assert result.text() == "cold\n"
    assert "did not answer within" in cold_reason(result)
    assert wait_until(lambda: warm.which()[0] == "warm", 60)
    assert warm.host.run_cell(source).text() == "warm\n"
    assert ran.read_text() == "xx"  # once cold, once warm: the stale request never ran


def test_a_deadline_cell_beside_a_stalled_warm_process_is_answered_in_the_hosts_time(
        warm: Warm) -> None:
    """The wait for the warm process counts towards the deadline (VixHost kills at 10 s)."""
    pid = warm.start()["pid"]
    assert isinstance(pid, int)
    os.killpg(pid, signal.SIGSTOP)
    try:
        result = warm.host.run_cell(f"{WHICH}\nwhile True: pass", env={"PYRELUNE_WARM_DEBUG": ""})
    finally:
        resume(pid, group=True)
    assert result.error["code"] == "timeout", result
    assert result.response["stdout"] == "cold\n"


# --- the launcher's sandbox, settings and sys.path ---------------------------------------------


def launcher_script(tmp_path: Path, wrapper: str) -> str:
    script = tmp_path / "launch"
    script.write_text(f"#!/bin/sh\nexec {wrapper} {SCRIPT}\n")
    script.chmod(0o755)
    return str(script)


def test_the_launchers_niceness_and_cpu_affinity_are_the_warm_cells(
        warm: Warm, tmp_path: Path) -> None:
    for tool in ("nice", "taskset"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    warm.start()
    host = VixHost(command=launcher_script(tmp_path, "nice -n 10 taskset -c 0"))
    source = ("import os, sys\nprint('colorsys' in sys.modules, os.nice(0), "
              "sorted(os.sched_getaffinity(0)))")
    cold = host.run_cell(source, env={"PYRELUNE_WARM": "0"}).text()
    for _ in range(5):  # niced and on one core, on a loaded machine it may miss the handshake
        result = host.run_cell(source)
        if "did not answer within" not in result.stderr.decode():
            break
    served = result.text()
    assert served.split(" ", 1) == ["True", cold.split(" ", 1)[1]], (served, cold, result)
    assert cold.split(" ", 1)[1] == f"{os.nice(0) + 10} [0]\n"


def unshare_wrapper() -> str:
    """How this machine's user puts a command in a network namespace of its own."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    for wrapper in ("unshare -n", "unshare -rn"):
        if subprocess.run([*wrapper.split(), "true"], capture_output=True).returncode == 0:
            return wrapper
    pytest.skip("this machine cannot unshare a network namespace")


def test_a_launcher_in_another_network_namespace_runs_cold(warm: Warm, tmp_path: Path) -> None:
    wrapper = unshare_wrapper()
    warm.start()
    host = VixHost(command=launcher_script(tmp_path, wrapper))
    source = WHICH + "\nimport socket\nprint(sorted(n for _, n in socket.if_nameindex()))"
    result = host.run_cell(source)
    assert result.text().splitlines()[0] == "cold", result
    assert "another sandbox: its namespace net differs" in cold_reason(result)
    assert result.text().splitlines()[1] == "['lo']"
    assert warm.which()[0] == "warm"  # beside it, the warm process still serves


def test_a_launcher_with_no_new_privs_runs_cold(warm: Warm, tmp_path: Path) -> None:
    """What a process cannot take on after the fact (as a seccomp filter, which sets it)."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is not installed")
    warm.start()
    host = VixHost(command=launcher_script(tmp_path, "setpriv --no-new-privs"))
    result = host.run_cell(WHICH)
    assert result.text() == "cold\n"
    assert "another sandbox: its NoNewPrivs differs" in cold_reason(result)


def test_a_matplotlibrc_a_cold_cell_reads_sends_the_cell_cold(
        warm: Warm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In the working directory, named by MATPLOTLIBRC, or written in the user's settings
    after the warm process started: warm cells give what cold ones give."""
    pytest.importorskip("matplotlib")
    config = tmp_path / "mplconfig"
    config.mkdir()
    monkeypatch.setenv("MPLCONFIGDIR", str(config))
    monkeypatch.setenv("PYRELUNE_WARM", "matplotlib,colorsys")
    warm.start()
    source = "import matplotlib as mpl\nprint(mpl.rcParams['lines.linewidth'])"
    project = tmp_path / "project"
    project.mkdir()
    (project / "matplotlibrc").write_text("lines.linewidth: 7.0\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "matplotlibrc").write_text("lines.linewidth: 5.0\n")
    assert warm.host.run_cell(source).text() == "1.5\n"  # served warm, the default
    in_project = warm.host.run_cell(source, workingDirectory=str(project))
    assert in_project.text() == "7.0\n"
    assert "matplotlib would read its settings from" in cold_reason(in_project)
    named = warm.host.run_cell(source, env={"MATPLOTLIBRC": str(elsewhere)})
    assert named.text() == "5.0\n"
    assert cold_reason(named).endswith("(environment differs: MATPLOTLIBRC)")
    (config / "matplotlibrc").write_text("lines.linewidth: 3.0\n")
    assert warm.host.run_cell(source).text() == "3.0\n"


def test_a_warm_cells_sys_path_and_stdin_are_a_cold_ones(warm: Warm) -> None:
    """A cold runtime starts with its launcher's folder (the venv's bin) first; its worker's
    stdin is what a cold one has (the warm cell's worker was forked before the cell came)."""
    source = (WHICH + "\nimport json, os, stat, sys\nprint(json.dumps(sys.path))\n"
              "print(stat.S_ISFIFO(os.fstat(0).st_mode), repr(sys.stdin.read()))")
    cold = VixHost().run_cell(source, env={"PYRELUNE_WARM": "0"}).text().splitlines()
    warm.start()
    served = warm.host.run_cell(source).text().splitlines()
    assert (cold[0], served[0]) == ("cold", "warm")
    assert json.loads(served[1]) == json.loads(cold[1])
    assert served[2] == cold[2]


def test_editing_the_matplotlibrc_the_warm_process_read_ends_it(
        warm: Warm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    config = tmp_path / "mplconfig"
    config.mkdir()
    (config / "matplotlibrc").write_text("lines.linewidth: 3.0\n")
    monkeypatch.setenv("MPLCONFIGDIR", str(config))
    monkeypatch.setenv("PYRELUNE_WARM", "matplotlib,colorsys")
    pid = warm.start()["pid"]
    source = WHICH + "\nimport matplotlib as mpl\nprint(mpl.rcParams['lines.linewidth'])"
    assert warm.host.run_cell(source).text() == "warm\n3.0\n"
    (config / "matplotlibrc").write_text("lines.linewidth: 4.0\n")
    result = warm.host.run_cell(source)
    assert result.text() == "cold\n4.0\n"
    assert cold_reason(result).endswith(f"({config / 'matplotlibrc'} changed)")
    assert wait_until(lambda: pid not in warm.processes(), 30)  # it was stale


# --- settings and starts that fail -------------------------------------------------------------


@pytest.mark.parametrize("value", ["1e10", "-1", "inf", "nan", "ten"])
def test_an_idle_timeout_out_of_range_is_refused_clearly_and_starts_nothing(
        warm: Warm, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("PYRELUNE_WARM_IDLE", value)
    said = (f"PYRELUNE_WARM_IDLE must be seconds, from 0 to 604800 (0: never idles out), "
            f"not {value!r}")
    started = warmhost.command("start")
    assert started.returncode == 1, started
    assert started.stderr == f"not started: {said}\n"
    for _ in range(2):  # a cell is refused as for any bad setting, rather than run cold unsaid
        _, result = warm.which()
        assert result.error["code"] == "invalid_configuration"
        assert result.failure is not None and said in result.failure
    assert warm.processes() == []


@pytest.mark.parametrize("env", [
    {"PYRELUNE_WARM": "colorsys pandas"}, {"PYRELUNE_WARM": ","},
    {"PYRELUNE_WARM_EVERY": "maybe"}, {"PYRELUNE_WARM_DEBUG": "2"},
], ids=lambda env: f"{next(iter(env))}={next(iter(env.values()))}")
def test_a_bad_warm_variable_is_an_invalid_configuration(warm: Warm, env: dict[str, str]) -> None:
    _, result = warm.which(env=env)
    assert result.error["code"] == "invalid_configuration"
    assert result.failure is not None and f"{next(iter(env))} must be " in result.failure
    assert not warm.folder.exists()  # nothing of warm start was tried


def test_a_switch_with_spaces_around_is_off(warm: Warm) -> None:
    """`OFF ` is off, as doctor reports it: no warm process, not a module named OFF."""
    which, result = warm.which(env={"PYRELUNE_WARM": "OFF "})
    assert which == "cold" and result.stderr == b""
    assert not warm.folder.exists()


def test_a_bad_preload_option_is_a_usage_error(warm: Warm) -> None:
    shown = warmhost.command("status", "--preload", "colorsys pandas")
    assert shown.returncode == 2, shown
    assert "--preload must be 0 (off), 1 (numpy,pandas,matplotlib) or module names" in \
        " ".join(shown.stderr.split())


def test_a_warm_process_that_keeps_dying_is_not_restarted_for_every_cell(
        warm: Warm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It dies while it preloads: the second death in a row makes cells wait to restart it,
    and `warm status` and doctor say why."""
    library, tries = tmp_path / "library", tmp_path / "tries"
    library.mkdir()
    (library / "pyrelune_test_dies.py").write_text(
        f"import os, signal, sys\nopen({str(tries)!r}, 'a').write('x')\n"
        "print('preloading failed: out of luck', file=sys.stderr, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n")
    monkeypatch.setenv("PYTHONPATH", str(library))
    monkeypatch.setenv("PYRELUNE_WARM", "pyrelune_test_dies")
    lock = None
    for attempt in (1, 2):
        which, result = warm.which()
        assert which == "cold"
        assert cold_reason(result).endswith("(starting a warm process)"), attempt
        lock = warm.lock()

        def died(lock: Path = lock, attempt: int = attempt) -> bool:
            return tries.exists() and len(tries.read_text()) == attempt and not held(lock)

        assert wait_until(died, 60)
    which, result = warm.which()
    assert which == "cold"
    assert "the warm process died 2 times in a row without ending cleanly; next start after" \
        in cold_reason(result)
    assert not held(lock) and tries.read_text() == "xx"  # not started again
    shown = warmhost.command("status")
    assert shown.returncode == 1
    assert shown.stdout.startswith("not running: the warm process died 2 times in a row")
    assert shown.stdout.rstrip().endswith("its last words: preloading failed: out of luck")
    asked = warmhost.command("start")  # a person asks: it is tried, and says why it failed
    assert asked.returncode == 1
    assert "died 3 times in a row" in asked.stderr
    assert asked.stderr.rstrip().endswith("preloading failed: out of luck")


def test_doctor_says_why_the_warm_process_does_not_start(
        warm: Warm, vix_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    library = tmp_path / "library"
    library.mkdir()
    (library / "pyrelune_test_dies.py").write_text(
        "import sys\nprint('preloading failed: out of luck', file=sys.stderr, flush=True)\n"
        "import os\nos._exit(3)\n")
    monkeypatch.setenv("PYTHONPATH", str(library))
    assert vix("install", "--warm", "--preload", "pyrelune_test_dies").returncode == 0
    doctor = vix("doctor")
    line = next(line for line in doctor.stdout.splitlines() if "warm start" in line)
    assert "but the warm process did not start: the warm process died 1 time(s) in a row " \
        "without ending cleanly; its last words: preloading failed: out of luck" in line, line


def held(lock: Path | None) -> bool:
    assert lock is not None
    return starts.held(str(lock))


def test_a_cell_that_imports_only_modules_that_gain_nothing_runs_cold(warm: Warm) -> None:
    """pygments imports nothing the warm process loaded: a copy of it would only cost."""
    pytest.importorskip("pygments")
    source = "import pygments\nprint(pygments.__name__)"
    cold = VixHost().run_cell(source, env={"PYRELUNE_WARM": "0"})
    warm.start()
    routed = warm.host.run_cell(source)
    assert cold_reason(routed).endswith("(the cell uses no preloaded module)")
    assert routed.stdout == cold.stdout


def test_a_module_that_requires_a_preloaded_one_is_served_warm(
        warm: Warm, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pandas")
    monkeypatch.setenv("PYRELUNE_WARM", "numpy")
    warm.start()
    served = warm.host.run_cell("import pandas\nprint(pandas.Series([1]).sum())")
    assert b"pyrelune warm: cold" not in served.stderr, served
    assert served.text() == "1\n"
