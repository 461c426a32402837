"""``gpuplan launch --target nemo``: the NeMo 2.0 recipe script, every name it calls or sets checked against NeMo's
and Megatron-Core's own source (tests/data/nemo/recipes.json, captured by its capture.py at the commits it names),
its values against the plan, and what NeMo cannot express refused in one sentence."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from conftest import cli_in_process
from gpuplan import GpuplanError
from gpuplan.launchers import launch_files, launch_plan
from gpuplan.launchers.nemo import RECIPES

CAPTURED = json.loads((Path(__file__).parents[1] / "data" / "nemo" / "recipes.json").read_text())
F = CAPTURED["fields"]
# what each attribute path of a recipe holds (nemo/collections/llm/recipes/*.py build them so)
HOLDERS = {"trainer.strategy.ddp": F["DistributedDataParallelConfig"],
           "trainer.strategy": F["MegatronStrategy"],
           "trainer": CAPTURED["trainer_keywords"],
           "model.config": F["GPTConfig"] + F["TransformerConfig"] + F["ModelParallelConfig"],
           "optim.config": F["OptimizerConfig"],
           "log.ckpt": F["ModelCheckpoint"],
           "resume": F["AutoResume"],
           "peft": F["LoRA"]}
MEGATRON = {"task": "train", "stack": "megatron", "gpu": "h100-sxm", "num_gpus": 8}
CASES = [
    {**MEGATRON, "model": "llama-3.1-405b", "num_nodes": 64, "tp": 8, "pp": 8, "vpp": 2, "cp": 4, "seq_len": 8192,
     "grad_accum_steps": 256, "precision": "fp8-mixed", "train_tokens": 1e11, "eval_interval": 2000,
     "cuda_graphs": True, "fp8_attention": True},
    {**MEGATRON, "model": "llama-3.1-8b", "method": "lora", "lora_targets": ["q_proj", "k_proj", "v_proj", "o_proj"],
     "seq_len": 4096, "grad_accum_steps": 4, "train_tokens": 1e8, "eval_interval": 50, "eval_tokens": 1e6},
    {**MEGATRON, "model": "mixtral-8x7b", "num_nodes": 8, "tp": 1, "pp": 4, "vpp": 8, "ep": 8, "seq_len": 4096,
     "grad_accum_steps": 16, "precision": "fp8-mixed", "fp8_recipe": "current", "grad_checkpointing": "full",
     "fp8_activation_store": True},
    # what AMD's MLPerf LoRA configs set (config_MI300X_1x8x1.sh: ACG=full ACM=block ACL=21, ENABLE_TRANSPOSE_CACHE=0)
    {**MEGATRON, "gpu": "h200-sxm", "model": "llama-3.1-70b", "method": "lora",
     "lora_targets": ["q_proj", "k_proj", "v_proj", "o_proj"], "seq_len": 4096, "grad_accum_steps": 1,
     "train_tokens": 1e7, "precision": "fp8-mixed",
     "grad_checkpointing": "full", "recompute_layers": 21, "fp8_transpose_cache": False},
]
IDS = ["405b-pretrain", "8b-lora", "mixtral-ep", "70b-lora-block"]


def _script(fields: dict):
    plan = launch_plan(fields)
    (file,) = [f for f in launch_files(plan, ["nemo"]) if f.name == "nemo-recipe.py"]
    return plan, file.text


def _assignments(tree: ast.Module) -> dict[str, object]:
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Attribute):
            path = ast.unparse(node.targets[0])
            assert path.startswith("recipe.")
            out[path.removeprefix("recipe.")] = node.value
    return out


@pytest.mark.parametrize("fields", CASES, ids=IDS)
def test_nemo_recipe_names_are_nemos(fields):
    """The recipe function and its keywords, the precision factory and every field set exist in NeMo's source."""
    _, text = _script(fields)
    tree = ast.parse(text)
    compile(text, "nemo-recipe.py", "exec")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func).startswith("llm.")]
    (call,) = calls
    _, module, function = ast.unparse(call.func).split(".")
    assert function in CAPTURED["recipes"][module]
    assert {k.arg for k in call.keywords} <= set(CAPTURED["recipes"][module][function])
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and n.module == "nemo.collections.llm.recipes.precision.mixed_precision" for a in n.names]
    assert imported and set(imported) <= set(CAPTURED["precision_factories"])
    for path in _assignments(tree):
        holder, _, name = path.rpartition(".")
        if path == "data." + name:  # pre-training's MockDataModule, fine-tuning's SquadDataModule
            data = F["MockDataModule"] if function == "pretrain_recipe" else F["FineTuningDataModule"]
            assert name in data, path
            continue
        assert name in HOLDERS[holder], path


