"""``nemo-recipe.py``: a NeMo 2.0 recipe (NeMo-Run) for a plan of stack megatron.

The script takes NeMo's own recipe for the model (``llm.<recipe>.pretrain_recipe`` for full training,
``finetune_recipe(peft_scheme='lora')`` for LoRA) and sets on it the settings the estimate assumed
(:mod:`gpuplan.stacks.megatron`): the ``MegatronStrategy``'s TP, PP, virtual stages, CP, EP (expert TP 1 for an MoE
model) and sequence parallelism, the embedding and the loss counted in the pipeline split where the estimate counted
them, the precision plugin (``bf16_mixed``, ``bf16_with_fp8_mixed`` or ``bf16_with_fp8_current_scaling_mixed``),
Megatron-Core's recompute fields, micro and global batch and sequence length on the data module and the model
config, the steps, the evaluation interval, the checkpoint interval (``ModelCheckpoint.every_n_train_steps``) and
resumption (``AutoResume.resume_if_exists``). Every name it calls or sets is one of NeMo's (the recipe functions,
their keywords, the fields of the objects a recipe holds): tests/data/nemo/recipes.json holds them as read from
NVIDIA/NeMo and Megatron-Core's source by its capture.py (NeMo does not install without CUDA). The recipe's data is
its own (mock data for pre-training, SQuAD for fine-tuning) until you set ``recipe.data``. The recipes' own
``DistributedDataParallelConfig`` already keeps fp32 gradient buffers (``grad_reduce_in_fp32=True``), as the
estimate assumes. The script runs the recipe in its own process (``run.run(recipe, direct=True)``, as NeMo's docs
show, e.g. docs.nvidia.com/nemo-framework/user-guide/latest/llms/gemma2.html), one per GPU under ``torchrun``.

What NeMo's recipes cannot express is refused in one sentence: models without a NeMo recipe, methods other than
full training and LoRA, LoRA on some but not all of q, k and v (NeMo adapts the fused ``linear_qkv``).
"""

from __future__ import annotations

from ..stacks.megatron import embedding_in_split
from ..tensors.state import lora_targets
from .files import LaunchFile, comment, pasted
from .plan import LaunchPlan
from .settings import LaunchOptions
from .torchrun import launcher

NAME = "nemo"
SCRIPT = "nemo-recipe.py"

# The bundled models NeMo has a recipe for: Hugging Face id -> module of nemo.collections.llm.recipes
RECIPES = {
    "meta-llama/Llama-2-7b-hf": "llama2_7b", "meta-llama/Meta-Llama-3-8B": "llama3_8b",
    "meta-llama/Meta-Llama-3-70B": "llama3_70b", "meta-llama/Llama-3.1-8B": "llama31_8b",
    "meta-llama/Llama-3.1-70B": "llama31_70b", "meta-llama/Llama-3.1-405B": "llama31_405b",
    "meta-llama/Llama-3.2-1B": "llama32_1b", "meta-llama/Llama-3.2-3B": "llama32_3b",
    "mistralai/Mistral-7B-v0.3": "mistral_7b", "mistralai/Mixtral-8x7B-v0.1": "mixtral_8x7b",
    "mistralai/Mixtral-8x22B-v0.1": "mixtral_8x22b", "google/gemma-2-9b": "gemma2_9b",
    "google/gemma-2-27b": "gemma2_27b", "Qwen/Qwen2.5-0.5B": "qwen25_500m", "Qwen/Qwen2.5-1.5B": "qwen25_1p5b",
    "Qwen/Qwen2.5-7B": "qwen25_7b", "Qwen/Qwen2.5-14B": "qwen25_14b", "Qwen/Qwen2.5-32B": "qwen25_32b",
    "Qwen/Qwen2.5-72B": "qwen25_72b", "Qwen/Qwen3-0.6B": "qwen3_600m", "Qwen/Qwen3-1.7B": "qwen3_1p7b",
    "Qwen/Qwen3-8B": "qwen3_8b", "Qwen/Qwen3-32B": "qwen3_32b", "Qwen/Qwen3-30B-A3B": "qwen3_30b_a3b",
    "Qwen/Qwen3-235B-A22B": "qwen3_235b_a22b", "openai/gpt-oss-20b": "gpt_oss_20b",
    "openai/gpt-oss-120b": "gpt_oss_120b", "deepseek-ai/DeepSeek-V3": "deepseek_v3",
}
# precision plugin factories of nemo/collections/llm/recipes/precision/mixed_precision.py
PRECISION = {("bf16-mixed", None): "bf16_mixed", ("fp16-mixed", None): "fp16_mixed",
             ("fp8-mixed", "delayed"): "bf16_with_fp8_mixed",
             ("fp8-mixed", "current"): "bf16_with_fp8_current_scaling_mixed"}
