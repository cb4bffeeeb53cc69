"""What `vix install` and `vix uninstall` say they did: a launcher that another environment's
Python started, re-pointed; folders removed, or kept with what they still hold."""

from __future__ import annotations

from pathlib import Path

from pyrelune.vix import descriptor, install, launcher
from pyrelune.vix.places import Places

ID = "me/pyrelune"


def places(tmp_path: Path) -> Places:
    return Places(tmp_path / "prefix", tmp_path / "home")


def target(interpreter: str) -> install.Target:
    return install.Target(ID, interpreter, descriptor.load(), warm="0")


def test_installing_from_another_environment_says_what_the_launcher_started_before(
        tmp_path: Path) -> None:
    where = places(tmp_path)
    install.apply(install.plan_global_install(where, target("/envs/a/bin/python")))
    plan = install.plan_global_install(where, target("/envs/b/bin/python"))
    path = where.bin_dir / "pyrelune"
    assert [c.describe() for c in plan.changes] == [
        f"would write {path} (was /envs/a/bin/python, now /envs/b/bin/python)"]
    assert install.apply(plan) == [
        f"wrote {path} (was /envs/a/bin/python, now /envs/b/bin/python)"]
    assert launcher.interpreter_of(path.read_text()) == "/envs/b/bin/python"


def test_a_launcher_rewritten_for_the_same_environment_says_nothing_more(tmp_path: Path) -> None:
    where = places(tmp_path)
    install.apply(install.plan_global_install(where, target("/envs/a/bin/python")))
    warm = install.Target(ID, "/envs/a/bin/python", descriptor.load(), warm="1")
    assert install.apply(install.plan_global_install(where, warm)) == [
        f"wrote {where.bin_dir / 'pyrelune'}"]


def test_uninstall_says_which_folders_it_removed_and_which_it_kept_and_why(
        tmp_path: Path) -> None:
    where = places(tmp_path)
    install.apply(install.plan_global_install(where, target("/envs/a/bin/python")))
    for name in ("tool", "other", "third", "fourth"):
        (where.bin_dir / name).write_text("#!/bin/sh\n")
    done = install.apply(install.plan_global_uninstall(where, target("/envs/a/bin/python")))
    package = where.package_dir(ID)
    assert done[-4:] == [
        f"removed folder {package}", f"removed folder {package.parent}",
        f"removed folder {package.parent.parent}",
        f"kept folder {where.bin_dir}: holds fourth, other, third and 1 more"]
    assert sorted(p.name for p in where.bin_dir.iterdir()) == ["fourth", "other", "third", "tool"]
    assert not package.parent.parent.exists()
