"""The Vix Note discovery reader against files written by hand in Vix's own formats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyrelune.vix import discovery
from pyrelune.vix.places import Places

NOTE: dict[str, Any] = {
    "api": "1",
    "runtime": {"protocol": "vix-note-extension-1", "command": "pyrelune", "mode": "oneshot"},
    "cellTypes": [{"id": " Python ", "label": "Python", "language": "python",
                   "executable": True, "aliases": ["PY", 3, ""]}],
}


def setup(tmp_path: Path, packages: list[Any], disabled: list[str] | None = None) -> Places:
    places = Places(tmp_path / "prefix", tmp_path / "home")
    places.prefix.mkdir()
    places.installed_json.write_text(json.dumps({"packages": packages}))
    if disabled is not None:
        places.disabled_json.parent.mkdir(parents=True)
        places.disabled_json.write_text(json.dumps({"disabled": disabled}))
    return places


def package(package_id: str, note: Any = NOTE, **extra: Any) -> dict[str, Any]:
    return {"id": package_id, "version": "0.1.2", "installed_path": "/x",
            "extensions": {"note": note}, **extra}


def test_global_command_resolves_in_prefix_bin(tmp_path: Path) -> None:
    places = setup(tmp_path, [package("o/p")])
    (places.bin_dir).mkdir()
    (places.bin_dir / "pyrelune").write_text("")
    extension = discovery.discover_global(places).find("o/p")
    assert extension is not None and extension.available and extension.enabled
    assert extension.command == str(places.bin_dir / "pyrelune")
    assert extension.cell_types == ["python"] and extension.aliases == {"python": ["py"]}


def test_missing_command_makes_it_unavailable(tmp_path: Path) -> None:
    extension = discovery.discover_global(setup(tmp_path, [package("o/p")])).find("o/p")
    assert extension is not None and not extension.available
    assert any("not found" in d for d in extension.diagnostics)


def test_wrong_types_are_reported_as_host_crashes(tmp_path: Path) -> None:
    bad_note = {**NOTE, "cellTypes": [{**NOTE["cellTypes"][0], "executable": "yes"}]}
    found = discovery.discover_global(setup(tmp_path, [package("o/p", version=2),
                                                       package("o/q", bad_note)]))
    assert found.extensions == []
    assert len(found.skipped) == 2 and all("crashes Vix Note" in s for s in found.skipped)


def test_reserved_and_conflicting_cell_types(tmp_path: Path) -> None:
    cpp = {**NOTE, "cellTypes": [{"id": "CPP", "executable": True}]}
    found = discovery.discover_global(setup(tmp_path, [package("a/first"), package("b/second"),
                                                       package("c/cpp", cpp)]))
    assert found.conflicts("b/second") == [
        "cell type 'python' is rejected: a/first registered it first"]
    assert found.conflicts("a/first") == []
    cpp_extension = found.find("c/cpp")
    assert cpp_extension is not None and not cpp_extension.available


def test_disabled_list_and_a_broken_one(tmp_path: Path) -> None:
    places = setup(tmp_path, [package("o/p")], disabled=["o/p"])
    extension = discovery.discover_global(places).find("o/p")
    assert extension is not None and not extension.enabled
    places.disabled_json.write_text("{not json")
    assert discovery.disabled_ids(places) == []


def test_project_id_defaults_name_to_folder_and_path_resolves_inside(tmp_path: Path) -> None:
    places = setup(tmp_path, [])
    folder = tmp_path / "proj" / ".vix" / "deps" / "pyrelune"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "run").write_text("")
    note = {**NOTE, "runtime": {"protocol": "vix-note-extension-1", "mode": "oneshot",
                                "path": "bin/run"}}
    (folder / "vix.json").write_text(json.dumps({"namespace": "o", "extensions": {"note": note}}))
    extension = discovery.discover_project(tmp_path / "proj", places).find("o/pyrelune")
    assert extension is not None and extension.available and extension.source == "project"
    assert extension.command == str(folder / "bin" / "run")


def test_malformed_installed_json_is_ignored_with_a_reason(tmp_path: Path) -> None:
    places = setup(tmp_path, [])
    places.installed_json.write_text('{"packages": [')
    found = discovery.discover_global(places)
    assert found.extensions == [] and "not valid JSON" in found.skipped[0]