# gpuplan's LoRA targets (Hugging Face names) -> NeMo's LoRA target_modules (Megatron-Core's fused linears)
LORA_TARGETS = {"q_proj": "linear_qkv", "k_proj": "linear_qkv", "v_proj": "linear_qkv", "o_proj": "linear_proj",
                "gate_proj": "linear_fc1", "up_proj": "linear_fc1", "down_proj": "linear_fc2"}


def applies(plan: LaunchPlan) -> str | None:
    s, m = plan.scenario, plan.model
    if NAME not in plan.stack_targets:
        return "NeMo's recipes run plans of stack megatron: plan with --stack megatron"
    if m.name not in RECIPES:
        return f"NeMo has no recipe for {m.name} among the models gpuplan knows (see launchers/nemo.py RECIPES)"
    if s.method not in ("full", "lora"):
        return f"NeMo's recipes train all weights or LoRA adapters over a 16-bit or fp8 base, not {s.method}"
    if s.tp_overlap not in (None, "backward"):
        return (f"gpuplan writes NeMo's recipe without its MegatronCommOverlapCallback, so tp_overlap {s.tp_overlap} "
                "would not run: drop tp_overlap (userbuffers: launch --target megatron, which sets --tp-comm-overlap)")
    if (s.precision, s.fp8_recipe) not in PRECISION:
        return f"NeMo's recipes have no precision plugin for {s.precision}"
    if s.method == "lora":
        targets = set(lora_targets(s, m))
        qkv = targets & {"q_proj", "k_proj", "v_proj"}
        if qkv and len(qkv) < 3:
            return ("NeMo's LoRA adapts q, k and v together (the fused linear_qkv): target all three or none, "
                    f"not {', '.join(sorted(qkv))}")
        if targets - set(LORA_TARGETS):
            return f"NeMo's LoRA has no target for {', '.join(sorted(targets - set(LORA_TARGETS)))}"
    return None


def lora_modules(plan: LaunchPlan) -> list[str]:
    """NeMo's target_modules for the plan's LoRA targets (``all-linear`` resolved as peft resolves it)."""
    names = lora_targets(plan.scenario, plan.model)
    return [t for t in ("linear_qkv", "linear_proj", "linear_fc1", "linear_fc2")
            if any(LORA_TARGETS[n] == t for n in names)]


