"""Capture Axolotl's config schema, for the launch tests where Axolotl is not installed (axolotl 0.18.0 pins
transformers 5.14.1, peft 0.19.1 and torch<=2.12.1, older than the test environment's, so it is no dependency).

Axolotl validates a config with pydantic models (``src/axolotl/utils/schemas/config.py`` ``AxolotlInputConfig``,
merged with each plugin's arguments by ``axolotl.integrations.config.merge_input_args``); their JSON schema
cannot be generated (an enum holds ``torch.dtype`` values), so this records what the offline test checks: every
field's name, alias, type and allowed values, those of the nested ``fsdp_config`` and ``datasets`` entries (SFT and
DPO), and the ``axolotl train`` launchers. Axolotl's schema modules import with the test environment's libraries, so a
no-deps install is enough:

    pip install --no-deps --target /tmp/axolotl axolotl==0.18.0 addict
    PYTHONPATH=/tmp/axolotl python tests/data/axolotl/capture.py tests/data/axolotl/schema-0.18.0.json

(a path, not stdout: axolotl's logging writes to stdout)
"""

import enum
import json
import sys
import typing
from importlib.metadata import version
from pathlib import Path

from axolotl.cli.main import train
from axolotl.integrations.config import merge_input_args
from axolotl.utils.config import prepare_plugins
from axolotl.utils.dict import DictDefault
from axolotl.utils.schemas import enums
from axolotl.utils.schemas.datasets import DPODataset, SFTDataset
from axolotl.utils.schemas.fsdp import FSDPConfig

PLUGINS = ["axolotl.integrations.liger.LigerPlugin"]  # the plugins gpuplan's axolotl configs name


def choices(annotation) -> list | None:
    """The values a field accepts when they are a closed set (Literals, enums, booleans), else None."""
    found, open_ = [], False
    for arg in typing.get_args(annotation) or (annotation,):
        if typing.get_origin(arg) is typing.Literal:
            found += list(typing.get_args(arg))
        elif isinstance(arg, type) and issubclass(arg, enum.Enum):
            found += [m.value for m in arg]
        elif arg is bool:
            found += [True, False]
        elif arg is type(None):
            found.append(None)
        elif typing.get_args(arg):
            sub = choices(arg)
            open_ = open_ or sub is None
            found += sub or []
        else:
            open_ = True
    return None if open_ else [v if isinstance(v, (str, int, float, bool, type(None))) else repr(v) for v in found]


def fields(model) -> dict:
    return {name: {"annotation": str(f.annotation).replace("typing.", ""), "alias": f.alias,
                   "required": f.is_required(), "choices": choices(f.annotation)}
            for name, f in model.model_fields.items()}


def main() -> None:
    prepare_plugins(DictDefault({"plugins": PLUGINS}))
    _, config = merge_input_args()
    launcher = next(p for p in train.params if p.name == "launcher")
    data = {"source": "axolotl-ai-cloud/axolotl src/axolotl/utils/schemas (AxolotlInputConfig merged with the "
                         "plugins' arguments by integrations/config.py merge_input_args), cli/main.py train",
               "axolotl_version": version("axolotl"), "plugins": PLUGINS, "fields": fields(config),
               "fsdp_config": fields(FSDPConfig), "sft_dataset": fields(SFTDataset),
               "dpo_dataset": fields(DPODataset),
               "attn_implementations": sorted(enums.CANONICAL_ATTN_IMPLS),
               "custom_optimizers": [o.value for o in enums.CustomSupportedOptimizers],
               "train_launchers": list(launcher.type.choices)}
    Path(sys.argv[1]).write_text(json.dumps(data, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
