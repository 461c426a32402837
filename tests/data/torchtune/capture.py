"""Write src/gpuplan/data/torchtune.yaml from torchtune's own recipe configs: for each bundled model torchtune ships
a recipe for, the model builder, tokenizer, checkpoint files and model type its config names.

    python tests/data/torchtune/capture.py > src/gpuplan/data/torchtune.yaml
"""

import importlib
import re
import sys
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path

import yaml

# gpuplan model (data/models) -> torchtune recipe config whose model it is (base and instruct share the weights'
# layout: same builder, tokenizer and shards)
MODELS = {
    "meta-llama/Llama-3.2-1B": "llama3_2/1B_lora_single_device",
    "meta-llama/Llama-3.2-3B": "llama3_2/3B_lora_single_device",
    "meta-llama/Llama-3.1-8B": "llama3_1/8B_lora_single_device",
    "meta-llama/Llama-3.1-70B": "llama3_1/70B_lora",
    "meta-llama/Llama-3.3-70B-Instruct": "llama3_3/70B_lora",
    "meta-llama/Llama-3.1-405B": "llama3_1/405B_qlora",
    "meta-llama/Llama-2-7b-hf": "llama2/7B_lora_single_device",
    "meta-llama/Llama-2-13b-hf": "llama2/13B_lora",
    "meta-llama/Llama-2-70b-hf": "llama2/70B_lora",
    "mistralai/Mistral-7B-v0.1": "mistral/7B_lora_single_device",
    "google/gemma-2-9b": "gemma2/9B_lora_single_device",
    "google/gemma-2-27b": "gemma2/27B_lora_single_device",
    "microsoft/Phi-3-mini-4k-instruct": "phi3/mini_lora_single_device",
    "microsoft/phi-4": "phi4/14B_lora_single_device",
    "Qwen/Qwen2.5-0.5B": "qwen2_5/0.5B_lora_single_device",
    "Qwen/Qwen2.5-1.5B": "qwen2_5/1.5B_lora_single_device",
    "Qwen/Qwen2.5-7B": "qwen2_5/7B_lora_single_device",
    "Qwen/Qwen2.5-14B": "qwen2_5/14B_lora_single_device",
    "Qwen/Qwen2.5-32B": "qwen2_5/32B_lora",
    "Qwen/Qwen2.5-72B": "qwen2_5/72B_lora",
}


def files(spec) -> dict | list:
    if isinstance(spec, list):
        return spec
    return {"filename_format": spec["filename_format"], "max_filename": str(spec["max_filename"])}


def main() -> None:
    root = Path(find_spec("torchtune").origin).parent.parent / "recipes" / "configs"  # installed beside torchtune
    out = {"source": f"torchtune {version('torchtune')} recipes/configs (captured by tests/data/torchtune/capture.py)",
           "models": {}}
    for name, config in MODELS.items():
        cfg = yaml.safe_load((root / f"{config}.yaml").read_text())
        assert cfg["checkpointer"]["_component_"] == "torchtune.training.FullModelHFCheckpointer", config
        builder = cfg["model"]["_component_"]
        module, fn = builder.rsplit(".", 1)
        base = re.sub(r"^(q?lora)_", "", fn)
        mod = importlib.import_module(module)
        if base.endswith("_instruct") and "instruct" not in name.lower() and hasattr(mod, base[:-9] + "_base"):
            base = base[:-9] + "_base"  # the base checkpoint's builder (Qwen2.5 7B and up differ)
        builders = {method: f"{module}.{prefix}{base}" for method, prefix in
                    (("full", ""), ("lora", "lora_"), ("qlora", "qlora_")) if hasattr(mod, prefix + base)}
        ckpt_dir = cfg["checkpointer"]["checkpoint_dir"].rstrip("/")
        tok = {k: (v.replace(ckpt_dir + "/", "") if isinstance(v, str) else v) for k, v in cfg["tokenizer"].items()
               if k not in ("max_seq_len",)}
        out["models"][name] = {"config": config, "builders": builders, "tokenizer": tok,
                               "checkpoint_files": files(cfg["checkpointer"]["checkpoint_files"]),
                               "model_type": cfg["checkpointer"]["model_type"]}
    yaml.safe_dump(out, sys.stdout, sort_keys=False, width=120)


if __name__ == "__main__":
    main()
