"""`pyrelune jupyter install|uninstall` as a user runs them, checked with Jupyter's own tools:
`jupyter kernelspec list` and jupyter_client's KernelSpecManager must find what was written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.launch import SCRIPT

pytest.importorskip("jupyter_client", reason="Jupyter's own tools read the kernelspec back")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A user whose Jupyter folders are all under tmp_path, and who has no other kernels."""
    home = tmp_path / "home"
    home.mkdir()
    chosen = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "XDG_"))}
    return {**chosen, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(tmp_path / "config")}


def pyrelune(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, "jupyter", *args],
                          capture_output=True, text=True, timeout=120, env=env)


def listed(env: dict[str, str]) -> dict[str, dict[str, object]]:
    """What `jupyter kernelspec list` shows: kernel name -> {resource_dir, spec}."""
    result = subprocess.run([sys.executable, "-m", "jupyter", "kernelspec", "list", "--json"],
                            capture_output=True, text=True, timeout=120, env=env, check=True)
    specs: dict[str, dict[str, object]] = json.loads(result.stdout)["kernelspecs"]
    return specs


def found_by_manager(env: dict[str, str], name: str) -> dict[str, object]:
    """The spec as jupyter_client's KernelSpecManager (what JupyterLab uses) loads it."""
    code = ("import json, sys\nfrom jupyter_client.kernelspec import KernelSpecManager\n"
            f"spec = KernelSpecManager().get_kernel_spec({name!r})\n"
            "print(json.dumps(spec.to_dict()))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, env=env, check=True)
    found: dict[str, object] = json.loads(result.stdout)
    return found


def test_user_install_is_found_by_jupyter(env: dict[str, str]) -> None:
    result = pyrelune(env, "install", "--env", "ANSWER=42", "--env", "URL=a=b")
    assert result.returncode == 0, result.stderr
    user_dir = Path(env["HOME"]) / ".local/share/jupyter/kernels/pyrelune"
    assert f"wrote {user_dir / 'kernel.json'}" in result.stdout
    assert "Python (pyrelune)" in result.stdout
    specs = listed(env)
    assert Path(str(specs["pyrelune"]["resource_dir"])) == user_dir
    spec = found_by_manager(env, "pyrelune")
    # The console script's interpreter: `python` or `python3` of the same environment, by
    # which one ran pip.
    argv = spec["argv"]
    assert isinstance(argv, list) and isinstance(argv[0], str), argv
    assert os.path.samefile(argv[0], sys.executable), argv
    assert os.path.dirname(argv[0]) == os.path.dirname(os.path.abspath(sys.executable))
    assert argv[1:] == ["-m", "pyrelune", "--mode", "jupyter", "-f", "{connection_file}"]
    assert spec["display_name"] == "Python (pyrelune)"
    assert spec["language"] == "python"
    assert spec["interrupt_mode"] == "message"
    assert spec["env"] == {"ANSWER": "42", "URL": "a=b"}
    again = pyrelune(env, "install", "--env", "ANSWER=42", "--env", "URL=a=b")
    assert again.returncode == 0 and "nothing changed" in again.stdout, again


@pytest.mark.parametrize(("path", "last"), [
    # this environment's bin: jupyter and jupyter-console (the test extra's)
    ([Path(sys.executable).parent], "or start it with `jupyter console --kernel pyrelune`"),
    ([], "Jupyter is not installed here: pip install jupyterlab"),
])
def test_the_last_line_says_what_to_run_by_what_is_installed(
        env: dict[str, str], path: list[Path], last: str) -> None:
    """Where only pyrelune is installed, `jupyter console` would fail as not found."""
    searched = os.pathsep.join([*map(str, path), "/usr/bin", "/bin"])
    if not path:
        assert not any((Path(folder) / "jupyter").exists() for folder in ("/usr/bin", "/bin"))
    result = pyrelune({**env, "PATH": searched}, "install")
    assert result.returncode == 0, result.stderr
    assert last in result.stdout.splitlines()[-1], result.stdout


def test_name_display_name_and_data_dir(env: dict[str, str], tmp_path: Path) -> None:
    env = {**env, "JUPYTER_DATA_DIR": str(tmp_path / "data")}
    result = pyrelune(env, "install", "--user", "--name", "PyreLune-Dev",
                      "--display-name", "Python 3 (pyrelune dev)")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "data/kernels/pyrelune-dev/kernel.json").is_file()
    assert found_by_manager(env, "pyrelune-dev")["display_name"] == "Python 3 (pyrelune dev)"
    removed = pyrelune(env, "uninstall", "--name", "pyrelune-dev")
    assert removed.returncode == 0, removed.stderr
    assert "pyrelune-dev" not in listed(env)
    assert not (tmp_path / "data/kernels/pyrelune-dev").exists()


