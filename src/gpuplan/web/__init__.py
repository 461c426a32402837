"""``gpuplan serve``: the calculator page and its JSON API (FastAPI + uvicorn, extra ``web``).

- :mod:`.app`: the application factory, pages and error replies;
- :mod:`.api`: the endpoints (the Python API's inputs and outputs);
- :mod:`.guard`: request bounds, model names the server may resolve, the time limit;
- :mod:`.forms`: the form, read from the Scenario model; :mod:`.explain`: every number as its formula;
- :mod:`.grid`: the fit on every card; :mod:`.export`: YAML, command, Markdown; :mod:`.accuracy`: the README's
  error tables;
- ``static/``: the page (vanilla JavaScript and SVG; no build step, nothing fetched at run time).
"""
