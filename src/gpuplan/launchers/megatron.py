"""``megatron-pretrain.sh``: Megatron-LM's ``pretrain_gpt.py`` under ``torchrun`` for a plan of stack megatron.

The arguments are the settings the estimate assumed (:mod:`gpuplan.stacks.megatron`), written out: the parallel
sizes (``--tensor-model-parallel-size``, ``--pipeline-model-parallel-size`` and
``--num-virtual-stages-per-pipeline-rank``, ``--context-parallel-size``, ``--expert-model-parallel-size`` with
``--expert-tensor-parallel-size 1``), ``--sequence-parallel`` with TP, the distributed optimizer and its overlaps,
fp32 gradient buffers (``--accumulate-allreduce-grads-in-fp32``, NeMo's ``grad_reduce_in_fp32``), bf16 or fp8
(``--fp8-format hybrid --fp8-recipe delayed | tensorwise``, weights kept in fp8 with ``--fp8-param-gather``
as NeMo's fp8 recipes keep them) or NVFP4 (``--fp4-format e2m1 --fp4-recipe nvfp4``), CUDA graphs
(``--cuda-graph-impl full_iteration``), the recompute policy (``selective``: core attention;
``full``: every layer, ``uniform`` 1), the batch (``--micro-batch-size``, ``--global-batch-size``), and the model's
shape from its config.json (Llama-style: RMSNorm, SwiGLU, rotary, grouped-query attention, untied embeddings; MoE:
``--num-experts``, ``--moe-router-topk``, ``--moe-ffn-hidden-size``). Option names and choices are those of
Megatron-LM's own parser (``megatron/training/arguments.py``, captured in tests/data/megatron by its capture.py).
The data is Megatron's mock data until you point ``--data-path`` at your indexed dataset.
"""

from __future__ import annotations

from ..stacks.megatron import embedding_in_split
from ..tensors.activations import INPUT_OF
from .files import LaunchFile, shell_text
from .plan import LaunchPlan
from .settings import LaunchOptions
from .torchrun import launcher

NAME = "megatron"
SCRIPT = "megatron-pretrain.sh"
FP8_RECIPE = {"delayed": "delayed", "current": "tensorwise"}  # Megatron-LM's names for TE's scaling recipes
LLAMA_LIKE = ("llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe")


def applies(plan: LaunchPlan) -> str | None:
    s, m = plan.scenario, plan.model
    if not plan.train or s.stack != "megatron":
        return "pretrain_gpt.py runs plans of stack megatron: plan with --stack megatron"
    if s.method != "full":
        return "Megatron-LM's pretrain_gpt.py trains every weight; NeMo's LoRA is not written by gpuplan launch"
    stores = [k for k in ("fp8_attention", "fp8_activation_store") if getattr(s, k)]
    if stores:  # TransformerConfig fields (fp8_dot_product_attention, activation_func_fp8_input_store) without a flag
        return (f"Megatron-LM's pretrain_gpt.py has no argument for {' or '.join(stores)} (TransformerConfig "
                "fp8_dot_product_attention / activation_func_fp8_input_store): drop them, or launch --target nemo")
    if m.family not in LLAMA_LIKE or m.mla:
        return (f"gpuplan writes Megatron-LM arguments for Llama-style models ({', '.join(LLAMA_LIKE)}), not "
                f"{m.family}")
    return None


def model_args(plan: LaunchPlan) -> list[str]:
    """The model's shape in Megatron-LM's terms, from its config.json."""
    m = plan.model
    ffn = next(lin.in_features for lyr in m.layers for lin in lyr.linears
               if INPUT_OF.get(lin.name) == "mlp_mid" and lin.group in ("mlp", "experts"))
    argv = ["--num-layers", str(m.num_layers), "--hidden-size", str(m.hidden_size), "--ffn-hidden-size", str(ffn),
            "--num-attention-heads", str(m.num_heads), "--kv-channels", str(m.head_dim),
            "--group-query-attention", "--num-query-groups", str(m.num_kv_heads),
            "--max-position-embeddings", str(m.max_context or plan.scenario.seq_len),
            "--normalization", "RMSNorm", "--swiglu", "--position-embedding-type", "rope",
            "--disable-bias-linear", "--vocab-size", str(m.vocab_size), "--make-vocab-size-divisible-by", "128"]
    if not m.tie_word_embeddings:
        argv.append("--untie-embeddings-and-output-weights")
    if m.is_moe:
        moe = next(lyr for lyr in m.layers if lyr.moe)
        argv += ["--num-experts", str(m.num_experts), "--moe-router-topk", str(moe.experts_per_token),
                 "--moe-ffn-hidden-size", str(ffn)]
    return argv


