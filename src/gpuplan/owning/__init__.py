"""Owning GPUs (issue 33): what a build costs to own, whether it can be built, and owning against renting.

Every number of a job's speed, memory and rental price comes from a :class:`~gpuplan.plan.estimate.Plan` (the public
``estimate`` and ``recommend``); this room adds only what owning needs, each figure with its source in
``data/owning.yaml``:

- :mod:`.facts`: the sourced figures (street prices, depreciation, electricity, idle draw, host profiles, power);
- :mod:`.prices`: what a card costs to buy (a dated street price, the launch MSRP, or what the user pays);
- :mod:`.builds`: a build (cards x count in a host) and :mod:`.checks`, whether it can be built and run;
- :mod:`.workloads`: the work over a horizon (runs a year, serving hours a day) and :mod:`.plans`, each job's
  Plan on a build or a rental, at the central and the pessimistic end of the speed band;
- :mod:`.tco`: the total cost of owning (purchase, power at the hours used, resale, maintenance, space);
- :mod:`.compare`: owning against renting any card, with break-even utilization and months;
- :mod:`.advisor`: the builds a budget buys, ranked by cost per job and by what they can run.
"""
