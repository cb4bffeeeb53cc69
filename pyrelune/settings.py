"""The runtime's settings, one rule each, whichever mode or option gives them.

`PYRELUNE_TIMEOUT` and `--timeout`, `PYRELUNE_MAX_OUTPUT`, `PYRELUNE_MIME_ORDER`,
`PYRELUNE_TOKEN`, `PYRELUNE_WARM_IDLE`, `PYRELUNE_IOPUB_STALL`, and the rpc kernel's
`--max-message-size`, `--auth-timeout` and `--drain-timeout` are read here,
so that a value means the same everywhere and a bad one is refused for the
same reason. What start-up reads before it imports this module has its rule
in `pyrelune.warm.gate`: `PYRELUNE_WARM`, `PYRELUNE_WARM_EVERY`,
`PYRELUNE_WARM_DEBUG`. A bad value raises `SettingError`, worded by `broken`
("NAME must be RULE, not 'VALUE'"); each mode reports it its own way
(oneshot: an `invalid_configuration` response; the lines kernel, which
cannot refuse: a warning and the default; the command line: a usage error).

On oneshot's hot path: builtins only.
"""

from __future__ import annotations

import os

from pyrelune import PyreluneError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    Default = TypeVar("Default", int, None)

#: The longest deadline or wait: a week. A longer one is refused rather than
#: clamped: `select` and asyncio overflow long before infinity (about 292
#: years), and whoever asks for more means "none", which is 0 for a deadline.
MAX_SECONDS = 7 * 24 * 3600
#: How long an idle warm process waits for a cell before it exits: ten minutes.
WARM_IDLE = 600.0
#: The smallest byte limit: room for the markers and a little of each end.
MIN_BYTES = 1024
#: The largest byte limit (1 TiB): anything above is a typo, and a number of
#: thousands of digits is one Python will not even convert.
MAX_BYTES = 1 << 40
#: How much of a bad value an error quotes.
_QUOTED = 80


class SettingError(PyreluneError, ValueError):
    """A setting's value breaks its rule; the message names the setting and the rule."""


def broken(name: str, rule: str, text: str) -> SettingError:
    """The error for the setting `name` whose value `text` breaks `rule`: one wording for all."""
    return SettingError(f"{name} must be {rule}, not {text[:_QUOTED]!r}")


def seconds(name: str, text: str, minimum: float = 0.0, zero: str = "no deadline") -> float:
    """`text` as seconds: a number from `minimum` to `MAX_SECONDS` (0 for a deadline: none).

    Python's number syntax in ASCII, so `inf` and `nan` parse, and are refused.
    `zero`: what 0 means, said in the error when 0 is allowed.
    """
    try:
        # ASCII: float() takes other scripts' digits too. NaN fails every comparison.
        value = float(text) if text.isascii() else -1.0
    except ValueError:
        value = -1.0
    if not minimum <= value <= MAX_SECONDS:
        none = f" (0: {zero})" if minimum == 0 else ""
        raise broken(name, f"seconds, from {minimum:g} to {MAX_SECONDS}{none}", text)
    return value


def byte_count(name: str, text: str) -> int:
    """`text` as a whole number of bytes (ASCII digits) from `MIN_BYTES` to `MAX_BYTES`."""
    digits = text.strip()
    try:
        value = int(digits) if digits.isascii() and digits.isdigit() else -1
    except ValueError:  # thousands of digits: more than Python converts
        value = -1
    if not MIN_BYTES <= value <= MAX_BYTES:
        raise broken(name, f"a whole number of bytes, at least {MIN_BYTES} and at most "
                     f"{MAX_BYTES} (1 TiB)", text)
    return value


def types(name: str, text: str, known: tuple[str, ...]) -> tuple[str, ...]:
    """`text` as a preference order: comma-separated, each one of `known`, repeats dropped.

    Empty means `known` as it is. `text/plain` always comes last if left
    out: it is the last resort, so that something is shown.
    """
    if not text.strip():
        return known
    order: list[str] = []
    for part in text.split(","):
        mime = part.strip()
        if mime not in known:
            raise broken(name, f"types Vix Note shows, comma-separated ({', '.join(known)})",
                         mime)
        if mime not in order:
            order.append(mime)
    if "text/plain" not in order:
        order.append("text/plain")
    return tuple(order)


