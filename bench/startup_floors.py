"""The floors under issue 30's 2x goal: what a first estimate would cost with no gpuplan at all, only the machinery
each design would put on its road (CPU time of whole new processes, median of ``--runs``).

- ``import pydantic, yaml``: the goal's unit;
- a core schema validated by pydantic-core's ``SchemaValidator`` directly (a Scenario checked from a stored schema,
  no ``BaseModel`` class built);
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

CASES = {
    "import pydantic, yaml": "import pydantic, yaml",
    "pydantic-core SchemaValidator used": (
        "import pydantic, yaml, pydantic_core\n"
        "v = pydantic_core.SchemaValidator({'type': 'typed-dict', 'fields': {'x': {'type': 'typed-dict-field', "
        "'schema': {'type': 'int'}}}})\nv.validate_python({'x': 1})"),
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
