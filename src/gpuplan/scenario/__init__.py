"""The scenario, the one input every answer takes, and how its defaults are chosen.

- :mod:`.fields`: the fields, their validation, and loading from YAML/JSON, CLI flags or a dict;
- :mod:`.stacks`: each training stack's recipe defaults and what it cannot run;
- :mod:`.resolve`: the defaults that depend on the model and the card (precision, serving split), and the one-line
  description of the resolved scenario.
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
)

__all__ = ["FIELDS", "INFER_ONLY", "LOAD_FIELDS", "MOE_LAYOUT", "TRAIN_ONLY", "Scenario", "load_scenario", "read_back",
           "scenario_from"]
