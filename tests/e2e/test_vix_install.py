"""`pyrelune vix install|uninstall|doctor` as a user runs them, against a temporary HOME and
prefix; the written files are read back by Vix Note's discovery rules and a real cell is run
through the command Vix Note would start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import warmhost
from support.launch import SCRIPT
from support.poll import wait_until

from pyrelune.vix import discovery, host
from pyrelune.vix.places import Places

ID = "softadastra/pyrelune"
FOREIGN = {"id": "other/tool", "version": "1.0", "installed_path": "/opt/other",
           "weird": [1.5, {"k": None}], "extensions": {"note": {"api": "1", "cellTypes": []}}}


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The test's own XDG_RUNTIME_DIR: the warm process a launcher's first cell starts (warm
    start is on by default) is the test's, and ended after it."""
    with warmhost.own_runtime() as folder:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
        for name in ("PYRELUNE_WARM", "PYRELUNE_WARM_EVERY", "PYRELUNE_WARM_DEBUG"):
            monkeypatch.delenv(name, raising=False)  # the launcher's setting decides
        yield folder


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runtime: Path) -> Places:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("VIX_GLOBAL_PREFIX", str(tmp_path / "vix global"))
    return Places.from_env()


def pyrelune(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"<dir>"
            for p in sorted(root.rglob("*"))}


def run_cell(extension: discovery.Extension, source: str, cwd: str = "") -> host.Verdict:
    payload = host.request(source, extension.id, extension.version, cwd)
    return host.interpret(host.run(extension.command, payload, timeout=60))


def test_install_registers_a_runnable_extension(places: Places, tmp_path: Path) -> None:
    result = pyrelune("vix", "install")
    assert result.returncode == 0, result.stderr
    extension = discovery.discover_global(places).find(ID)
    assert extension is not None, discovery.discover_global(places).skipped
    assert extension.available and extension.enabled and extension.diagnostics == []
    assert extension.command == str(places.bin_dir / "pyrelune")
    assert extension.cell_types == ["python"]
    entry = json.loads(places.installed_json.read_text())["packages"][0]
    assert entry["version"] == __import__("pyrelune").__version__
    (tmp_path / "helper.py").write_text("VALUE = 5\n")
    outcome = run_cell(extension, "import helper, sys\nprint(helper.VALUE * 2)\n1/0",
                       str(tmp_path))
    assert not outcome.ok and "ZeroDivisionError" in outcome.message
    outcome = run_cell(extension, "import helper\nprint(helper.VALUE * 2)", str(tmp_path))
    assert outcome.ok and outcome.text() == "10\n"


