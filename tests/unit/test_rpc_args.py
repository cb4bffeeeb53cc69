"""The rpc kernel's typer-free parser against typer's own, on the same argument lists.

Wherever `rpcargs.parse` gives values, typer must give the same ones for the
same arguments (and accept them); wherever typer refuses, `parse` must hand
over (None). Argument lists are generated from every option's forms, good
values and bad ones, and stray words.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest
import typer.main

from pyrelune.cli import rpcargs
from pyrelune.cli.app import Mode, app


def typer_params(args: list[str]) -> dict[str, Any] | None:
    """What typer would pass the root command for `args`; None if it refuses them or stops."""
    command = typer.main.get_command(app)
    try:
        context = command.make_context("pyrelune", list(args))
    except (Exception, SystemExit):  # a usage error, --help, --version
        return None
    # The subcommand's words: click 8.2 keeps them as `_protected_args` and deprecates the
    # public name (a warning at every read); before 8.2 only the public one exists.
    following = getattr(context, "_protected_args", None)
    if following is None:
        following = context.protected_args
    if following or context.args:  # a command follows: not the rpc kernel
        return None
    params = dict(context.params)
    # What typer's callback is called with (typer before 0.22 converts there, not in the context).
    params["mode"] = Mode(params["mode"])
    for option in rpcargs.OPTIONS.values():  # typer's default for a repeatable one is ()
        if option.kind == rpcargs.MANY:
            params[option.param] = list(params[option.param]) or None
        elif option.kind == rpcargs.FILE and params[option.param] is not None:
            params[option.param] = Path(params[option.param])
    return params


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("rpcargs")
    (folder / "token").write_text("secret\n")
    unreadable = folder / "unreadable"
    unreadable.write_text("x")
    unreadable.chmod(0)
    return {"file": str(folder / "token"), "dir": str(folder), "missing": str(folder / "none"),
            "unreadable": str(unreadable)}


def values_for(kind: str, files: dict[str, str]) -> list[str]:
    good = [files["file"]] if kind == rpcargs.FILE else [
        "127.0.0.1:0", "4096", "0.5", "x", "a=b", "https://a.example", "é", " spaced "]
    return [*good, "", "-x", "--help", "--token", files["dir"], files["missing"],
            files["unreadable"]]


def words(files: dict[str, str]) -> list[list[str]]:
    """Pieces of argument lists: each option in each form with each value, and strays."""
    pieces: list[list[str]] = [["--mode", "rpc"], ["--mode=rpc"], ["--mode", "lines"],
                               ["--mode=RPC"], ["--mode"], ["--help"], ["--version"],
                               ["--timeout", "3"], ["--bogus"], ["--"], ["validate"], ["rpc"],
                               ["-h"], ["--listen"], ["--list", "1"]]
    for option in rpcargs.OPTIONS.values():
        for value in values_for(option.kind, files):
            pieces += [[option.name, value], [f"{option.name}={value}"]]
    return pieces


def check(args: list[str]) -> bool:
    """Fail if the two parsers disagree on `args`; whether the fast one took them."""
    fast = rpcargs.parse(args)
    if fast is None:
        return False
    slow = typer_params(args)
    assert slow is not None, f"typer refuses {args!r}, the fast parser took it"
    assert slow["mode"] is Mode.rpc and slow["timeout"] is None and not slow["version"]
    assert {param: slow[param] for param in rpcargs.OPTIONS} == fast, args
    assert outcome(fast) == outcome(slow), args
    return True


def outcome(values: dict[str, Any]) -> dict[str, Any] | tuple[str, str | None]:
    """The kernel's settings from `values`, or the usage error."""
    try:
        return vars(rpcargs.settings(values))
    except rpcargs.Usage as refused:
        return refused.message, refused.hint


def test_both_parsers_agree_on_generated_argument_lists(files: dict[str, str]) -> None:
    pieces = words(files)
    rng = random.Random(15)
    taken = 0
    for _ in range(1500):
        chosen = [piece for _ in range(rng.randint(1, 5)) for piece in rng.choice(pieces)]
        if rng.random() < 0.7:  # most lists name the mode somewhere
            chosen[rng.randint(0, len(chosen)):0] = rng.choice([["--mode", "rpc"], ["--mode=rpc"]])
        taken += check(chosen)
    assert taken > 100  # the fast path was exercised, not only its refusals


