"""Capture what torchtune's own checks need, for the launch tests in an environment without torchtune (torchtune
0.6.1 imports torchao APIs that torchao 0.16 removed, while peft 0.21 refuses any torchao below 0.16):

- the parameters of every component `gpuplan launch --target torchtune` names (``torchtune.config.validate`` binds
  a config's keys to them), and the recipes torchtune ships;
- the trainable parameters of torchtune's LoRA models built on the meta device, for the plans the tests write.

    python tests/data/torchtune/capture_signatures.py > tests/data/torchtune/signatures-0.6.1.json
"""

import inspect
import json
import sys
from importlib.metadata import version
from pathlib import Path

import torch
from omegaconf import OmegaConf
from torchtune import config
from torchtune._recipe_registry import get_all_recipes
from torchtune.config._utils import _get_component_from_path
from torchtune.modules.peft import get_adapter_params, set_trainable_params

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "src"))
from gpuplan.launchers import torchtune as target

OTHER = ["torchtune.training.FullModelHFCheckpointer", "torchtune.datasets.chat_dataset",
         "torchtune.datasets.preference_dataset", "torchtune.rlhf.loss.DPOLoss",
         "torchtune.modules.loss.CEWithChunkedOutputLoss", "torch.nn.CrossEntropyLoss",
         "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup",
         "torchtune.training.metric_logging.DiskLogger", "torch.optim.AdamW", "torch.optim.SGD",
         "bitsandbytes.optim.AdamW8bit", "bitsandbytes.optim.PagedAdamW8bit"]
LORA = {"all-linear r16": dict(lora_attn_modules=["q_proj", "k_proj", "v_proj", "output_proj"],
                               apply_lora_to_mlp=True, apply_lora_to_output=False, lora_rank=16, lora_alpha=32),
        "q_proj,v_proj r8": dict(lora_attn_modules=["q_proj", "v_proj"], apply_lora_to_mlp=False,
                                 apply_lora_to_output=False, lora_rank=8, lora_alpha=16)}


def parameters(path: str) -> dict:
    try:
        sig = inspect.signature(_get_component_from_path(path))
    except Exception as err:  # bitsandbytes may be missing: say so rather than guess
        return {"error": f"{type(err).__name__}: {err}"}
    params = sig.parameters.values()
    return {"parameters": [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)],
            "required": [p.name for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL,
                                                                                           p.VAR_KEYWORD)],
            "var_keyword": any(p.kind is p.VAR_KEYWORD for p in params)}


def trainable(builder: str, lora: dict) -> int:
    with torch.device("meta"):
        model = config.instantiate(OmegaConf.create({"_component_": builder, **lora}))
    set_trainable_params(model, get_adapter_params(model))
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def main() -> None:
    entries = target.models()
    paths = sorted({b for e in entries.values() for b in e["builders"].values()}
                   | {e["tokenizer"]["_component_"] for e in entries.values()} | set(OTHER))
    counts = {name: {key: trainable(e["builders"]["lora"], lora) for key, lora in LORA.items()}
              for name, e in entries.items() if name in ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.2-1B",
                                                          "Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-7B")}
    json.dump({"source": f"torchtune {version('torchtune')} (torchao {version('torchao')}): inspect.signature of "
                         "each component; LoRA models built on the meta device",
               "components": {p: parameters(p) for p in paths}, "recipes": sorted(r.name for r in get_all_recipes()),
               "lora": LORA, "lora_trainable": counts}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