def parallel_args(plan: LaunchPlan) -> list[str]:
    s = plan.scenario
    argv = ["--tensor-model-parallel-size", str(s.tp), "--pipeline-model-parallel-size", str(s.pp),
            "--context-parallel-size", str(s.cp)]
    if s.vpp > 1:
        argv += ["--num-virtual-stages-per-pipeline-rank", str(s.vpp)]
    if embedding_in_split(s, plan.model):  # the layers split as the estimate assumed (stacks/megatron.py)
        argv += ["--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"]
    if s.ep > 1:
        argv += ["--expert-model-parallel-size", str(s.ep), "--expert-tensor-parallel-size", "1"]
    if s.tp > 1:
        argv.append("--sequence-parallel")
    if s.resolved_sharding == "zero1":
        argv += ["--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather"]
    return [*argv, "--accumulate-allreduce-grads-in-fp32"]


def precision_args(plan: LaunchPlan) -> list[str]:
    s = plan.scenario
    argv = ["--fp16"] if s.precision == "fp16-mixed" else ["--bf16"]
    if s.precision == "fp8-mixed":
        argv += ["--fp8-format", "hybrid", "--fp8-recipe", FP8_RECIPE[s.fp8_recipe], "--fp8-param-gather"]
    if s.precision == "fp4-mixed":  # TransformerConfig.fp4 / fp4_recipe (Transformer Engine NVFP4BlockScaling)
        argv += ["--fp4-format", "e2m1", "--fp4-recipe", "nvfp4"]
    if s.cuda_graphs:  # the whole iteration captured and replayed (megatron/core/full_cuda_graph.py)
        argv += ["--cuda-graph-impl", "full_iteration"]
    if s.grad_checkpointing == "selective":
        argv += ["--recompute-granularity", "selective", "--recompute-modules", "core_attn"]
    elif s.grad_checkpointing == "full":
        argv += ["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"]
    return argv


def training_args(plan: LaunchPlan) -> list[str]:
    s = plan.scenario
    global_batch = s.micro_batch_size * s.grad_accum_steps * s.dp
    lr = plan.recipe.learning_rate if plan.recipe else 3e-4
    argv = ["--micro-batch-size", str(s.micro_batch_size), "--global-batch-size", str(global_batch),
            "--seq-length", str(s.seq_len), "--optimizer", "adam" if s.optimizer == "adamw" else "sgd",
            "--lr", f"{lr:g}", "--min-lr", f"{lr / 10:g}", "--lr-decay-style", "cosine",
            "--weight-decay", "0.1", "--clip-grad", "1.0", "--transformer-impl", "transformer_engine",
            "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", plan.model.name, "--mock-data",
            "--log-interval", "10"]
    if plan.max_steps is not None:
        argv += ["--train-iters", str(plan.max_steps)]
    if plan.save_steps:
        argv += ["--save", "checkpoints", "--save-interval", str(plan.save_steps)]
    return argv


def command(plan: LaunchPlan, opts: LaunchOptions) -> list[str]:
    return [*launcher(plan), "pretrain_gpt.py", *model_args(plan), *parallel_args(plan), *precision_args(plan),
            *training_args(plan)]


def notes(plan: LaunchPlan) -> list[str]:
    mem = plan.result.memory
    return ["run from a Megatron-LM checkout (pretrain_gpt.py) in NVIDIA's PyTorch container, on every node",
            f"predicted per rank: {mem.allocated_peak_gib:.1f} GiB allocated; Megatron logs 'memory (MB) | allocated "
            "... | max allocated ...' after the first iterations",
            "--mock-data: replace with --data-path <your indexed dataset prefix> (tools/preprocess_data.py)"]


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    return [LaunchFile(name=SCRIPT, target=NAME, text=shell_text(plan, command(plan, opts), notes=notes(plan)),
                       reader="bash (torchrun pretrain_gpt.py, Megatron-LM)", executable=True)]
