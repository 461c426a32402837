"""Capture what a NeMo 2.0 recipe script may call and set, from NeMo's and Megatron-Core's own source, into
recipes.json: the recipe modules of ``nemo.collections.llm.recipes`` with the keyword arguments of their
``pretrain_recipe`` / ``finetune_recipe``, the factories of ``recipes/precision/mixed_precision.py``, and the
settable fields of the objects a recipe holds (``MegatronStrategy``, ``DistributedDataParallelConfig``,
``MockDataModule`` / ``PreTrainingDataModule`` / ``FineTuningDataModule``, ``LoRA``, ``ModelCheckpoint``,
``AutoResume``, the Lightning ``Trainer`` keywords the recipes pass, Megatron-Core's ``TransformerConfig`` and
NeMo's ``GPTConfig``, ``OptimizerConfig``).

NeMo does not install on a CPU-only machine without its CUDA stack (Transformer Engine, Apex), so its functions
cannot be imported here: the signatures are read with :mod:`ast` from the source files at one commit of each
repository (``git show COMMIT:path`` in a clone). Run ``python tests/data/nemo/capture.py NEMO_CLONE NEMO_COMMIT
MEGATRON_CLONE MEGATRON_COMMIT > tests/data/nemo/recipes.json``.
"""

import ast
import json
import subprocess
import sys


def source(clone: str, commit: str, path: str) -> ast.Module:
    text = subprocess.run(["git", "-C", clone, "show", f"{commit}:{path}"], check=True, capture_output=True,
                          text=True).stdout
    return ast.parse(text)


def function_kwargs(tree: ast.Module, name: str) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            a = node.args
            return [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    return None


def class_fields(tree: ast.Module, name: str) -> list[str]:
    """A class's ``__init__`` parameters, or its annotated fields (dataclasses), without ``self``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            if init is not None:
                a = init.args
                return [x.arg for x in [*a.args, *a.kwonlyargs] if x.arg != "self"]
            return [n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
    raise SystemExit(f"no class {name}")


def trainer_keywords(tree: ast.Module) -> set[str]:
    """The keywords a recipe passes to ``run.Config(nl.Trainer, ...)``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and ast.unparse(node.args[0]) == "nl.Trainer":
            out |= {k.arg for k in node.keywords if k.arg}
    return out


def main(nemo: str, nemo_commit: str, megatron: str, megatron_commit: str) -> dict:
    folder = f"{nemo_commit}:nemo/collections/llm/recipes"
    listing = subprocess.run(["git", "-C", nemo, "ls-tree", "--name-only", folder], check=True, capture_output=True,
                             text=True).stdout.split()
    recipes, trainer = {}, set()
    for name in sorted(listing):
        if not name.endswith(".py") or name.startswith("_"):
            continue
        tree = source(nemo, nemo_commit, f"nemo/collections/llm/recipes/{name}")
        found = {f: function_kwargs(tree, f) for f in ("pretrain_recipe", "finetune_recipe")}
        if any(found.values()):
            recipes[name[:-3]] = {k: v for k, v in found.items() if v is not None}
        trainer |= trainer_keywords(tree)
    precision = source(nemo, nemo_commit, "nemo/collections/llm/recipes/precision/mixed_precision.py")
    classes = {
        "MegatronStrategy": (nemo, nemo_commit, "nemo/lightning/pytorch/strategies/megatron_strategy.py"),
        "MegatronMixedPrecision": (nemo, nemo_commit, "nemo/lightning/pytorch/plugins/mixed_precision.py"),
        "MockDataModule": (nemo, nemo_commit, "nemo/collections/llm/gpt/data/mock.py"),
        "PreTrainingDataModule": (nemo, nemo_commit, "nemo/collections/llm/gpt/data/pre_training.py"),
        "FineTuningDataModule": (nemo, nemo_commit, "nemo/collections/llm/gpt/data/fine_tuning.py"),
        "LoRA": (nemo, nemo_commit, "nemo/collections/llm/peft/lora.py"),
        "ModelCheckpoint": (nemo, nemo_commit, "nemo/lightning/pytorch/callbacks/model_checkpoint.py"),
        "AutoResume": (nemo, nemo_commit, "nemo/lightning/resume.py"),
        "GPTConfig": (nemo, nemo_commit, "nemo/collections/llm/gpt/model/base.py"),
        "TransformerConfig": (megatron, megatron_commit, "megatron/core/transformer/transformer_config.py"),
        "ModelParallelConfig": (megatron, megatron_commit, "megatron/core/model_parallel_config.py"),
        "DistributedDataParallelConfig": (megatron, megatron_commit,
                                          "megatron/core/distributed/distributed_data_parallel_config.py"),
        "OptimizerConfig": (megatron, megatron_commit, "megatron/core/optimizer/optimizer_config.py"),
    }
    fields = {name: class_fields(source(*where), name) for name, where in classes.items()}
    return {"source": {"NVIDIA/NeMo": nemo_commit, "NVIDIA/Megatron-LM": megatron_commit},
            "files": {name: f"{where[2]}" for name, where in classes.items()},
            "recipes": recipes,
            "precision_factories": sorted(n.name for n in precision.body if isinstance(n, ast.FunctionDef)),
            "trainer_keywords": sorted(trainer),
            "fields": fields}


if __name__ == "__main__":
    json.dump(main(*sys.argv[1:5]), sys.stdout, indent=1)
    sys.stdout.write("\n")
