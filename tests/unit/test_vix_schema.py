"""extension.json and its schema: every Vix Note rule, checked with jsonschema itself."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pyrelune.vix import descriptor

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "extension.schema.json").read_text())
SHIPPED = json.loads((ROOT / "extension.json").read_text())


def errors(instance: Any, definition: str | None = None) -> list[str]:
    spec = SCHEMA if definition is None else {"$defs": SCHEMA["$defs"],
                                              "$ref": f"#/$defs/{definition}"}
    return [e.message for e in jsonschema.Draft202012Validator(spec).iter_errors(instance)]


def edited(**changes: Any) -> dict[str, Any]:
    """The shipped descriptor with `extensions.note` fields (dotted paths) replaced."""
    document: dict[str, Any] = copy.deepcopy(SHIPPED)
    for path, value in changes.items():
        node = document["extensions"]["note"]
        *parents, last = path.split("__")
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return document


DELETE = object()


def test_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_shipped_extension_json_follows_every_rule() -> None:
    assert errors(SHIPPED) == []


def test_the_installed_package_ships_the_same_descriptor() -> None:
    assert descriptor.load() == SHIPPED
    shipped = descriptor.DESCRIPTOR_FILE.read_bytes()
    assert shipped == (ROOT / "extension.json").read_bytes()


def test_version_is_not_written_by_hand() -> None:
    assert "version" not in SHIPPED
    assert errors({**SHIPPED, "version": "0.2.0"})


@pytest.mark.parametrize("value", ["markdown", " MarkDown ", "HTML", "cpp", "Reply\n", "md",
                                   "\tREPL", "C++", "unknown", " Unknown", "", "   "])
def test_reserved_or_empty_cell_type_ids_are_rejected(value: str) -> None:
    assert errors(edited(cellTypes__0__id=value))


@pytest.mark.parametrize("value", ["md", " Markdown", "HTML", "c++", "REPL", "reply", " "])
def test_reserved_aliases_are_rejected(value: str) -> None:
    assert errors(edited(cellTypes__0__aliases=["py", value]))


@pytest.mark.parametrize("value", ["python", "Py3", "cppx", "mdx", "htmlx"])
def test_other_ids_are_accepted(value: str) -> None:
    assert errors(edited(cellTypes__0__id=value, cellTypes__0__aliases=[value + "a"])) == []


@pytest.mark.parametrize("api", [1, "2", "", None])
def test_api_must_be_the_string_1(api: Any) -> None:
    assert errors(edited(api=api))


@pytest.mark.parametrize("command", ["py/thon", "py thon", "pyrelune\n", "..", ".", "", "pé",
                                     "a\\b", 7])
def test_command_must_be_a_safe_name(command: Any) -> None:
    assert errors(edited(runtime__command=command))


@pytest.mark.parametrize("path", ["/usr/bin/pyrelune", "../pyrelune", "bin/../../x", "..", "",
                                  5])
def test_runtime_path_must_be_relative_without_dotdot(path: Any) -> None:
    assert errors(edited(runtime__command=DELETE, runtime__path=path))


def test_runtime_path_alone_is_accepted_and_both_at_once_rejected() -> None:
    assert errors(edited(runtime__command=DELETE, runtime__path="bin/pyrelune")) == []
    assert errors(edited(runtime__path="bin/pyrelune"))
    assert errors(edited(runtime__command=DELETE))


@pytest.mark.parametrize(("key", "value"), [("protocol", "vix-note-extension-2"),
                                            ("mode", "kernel"), ("mode", None)])
def test_runtime_protocol_and_mode(key: str, value: Any) -> None:
    assert errors(edited(**{f"runtime__{key}": value}))


def test_executable_cell_types_need_a_runtime() -> None:
    assert errors(edited(runtime=DELETE))
    assert errors(edited(runtime=DELETE, cellTypes__0__executable=False)) == []


@pytest.mark.parametrize("icon", ["icon.svg", "assets/icon.png", "a.jpg", "a.jpeg", "a.webp"])
def test_icon_extensions_accepted(icon: str) -> None:
    assert errors(edited(icon=icon)) == []


@pytest.mark.parametrize("icon", ["icon.SVG", "icon.Png", "icon.gif", "/abs/icon.svg",
                                  "../icon.svg", "icon.svg\n", "icon", 3])
def test_icon_must_be_relative_with_a_known_case_sensitive_extension(icon: Any) -> None:
    assert errors(edited(icon=icon))


@pytest.mark.parametrize(("field", "value"), [
    ("capabilities", "execute"), ("capabilities", [1]), ("permissions", [None]),
    ("permissions", {}), ("cellTypes__0__executable", "true"), ("cellTypes__0__label", 1),
    ("cellTypes__0__language", None), ("cellTypes__0__commentLine", ["#"]),
    ("cellTypes__0__commentBlock", 0), ("cellTypes__0__defaultSource", False),
    ("cellTypes__0__placeholder", {}), ("cellTypes__0__aliases", "py"),
    ("cellTypes__0__aliases", [3]), ("cellTypes", []), ("cellTypes", [{}]),
    ("cellTypes", ["python"]),
])
def test_field_types(field: str, value: Any) -> None:
    assert errors(edited(**{field: value}))


@pytest.mark.parametrize("package_id", ["pyrelune", "a/b/c", "a b/c", "owner/name\n", 3])
def test_package_id_is_owner_slash_name(package_id: Any) -> None:
    assert errors({**SHIPPED, "id": package_id})



@pytest.mark.parametrize("package_id", ["../..", "me/..", "./me", "me/.", "../me"])
def test_an_id_whose_part_is_a_dot_folder_is_refused(package_id: str) -> None:
    # Each part becomes a folder name: `packages/../..` would write outside the prefix.
    with pytest.raises(descriptor.InvalidDescriptor, match=r"neither part '\.' or '\.\.'"):
        descriptor.split_id(package_id)


def test_dots_within_an_id_are_fine() -> None:
    assert descriptor.split_id("a.b/...") == ("a.b", "...")
    assert descriptor.split_id("..a/b..") == ("..a", "b..")

def test_installed_package_entry() -> None:
    entry = descriptor.global_entry(SHIPPED, SHIPPED["id"], Path("/p/packages/a/b"), "1.0")
    assert errors(entry, "installedPackage") == []
    for key, value in [("version", 1), ("installed_path", "relative"), ("id", ["x"])]:
        assert errors({**entry, key: value}, "installedPackage"), key


def test_project_manifest_must_use_a_runtime_path() -> None:
    manifest = descriptor.package_manifest(SHIPPED, SHIPPED["id"], {"path": "bin/pyrelune"})
    assert errors(manifest, "projectManifest") == []
    with_command = descriptor.package_manifest(SHIPPED, SHIPPED["id"], {"command": "pyrelune"})
    assert errors(with_command, "projectManifest")


def test_problems_uses_the_same_schema() -> None:
    assert descriptor.problems(SHIPPED) == []
    assert descriptor.problems(edited(api="2"))
