"""A plan in words, for the page: each number as its formula, the catalog grid, the exports, the form.

- :mod:`.words`: every number of a plan as its formula (:mod:`.formula`; :mod:`.memory` and :mod:`.speed` hold
  the rules, each citing the estimator's own), with the measured accuracy of :mod:`.accuracy` (the accuracy
  tables of data/accuracy.md, a serving plan's own band, and the README as a page);
- :mod:`.module_memory` and :mod:`.module_speed`: the same for a module plan (a diffusion pipeline, an
  encoder-decoder, an encoder);
- :mod:`.grid`: the fit on every card of the catalog, against quantization, method or context length;
- :mod:`.export`: scenario.yaml, the equivalent command, a Markdown report, the permalink;
- :mod:`.forms`: the scenario form, read from the Scenario model.

It reads plans (:mod:`gpuplan.plan`) and stands below the Python API (:mod:`gpuplan.api`, whose ``explain``,
``fit_grid``, ``export`` and ``form`` return these), which the web page calls.
"""
