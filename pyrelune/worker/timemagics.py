"""`%time`, `%timeit` and their cell forms: IPython's timing magics and their words."""

from __future__ import annotations

import re
import sys

from pyrelune.worker.magicbase import UsageError, own, run_source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Any

    from pyrelune.worker.magicbase import Body


def line_time(line: str, frame: FrameType) -> Any:
    """`%time statement`: run it once, then IPython's CPU and wall times."""
    return _timed(lambda: run_source(line, frame.f_lineno - 1, frame))


def _timed(run: Callable[[], Any]) -> Any:
    resource = own("resource")
    time = own("time")
    before, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    value = run()
    wall, after = time.perf_counter() - wall, resource.getrusage(resource.RUSAGE_SELF)
    user, system_ = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    print(f"CPU times: user {format_time(user)}, sys: {format_time(system_)}, "
          f"total: {format_time(user + system_)}")
    print(f"Wall time: {format_time(wall)}")
    return value


def format_time(seconds: float, precision: int = 3) -> str:
    """A duration as IPython's timing magics write it: `1.5 ms`, `2min 3s`."""
    if seconds >= 60:
        parts = []
        left = seconds
        for suffix, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
            whole = int(left // size)
            if whole:
                parts.append(f"{whole}{suffix}")
                left -= whole * size
            if left < 1:
                break
        return " ".join(parts)
    order = 3  # ns, for nothing measured
    if seconds > 0:
        import math

        order = min(-(math.floor(math.log10(seconds)) // 3), 3)
    value = seconds * (1000**order)
    return f"{value:.{precision}g} {('s', 'ms', _micro(), 'ns')[order]}"


def _micro() -> str:
    """IPython's unit for microseconds: `μs` (GREEK SMALL LETTER MU), `us` where stdout cannot."""
    try:
        "\u03bc".encode(sys.stdout.encoding or "ascii")
    except (LookupError, UnicodeEncodeError, AttributeError, TypeError):
        return "us"
    return "\u03bcs"


class TimeitResult:
    """What `%timeit -o` returns, with IPython's attributes and text."""

    def __init__(self, loops: int, repeat: int, all_runs: list[float], precision: int = 3):
        self.loops = loops
        self.repeat = repeat
        self.all_runs = all_runs
        self.timings = [run / loops for run in all_runs]
        self.best = min(self.timings)
        self.worst = max(self.timings)
        self._precision = precision

    @property
    def average(self) -> float:
        return sum(self.timings) / len(self.timings)

    @property
    def stdev(self) -> float:
        mean = self.average
        return float((sum((t - mean) ** 2 for t in self.timings) / len(self.timings)) ** 0.5)

    def __str__(self) -> str:
        runs = "run" if self.repeat == 1 else "runs"
        loops = "loop" if self.loops == 1 else "loops"
        return (f"{format_time(self.average, self._precision)} ± "
                f"{format_time(self.stdev, self._precision)} per loop (mean ± std. dev. of "
                f"{self.repeat} {runs}, {self.loops:,} {loops} each)")

    def __repr__(self) -> str:
        return f"<TimeitResult : {self}>"


_TIMEIT_OPTION = re.compile(r"-([nrp])\s*(\d+)(?!\S)\s*|-([qotc]+)(?!\S)\s*")
#: An option `_TIMEIT_OPTION` did not take: a bad count, or a letter %timeit does not know.
_TIMEIT_BAD = re.compile(r"-([A-Za-z])\s*(\S*)")
_TIMEIT_COUNTS = {"n": "loops", "r": "repeats", "p": "precision"}


def line_timeit(line: str, frame: FrameType, body: str | None = None) -> TimeitResult | None:
    """`%timeit [-n N -r R -p P -q -o] statement` (or `%%timeit [options] setup`, the body)."""
    counts: dict[str, int] = {"r": 7, "p": 3}
    flags = ""
    rest = line.strip()
    while (option := _TIMEIT_OPTION.match(rest)) is not None:
        if option.group(1):
            counts[option.group(1)] = int(option.group(2))
        else:
            flags += option.group(3)
        rest = rest[option.end() :]
    if (bad := _TIMEIT_BAD.match(rest)) is not None:
        letter, value = bad.groups()
        if letter not in _TIMEIT_COUNTS:
            raise UsageError(f"%timeit: option -{letter} not recognized "
                             "(the options are -n N -r R -p P -q -o -t -c)")
        raise UsageError(f"%timeit: -{letter} takes a whole number of {_TIMEIT_COUNTS[letter]}"
                         f", not {value or 'nothing'!r}")
    if counts["r"] < 1 or counts["p"] < 1:
        raise UsageError("%timeit: -r and -p must be at least 1")
    statement, setup = (rest, "pass") if body is None else (body, rest or "pass")
    timeit = own("timeit")
    timer = timeit.Timer(statement, setup, globals=frame.f_globals)
    loops = counts.get("n", 0)
    tuning = 0.0
    if not loops:  # IPython's autorange: powers of ten until a batch takes 0.2 s
        for power in range(10):
            loops = 10**power
            tuning = timer.timeit(loops)
            if tuning >= 0.2:
                break
    result = TimeitResult(loops, counts["r"], timer.repeat(counts["r"], loops), counts["p"])
    if "q" not in flags:
        worst = max(tuning / loops, result.worst)
        if worst > 4 * result.best and result.best > 0 and worst > 1e-6:
            print(f"The slowest run took {worst / result.best:0.2f} times longer than the "
                  "fastest. This could mean that an intermediate result is being cached.")
        print(result)
    return result if "o" in flags else None




def cell_time(line: str, body: Body) -> Any:
    """`%%time`: the cell once, then its times; its final expression is the cell's."""
    return _timed(body.run)


def cell_timeit(line: str, body: Body) -> TimeitResult | None:
    return line_timeit(line, body.frame, body.source)
