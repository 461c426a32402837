"""Where the first ``gpuplan.estimate(...)`` spends its CPU time beyond the floor (issue 30's 2x goal).

    python bench/startup_parts.py [--runs 11]

Each run is a fresh process. It first pays the floor of bench/startup.py (``import pydantic, yaml``, one
BaseModel built and used), then times, in CPU time (``time.process_time``), what the walk of bench/startup.py adds:
importing the modules the estimate needs (split into the pydantic models built, the dataclasses made, each
generated method kind of them, and the rest: reading and running the modules, of which the import system's part for
gpuplan's modules, finding them and reading their bytecode; the classes the first estimate makes as it imports a
module on first use are counted in the estimate, not here), reading the bundled data (the GPU catalog, the model
names and config, the providers, the offers), the first estimate once those are read, and a second, warm estimate;
beside them the garbage collector's pauses over the whole walk, by generation. The medians over the runs are
printed; the parts add up to the walk within the noise of the timers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parent.parent / "src")
WALK = {"model": "llama-3.1-8b", "task": "train", "method": "qlora", "gpu": "rtx-4090", "train_tokens": 1e8}

CHILD = r'''
import collections, dataclasses, gc, json, sys, time
import pydantic, yaml
class A(pydantic.BaseModel):
    x: int
A(x=1)
from pydantic._internal import _model_construction
clock, parts = time.process_time, collections.Counter()
def timed(key, call, *args, **kwargs):
    start = clock()
    try:
        return call(*args, **kwargs)
    finally:
        parts[key] += clock() - start
new_model, process_class, create_fn = _model_construction.ModelMetaclass.__new__, dataclasses._process_class, \
    dataclasses._create_fn
_model_construction.ModelMetaclass.__new__ = lambda mcs, name, *a, **k: timed(
    "pydantic model Scenario" if name == "Scenario" else "pydantic models, others", new_model, mcs, name, *a, **k)
dataclasses._process_class = lambda cls, *a, **k: timed("dataclasses", process_class, cls, *a, **k)
dataclasses._create_fn = lambda name, *a, **k: timed(f"dataclasses: {name}", create_fn, name, *a, **k)
import importlib._bootstrap as bootstrap, importlib._bootstrap_external as external
find_spec, get_code = bootstrap._find_spec, external.SourceFileLoader.get_code
def machinery(key, call, name, *args):  # gpuplan's modules only: the floor's are the floor's
    return timed(key, call, name, *args) if name.startswith("gpuplan") else call(name, *args)
bootstrap._find_spec = lambda name, *a: machinery("modules: found", find_spec, name, *a)
external.SourceFileLoader.get_code = lambda self, name: machinery("modules: bytecode read", get_code.__get__(self),
                                                                  name)
pauses = []
gc.callbacks.append(lambda phase, info: pauses.append((clock(), info["generation"])))
walk = WALK
start = clock()
import gpuplan, gpuplan.plan.estimate, gpuplan.api.planning
parts["imports"] = clock() - start
made = {key: parts[key] for key in list(parts) if key.startswith(("pydantic", "dataclasses", "modules"))}  # imports
from gpuplan import hardware
from gpuplan.market import offers, store
from gpuplan.model import catalog
for key, call in (("data: GPU catalog", hardware.gpus), ("data: GPU names", hardware._names),
                  ("data: model names", catalog.aliases),
                  ("data: model config", lambda: catalog.load_model(walk["model"])),
                  ("data: providers", offers.providers), ("data: offers", store.load_offers)):
    timed(key, call)
timed("first estimate, data read", gpuplan.estimate, walk)
parts["walk"] = clock() - start
parts["classes made in the first estimate"] = sum(v for k, v in parts.items() if k in ("dataclasses",
    "pydantic model Scenario", "pydantic models, others")) - sum(made.get(k, 0) for k in ("dataclasses",
    "pydantic model Scenario", "pydantic models, others"))
parts.update({f"imports: {key}": value for key, value in made.items()})
timed("second estimate", gpuplan.estimate, walk)
parts.update({f"gc pauses: generation {g}": 0.0 for g in range(3)})
for (a, generation), (b, _) in zip(pauses[::2], pauses[1::2]):
    parts["gc pauses over the walk"] += b - a
    parts[f"gc pauses: generation {generation}"] += b - a
print(json.dumps({k: v * 1e3 for k, v in parts.items()}))
'''


def run(runs: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "PYTHONPYCACHEPREFIX": os.environ.get("PYTHONPYCACHEPREFIX", "/tmp/gpuplan-bench-pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    code = CHILD.replace("walk = WALK", f"walk = {WALK!r}")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)  # bytecode written
    found: dict[str, list[float]] = {}
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
        for key, ms in json.loads(out.stdout).items():
            found.setdefault(key, []).append(ms)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=11, help="fresh processes (medians printed)")
    found = run(parser.parse_args().runs)
    median = {key: statistics.median(v) for key, v in found.items()}
    imports = median["imports"]
    models = median.get("imports: pydantic model Scenario", 0) + median.get("imports: pydantic models, others", 0)
    rest = imports - models - median.get("imports: dataclasses", 0)
    machinery = median.get("imports: modules: found", 0) + median.get("imports: modules: bytecode read", 0)
    print(f"{'the walk beyond the floor (CPU ms, medians)':52} {median['walk']:7.1f}")
    print(f"{'  imports':52} {imports:7.1f}")
    for key in sorted(k for k in median if k.startswith(("imports: pydantic", "imports: dataclasses"))):
        print(f"{'    ' + key.removeprefix('imports: '):52} {median[key]:7.1f}")
    print(f"{'    modules read and run (the rest)':52} {rest:7.1f}")
    print(f"{'      found (finders) and bytecode read (unmarshal)':52} {machinery:7.1f}")
    for key in sorted(k for k in median if k.startswith("data:")):
        print(f"{'  ' + key:52} {median[key]:7.1f}")
    print(f"{'  first estimate, data read':52} {median['first estimate, data read']:7.1f}")
    print(f"{'    classes it makes (modules it imports first)':52} "
          f"{median['classes made in the first estimate']:7.1f}")
    print(f"{'second estimate (warm)':52} {median['second estimate']:7.1f}")
    print(f"{'gc pauses over the walk':52} {median['gc pauses over the walk']:7.1f}")
    for key in sorted(k for k in median if k.startswith("gc pauses: ")):
        print(f"{'  ' + key.removeprefix('gc pauses: '):52} {median[key]:7.1f}")
    print(f"load average (1, 5, 15 min) at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