def test_prefix_install_is_found_through_jupyter_path(env: dict[str, str],
                                                       tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    result = pyrelune(env, "install", "--prefix", str(prefix))
    assert result.returncode == 0, result.stderr
    assert f"JUPYTER_PATH={prefix}/share/jupyter" in result.stderr  # how Jupyter finds it
    assert "pyrelune" not in listed(env)
    seen = {**env, "JUPYTER_PATH": str(prefix / "share/jupyter")}
    assert Path(str(listed(seen)["pyrelune"]["resource_dir"])) == (
        prefix / "share/jupyter/kernels/pyrelune")
    assert pyrelune(env, "uninstall", "--prefix", str(prefix)).returncode == 0
    assert "pyrelune" not in listed(seen)


def test_dry_run_prints_the_spec_and_writes_nothing(env: dict[str, str]) -> None:
    result = pyrelune(env, "install", "--dry-run", "--display-name", "Mine")
    assert result.returncode == 0, result.stderr
    path = Path(env["HOME"]) / ".local/share/jupyter/kernels/pyrelune/kernel.json"
    assert f"would write {path}" in result.stdout
    printed = json.loads(result.stdout[result.stdout.index("{"):result.stdout.rindex("}") + 1])
    assert printed["display_name"] == "Mine" and printed["argv"][-1] == "{connection_file}"
    assert not Path(env["HOME"], ".local").exists()
    assert pyrelune(env, "install").returncode == 0
    dry = pyrelune(env, "uninstall", "--dry-run")
    assert f"would remove {path}" in dry.stdout, dry
    assert path.is_file()


def test_only_a_sys_prefix_install_names_the_provisioner(env: dict[str, str]) -> None:
    """A user folder is read by front ends of every environment, and jupyter_client hides a
    kernel whose provisioner it cannot load: only this environment's folder names it."""
    for args, named in ((["--user"], False), (["--sys-prefix"], True),
                        (["--prefix", sys.prefix], True)):
        result = pyrelune(env, "install", "--dry-run", *args)
        assert result.returncode == 0, result.stderr
        printed = json.loads(result.stdout[result.stdout.index("{"):
                                           result.stdout.rindex("}") + 1])
        assert ("kernel_provisioner" in printed["metadata"]) is named, args


def test_a_sys_prefix_install_is_listed_and_starts_through_its_provisioner(
        env: dict[str, str]) -> None:
    """jupyter_client lists (and starts) a kernel only where it can load the provisioner
    the kernelspec names: in this environment it can, through pyrelune's entry point."""
    name = f"pyrelune-test-{os.getpid()}"  # this environment's folder is shared
    result = pyrelune(env, "install", "--sys-prefix", "--name", name)
    assert result.returncode == 0, result.stderr
    try:
        assert name in listed(env)
        spec = found_by_manager(env, name)
        assert spec["metadata"]["kernel_provisioner"]["provisioner_name"] == (  # type: ignore[index]
            "pyrelune-provisioner")
        code = ("from jupyter_client.manager import start_new_kernel\n"
                f"manager, client = start_new_kernel(kernel_name={name!r}, startup_timeout=120)\n"
                "print(type(manager.provisioner).__name__)\n"
                "client.execute_interactive('print(6 * 7)', timeout=120)\n"
                "client.stop_channels()\n"
                "manager.shutdown_kernel(now=True)\n")
        started = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 timeout=300, env=env)
        assert started.returncode == 0, started.stderr
        assert started.stdout.splitlines() == ["ListeningProvisioner", "42"], started
    finally:
        assert pyrelune(env, "uninstall", "--sys-prefix", "--name", name).returncode == 0
    assert name not in listed(env)


def test_uninstall_leaves_other_kernels_alone(env: dict[str, str], tmp_path: Path) -> None:
    theirs = Path(env["HOME"]) / ".local/share/jupyter/kernels/python3/kernel.json"
    theirs.parent.mkdir(parents=True)
    theirs.write_text(json.dumps({"argv": ["python", "-m", "ipykernel_launcher", "-f",
                                           "{connection_file}"],
                                  "display_name": "Python 3", "language": "python"}))
    result = pyrelune(env, "uninstall", "--name", "python3")
    assert result.returncode == 1 and "not pyrelune's" in result.stderr, result
    result = pyrelune(env, "install", "--name", "python3")
    assert result.returncode == 1 and "another kernel's" in result.stderr, result
    assert "ipykernel_launcher" in theirs.read_text()
    nothing = pyrelune(env, "uninstall")
    assert nothing.returncode == 0 and "was not installed" in nothing.stdout, nothing


@pytest.mark.parametrize(("args", "said"), [
    (["install", "--env", "NOVALUE"], "--env 'NOVALUE': write it as NAME=VALUE"),
    (["install", "--user", "--sys-prefix"], "--user and --sys-prefix name different places"),
    (["uninstall", "--sys-prefix", "--prefix", "/x"], "--sys-prefix and --prefix"),
    (["install", "--name", "two words"], "--name 'two words': a kernel name is letters"),
    (["install", "--display-name", ""], "--display-name is empty"),
])
def test_bad_options_are_refused_clearly(env: dict[str, str], args: list[str],
                                         said: str) -> None:
    result = pyrelune(env, *args)
    assert result.returncode == 1, result
    assert f"error: {said}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not Path(env["HOME"], ".local").exists()


def test_a_prefix_that_cannot_be_written_is_refused_clearly(env: dict[str, str],
                                                             tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = pyrelune(env, "install", "--prefix", str(blocker))
    assert result.returncode == 1, result
    assert f"error: cannot change {blocker}/share" in result.stderr
    assert "Traceback" not in result.stderr
    if os.geteuid() == 0:
        return  # root writes anywhere: the permission case cannot be made here
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    result = pyrelune(env, "install", "--prefix", str(locked))
    assert result.returncode == 1 and "permission denied; use --user" in result.stderr, result
