"""Doctor: check an installation the way Vix Note will see it, then run a real cell.

Each check is a plain value (name, passed, what was found, how to fix it) so
the command line only prints them and tests assert on them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyrelune.settings import SettingError
from pyrelune.vix import descriptor as descriptors
from pyrelune.vix import discovery, fonts, host, jsonfile, launcher, warmth
from pyrelune.vix.places import Places, project_package_dir
from pyrelune.warm.gate import preload_names, warm_folder

PROBE = "print(6 * 7)"
EXPECTED = "42\n"
#: The warm check's cell: one that imports, as only such a cell is served warm.
#: The `%` makes the launcher hand it to the warm process (see `warm.gate.gains`).
WARM_PROBE = "print('%d' % (6 * 7))"


#: matplotlib's backends that draw without a window: pyrelune shows their figures.
WINDOWLESS_BACKENDS = frozenset({"agg", "cairo", "pdf", "pgf", "ps", "svg", "template"})


@dataclass
class Check:
    name: str
    passed: bool
    detail: str
    fix: str = ""
    warning: bool = False  # passed, but something the user should know and may fix

    def line(self) -> str:
        mark = "FAIL" if not self.passed else "warn" if self.warning else "ok  "
        tail = f"\n      fix: {self.fix}" if self.fix and (self.warning or not self.passed) else ""
        return f"{mark} {self.name}: {self.detail}{tail}"


Runner = Callable[[str, bytes], host.Exchange]


def check(places: Places, package_id: str, project: Path | None = None,
          runner: Runner = host.run) -> list[Check]:
    """All checks for the global installation, or for one project's when `project` is given."""
    where = f" --project {project}" if project else ""
    reinstall = f"run `pyrelune vix install{where}` from the Python environment Vix Note should use"
    checks = [_manifest_check(places, package_id, project, reinstall)]
    found = discovery.discover_global(places)
    if project is not None:
        found = discovery.discover_project(project, places, into=found)
    extension = found.find(package_id)
    expected_source = "project" if project else "global"
    if extension is None or extension.source != expected_source:
        skipped = "; ".join(found.skipped) or "no entry with this id"
        checks.append(Check("registered", False, f"Vix Note does not find {package_id} "
                            f"({skipped})", reinstall))
        return checks
    checks.append(_registration_check(extension, found, reinstall))
    launcher_check = _launcher_check(extension, reinstall)
    checks.append(launcher_check)
    checks.append(Check(
        "enabled", extension.enabled,
        "not in Vix Note's disabled list" if extension.enabled
        else f"listed as disabled in {places.disabled_json}",
        "run `pyrelune vix install --enable` (or enable it in Vix Note)"))
    checks.append(plots_check(os.environ.get("MPLBACKEND", ""), fonts.prepare()))
    if launcher_check.passed:
        checks.append(warm_check(extension, runner))
        checks.append(_round_trip(extension, runner, reinstall))
    return checks


