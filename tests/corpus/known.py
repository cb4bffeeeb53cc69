"""Cells known to behave differently from Jupyter today, with why, per mode.

The corpus test marks each as a strict xfail: a cell that starts to match
fails the test until its entry here is removed. `python tests/corpus/report.py`
lists the entries that no longer hold, and the differences not listed.
"intended" ones are where pyrelune does better than ipykernel on purpose;
the others are what pyrelune does not do.
"""

from __future__ import annotations

ALL = ("oneshot", "lines", "rpc")


def _in(modes: tuple[str, ...], reason: str) -> dict[str, str]:
    return dict.fromkeys(modes, reason)


#: cell name -> {mode: reason}
KNOWN: dict[str, dict[str, str]] = {
    "s_asyncio_run": _in(ALL, "intended: asyncio.run() works in a pyrelune cell; ipykernel's "
                         "running loop refuses it"),
    "g_install": _in(ALL, "intended: IPython's `_` starts as '' and hides gettext's `_`; "
                     "pyrelune has no `_` until a result"),
    "m_help_mark": _in(ALL, "intended: `obj?` prints help(obj)'s text; IPython pages its "
                       "own summary (Signature/Docstring/Type)"),
}
