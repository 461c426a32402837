"""Capture SkyPilot's task and resources JSON schemas, for the launch tests where SkyPilot is not installed (its
`click<8.2` pin conflicts with huggingface_hub, which transformers needs, so it stays out of `.[all]`).

    python tests/data/skypilot/capture.py > tests/data/skypilot/schemas-<version>.json
"""

import json
import sys
from importlib.metadata import version

from sky.utils import schemas


def main() -> None:
    json.dump({"source": "sky.utils.schemas.get_task_schema / get_resources_schema (Task.from_yaml validates a "
                         "task against the first, its resources against the second)",
               "skypilot_version": version("skypilot"), "task": schemas.get_task_schema(),
               "resources": schemas.get_resources_schema()}, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