def timeout(default: float) -> float:
    """$PYRELUNE_TIMEOUT: seconds a oneshot cell may run, or `default` when unset or empty."""
    setting = os.environ.get("PYRELUNE_TIMEOUT", "")
    return seconds("PYRELUNE_TIMEOUT", setting) if setting.strip() else default


def warm_idle() -> float:
    """$PYRELUNE_WARM_IDLE: seconds an idle warm process waits before it exits (0: for ever),
    `WARM_IDLE` when unset or empty."""
    setting = os.environ.get("PYRELUNE_WARM_IDLE", "")
    return (seconds("PYRELUNE_WARM_IDLE", setting, zero="never idles out") if setting.strip()
            else WARM_IDLE)


#: How long the Jupyter kernel waits on an IOPub subscriber that reads nothing before it
#: goes on without it (see `transports.iopubflow`), in seconds.
IOPUB_STALL = 5.0


def iopub_stall() -> float:
    """$PYRELUNE_IOPUB_STALL: seconds a cell may wait on IOPub with nothing written before the
    kernel takes a subscriber to have stalled (0: never: it waits for ever), `IOPUB_STALL`
    when unset or empty."""
    setting = os.environ.get("PYRELUNE_IOPUB_STALL", "")
    return (seconds("PYRELUNE_IOPUB_STALL", setting, zero="wait for ever") if setting.strip()
            else IOPUB_STALL)


def max_output(default: Default) -> int | Default:
    """$PYRELUNE_MAX_OUTPUT bytes, or `default` when it is unset or empty."""
    setting = os.environ.get("PYRELUNE_MAX_OUTPUT", "")
    return byte_count("PYRELUNE_MAX_OUTPUT", setting) if setting.strip() else default


def mime_order(known: tuple[str, ...]) -> tuple[str, ...]:
    """$PYRELUNE_MIME_ORDER: which of `known` (Vix Note's types) to prefer, in order."""
    return types("PYRELUNE_MIME_ORDER", os.environ.get("PYRELUNE_MIME_ORDER", ""), known)


#: What runs a worker's cells (`PYRELUNE_SHELL`): pyrelune's own, or IPython's shell.
PLAIN, IPYTHON = "plain", "ipython"


def shell(default: str, given: str | None = None) -> str:
    """`given` (the command line's `--shell`), else $PYRELUNE_SHELL: `PLAIN` or `IPYTHON`;
    `default` when neither says."""
    name = "--shell" if given is not None else "PYRELUNE_SHELL"
    setting = (given if given is not None else os.environ.get("PYRELUNE_SHELL", "")).strip()
    if not setting:
        return default
    if setting not in (PLAIN, IPYTHON):
        raise broken(name, f"{IPYTHON!r} or {PLAIN!r}", setting)
    return setting


def token() -> str | None:
    """$PYRELUNE_TOKEN: the rpc kernel's WebSocket token, None when unset or empty."""
    return os.environ.get("PYRELUNE_TOKEN") or None


#: A snapshot's memory budget when none is given: this share of the machine's memory.
SNAPSHOT_SHARE = 4


def snapshot_max(memory: int | None = None) -> int:
    """The most private memory a kernel's snapshot may take (see `worker.snapshot`), in bytes;
    0: no snapshots.

    $PYRELUNE_SNAPSHOTS `0` turns them off (`1`, or unset or empty: on);
    $PYRELUNE_SNAPSHOT_MAX is the budget, by default a quarter of `memory`
    (the machine's, in bytes).
    """
    switch = os.environ.get("PYRELUNE_SNAPSHOTS", "").strip()
    if switch not in ("", "0", "1"):
        raise broken("PYRELUNE_SNAPSHOTS", "0 (off) or 1 (on)", switch)
    if switch == "0":
        return 0
    setting = os.environ.get("PYRELUNE_SNAPSHOT_MAX", "")
    if setting.strip():
        return byte_count("PYRELUNE_SNAPSHOT_MAX", setting)
    return default_snapshot_max(memory)


def default_snapshot_max(memory: int | None = None) -> int:
    """A snapshot's budget when none is given: `1/SNAPSHOT_SHARE` of `memory` (bytes; None:
    the machine's)."""
    if memory is None:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return max(MIN_BYTES, memory // SNAPSHOT_SHARE)
