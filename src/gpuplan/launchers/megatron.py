"""``megatron-pretrain.sh``: Megatron-LM's ``pretrain_gpt.py`` under ``torchrun`` for a plan of stack megatron.

The arguments are the settings the estimate assumed (:mod:`gpuplan.stacks.megatron`), written out: the parallel
sizes (``--tensor-model-parallel-size``, ``--pipeline-model-parallel-size`` and
``--num-virtual-stages-per-pipeline-rank``, ``--context-parallel-size``, ``--expert-model-parallel-size``, and for
an MoE model ``--expert-tensor-parallel-size 1`` whatever the EP: Megatron-Core's default is the TP size),
``--sequence-parallel`` with TP, the distributed optimizer and its overlaps,
fp32 gradient buffers (``--accumulate-allreduce-grads-in-fp32``, NeMo's ``grad_reduce_in_fp32``), bf16 or fp8
(``--fp8-format hybrid --fp8-recipe delayed | tensorwise``, weights kept in fp8 with ``--fp8-param-gather``
as NeMo's fp8 recipes keep them) or NVFP4 (``--fp4-format e2m1 --fp4-recipe nvfp4``), CUDA graphs
(``--cuda-graph-impl full_iteration``), the recompute policy (``selective``: core attention;
``full``: every layer, ``uniform`` 1), the batch (``--micro-batch-size``, ``--global-batch-size``), and the model's
shape from its config.json (Llama-style: RMSNorm, SwiGLU, rotary, grouped-query attention, untied embeddings; MoE:
``--num-experts``, ``--moe-router-topk``, ``--moe-ffn-hidden-size``). Option names and choices are those of
Megatron-LM's own parser (``megatron/training/arguments.py``, captured in tests/data/megatron by its capture.py).
The data is Megatron's mock data until you point ``--data-path`` at your indexed dataset.

In a SkyPilot task (:mod:`.skypilot`) the nodes run NVIDIA's PyTorch container that Megatron-LM's CI builds on at
the commit whose parser is captured (``docker/Dockerfile.ci.dev`` ``FROM_IMAGE_NAME`` at :data:`COMMIT`), check
that commit out and install it with its training extras as its install guide says for the container
(``docs/get-started/install.md``, option C: ``PIP_CONSTRAINT`` unset, ``--no-build-isolation``).
"""

from __future__ import annotations

from pathlib import Path

from ..stacks.megatron import embedding_in_split
from ..stacks.releases import MEGATRON_COMMIT, MEGATRON_IMAGE, MEGATRON_REPO
from ..tensors.activations import INPUT_OF
from .files import LaunchFile, command_text, quote, shell_text
from .plan import LaunchPlan
from .settings import LaunchOptions
from .torchrun import launcher

NAME = "megatron"
SCRIPT = "megatron-pretrain.sh"
FP8_RECIPE = {"delayed": "delayed", "current": "tensorwise"}  # Megatron-LM's names for TE's scaling recipes
DATA_PREFIX = "data/gpuplan"  # the indexed dataset preprocess_data.py writes (.bin and .idx)
LLAMA_LIKE = ("llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe")
REPO, COMMIT, IMAGE = MEGATRON_REPO, MEGATRON_COMMIT, MEGATRON_IMAGE  # the release its parser was read from
CHECKOUT = "megatron-lm"  # the folder the SkyPilot task checks Megatron-LM out into, under its workdir


