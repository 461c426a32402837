"""``gpuplan serve``: the calculator page and its JSON API (FastAPI + uvicorn, extra ``web``).

- :mod:`.app`: the application factory, pages and error replies; :mod:`.api`: the endpoints (the Python API's
  inputs and outputs: :mod:`gpuplan.api` and nothing below it); :mod:`.guard`: request bounds, model names the
  server may resolve, files it may read;
- :mod:`.lanes`: where a request's work runs (worker threads, a reader process for uploaded files) and its
  deadline; :mod:`.uploads`: the uploaded files, bounded, in one folder removed when the server stops;
- ``static/``: the page (vanilla JavaScript and SVG; no build step, nothing fetched at run time).

The formulas, the catalog grid, the exports and the form the page shows are the plan's, in words
(:mod:`gpuplan.explain`, through the Python API).
"""
