"""``estimate``: one scenario's plan (memory, fit, fixes, speed, cost), the API's first question."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..plan.estimate import estimate as _estimate
from ..plan.plan import Plan
from ..scenario import Scenario
from . import arguments as arg
from .arguments import ScenarioLike, scenario_of

if TYPE_CHECKING:
    from ..model.module_spec import ModuleSpec


def estimate(scenario: ScenarioLike, *, advise: bool = True, module: str | None = None) -> Plan:
    """Does the job fit, where does the memory go, what would make it fit, how fast and for how much:
    ``gpuplan estimate``. ``advise`` False skips the largest batch and context and the fixes (faster). ``module``:
    your own PyTorch module, ``package.module:function`` (a callable returning ``(module, example_input)``), run
    once on fake tensors and planned on the same road (needs torch)."""
    s, spec = own_module(scenario, module)
    return _estimate(s, advise=arg.flag(advise, "advise"), spec=spec)


def own_module(scenario: ScenarioLike, module: str | None) -> tuple[Scenario, ModuleSpec | None]:
    """The scenario, and the model your ``module`` target builds (:func:`gpuplan.sim.module.module_spec`) when one
    is given: the scenario's ``model`` is then the target's name (a scenario without one takes it)."""
    if module is None:
        return scenario_of(scenario), None
    from ..sim.module import module_spec

    target = arg.text(module, "module")
    if isinstance(scenario, Mapping) and "model" not in scenario:
        scenario = {**scenario, "model": target}
    s = scenario_of(scenario)
    return s, module_spec(target, s.task)
