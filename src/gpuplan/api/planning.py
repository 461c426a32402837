"""``estimate``: one scenario's plan (memory, fit, fixes, speed, cost), the API's first question."""

from __future__ import annotations

from ..plan.estimate import estimate as _estimate
from ..plan.plan import Plan
from . import arguments as arg
from .arguments import ScenarioLike, scenario_of


def estimate(scenario: ScenarioLike, *, advise: bool = True) -> Plan:
    """Does the job fit, where does the memory go, what would make it fit, how fast and for how much:
    ``gpuplan estimate``. ``advise`` False skips the largest batch and context and the fixes (faster)."""
    return _estimate(scenario_of(scenario), advise=arg.flag(advise, "advise"))