@pytest.mark.parametrize("fields", CASES, ids=IDS)
def test_nemo_recipe_values_are_the_plans(fields):
    plan, text = _script(fields)
    s = plan.scenario
    got = {k: ast.literal_eval(v) for k, v in _assignments(ast.parse(text)).items() if k != "trainer.plugins"}
    assert (got["trainer.strategy.tensor_model_parallel_size"], got["trainer.strategy.pipeline_model_parallel_size"],
            got["trainer.strategy.context_parallel_size"], got["trainer.strategy.expert_model_parallel_size"]) == \
        (s.tp, s.pp, s.cp, s.ep)
    assert got["trainer.strategy.virtual_pipeline_model_parallel_size"] == (s.vpp if s.vpp > 1 else None)
    assert got["data.global_batch_size"] == s.micro_batch_size * s.grad_accum_steps * s.dp
    assert got["data.seq_length"] == got["model.config.seq_length"] == s.seq_len
    assert got["model.config.recompute_granularity"] == s.grad_checkpointing
    assert got.get("trainer.max_steps") == plan.max_steps
    assert got.get("trainer.val_check_interval") == s.eval_interval
    # what NVIDIA's MLPerf configs turn on: CUDA graphs, fp8 attention, the fp8 store of SwiGLU's input
    assert got.get("model.config.cuda_graph_impl") == ("full_iteration" if s.cuda_graphs else None)
    assert got.get("model.config.fp8_dot_product_attention") == (True if s.fp8_attention else None)
    assert got.get("model.config.activation_func_fp8_input_store") == (True if s.fp8_activation_store else None)
    # Megatron-Core's block recompute of the first N layers; no fp8 weight transposes kept between steps
    if s.grad_checkpointing == "full":
        assert (got["model.config.recompute_method"], got["model.config.recompute_num_layers"]) == \
            (("block", s.recompute_layers) if s.recompute_layers else ("uniform", 1))
    assert got.get("model.config.disable_parameter_transpose_cache") == (True if s.fp8_transpose_cache is False
                                                                         else None)
    # 405B over pp 8 x vpp 2: 126 + 2 layers, as NeMo's own llama31_405b recipe splits them
    assert got["trainer.strategy.account_for_embedding_in_pipeline_split"] == (s.model == "llama-3.1-405b")
    if s.method == "lora":
        assert got["peft.target_modules"] == ["linear_qkv", "linear_proj"] and got["peft.dim"] == s.lora_rank
    if s.eval_tokens:  # 1e6 tokens in global batches of 1 x 4096 x 4 x 8 = 131,072 tokens: 8 batches
        assert got["trainer.limit_val_batches"] == 8


def test_every_mapped_model_has_a_nemo_recipe():
    assert set(RECIPES.values()) <= set(CAPTURED["recipes"])


@pytest.mark.parametrize("fields, message", [
    ({**MEGATRON, "model": "llama-3.1-8b", "stack": "hf", "method": "lora"}, "stack megatron"),
    ({**MEGATRON, "model": "llama-2-70b", "method": "lora", "tp": 8}, "NeMo has no recipe for meta-llama/Llama-2-70b"),
    ({**MEGATRON, "model": "llama-3.1-8b", "method": "lora", "lora_targets": ["q_proj", "v_proj"]},
     "q, k and v together"),
])
def test_nemo_refuses_what_it_cannot_express(fields, message):
    with pytest.raises(GpuplanError, match=message) as info:
        launch_files(launch_plan(fields), ["nemo"])
    assert "\n" not in str(info.value)


def test_nemo_refusal_on_the_command_line_is_exit_2():
    """MLPerf's Llama-2-70B LoRA (the bundled example): NeMo 2.0 has no llama2_70b recipe."""
    example = Path(__file__).parents[2] / "examples" / "mlperf-llama2-70b-lora.yaml"
    run = cli_in_process("launch", str(example), "--target", "nemo", "-o", "-")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "NeMo has no recipe" in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_save_interval_is_the_checkpoint_interval():
    """A scenario's save_interval (whose pauses the time includes) is the interval the recipe saves at."""
    plan, text = _script({**CASES[1], "save_interval": 40})
    got = {k: ast.literal_eval(v) for k, v in _assignments(ast.parse(text)).items() if k != "trainer.plugins"}
    assert plan.save_steps == got["log.ckpt.every_n_train_steps"] == 40


def test_all_linear_lora_is_every_nemo_target():
    _, text = _script({**MEGATRON, "model": "llama-3.1-8b", "method": "lora", "lora_targets": "all-linear",
                       "seq_len": 4096})
    got = {k: ast.literal_eval(v) for k, v in _assignments(ast.parse(text)).items() if k != "trainer.plugins"}
    assert got["peft.target_modules"] == ["linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"]


@pytest.mark.parametrize("ep", [1, 8])
def test_moe_experts_stay_whole_per_tensor_parallel_rank(ep):
    """The estimate holds each routed expert whole on a tensor-parallel rank (stacks/megatron.py: experts split by
    EP alone, expert_tensor_parallel_size 1). Megatron-Core's default expert TP is the TP size, and NeMo's mixtral
    recipes leave it there (qwen3's set 1): Mixtral-8x7B at TP 2 would run its experts split in two, and at TP 2
    and EP 8 on 8 GPUs a stage would need 2 x 8 expert ranks and stop at start-up. Both files now say 1; a dense
    model's files say nothing of it."""
    from gpuplan.launchers.megatron import parallel_args

    moe = {**CASES[2], "tp": 2, "ep": ep}
    plan, text = _script(moe)
    got = {k: ast.literal_eval(v) for k, v in _assignments(ast.parse(text)).items() if k != "trainer.plugins"}
    assert got["trainer.strategy.expert_tensor_parallel_size"] == 1
    assert got["trainer.strategy.expert_model_parallel_size"] == ep
    argv = parallel_args(plan)
    assert argv[argv.index("--expert-tensor-parallel-size") + 1] == "1"
    assert ("--expert-model-parallel-size" in argv) == (ep > 1)
    dense, text = _script({**MEGATRON, "model": "llama-3.1-8b", "tp": 2, "grad_accum_steps": 4})
    assert "expert_tensor_parallel_size" not in text and "--expert-tensor-parallel-size" not in parallel_args(dense)