def test_every_well_formed_option_is_read_without_typer(files: dict[str, str]) -> None:
    """Each option, in both forms, next to the mode in both forms and orders, is taken."""
    for option, equals, mode, first in itertools.product(
            rpcargs.OPTIONS.values(), (False, True), (["--mode", "rpc"], ["--mode=rpc"]),
            (False, True)):
        value = files["file"] if option.kind == rpcargs.FILE else "127.0.0.1:0"
        given = [f"{option.name}={value}"] if equals else [option.name, value]
        assert check(given + mode if first else mode + given), (option.name, equals)
    every = ["--mode", "rpc"]
    for option in rpcargs.OPTIONS.values():
        value = files["file"] if option.kind == rpcargs.FILE else "8"
        every += [option.name, value]
    assert check([*every, "--allow-origin", "https://b.example"])


@pytest.mark.parametrize("args", [
    [], ["--mode", "lines"], ["--mode", "rpc", "--help"], ["--mode", "rpc", "--listen"],
    ["--mode", "rpc", "--token", "a", "--token", "b"], ["--mode", "rpc", "--mode", "rpc"],
    ["--mode", "rpc", "--listen", "--token"], ["--mode", "rpc", "--", "--listen", "1"],
    ["--mode", "rpc", "--timeout", "3"], ["--mode", "rpc", "vix", "doctor"],
])
def test_anything_else_is_left_to_typer(args: list[str]) -> None:
    assert rpcargs.parse(args) is None


def test_typer_knows_the_same_rpc_options_as_the_table() -> None:
    command = typer.main.get_command(app)
    rpc = {param.name: param for param in command.params if param.name in rpcargs.OPTIONS}
    assert set(rpc) == set(rpcargs.OPTIONS)
    for name, param in rpc.items():
        option = rpcargs.OPTIONS[name]
        assert param.opts == [option.name]
        assert getattr(param, "help", None) == option.help and param.metavar == option.metavar
        assert getattr(param, "multiple", False) is (option.kind == rpcargs.MANY)


def test_settings_refuse_what_the_command_line_refused(files: dict[str, str]) -> None:
    values = rpcargs.parse(["--mode", "rpc", "--token-file", files["file"]])
    assert values is not None
    with pytest.raises(rpcargs.Usage) as refused:
        rpcargs.settings(values)
    assert (refused.value.message, refused.value.hint) == (
        "--token-file is for WebSocket kernels: add --listen", "--token-file")
    chosen = rpcargs.settings({**values, "listen": "9", "token_file": Path(files["file"])})
    assert (chosen.listen, chosen.token) == (("127.0.0.1", 9), "secret")


@pytest.mark.parametrize(("given", "message", "hint"), [
    ({"token": "t"}, "--token is for WebSocket kernels: add --listen", "--token"),
    ({"allow_origin": ["https://a.example"]}, "--allow-origin is for WebSocket kernels: add "
     "--listen", "--allow-origin"),
    ({"certfile": "file"}, "--certfile is for WebSocket kernels: add --listen", "--certfile"),
    ({"keyfile": "file"}, "--keyfile is for WebSocket kernels: add --listen", "--keyfile"),
    ({"listen": "0", "keyfile": "file"}, "--keyfile needs --certfile", "--keyfile"),
    ({"listen": "0", "token": ""}, "the token is empty", "--token"),
    ({"listen": "0", "token_file": "empty"}, "the token is empty", "--token-file"),
    ({"listen": "nope"}, "--listen 'nope': expected HOST:PORT", "--listen"),
    ({"listen": "0.0.0.0:0"}, "refusing to listen on 0.0.0.0 without a token", "--listen"),
])
def test_every_rule_of_the_options_is_a_usage_error_of_the_option_it_names(
        files: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        given: dict[str, Any], message: str, hint: str) -> None:
    pytest.importorskip("websockets")
    monkeypatch.delenv("PYRELUNE_TOKEN", raising=False)
    (tmp_path / "empty").write_text(" \n")
    paths = {"file": Path(files["file"]), "empty": tmp_path / "empty"}
    values: dict[str, Any] = dict.fromkeys(rpcargs.OPTIONS)
    values.update({name: paths.get(value, value) if isinstance(value, str) else value
                   for name, value in given.items()})
    with pytest.raises(rpcargs.Usage) as refused:
        rpcargs.settings(values)
    assert refused.value.message.startswith(message), refused.value.message
    assert refused.value.hint == hint
