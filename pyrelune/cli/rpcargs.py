"""The rpc kernel's options: one table, read by typer and by the kernel's fast start.

A host that starts `pyrelune --mode rpc` waits for `kernel.ready`, and typer
alone takes longer to import than the kernel takes to start. So `parse()`
reads the well-formed forms of exactly these options without it, and
answers None for anything else (`--help`, an unknown or repeated option, a
value that looks like an option...): typer then decides, with its help and
its errors. The names, help and kinds below are the only copy; `cli/app.py`
builds its typer options from them, and `settings()` is what both paths
turn the values into, so a value means the same whichever parser read it.
"""

from __future__ import annotations

import os

from pyrelune import PyreluneError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from pyrelune.modes.rpc import Settings

#: The kinds of value: text as given, an existing readable file, text that may repeat.
TEXT, FILE, MANY = "text", "file", "many"


class Option:
    """One `--name VALUE` option of the rpc kernel; `param` is the name typer passes it by."""

    __slots__ = ("help", "kind", "metavar", "name", "param")

    def __init__(self, param: str, kind: str, help: str, metavar: str | None = None) -> None:
        self.param = param
        self.name = "--" + param.replace("_", "-")  # as typer names it
        self.kind = kind
        self.help = help
        self.metavar = metavar


OPTIONS = {option.param: option for option in (
    Option("listen", TEXT, "rpc: serve WebSocket on HOST:PORT (port 0: any free port; the "
           "address is printed as one JSON line on stdout). Default host 127.0.0.1. Needs the "
           "websockets package (pyrelune's websocket extra).",
           "HOST:PORT"),
    Option("token", TEXT, "rpc over WebSocket: the secret clients send with kernel.auth "
           "(visible to other users in the process list: prefer --token-file or "
           "$PYRELUNE_TOKEN).", "TOKEN"),
    Option("token_file", FILE, "rpc over WebSocket: read the token from this file."),
    Option("allow_origin", MANY, "rpc over WebSocket: a browser Origin allowed to connect "
           "(repeatable; by default only clients that send no Origin).", "ORIGIN"),
    Option("certfile", FILE, "rpc over WebSocket: serve TLS (wss://) with this certificate "
           "chain."),
    Option("keyfile", FILE, "rpc over WebSocket: the certificate's private key, if not in "
           "--certfile."),
    Option("max_message_size", TEXT, "rpc: largest request (line or frame) in bytes. "
           "[default: 16 MiB]", "BYTES"),
    Option("auth_timeout", TEXT, "rpc over WebSocket with a token: seconds a client has to "
           "send kernel.auth before it is disconnected (it holds the kernel's only connection "
           "meanwhile). [default: 10]", "SECONDS"),
    Option("drain_timeout", TEXT, "rpc over WebSocket: seconds a client may leave the "
           "kernel's messages unread (more than 1 MiB waiting; its requests and the cell wait "
           "meanwhile) before it is disconnected. [default: 30]", "SECONDS"),
)}
_BY_NAME = {option.name: option for option in OPTIONS.values()}
_MODE = "--mode"