def applies(plan: LaunchPlan) -> str | None:
    s, m = plan.scenario, plan.model
    if NAME not in plan.stack_targets:
        return "pretrain_gpt.py runs plans of stack megatron: plan with --stack megatron"
    if s.method != "full":
        return ("Megatron-LM's pretrain_gpt.py trains every weight: for LoRA launch --target nemo (NeMo's finetune "
                "recipe)")
    stores = [k for k in ("fp8_attention", "fp8_activation_store") if getattr(s, k)] + \
        (["fp8_transpose_cache false"] if s.fp8_transpose_cache is False else [])
    if stores:  # TransformerConfig fields (fp8_dot_product_attention, activation_func_fp8_input_store,
        # disable_parameter_transpose_cache) without a flag
        return (f"Megatron-LM's pretrain_gpt.py has no argument for {' or '.join(stores)} (TransformerConfig "
                "fields without a flag): drop them, or launch --target nemo")
    if s.tp_overlap == "none":
        return ("tp_overlap none is Megatron-LM of 2021, which waited for every tensor-parallel all-reduce; today's "
                "runs the backward's behind its GEMMs: drop tp_overlap, or set it to userbuffers")
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
        argv += ["--expert-model-parallel-size", str(s.ep)]
    if plan.model.is_moe:  # routed experts whole on each tensor-parallel rank, as the estimate holds them
        argv += ["--expert-tensor-parallel-size", "1"]  # (Megatron-Core's default is the TP size)
    if s.tp > 1:
        argv.append("--sequence-parallel")
    if s.tp > 1 and s.tp_overlap == "userbuffers":  # Transformer Engine's userbuffers (the estimate's tp_overlap)
        argv.append("--tp-comm-overlap")
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
        argv += ["--recompute-granularity", "full", "--recompute-method", "block" if s.recompute_layers else "uniform",
                 "--recompute-num-layers", str(s.recompute_layers or 1)]
    return argv


def training_args(plan: LaunchPlan) -> list[str]:
    """The batch, the optimizer and its schedule (the recipe's warm-up, then cosine down to its floor over the run:
    ``--lr-warmup-iters``, ``--lr-decay-iters``, ``--min-lr``), random initialization (Megatron's normal init of
    standard deviation 0.02), the tokenizer and data (:func:`data_args`), the run length and checkpoints."""
    s, r = plan.scenario, plan.recipe
    global_batch = s.micro_batch_size * s.grad_accum_steps * s.dp
    lr = r.learning_rate if r else 3e-4
    floor = r.min_lr_ratio if r and r.min_lr_ratio else 0.1
    argv = ["--micro-batch-size", str(s.micro_batch_size), "--global-batch-size", str(global_batch),
            "--seq-length", str(s.seq_len), "--optimizer", "adam" if s.optimizer == "adamw" else "sgd",
            "--lr", f"{lr:g}", "--min-lr", f"{lr * floor:g}", "--lr-decay-style", "cosine",
            "--weight-decay", "0.1", "--clip-grad", f"{r.max_grad_norm if r else 1.0:g}",
            "--init-method-std", "0.02", "--transformer-impl", "transformer_engine", *data_args(plan),
            "--log-interval", "10"]
    if r is not None and r.warmup_steps:
        argv += ["--lr-warmup-iters", str(r.warmup_steps)]
    if plan.max_steps is not None:
        argv += ["--train-iters", str(plan.max_steps), "--lr-decay-iters", str(plan.max_steps)]
    if plan.save_steps:
        argv += ["--save", "checkpoints", "--load", "checkpoints", "--save-interval", str(plan.save_steps)]
    return argv


def tokenizer_folder(plan: LaunchPlan) -> str | None:
    """What ``HuggingFaceTokenizer`` loads (``AutoTokenizer.from_pretrained``): the plan's tokenizer's folder, the
    model's local folder, or its Hugging Face id; None for a size-only model without a tokenizer."""
    if "tokenizer" in plan.inputs:
        path = Path(plan.inputs["tokenizer"])
        return str(path.parent if path.is_file() else path)
    if plan.synthetic:
        return None
    return plan.model_ref


