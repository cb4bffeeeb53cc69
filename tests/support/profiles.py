"""Hypothesis profiles: how many examples each property tries, chosen by PYRELUNE_HYPOTHESIS.

`ci` (the default: a plain `pytest` is as thorough as CI) tries each property's full budget;
`dev` a fifth of it, for a quick loop while editing. No deadline per example in either: on a
busy machine an example is slow, not wrong. A property states its weight against the
profile's budget (`examples`), not a fixed count, so one setting scales them all.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

VARIABLE = "PYRELUNE_HYPOTHESIS"
#: Examples a property of weight 1 tries under each profile.
BUDGETS = {"ci": 100, "dev": 20}

for _name, _budget in BUDGETS.items():
    settings.register_profile(_name, max_examples=_budget, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])


def load() -> str:
    """Load the profile $PYRELUNE_HYPOTHESIS names (default `ci`); its name."""
    name = os.environ.get(VARIABLE, "ci")
    if name not in BUDGETS:
        raise ValueError(f"{VARIABLE}={name!r}: the profiles are {', '.join(BUDGETS)}")
    settings.load_profile(name)
    return name


def examples(weight: float) -> int:
    """The loaded profile's budget times `weight`: a process per example weighs less than 1,
    a pure function more."""
    budget: int = settings().max_examples  # typed Any by some Hypothesis releases
    return max(1, round(budget * weight))
