"""Cells known to behave differently from Jupyter today, with why, per mode.

The corpus test marks each as a strict xfail: a cell that starts to match
fails the test until its entry here is removed. `python tests/corpus/report.py`
lists the entries that no longer hold, and the differences not listed.
Most name the item of issue #14 that will close them; "intended" ones are
where pyrelune does better than ipykernel on purpose.
"""

from __future__ import annotations

ALL = ("oneshot", "lines", "rpc")
KERNELS = ("lines", "rpc")


def _in(modes: tuple[str, ...], reason: str) -> dict[str, str]:
    return dict.fromkeys(modes, reason)


_PRETTY = "display protocol: IPython's pretty printer is not used for text/plain yet"
_UPDATES = "display protocol: display_id updates are not applied yet (one output, last state)"
_MAIN = "the namespace is not a real __main__ module yet, so pickle cannot find cell objects"

#: cell name -> {mode: reason}
KNOWN: dict[str, dict[str, str]] = {
    "pd_wide": _in(("oneshot", "lines"), "pandas sees a terminal: it lays out wide frames for "
                   "the terminal's width, not as in a notebook (rpc draws its own table)"),
    "mpl_lines_result": _in(ALL, f"{_PRETTY} (`<Line2D at 0x..>` without `object`)"),
    "sp_init_printing": _in(ALL, "sys.displayhook (sympy's init_printing) is not honoured yet"),
    "d_display_id": _in(ALL, f"{_UPDATES}; display() returns no handle"),
    "d_update_display": _in(ALL, _UPDATES),
    "d_progressbar": _in(ALL, _UPDATES),
    "d_clear_output": {
        **_in(("oneshot", "lines"), "display protocol: clear_output() does not clear yet"),
        "rpc": "display protocol: clear_output() writes escape sequences, and rpc's \\r "
               "handling eats their ESC (`0[2K`)",
    },
    "d_repr_pretty": _in(ALL, f"{_PRETTY} (`_repr_pretty_` is not called)"),
    "d_ipython_display": _in(ALL, "display protocol: `_ipython_display_` is not called yet"),
    "d_long_list": _in(ALL, f"{_PRETTY} (long lists are not wrapped one item a line)"),
    "d_repr_html_only": _in(("lines",), f"{_PRETTY} (`<H at 0x..>` without `object`)"),
    "s_pickle_function": _in(ALL, _MAIN),
    "s_pickle_instance": _in(ALL, _MAIN),
    "s_main_module": _in(ALL, _MAIN),
    "s_pool": _in(ALL, _MAIN),
    "s_displayhook": _in(ALL, "sys.displayhook set by the cell is not honoured yet"),
    "s_asyncio_run": _in(ALL, "intended: asyncio.run() works in a pyrelune cell; ipykernel's "
                         "running loop refuses it"),
    "s_warn_again": _in(KERNELS, "warnings' once-registry is not reset per cell yet"),
    "s_task_later": _in(KERNELS, "each cell has its own event loop yet: a task does not run on "
                        "between cells"),
    "s_tqdm_after_print": _in(("rpc",), "rpc joins a progress bar's states on one line after "
                              "a print (its \\r is lost)"),
    "u_kept": _in(KERNELS, "`_` is overwritten by the next result even once the user assigned it"),
    "g_install": _in(ALL, "intended: IPython's `_` starts as '' and hides gettext's `_`; "
                     "pyrelune has no `_` until a result"),
    "g_kept": _in(KERNELS, "`_` is overwritten by the next result, hiding gettext's `_`"),
    "m_help_mark": _in(ALL, "intended: `obj?` prints help(obj)'s text; IPython pages its "
                       "own summary (Signature/Docstring/Type)"),
    "m_unsupported": _in(ALL, "%who_ls is not among the magics pyrelune runs (a one-line "
                         "UsageError names it)"),
}