def data_args(plan: LaunchPlan) -> list[str]:
    """The tokenizer and the data: the indexed dataset :func:`preprocess` makes from the plan's text file (Megatron's
    tokenized-data loader, ``--data-path``), else ``--mock-data`` (random tokens); a size-only model without a
    tokenizer takes ``NullTokenizer`` over its vocabulary (mock data needs no text)."""
    folder = tokenizer_folder(plan)
    argv = (["--tokenizer-type", "NullTokenizer"] if folder is None else
            ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", folder])
    if text_data(plan) and folder is not None:
        return [*argv, "--data-path", f"{DATA_PREFIX}_text_document", "--split", "99,1,0"]
    return [*argv, "--mock-data"]


def text_data(plan: LaunchPlan) -> bool:
    """Whether the plan's dataset is a local file of ``text`` records, which preprocess_data.py tokenizes."""
    p = plan.result.dataset
    return "dataset" in plan.inputs and bool(p) and p.get("kind") == "text"


def preprocess(plan: LaunchPlan) -> list[str]:
    """Megatron-LM's ``tools/preprocess_data.py``: the text file tokenized into an indexed dataset, EOD after each
    document."""
    return ["python", "tools/preprocess_data.py", "--input", plan.inputs["dataset"], "--output-prefix", DATA_PREFIX,
            "--json-keys", "text", "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model",
            tokenizer_folder(plan), "--append-eod", "--workers", "8"]


def command(plan: LaunchPlan, opts: LaunchOptions, *, multinode_env: bool = False,
            checkpoints: str | None = None) -> list[str]:
    """``torchrun ... pretrain_gpt.py`` and its arguments; ``multinode_env``: the rendezvous from SkyPilot's
    variables; ``checkpoints``: save to and resume from that folder (Megatron loads the newest checkpoint under
    ``--load``)."""
    argv = [*launcher(plan, multinode_env=multinode_env), "pretrain_gpt.py", *model_args(plan), *parallel_args(plan),
            *precision_args(plan), *training_args(plan)]
    if opts.max_steps:  # a smoke run: the last value of a repeated flag wins in argparse
        argv += ["--train-iters", str(opts.max_steps), "--lr-decay-iters", str(opts.max_steps), "--log-interval",
                 "1", "--save", "checkpoints", "--save-interval", str(opts.max_steps)]
    if checkpoints:
        argv += ["--save", checkpoints, "--load", checkpoints]
    return argv


def before(plan: LaunchPlan) -> list[list[str]]:
    """What runs before training: the text file tokenized (:func:`preprocess`), when the plan has one."""
    return [preprocess(plan)] if text_data(plan) and tokenizer_folder(plan) else []


def setup() -> str:
    """A node's setup in NVIDIA's PyTorch container: Megatron-LM checked out at :data:`COMMIT` (cloned once: a
    second ``sky launch`` on the cluster runs the setup again) and installed with its training extras (the Hugging
    Face tokenizer)."""
    clone = " ".join(quote(w) for w in ["git", "clone", "--filter=blob:none", REPO, CHECKOUT])
    return (f"test -d {quote(CHECKOUT)} || {clone}\n" + command_text(["git", "-C", CHECKOUT, "checkout", COMMIT]) +
            command_text(["pip", "install", "--no-build-isolation", "-e", f"./{CHECKOUT}[training]"]))


def notes(plan: LaunchPlan) -> list[str]:
    mem = plan.result.memory
    out = ["run from a Megatron-LM checkout (pretrain_gpt.py) in NVIDIA's PyTorch container, on every node",
           f"predicted per rank: {mem.allocated_peak_gib:.1f} GiB allocated; Megatron logs 'memory (MB) | allocated "
           "... | max allocated ...' after the first iterations"]
    if text_data(plan) and tokenizer_folder(plan):
        out.append(f"the data: tools/preprocess_data.py tokenizes {plan.inputs['dataset']} into {DATA_PREFIX}_text_"
                   "document first (once)")
    else:
        out.append("--mock-data (random tokens): for real data tokenize a JSONL of text records with "
                   "tools/preprocess_data.py and pass --data-path <prefix>_text_document")
    if plan.synthetic:
        out.append(f"{plan.model.name} is built from the shape above with random weights (pretraining)")
    return out


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    return [LaunchFile(name=SCRIPT, target=NAME, text=shell_text(plan, command(plan, opts), notes=notes(plan),
                                                                 before=before(plan)),
                       reader="bash (torchrun pretrain_gpt.py, Megatron-LM)", executable=True)]