def settings(plan: LaunchPlan) -> list[tuple[str, object]]:
    """``(attribute path on the recipe, value)``, in the order written."""
    s, m = plan.scenario, plan.model
    split = embedding_in_split(s, m)
    out: list[tuple[str, object]] = [
        ("trainer.strategy.tensor_model_parallel_size", s.tp),
        ("trainer.strategy.pipeline_model_parallel_size", s.pp),
        ("trainer.strategy.virtual_pipeline_model_parallel_size", s.vpp if s.vpp > 1 else None),
        ("trainer.strategy.context_parallel_size", s.cp),
        ("trainer.strategy.expert_model_parallel_size", s.ep),
        # routed experts whole on each tensor-parallel rank, as the estimate holds them: MegatronStrategy's
        # default (None) is Megatron-Core's, the TP size, and only some recipes set 1 (qwen3's, not mixtral's)
        *([("trainer.strategy.expert_tensor_parallel_size", 1)] if m.is_moe else []),
        ("trainer.strategy.sequence_parallel", s.tp > 1),
        ("trainer.strategy.account_for_embedding_in_pipeline_split", split),
        ("trainer.strategy.account_for_loss_in_pipeline_split", split),
        ("optim.config.use_distributed_optimizer", s.resolved_sharding == "zero1"),
        ("model.config.seq_length", s.seq_len),
        ("data.seq_length", s.seq_len),
        ("data.micro_batch_size", s.micro_batch_size),
        ("data.global_batch_size", s.micro_batch_size * s.grad_accum_steps * s.dp)]
    if s.grad_checkpointing == "selective":
        out += [("model.config.recompute_granularity", "selective"), ("model.config.recompute_modules", ["core_attn"])]
    elif s.grad_checkpointing == "full":
        out += [("model.config.recompute_granularity", "full"),
                ("model.config.recompute_method", "block" if s.recompute_layers else "uniform"),
                ("model.config.recompute_num_layers", s.recompute_layers or 1)]
    else:
        out.append(("model.config.recompute_granularity", None))
    if s.cuda_graphs:  # Megatron-Core's whole-iteration capture (megatron/core/full_cuda_graph.py)
        out.append(("model.config.cuda_graph_impl", "full_iteration"))
    if s.fp8_attention:
        out.append(("model.config.fp8_dot_product_attention", True))
    if s.fp8_activation_store:
        out.append(("model.config.activation_func_fp8_input_store", True))
    if s.fp8_transpose_cache is False:  # TELinear passes is_first_microbatch=None: no transpose kept between steps
        out.append(("model.config.disable_parameter_transpose_cache", True))
    if s.method == "lora":
        out += [("peft.dim", s.lora_rank), ("peft.target_modules", lora_modules(plan))]
    if plan.max_steps is not None:
        out.append(("trainer.max_steps", plan.max_steps))
    if s.eval_interval:
        out.append(("trainer.val_check_interval", s.eval_interval))
        if s.eval_tokens:
            batches = max(1, -(-int(s.eval_tokens) // (s.micro_batch_size * s.grad_accum_steps * s.dp * s.seq_len)))
            out.append(("trainer.limit_val_batches", batches))
    if plan.save_steps:
        out.append(("log.ckpt.every_n_train_steps", plan.save_steps))
    out.append(("resume.resume_if_exists", True))
    return out


def recipe_call(plan: LaunchPlan) -> tuple[str, dict[str, object]]:
    """``(function, keyword arguments)``: NeMo's recipe for the model."""
    s = plan.scenario
    name = RECIPES[plan.model.name]
    kwargs: dict[str, object] = {"dir": "checkpoints", "name": "gpuplan", "num_nodes": plan.num_nodes,
                                 "num_gpus_per_node": plan.gpus_per_node}
    if s.method == "lora":
        return f"llm.{name}.finetune_recipe", {**kwargs, "peft_scheme": "lora", "seq_length": s.seq_len}
    return f"llm.{name}.pretrain_recipe", kwargs


def script(plan: LaunchPlan) -> str:
    s = plan.scenario
    fn, kwargs = recipe_call(plan)
    plugin = PRECISION[(s.precision, s.fp8_recipe)]
    run = pasted([*launcher(plan), SCRIPT])
    notes = [f"run: {run}" + (f" on each of the {plan.num_nodes} nodes, with NODE_RANK and MASTER_ADDR set"
                              if plan.num_nodes > 1 else ""),
             "in NVIDIA's NeMo container (nvcr.io/nvidia/nemo); NeMo logs its memory with NEMO_LOG_MEMORY_USAGE=1",
             "data: the recipe's own (" + ("mock data" if s.method == "full" else "SQuAD") +
             ") until you set recipe.data to your data module"]
    lines = ["#!/usr/bin/env python", comment([*plan.header(), *notes]).rstrip("\n"),
             "import nemo_run as run",
             "from nemo.collections import llm",
             f"from nemo.collections.llm.recipes.precision.mixed_precision import {plugin}",
             "", "",
             "def recipe():",
             f"    recipe = {fn}(" + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")",
             f"    recipe.trainer.plugins = {plugin}()"]
    lines += [f"    recipe.{path} = {value!r}" for path, value in settings(plan)]
    lines += ["    return recipe", "", "",
              'if __name__ == "__main__":',
              "    run.run(recipe(), direct=True)  # in this process: torchrun starts one per GPU", ""]
    return "\n".join(lines)


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    return [LaunchFile(name=SCRIPT, target=NAME, text=script(plan), reader="python (NeMo 2.0 recipe, NeMo-Run)",
                       executable=True)]