class Usage(PyreluneError):
    """Values the command line refuses: `message`, about the option `hint` if it names one."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def pairs(args: list[str]) -> list[tuple[str, str]] | None:
    """`args` as `(--name, VALUE)` pairs, each written `--name VALUE` or `--name=VALUE`;
    None if the last one has no value."""
    found = []
    at = 0
    while at < len(args):
        name, equals, value = args[at].partition("=")
        if not equals:
            if at + 1 == len(args):
                return None
            value = args[at + 1]
        at += 1 if equals else 2
        found.append((name, value))
    return found


def parse(args: list[str]) -> dict[str, Any] | None:
    """The values typer would pass for `args`, if they are `--mode rpc` and rpc options only.

    Each option `--name VALUE` or `--name=VALUE`, once (`--allow-origin` any
    number of times), with a value that is not empty and does not begin with
    `-`; a file that exists, is not a directory and can be read. None for
    anything else, even what typer would accept: it is typer's to judge.
    """
    values: dict[str, Any] = dict.fromkeys(OPTIONS)
    mode = None
    options = pairs(args)
    if options is None:
        return None
    for name, value in options:
        if name == _MODE:
            if mode is not None or value != "rpc":
                return None
            mode = value
            continue
        option = _BY_NAME.get(name)
        if option is None or not value or value.startswith("-"):
            return None
        if option.kind == MANY:
            values[option.param] = [*(values[option.param] or []), value]
            continue
        if values[option.param] is not None:
            return None
        if option.kind == FILE:
            if not (os.path.isfile(value) and os.access(value, os.R_OK)):
                return None
            from pathlib import Path  # only then: it takes a while to import

            values[option.param] = Path(value)
        else:
            values[option.param] = value
    return values if mode is not None else None


#: The options only a kernel that listens (WebSocket) has a use for.
_WEBSOCKET_ONLY = ("token", "token_file", "allow_origin", "certfile", "keyfile")


def settings(values: dict[str, Any]) -> Settings:
    """The kernel's settings from the options' values (as `parse` or typer gives them).

    Every rule of the options is here, each value's (see `pyrelune.settings`)
    and those of how they go together, before anything starts: `Usage` says
    which is broken, and the command line reports it as a usage error.
    """
    from pyrelune import settings as rules
    from pyrelune.modes import ConfigError, rpc

    listen: str | None = values["listen"]
    token: str | None = values["token"]
    token_file: Path | None = values["token_file"]
    certfile: Path | None = values["certfile"]
    keyfile: Path | None = values["keyfile"]
    max_message_size: str | None = values["max_message_size"]
    auth_timeout: str | None = values["auth_timeout"]
    drain_timeout: str | None = values["drain_timeout"]
    if listen is None:
        for param in _WEBSOCKET_ONLY:
            if values[param] not in (None, [], ()):
                name = OPTIONS[param].name
                raise Usage(f"{name} is for WebSocket kernels: add --listen", name)
    if keyfile is not None and certfile is None:
        raise Usage("--keyfile needs --certfile", "--keyfile")
    if token is not None and not token:
        raise Usage("the token is empty", "--token")
    if token is None and token_file is not None:
        token = token_file.read_text(encoding="utf-8").strip()
        if not token:
            raise Usage("the token is empty", "--token-file")
    if token is None and listen is not None:
        token = rules.token()
    try:
        address = rpc.parse_listen(listen) if listen is not None else None
        max_message = rpc.DEFAULT_MAX_MESSAGE if max_message_size is None else (
            rules.byte_count("--max-message-size", max_message_size))
        wait = rpc.AUTH_TIMEOUT if auth_timeout is None else (
            rules.seconds("--auth-timeout", auth_timeout, minimum=0.1))
        drain = rpc.DRAIN_TIMEOUT if drain_timeout is None else (
            rules.seconds("--drain-timeout", drain_timeout, minimum=0.1))
        max_output = rules.max_output(None)
        shell = rules.shell(rules.PLAIN, values.get("shell"))
        snapshot_max = rules.snapshot_max()
    except ConfigError as exc:
        raise Usage(str(exc), "--listen") from None
    except rules.SettingError as exc:
        raise Usage(str(exc)) from None
    if address is not None:
        _check_listening(address[0], token)
    return rpc.Settings(
        listen=address, token=token, allow_origins=tuple(values["allow_origin"] or ()),
        certfile=str(certfile) if certfile else None, keyfile=str(keyfile) if keyfile else None,
        max_message=max_message, max_output=max_output, auth_timeout=wait,
        drain_timeout=drain, shell=shell, snapshot_max=snapshot_max,
    )


def _check_listening(host: str, token: str | None) -> None:
    """Refuse to listen where it cannot work or would be unsafe (`Usage`, about --listen)."""
    from pyrelune.transports.addresses import is_loopback

    try:
        import websockets  # noqa: F401 (an optional dependency: say how to get it)
    except ImportError:
        from pyrelune.extras import hint

        raise Usage("--listen needs the websockets package, which is not installed in this "
                    f"environment: {hint('websockets', 'websocket')}", "--listen") from None
    if token is None and not is_loopback(host):
        raise Usage(f"refusing to listen on {host} without a token: anyone who can reach it "
                    "could run code; give --token-file, --token or PYRELUNE_TOKEN, or listen "
                    "on 127.0.0.1", "--listen")


def start(args: list[str]) -> int | None:
    """Run the rpc kernel for `args` without typer; None if typer must parse them instead."""
    values = parse(args)
    if values is None:
        return None
    try:
        chosen = settings(values)
    except Usage:
        return None  # typer says what is wrong, as it would have
    from pyrelune.modes import rpc

    return rpc.main(chosen)
