"""What `vix install` and `vix doctor` tell a user about warm start: what it preloads in
this environment, what it holds while it runs, and when it goes."""

from __future__ import annotations

import importlib.util

from pyrelune import settings
from pyrelune.warm.gate import DEFAULT_PRELOAD, preload_names

#: The data stack whose import a warm start saves each cell: what `1` preloads.
DATA_STACK = tuple(DEFAULT_PRELOAD.split(","))
#: What the idle warm process holds with all of the data stack preloaded, in MiB: the
#: PSS of it, its spare child and the worker forked ahead, as `pyrelune warm status`
#: reports it (measured: 103-110 MiB, 111 MiB resident, with numpy 2.5, pandas 3.1,
#: matplotlib 3.11 on Python 3.13, Linux x86-64).
DATA_STACK_MIB = 110


def installed(names: tuple[str, ...] = DATA_STACK) -> list[str]:
    """Those of `names` that this environment can import."""
    return [name for name in names if importlib.util.find_spec(name) is not None]


def listed(names: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def idle_exit(seconds: float | None = None) -> str:
    """When an idle warm process exits: after `seconds` (a running one's), else as
    $PYRELUNE_WARM_IDLE says here (its default if unset, or broken: a cell says what is
    wrong with it)."""
    if seconds is None:
        try:
            seconds = settings.warm_idle()
        except settings.SettingError:
            seconds = settings.WARM_IDLE
    if not seconds:
        return "it stays until `pyrelune warm stop` (PYRELUNE_WARM_IDLE=0)"
    if seconds % 60 == 0:
        return f"it exits after {seconds / 60:g} idle minute{'s' if seconds != 60 else ''}"
    return f"it exits after {seconds:g} s idle"


def summary(setting: str) -> list[str]:
    """What `vix install` says of the launcher's warm setting (`1`, `0`, module names)."""
    preload = preload_names(setting)
    if preload is None:
        return ["warm start is off (--cold): each cell imports what it uses itself; "
                "`pyrelune vix install` turns it on"]
    if preload == DEFAULT_PRELOAD:
        found = installed()
        if not found:
            what = (f"nothing yet ({listed(list(DATA_STACK))} are not installed here; "
                    "it preloads them once they are)")
        else:
            what = listed(found) + (f" (about {DATA_STACK_MIB} MiB)" if found == list(DATA_STACK)
                                    else "")
    else:
        what = listed(preload.split(","))
    return [f"warm start is on: the first cell starts a process that preloads {what} for the "
            f"next cells; {idle_exit()}",
            "(`pyrelune warm status` shows it; `pyrelune vix install --cold` turns it off)"]
