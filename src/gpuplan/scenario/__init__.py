"""The scenario, the one input every answer takes, and how its defaults are chosen.

- :mod:`.fields`: the fields, their validation, and loading from YAML/JSON, CLI flags or a dict;
- :mod:`.stacks`: each training stack's recipe defaults and what it cannot run;
- :mod:`.describe`: the one-line description of the resolved scenario (the defaults that depend on the model
  and the card are filled by :mod:`gpuplan.plan.resolve`);
- :mod:`.modules`: a module scenario (a diffusion pipeline, an encoder-decoder, your own module) resolved into its
  job.
"""

from .fields import (
                     FIELDS,
                     INFER_ONLY,
                     LOAD_FIELDS,
                     MOE_LAYOUT,
                     TRAIN_ONLY,
                     Scenario,
                     load_scenario,
                     read_back,
                     scenario_from,
                     snake_keys,
)

__all__ = ["FIELDS", "INFER_ONLY", "LOAD_FIELDS", "MOE_LAYOUT", "TRAIN_ONLY", "Scenario", "load_scenario", "read_back",
           "scenario_from", "snake_keys"]