def warm_check(extension: discovery.Extension, runner: Runner) -> Check:
    """Whether warm start is on (the launcher's setting, or PYRELUNE_WARM) and serves cells.

    On, and with the launcher started by this environment's Python, the
    warm process is started (or found) and a probe must be served by it.
    Off by the user's choice (`--cold`, PYRELUNE_WARM) is no warning.
    """
    from pyrelune.warm import control, place

    try:
        with open(extension.command, encoding="utf-8", errors="replace") as f:
            text = f.read(4096)
    except OSError:
        text = ""
    where = "PYRELUNE_WARM" if "PYRELUNE_WARM" in os.environ else "the launcher"
    try:
        preload = preload_names(os.environ.get("PYRELUNE_WARM", launcher.warm_of(text)))
    except SettingError as exc:
        return Check("warm start", False, f"{exc}: each cell is refused", "set PYRELUNE_WARM to "
                     "0 (off), 1 (the data stack) or module names, comma-separated")
    if preload is None:
        return _warm_off(text)
    interpreter = launcher.interpreter_of(text)
    if interpreter is None or os.path.abspath(interpreter) != os.path.abspath(sys.executable):
        return Check("warm start", True, f"on ({where}); not checked: the launcher runs "
                     "another Python than this command")
    backing_off = control.failure(preload) if control.status(preload) is None else None
    try:
        before = control.start(preload)
    except place.Unsafe as refusal:
        return Check("warm start", False, f"on ({where}), but refused: {refusal}",
                     f"remove {warm_folder()} (another user's, or open to others)")
    except control.NotStarted as failure:
        return Check("warm start", False, f"on ({where}), but the warm process did not start: "
                     f"{failure}", "fix what it said (see `pyrelune warm status`); cells run "
                     "cold meanwhile")
    if backing_off is not None:
        return Check("warm start", True, f"on ({where}); started now, but it had failed: "
                     f"{backing_off}", "see `pyrelune warm status`", warning=True)
    runner(extension.command, host.request(WARM_PROBE, extension.id, extension.version))
    after = control.status(preload)
    if after is None or after["served"] <= before["served"]:
        return Check("warm start", True, f"on ({where}), but a cell ran cold beside warm "
                     f"process {before['pid']}", "run the launcher with PYRELUNE_WARM_DEBUG=1: "
                     "it says on stderr why a cell runs cold", warning=True)
    preloaded = ", ".join(after["preloaded"]) or "nothing"
    return Check("warm start", True, f"on ({where}): warm process {after['pid']} serves cells "
                 f"(preloaded: {preloaded}; {after['rss'] >> 20} MiB resident; "
                 f"{warmth.idle_exit(after['idle_timeout'])})")


def _warm_off(text: str) -> Check:
    """Warm start off: chosen (PYRELUNE_WARM, `--cold`), said as a note; else (a launcher
    written before warm start was the default) a warning where the data stack is installed."""
    found = warmth.installed()
    pays = (f": each cell that imports {warmth.listed(found)} pays the import again (about "
            "half a second)" if found else "")
    if "PYRELUNE_WARM" in os.environ:
        return Check("warm start", True, f"off (PYRELUNE_WARM={os.environ['PYRELUNE_WARM']}, "
                     f"your choice){pays}")
    if launcher.warm_of(text):
        return Check("warm start", True, f"off (installed with --cold, your choice){pays}; "
                     "`pyrelune vix install` turns it on")
    if not launcher.is_launcher(text) or not found:
        return Check("warm start", True, "off")
    return Check("warm start", True, "off: the launcher was written before warm start was on "
                 f"by default{pays}", "rerun `pyrelune vix install` to serve cells from a "
                 "preloaded process (or `--cold` to keep it off)", warning=True)


def plots_check(backend: str, cache: fonts.FontCache | None) -> Check:
    """Whether cells can plot: matplotlib, its font cache (`cache`, None without matplotlib),
    and the MPLBACKEND that cells inherit from `vix note`."""
    if cache is None:
        return Check("plots", True, "matplotlib is not installed in this environment: cells "
                     "cannot plot", f"pip install matplotlib (into {sys.prefix})", warning=True)
    if cache.problem:
        return Check("plots", True, cache.describe(), "run `pyrelune vix doctor` again, or "
                     "run a plot once outside Vix Note", warning=True)
    name = backend.strip()
    if not name or name == "module://pyrelune.worker.mplbackend":
        return Check("plots", True, "matplotlib figures are drawn by pyrelune's backend; "
                     + cache.describe())
    if name.lower() in WINDOWLESS_BACKENDS:
        return Check("plots", True, f"MPLBACKEND={name} draws without windows: figures are "
                     f"shown in the note all the same; {cache.describe()}")
    return Check("plots", True, f"MPLBACKEND={name} selects a backend pyrelune cannot show "
                 "in a note: figures would open windows where `vix note` runs, or fail, "
                 "instead of appearing in the cell",
                 "unset MPLBACKEND (or set it to Agg) where `vix note` is started",
                 warning=True)


