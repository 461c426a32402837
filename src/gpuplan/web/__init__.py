"""``gpuplan serve``: the calculator page and its JSON API (FastAPI + uvicorn, extra ``web``).

- :mod:`.app`: the application factory, pages and error replies; :mod:`.api`: the endpoints (the Python API's
  inputs and outputs); :mod:`.guard`: request bounds, model names the server may resolve, files it may read;
- :mod:`.work`: where a request's work runs (worker threads, a reader process for uploaded files) and its
  deadline; :mod:`.uploads`: the uploaded files, bounded, in one folder removed when the server stops;
- :mod:`.forms`: the form, read from the Scenario model;
- :mod:`.explain`: every number as its formula (:mod:`.formula`, :mod:`.memory_formulas`, :mod:`.speed_formulas`)
  with the measured accuracy of :mod:`.accuracy` (the README's error tables);
- :mod:`.grid`: the fit on every card; :mod:`.export`: scenario.yaml, the command, Markdown, the permalink;
- ``static/``: the page (vanilla JavaScript and SVG; no build step, nothing fetched at run time).
"""
