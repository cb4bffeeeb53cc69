"""The kernelspec as plain values: which folder, what kernel.json holds, which options refuse."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pyrelune.jupyter import kernelspec
from pyrelune.jupyter.kernelspec import KernelspecError, Place
from pyrelune.vix import install


def test_user_dir_follows_jupyter_core_on_linux(tmp_path: Path) -> None:
    home = str(tmp_path)
    assert kernelspec.user_data_dir({"HOME": home}, "linux") == tmp_path / ".local/share/jupyter"
    xdg = {"HOME": home, "XDG_DATA_HOME": "/xdg"}
    assert kernelspec.user_data_dir(xdg, "linux") == Path("/xdg/jupyter")
    chosen = {**xdg, "JUPYTER_DATA_DIR": "/data/j"}
    assert kernelspec.user_data_dir(chosen, "linux") == Path("/data/j")
    # An empty JUPYTER_DATA_DIR is unset, for jupyter_core too.
    assert kernelspec.user_data_dir({**xdg, "JUPYTER_DATA_DIR": ""}, "linux") == Path(
        "/xdg/jupyter")


def test_user_dir_on_macos_with_and_without_platform_dirs(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert kernelspec.user_data_dir(env, "darwin") == tmp_path / "Library/Jupyter"
    platform = {**env, "JUPYTER_PLATFORM_DIRS": "1"}
    assert kernelspec.user_data_dir(platform, "darwin") == (
        tmp_path / "Library/Application Support/jupyter")
    off = {**env, "JUPYTER_PLATFORM_DIRS": "off"}
    assert kernelspec.user_data_dir(off, "darwin") == tmp_path / "Library/Jupyter"


def test_places() -> None:
    assert kernelspec.place(sys_prefix=True) == Place(
        "sys-prefix", Path(sys.prefix) / "share/jupyter")
    assert kernelspec.place(prefix="/opt/k").kernels == Path("/opt/k/share/jupyter/kernels")
    assert kernelspec.place(env={"JUPYTER_DATA_DIR": "/d"}).how == "user"
    assert kernelspec.place(user=True, env={"JUPYTER_DATA_DIR": "/d"}).data_dir == Path("/d")


@pytest.mark.parametrize(("options", "names"), [
    ({"user": True, "sys_prefix": True}, "--user and --sys-prefix"),
    ({"user": True, "prefix": "/p"}, "--user and --prefix"),
    ({"sys_prefix": True, "prefix": "/p"}, "--sys-prefix and --prefix"),
])
def test_conflicting_places_are_refused(options: dict[str, object], names: str) -> None:
    with pytest.raises(KernelspecError, match=names):
        kernelspec.place(**options)  # type: ignore[arg-type]


def test_an_empty_prefix_is_refused() -> None:
    with pytest.raises(KernelspecError, match="--prefix is empty"):
        kernelspec.place(prefix="")


def test_env_options() -> None:
    assert kernelspec.parse_env(["A=1", "B=x=y", "C="]) == {"A": "1", "B": "x=y", "C": ""}
    with pytest.raises(KernelspecError, match="NAME=VALUE"):
        kernelspec.parse_env(["NOEQUALS"])
    with pytest.raises(KernelspecError, match="name is missing"):
        kernelspec.parse_env(["=value"])
    with pytest.raises(KernelspecError, match="given twice"):
        kernelspec.parse_env(["A=1", "A=2"])


def test_kernel_names_are_lowercased_and_checked() -> None:
    assert kernelspec.kernel_name("My-Kernel.2_x") == "my-kernel.2_x"
    for bad in ("", "a b", "../up", "é"):
        with pytest.raises(KernelspecError, match="letters, digits"):
            kernelspec.kernel_name(bad)


def test_the_spec_starts_this_interpreter_in_jupyter_mode() -> None:
    spec = kernelspec.spec("/env/bin/python", env={"K": "V"})
    assert spec["argv"] == ["/env/bin/python", "-m", "pyrelune", "--mode", "jupyter",
                            "-f", "{connection_file}"]
    assert spec["display_name"] == "Python (pyrelune)"
    assert spec["language"] == "python"
    assert spec["interrupt_mode"] == "message"
    assert spec["env"] == {"K": "V"}
    assert spec["metadata"]["pyrelune"]["version"] == __import__("pyrelune").__version__
    # jupyter_client's transport_encryption="required" starts only a kernel that says so
    assert spec["metadata"]["supported_encryption"] == ["curve"]
    with pytest.raises(KernelspecError, match="display-name is empty"):
        kernelspec.spec("/p", " ")


def test_the_provisioner_is_named_only_in_this_environments_folder(tmp_path: Path) -> None:
    assert "kernel_provisioner" not in kernelspec.spec("/py")["metadata"]
    named = kernelspec.spec("/py", provisioned=True)["metadata"]
    assert named["kernel_provisioner"] == {"provisioner_name": "pyrelune-provisioner",
                                           "config": {}}
    assert named["pyrelune"]["version"]
    env = str(tmp_path / "env")
    assert kernelspec.provisioned(Place("sys-prefix", Path(env, "share/jupyter")), env)
    assert kernelspec.provisioned(Place("prefix", Path(env, "share/jupyter")), env)
    assert not kernelspec.provisioned(Place("prefix", tmp_path / "other/share/jupyter"), env)
    assert not kernelspec.provisioned(Place("user", tmp_path / ".local/share/jupyter"), env)


def test_install_plans_one_file_and_then_nothing(tmp_path: Path) -> None:
    where = Place("prefix", tmp_path)
    spec = kernelspec.spec("/py")
    plan = kernelspec.plan_install(where, "pyrelune", spec)
    assert [(c.action, c.path) for c in plan.changes] == [
        ("write", tmp_path / "kernels/pyrelune/kernel.json")]
    install.apply(plan)
    assert json.loads((tmp_path / "kernels/pyrelune/kernel.json").read_text()) == spec
    assert kernelspec.plan_install(where, "pyrelune", spec).changes == []


def test_another_kernels_spec_is_never_replaced_or_removed(tmp_path: Path) -> None:
    where = Place("prefix", tmp_path)
    theirs = tmp_path / "kernels/python3/kernel.json"
    theirs.parent.mkdir(parents=True)
    theirs.write_text(json.dumps({"argv": ["python", "-m", "ipykernel_launcher"],
                                  "display_name": "Python 3", "language": "python"}))
    with pytest.raises(KernelspecError, match="another kernel's"):
        kernelspec.plan_install(where, "python3", kernelspec.spec("/py"))
    with pytest.raises(KernelspecError, match="not pyrelune's"):
        kernelspec.plan_uninstall(where, "python3")
    theirs.write_text("{not json")
    with pytest.raises(KernelspecError, match="another kernel's"):
        kernelspec.plan_install(where, "python3", kernelspec.spec("/py"))


def test_uninstall_plans_the_file_then_its_folder(tmp_path: Path) -> None:
    where = Place("prefix", tmp_path)
    assert kernelspec.plan_uninstall(where, "pyrelune").changes == []
    install.apply(kernelspec.plan_install(where, "pyrelune", kernelspec.spec("/py")))
    plan = kernelspec.plan_uninstall(where, "pyrelune")
    folder = tmp_path / "kernels/pyrelune"
    assert [(c.action, c.path) for c in plan.changes] == [
        ("remove", folder / "kernel.json"), ("rmdir", folder)]
    install.apply(plan)
    assert not folder.exists()


def test_a_prefix_jupyter_does_not_read_gets_a_note() -> None:
    where = kernelspec.place(prefix="/opt/k")
    note = kernelspec.path_note(where, {})
    assert note is not None and "JUPYTER_PATH=/opt/k/share/jupyter" in note
    assert kernelspec.path_note(where, {"JUPYTER_PATH": "/x:/opt/k/share/jupyter"}) is None
    assert kernelspec.path_note(kernelspec.place(sys_prefix=True), {}) is None


def test_an_environment_without_pyzmq_is_told_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert kernelspec.extra_note() is None  # the test extras have it
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "zmq" else real(name, *args))
    note = kernelspec.extra_note()
    assert note is not None and "pip install 'pyzmq>=" in note, note


def _commands(folder: Path, *names: str) -> str:
    """A PATH of one folder holding executables named `names`."""
    folder.mkdir()
    for name in names:
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)
    return str(folder)


def test_the_next_step_where_jupyter_and_its_console_are_installed(tmp_path: Path) -> None:
    path = _commands(tmp_path / "bin", "jupyter", "jupyter-console")
    assert kernelspec.next_step("Py", "k", path) == (
        'pick "Py" in JupyterLab, Notebook or VS Code, or start it with '
        "`jupyter console --kernel k`")


def test_the_next_step_where_jupyter_has_no_console(tmp_path: Path) -> None:
    path = _commands(tmp_path / "bin", "jupyter", "jupyter-lab")
    assert kernelspec.next_step("Py", "k", path) == (
        'pick "Py" in JupyterLab, Notebook or VS Code; in a terminal: pip install '
        "jupyter-console, then jupyter console --kernel k")


def test_the_next_step_where_no_jupyter_is_installed(tmp_path: Path) -> None:
    path = _commands(tmp_path / "bin", "python", "jupyter-console")  # no `jupyter` to run it
    assert kernelspec.next_step("Py", "k", path) == (
        "Jupyter is not installed here: pip install jupyterlab (or the front end you use), "
        'then pick "Py" in JupyterLab, Notebook or VS Code')


@pytest.mark.parametrize(("options", "said"), [
    ((None, "a", None, None), "--remote-hosts go with --provisioner"),
    ((None, None, "/p", "img"), "--remote-python and --image go with --provisioner"),
    (("ssh", "a", None, None), "expected distributed, kubernetes, docker"),
    (("distributed", None, None, None), "needs --remote-hosts"),
    (("distributed", "a", None, "img"), "--image goes with --provisioner kubernetes or docker"),
    (("kubernetes", None, None, None), "needs --image IMAGE"),
    (("docker", "a", None, "img"), "go with --provisioner distributed"),
    (("docker", None, "/p", "img"), "go with --provisioner distributed"),
])
def test_the_remote_options_go_with_their_provisioner(
        options: tuple[str | None, str | None, str | None, str | None], said: str) -> None:
    with pytest.raises(kernelspec.KernelspecError, match=said):
        kernelspec.remote_options(*options)


@pytest.mark.parametrize("options", [
    (None, None, None, None), ("distributed", "a,b", "/p", None),
    ("kubernetes", None, None, "img"), ("docker", None, None, "img")])
def test_each_provisioner_with_what_it_needs_is_taken(
        options: tuple[str | None, str | None, str | None, str | None]) -> None:
    kernelspec.remote_options(*options)


@pytest.mark.parametrize("image", ["", " ", "two words"])
def test_a_container_kernelspec_needs_an_image_name(image: str) -> None:
    with pytest.raises(kernelspec.KernelspecError, match="--image"):
        kernelspec.container(kernelspec.spec("/py"), "docker", image, "/py", Path("/k"))


def test_uninstall_removes_the_launch_scripts_it_wrote_and_keeps_others(tmp_path: Path) -> None:
    where = Place("prefix", tmp_path)
    kernel: dict[str, Any] = {"metadata": {kernelspec.MARK: {}}}
    files = {"scripts/launch_kubernetes.py": b"#", "scripts/kernel-pod.yaml.j2": b"#"}
    install.apply(kernelspec.plan_install(where, "k", kernel, files))
    assert (where.kernels / "k" / "scripts" / "kernel-pod.yaml.j2").read_bytes() == b"#"
    (where.kernels / "k" / "scripts" / "mine.txt").write_text("a user's own")
    done = install.apply(kernelspec.plan_uninstall(where, "k"))
    assert sorted(p.name for p in (where.kernels / "k").rglob("*")) == ["mine.txt", "scripts"]
    assert any("kept folder" in line for line in done)
