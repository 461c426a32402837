"""gpuplan's own fuzzer, generated from the CLI's definition (issue 30 item 7; the outside reviews'
fuzz-report*.md list what it must catch).

- :mod:`.tree` reads every command, option and argument, with its type, off the typer/click tree;
- :mod:`.values` and :mod:`.draw` draw valid, boundary and hostile values and fixture files for each
  (:mod:`.recipes`: the valid starting points whose values must agree; :mod:`.mutate`: valid files with a value
  or two changed);
- :mod:`.api` does the same for every public function of ``gpuplan`` and the metamorphic checks;
- :mod:`.web` for every endpoint of the page, read off its OpenAPI schema, and its other paths;
- :mod:`.oracle` says what a run must do (OK, CLEAN-ERROR) and classes what it must not (TRACEBACK, NONSENSE,
  HANG), the files it leaves included;
- :mod:`.runner` runs a case in isolation, in process or as a process, and a pool of workers with time limits;
- :mod:`.campaign` shrinks failures and writes the table.

``bench/fuzz.py`` runs a campaign; ``tests/test_fuzz.py`` runs a sampled share of the same cases.
"""