def _manifest_check(places: Places, package_id: str, project: Path | None,
                    reinstall: str) -> Check:
    """The written descriptor against the schema: every rule Vix Note applies, strictly."""
    if project is None:
        path, definition = places.installed_json, "installedPackage"
    else:
        path = project_package_dir(project, descriptors.split_id(package_id)[1]) / "vix.json"
        definition = "projectManifest"
    try:
        document = jsonfile.read(path)
    except jsonfile.Malformed as error:
        return Check("descriptor", False, f"{error}: Vix Note ignores it entirely",
                     f"fix or remove {path}, then {reinstall} (or add --force to keep a backup)")
    if project is None:
        packages = document.get("packages") if isinstance(document, dict) else None
        entries = [p for p in packages or [] if isinstance(p, dict) and p.get("id") == package_id]
        document = entries[-1] if entries else None
    if document is None:
        return Check("descriptor", False, f"no {package_id} in {path}", reinstall)
    problems = descriptors.problems(document, definition)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return Check("descriptor", False, f"{path}: {problems[0]}{more}", reinstall)
    return Check("descriptor", True, f"{path} follows every Vix Note rule")


def _registration_check(extension: discovery.Extension, found: discovery.Discovery,
                        reinstall: str) -> Check:
    conflicts = found.conflicts(extension.id)
    problems = extension.diagnostics + conflicts
    if not extension.available or problems:
        return Check("registered", False, "; ".join(problems) or "unavailable",
                     "remove or disable the other extension" if conflicts else reinstall)
    cells = ", ".join(f"{c} (aliases: {', '.join(extension.aliases[c]) or 'none'})"
                      for c in extension.cell_types)
    return Check("registered", True, f"{extension.id} {extension.version} ({extension.source}) "
                 f"provides {cells}")


def _launcher_check(extension: discovery.Extension, reinstall: str) -> Check:
    path = extension.command
    if not os.path.isfile(path):
        return Check("launcher", False, f"{path} does not exist", reinstall)
    if not os.access(path, os.X_OK):
        return Check("launcher", False, f"{path} is not executable", f"chmod +x {path}")
    with open(path, encoding="utf-8", errors="replace") as f:
        interpreter = launcher.interpreter_of(f.read(4096))
    if interpreter is None:
        return Check("launcher", True, f"{path} (not written by pyrelune: the round trip "
                     "decides)")
    if not os.access(interpreter, os.X_OK):
        return Check("launcher", False, f"{path} starts {interpreter}, which is gone (was its "
                     "environment removed?)", reinstall)
    return Check("launcher", True, f"{path} starts {interpreter}")


def _round_trip(extension: discovery.Extension, runner: Runner, reinstall: str) -> Check:
    payload = host.request(PROBE, extension.id, extension.version)
    exchange = runner(extension.command, payload)
    verdict = host.interpret(exchange)
    took = f"{exchange.seconds * 1000:.0f} ms"
    if verdict.ok and verdict.text() == EXPECTED and len(verdict.outputs) == 1:
        return Check("round trip", True, f"{PROBE} gave {EXPECTED.strip()} in {took} "
                     "(start-up included, started exactly as Vix Note does)")
    if verdict.ok:
        shown = "; ".join(f"{kind}: {text.strip()[:200]}" for kind, text in verdict.outputs)
        detail = f"{PROBE} showed {shown or 'nothing'} instead of {EXPECTED.strip()}"
    else:
        stderr = exchange.stderr.decode("utf-8", "replace").strip()
        detail = f"Vix Note would show {verdict.message!r}" + (
            f"; stderr: {stderr[-300:]}" if stderr else "")
    return Check("round trip", False, f"{detail} (after {took})", reinstall)
