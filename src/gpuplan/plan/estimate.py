"""``estimate(scenario) -> Plan``: the scenario resolved (:mod:`.resolve`) and its plan built (:mod:`.build`) on the
offers of the price catalog: memory per GPU, whether it fits and what would, speed and cost. A training job of more
GPUs than one instance holds is placed on several (:func:`gpuplan.plan.nodes.on_nodes`), as ``launch`` writes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..market.store import load_offers
from ..scenario import Scenario, scenario_from
from .build import build, in_force_for, offers_for
from .nodes import on_nodes
from .plan import Plan
from .resolve import Resolved, ResolvedModule, resolve_any, resolve_module_scenario

if TYPE_CHECKING:
    from ..model.module_spec import ModuleSpec


def estimate(scenario: Scenario | dict[str, Any], *, advise: bool = True, spec: ModuleSpec | None = None) -> Plan:
    """The plan of a scenario. ``advise`` adds the largest batch and context that fit and, when the job does not
    fit, the changes that would (each a memory-only plan of the changed scenario). A serving plan runs its load
    and its batch through the engine's scheduler (:func:`gpuplan.plan.build.serving_runs`). A llama.cpp split over
    mixed cards (``extra_gpus``, ``tensor_split``) is each device's plan, composed (:mod:`.split`). A model that is
    not a decoder LLM (a diffusion pipeline, an encoder-decoder, an encoder) is resolved and built on the same road,
    from its recorded profiles (:func:`gpuplan.plan.modules.build_module`), into the same :class:`Plan`; so is your
    own module, given as ``spec`` (:func:`gpuplan.sim.module.module_spec`: the model its build() made)."""
    s = scenario_from(scenario)
    if spec is not None:
        r: Resolved | ResolvedModule = resolve_module_scenario(s, spec)
    elif s.extra_gpus or s.tensor_split:
        from .split import split_estimate  # loaded by the first split over mixed cards

        return split_estimate(s)
    else:
        r = resolve_any(s)
    if r.gpu is None:
        return build(r, None, advise=advise, simulate=True)
    catalog = load_offers()
    in_force = in_force_for(r.scenario, catalog)  # filtered once: the nodes and the offers read it
    if isinstance(r, Resolved):  # a decoder's training job on more GPUs than one machine holds: on nodes
        r = on_nodes(r, in_force)
    return build(r, offers_for(r, catalog, in_force), advise=advise, simulate=True)