def test_launcher_works_without_activation_or_path(places: Places, tmp_path: Path,
                                                   runtime: Path) -> None:
    assert pyrelune("vix", "install").returncode == 0
    launcher = places.bin_dir / "pyrelune"
    result = subprocess.run([str(launcher)], input=b'{"source": "import sys; print(sys.prefix)"}',
                            capture_output=True, cwd="/", timeout=60,
                            env={"HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(runtime)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stdout"] == sys.prefix + "\n"


#: Which path served a cell: the data stack is in sys.modules before the cell imports it only
#: in a warm process. The name in the source sends the cell warm (see `warm.gate.gains`).
WHICH = "import sys\nprint('warm' if 'numpy' in sys.modules else 'cold')"


def test_install_turns_warm_start_on_and_the_first_cell_runs_cold_without_waiting(
        places: Places, runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("numpy")
    installed = pyrelune("vix", "install")
    assert installed.returncode == 0, installed.stderr
    assert "warm start is on: the first cell starts a process that preloads numpy" in \
        installed.stdout, installed.stdout
    assert "idle minutes" in installed.stdout and "--cold" in installed.stdout
    command = places.bin_dir / "pyrelune"
    assert "main(warm='1')" in command.read_text()
    monkeypatch.setenv("PYRELUNE_WARM_DEBUG", "1")
    payload = host.request(WHICH, ID, __import__("pyrelune").__version__)
    # No warm process yet (just installed, or after a reboot): the cell runs cold at once, and
    # only its answer starts one (test_warm.py: the starter waits for the response).
    first = host.run(str(command), payload, timeout=60)
    assert json.loads(first.stdout)["stdout"] == "cold\n", first
    assert first.stderr == b"pyrelune warm: cold (starting a warm process)\n"
    assert wait_until(lambda: warmhost.status("1") is not None)
    assert json.loads(host.run(str(command), payload, timeout=60).stdout)["stdout"] == "warm\n"


def test_install_cold_turns_warm_start_off_and_doctor_notes_the_choice(
        places: Places, runtime: Path) -> None:
    assert pyrelune("vix", "install").returncode == 0
    installed = pyrelune("vix", "install", "--cold")
    assert installed.returncode == 0, installed.stderr
    assert "warm start is off (--cold)" in installed.stdout, installed.stdout
    command = places.bin_dir / "pyrelune"
    assert "main(warm='0')" in command.read_text()
    payload = host.request(WHICH, ID, __import__("pyrelune").__version__)
    result = host.run(str(command), payload, timeout=60)
    assert json.loads(result.stdout)["stdout"] == "cold\n", result
    assert warmhost.processes(runtime) == []  # a start would have been spawned by now
    doctor = pyrelune("vix", "doctor")
    assert doctor.returncode == 0, doctor.stdout
    assert "warn" not in doctor.stdout
    assert "ok   warm start: off (installed with --cold, your choice)" in doctor.stdout
    assert warmhost.processes(runtime) == []


def test_warm_is_the_default_and_cold_with_preload_is_refused(
        places: Places, runtime: Path) -> None:
    command = places.bin_dir / "pyrelune"
    assert pyrelune("vix", "install").returncode == 0
    written = command.read_text()
    again = pyrelune("vix", "install", "--warm")
    assert again.returncode == 0 and "nothing changed" in again.stdout
    assert command.read_text() == written
    assert pyrelune("vix", "install", "--preload", " colorsys , json").returncode == 0
    assert "main(warm='colorsys,json')" in command.read_text()
    refused = pyrelune("vix", "install", "--cold", "--preload", "colorsys")
    assert refused.returncode == 1
    assert refused.stderr == ("error: --preload names what warm start preloads, and --cold "
                              "turns warm start off: leave out one of them\n")
    assert "main(warm='colorsys,json')" in command.read_text()


def test_install_from_another_environment_says_what_the_launcher_started_before(
        places: Places, runtime: Path) -> None:
    from pyrelune.vix import launcher

    assert pyrelune("vix", "install").returncode == 0
    command = places.bin_dir / "pyrelune"
    text = command.read_text()
    interpreter = launcher.interpreter_of(text)
    command.write_text(text.replace(f"#!{interpreter}\n", "#!/opt/old env/bin/python3\n", 1))
    result = pyrelune("vix", "install")
    assert result.returncode == 0, result.stderr
    assert f"wrote {command} (was /opt/old env/bin/python3, now {interpreter})\n" in \
        result.stdout, result.stdout
    assert launcher.interpreter_of(command.read_text()) == interpreter


def test_launcher_imports_nothing_the_oneshot_entry_does_not(places: Places) -> None:
    """A cold launcher: what warm start imports on a cell's way is test_warm.py's."""
    assert pyrelune("vix", "install", "--cold").returncode == 0
    request = b'{"source": "print(2 + 3)"}'
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}

    def imported(command: list[str]) -> set[str]:
        result = subprocess.run(command, input=request, capture_output=True, env=env, timeout=60)
        assert json.loads(result.stdout)["stdout"] == "5\n"
        lines = result.stderr.decode().splitlines()
        return {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}

    direct = imported([sys.executable, "-c", "from pyrelune.__main__ import main; main()"])
    via_launcher = imported([str(places.bin_dir / "pyrelune")])
    assert via_launcher - direct == set()
    assert {"typer", "jsonschema", "json"} & via_launcher == set()


def test_second_install_changes_nothing(places: Places) -> None:
    assert pyrelune("vix", "install").returncode == 0
    before = snapshot(places.prefix)
    stamps = {p: p.stat().st_mtime_ns for p in places.prefix.rglob("*") if p.is_file()}
    result = pyrelune("vix", "install")
    assert result.returncode == 0 and "nothing changed" in result.stdout
    assert snapshot(places.prefix) == before
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


def test_other_packages_are_kept_and_uninstall_restores_the_prefix(places: Places) -> None:
    places.bin_dir.mkdir(parents=True)
    (places.bin_dir / "tool").write_text("#!/bin/sh\n")
    places.installed_json.write_text(json.dumps({"packages": [FOREIGN], "extra": 1}))
    before = snapshot(places.prefix)
    assert pyrelune("vix", "install").returncode == 0
    document = json.loads(places.installed_json.read_text())
    assert document["extra"] == 1
    assert document["packages"][0] == FOREIGN and document["packages"][1]["id"] == ID
    result = pyrelune("vix", "uninstall")
    assert result.returncode == 0, result.stderr
    after = snapshot(places.prefix)
    after.pop("installed.json.lock")  # kept on purpose: see jsonfile.locked
    assert json.loads(after.pop("installed.json")) == json.loads(before.pop("installed.json"))
    assert after == before
    assert f"removed {places.bin_dir / 'pyrelune'}\n" in result.stdout
    assert f"removed folder {places.prefix / 'packages'}\n" in result.stdout
    assert f"kept folder {places.bin_dir}: holds tool\n" in result.stdout
    assert "(if empty)" not in result.stdout
    assert "was not installed" in pyrelune("vix", "uninstall").stdout


def test_concurrent_installs_lose_nothing(places: Places) -> None:
    places.prefix.mkdir()
    places.installed_json.write_text(json.dumps({"packages": [FOREIGN]}))
    ids = [f"owner{i}/pyrelune{i}" for i in range(6)]
    processes = [subprocess.Popen([SCRIPT, "vix", "install", "--id", i],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in ids]
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
    document = json.loads(places.installed_json.read_text())
    assert document["packages"][0] == FOREIGN
    assert sorted(p["id"] for p in document["packages"][1:]) == ids
    assert [p.name for p in places.prefix.iterdir() if p.name.startswith(".")] == []


def test_malformed_installed_json_is_never_overwritten(places: Places) -> None:
    places.prefix.mkdir()
    places.installed_json.write_bytes(b'{"packages": [ {"id": "mine"} ')
    result = pyrelune("vix", "install")
    assert result.returncode == 1
    assert "not valid JSON" in result.stderr and "--force" in result.stderr
    assert places.installed_json.read_bytes() == b'{"packages": [ {"id": "mine"} '
    assert not (places.bin_dir / "pyrelune").exists()
    result = pyrelune("vix", "install", "--force")
    assert result.returncode == 0, result.stderr
    backup = places.prefix / "installed.json.bak"
    assert backup.read_bytes() == b'{"packages": [ {"id": "mine"} '
    assert str(backup) in result.stdout + result.stderr
    assert discovery.discover_global(places).find(ID) is not None


def test_packages_that_is_not_an_array_is_malformed_too(places: Places) -> None:
    places.prefix.mkdir()
    places.installed_json.write_text('{"packages": {"id": "x"}}')
    result = pyrelune("vix", "install")
    assert result.returncode == 1 and "packages" in result.stderr


def test_a_foreign_launcher_is_not_replaced(places: Places) -> None:
    places.bin_dir.mkdir(parents=True)
    (places.bin_dir / "pyrelune").write_bytes(b"\x7fELF old runtime")
    result = pyrelune("vix", "install")
    assert result.returncode == 1 and "not written by pyrelune" in result.stderr
    assert pyrelune("vix", "install", "--force").returncode == 0
    assert (places.bin_dir / "pyrelune.bak").read_bytes() == b"\x7fELF old runtime"


def test_dry_run_prints_and_writes_nothing(places: Places) -> None:
    result = pyrelune("vix", "install", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert f"would write {places.installed_json}" in result.stdout
    assert '"id": "softadastra/pyrelune"' in result.stdout
    assert not places.prefix.exists()


def test_other_prefix_and_id(places: Places, tmp_path: Path) -> None:
    other = Places(tmp_path / "elsewhere", places.home)
    result = pyrelune("vix", "install", "--prefix", str(other.prefix), "--id", "me/py")
    assert result.returncode == 0, result.stderr
    assert discovery.discover_global(other).find("me/py") is not None
    assert not places.prefix.exists()
    assert pyrelune("vix", "install", "--id", "no-slash").returncode != 0



@pytest.mark.parametrize(("package_id", "where"), [
    ("../..", []), ("me/..", ["--project", "project"]), ("./me", []), ("me/.", ["--project", "."]),
])
def test_ids_that_lead_out_of_their_folder_are_refused(
    places: Places, tmp_path: Path, package_id: str, where: list[str]
) -> None:
    (tmp_path / "project").mkdir()
    before = snapshot(tmp_path)
    for command in ("install", "uninstall"):
        result = pyrelune("vix", command, "--id", package_id, "--dry-run", *where, cwd=tmp_path)
        assert result.returncode == 1 and result.stdout == ""
        assert result.stderr == (f"error: Extension id {package_id!r} must look like owner/name "
                                 "(letters, digits, '.', '_', '-'; neither part '.' or '..')\n")
    assert snapshot(tmp_path) == before

def test_disabled_extension_is_reported_and_enable_fixes_it(places: Places) -> None:
    places.disabled_json.parent.mkdir(parents=True)
    places.disabled_json.write_text(json.dumps({"disabled": ["x/y", ID], "theme": "dark"}))
    result = pyrelune("vix", "install")
    assert result.returncode == 0 and "disabled" in result.stderr and "--enable" in result.stderr
    doctor = pyrelune("vix", "doctor")
    assert doctor.returncode == 1 and "FAIL enabled" in doctor.stdout
    assert pyrelune("vix", "install", "--enable").returncode == 0
    assert json.loads(places.disabled_json.read_text()) == {"disabled": ["x/y"], "theme": "dark"}
    assert pyrelune("vix", "doctor").returncode == 0


def test_project_install(places: Places, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    assert pyrelune("vix", "install").returncode == 0
    result = pyrelune("vix", "install", "--project", str(project))
    assert result.returncode == 0, result.stderr
    manifest = json.loads((project / ".vix/deps/pyrelune/vix.json").read_text())
    runtime = manifest["extensions"]["note"]["runtime"]
    assert "command" not in runtime and runtime["path"] == "bin/pyrelune"
    found = discovery.discover_project(project, places, into=discovery.discover_global(places))
    assert found.conflicts(ID) == []
    extension = found.find(ID)
    assert extension is not None and extension.source == "project" and extension.available
    assert run_cell(extension, "print('project')").text() == "project\n"
    assert pyrelune("vix", "doctor", "--project", str(project)).returncode == 0
    assert pyrelune("vix", "uninstall", "--project", str(project)).returncode == 0
    assert list(project.iterdir()) == []
    assert discovery.discover_global(places).find(ID) is not None


def test_doctor_passes_and_prints_the_round_trip_time(places: Places) -> None:
    assert pyrelune("vix", "install").returncode == 0
    result = pyrelune("vix", "doctor")
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    # Nothing to warn of on a default install (the test extras install the data stack):
    # warm start is on, and its process serves the doctor's cell.
    assert [line.split(":")[0] for line in lines] == [
        "ok   descriptor", "ok   registered", "ok   launcher", "ok   enabled", "ok   plots",
        "ok   warm start", "ok   round trip", "note"]
    assert "warm start: on (the launcher): warm process " in lines[5]
    assert "preloaded: numpy, pandas, matplotlib;" in lines[5]
    assert "it exits after 10 idle minutes" in lines[5]
    assert " ms " in lines[-2]
    assert "reloads its extensions" in lines[-1]


def test_install_and_enable_say_that_vix_note_must_reload(places: Places) -> None:
    installed = pyrelune("vix", "install")
    assert "only when it reloads its extensions" in installed.stdout, installed.stdout
    assert "/api/extensions/reload" in installed.stdout
    places.disabled_json.parent.mkdir(parents=True, exist_ok=True)
    places.disabled_json.write_text(json.dumps({"disabled": [ID]}))
    enabled = pyrelune("vix", "install", "--enable")
    assert enabled.returncode == 0, enabled.stderr
    assert "only when it reloads its extensions" in enabled.stdout, enabled.stdout


def test_doctor_fails_when_not_installed(places: Places) -> None:
    result = pyrelune("vix", "doctor")
    assert result.returncode == 1 and "fix: run `pyrelune vix install`" in result.stdout


def broken_descriptor(places: Places) -> None:
    document = json.loads(places.installed_json.read_text())
    document["packages"][0]["extensions"]["note"]["api"] = 1
    places.installed_json.write_text(json.dumps(document))


def broken_runtime_mode(places: Places) -> None:
    document = json.loads(places.installed_json.read_text())
    document["packages"][0]["extensions"]["note"]["runtime"]["mode"] = "kernel"
    places.installed_json.write_text(json.dumps(document))


def missing_launcher(places: Places) -> None:
    (places.bin_dir / "pyrelune").unlink()


def not_executable(places: Places) -> None:
    (places.bin_dir / "pyrelune").chmod(0o644)


def interpreter_gone(places: Places) -> None:
    path = places.bin_dir / "pyrelune"
    path.write_text(path.read_text().replace(sys.executable, "/nonexistent/python3"))


def conflicting_extension(places: Places) -> None:
    document = json.loads(places.installed_json.read_text())
    document["packages"].insert(0, {**document["packages"][0], "id": "someone/python"})
    places.installed_json.write_text(json.dumps(document))


def malformed(places: Places) -> None:
    places.installed_json.write_text("{")


@pytest.mark.parametrize(("breakage", "failing"), [
    (broken_descriptor, "descriptor"), (broken_runtime_mode, "registered"),
    (missing_launcher, "registered"), (not_executable, "launcher"),
    (interpreter_gone, "launcher"), (conflicting_extension, "registered"),
    (malformed, "descriptor"),
])
def test_doctor_names_each_broken_case(places: Places, breakage: object, failing: str) -> None:
    assert pyrelune("vix", "install").returncode == 0
    breakage(places)  # type: ignore[operator]
    result = pyrelune("vix", "doctor")
    assert result.returncode == 1
    assert f"FAIL {failing}:" in result.stdout
    assert "fix:" in result.stdout


def test_sh_launcher_for_a_venv_whose_path_has_spaces(places: Places, tmp_path: Path,
                                                      runtime: Path) -> None:
    import sysconfig

    from pyrelune.vix import descriptor, install

    venv = tmp_path / "my envs" / "py env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    # The new environment sees this one's packages (pyrelune included) through a .pth file.
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "outer.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n")
    target = install.Target(ID, str(venv / "bin" / "python"), descriptor.load())
    install.apply(install.plan_global_install(places, target))
    launcher = places.bin_dir / "pyrelune"
    assert launcher.read_text().startswith("#!/bin/sh\n")
    source = b'{"source": "import sys; print(sys.prefix); print(sys.path[0])"}'
    result = subprocess.run([str(launcher)], input=source, capture_output=True,
                            env={"XDG_RUNTIME_DIR": str(runtime)}, cwd=str(tmp_path), timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stdout"] == f"{venv}\n{tmp_path}\n"


def test_a_process_left_holding_the_pipes_is_reported(tmp_path: Path) -> None:
    script = tmp_path / "leaky"
    script.write_text("#!/bin/sh\ncat >/dev/null\n(sleep 30 &)\necho '{\"ok\": true}'\n")
    script.chmod(0o755)
    exchange = host.run(str(script), b"{}", timeout=3)
    assert "left a process" in exchange.failure
    assert not host.interpret(exchange).ok
