"""The floors under issue 30's 2x goal: what a first estimate would cost with no gpuplan at all, only the machinery
each design would put on its road (CPU time of whole new processes, median of ``--runs``).

- ``import pydantic, yaml``: the goal's unit;
- a core schema validated by pydantic-core's ``SchemaValidator`` directly (a Scenario checked from a stored schema,
  no ``BaseModel`` class built): a one-field schema, and the Scenario's own stored schema
  (``data/schemas/Scenario.json``, ~120 fields) on a plain class, its validators stood in for by functions that
  return their input (their work is gpuplan's, counted in the estimate), the walk of bench/startup.py validated;
- pydantic's model machinery imported, no model made (``from pydantic import BaseModel, Field``: ``pydantic.main``,
  its schema generator, ``pydantic.fields`` and ``pydantic.types`` with what they import), and that with the plugin
  lookup pydantic runs before it builds its first validator (``importlib.metadata`` imported, every installed
  distribution's entry points read; a ``defer_build`` model never made by its validator skips it): what the
  floor of one model built pays before the model;
- one ``BaseModel`` with ``defer_build`` made by ``model_construct`` (result types built without validation);
- one ``BaseModel`` built and used (today's road: the Scenario and the Plan are models);
- one frozen stdlib dataclass (the 29 result dataclasses: ``dataclasses`` imports ``inspect``).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from pathlib import Path

SCENARIO = Path(__file__).resolve().parent.parent / "src" / "gpuplan" / "data" / "schemas" / "Scenario.json"
STORED = f"""import pydantic, yaml, json, pydantic_core
class Scenario:
    def model_post_init(self, context):
        pass
def same(value, *info):
    return value
def named(data):
    kind = data.get("gpuplan:object")
    if kind is None:
        return data
    return {{"tuple": lambda: tuple(data["items"]), "the class": lambda: Scenario, "the class's ref": lambda: "S:1",
             "exclude_if": lambda: lambda value: False}}.get(kind, lambda: same)()
with open({str(SCENARIO)!r}, "rb") as f:
    schema = json.load(f, object_hook=named)["schema"]
pydantic_core.SchemaValidator(schema).validate_python({{"model": "llama-3.1-8b", "task": "train", "method": "qlora",
                                                       "gpu": "rtx-4090", "train_tokens": 1e8}})"""

CASES = {
    "import pydantic, yaml": "import pydantic, yaml",
    "pydantic-core SchemaValidator used": (
        "import pydantic, yaml, pydantic_core\n"
        "v = pydantic_core.SchemaValidator({'type': 'typed-dict', 'fields': {'x': {'type': 'typed-dict-field', "
        "'schema': {'type': 'int'}}}})\nv.validate_python({'x': 1})"),
    "the Scenario's stored schema by pydantic-core": STORED,
    "pydantic's model machinery, no model": "import pydantic, yaml\nfrom pydantic import BaseModel, Field",
    "... and its plugin lookup": ("import pydantic, yaml\nfrom pydantic import BaseModel, Field\n"
                                  "from pydantic.plugin._loader import get_plugins\nlist(get_plugins())"),
    "one BaseModel, defer_build, model_construct": (
        "import pydantic, yaml\nclass A(pydantic.BaseModel):\n"
        "    model_config = pydantic.ConfigDict(defer_build=True)\n    x: int\nA.model_construct(x=1)"),
    "one BaseModel built and used": "import pydantic, yaml\nclass A(pydantic.BaseModel):\n    x: int\nA(x=1)",
    "one frozen dataclass": ("import pydantic, yaml, dataclasses\n@dataclasses.dataclass(frozen=True)\nclass A:\n"
                             "    x: int\nA(1)"),
}


def cpu_ms(code: str) -> float:
    """The CPU time (user + system) of one new process running ``code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return 1e3 * (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    runs = parser.parse_args().runs
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(runs):  # round after round, every case in each, so that the machine's load falls on all alike
        for name, code in CASES.items():
            times[name].append(cpu_ms(code))
    base = statistics.median(times["import pydantic, yaml"])
    for name, ms in times.items():
        print(f"{name:45s} {statistics.median(ms):6.1f} ms CPU  {statistics.median(ms) / base:4.2f}x")


if __name__ == "__main__":
    main()
