"""The training stacks a scenario names with ``stack``: what each one's recipes default to, what it cannot
run, and which memory statistic its own logs print.

A field left unset takes the stack's default; a field set explicitly wins, unless the stack cannot run it, in
which case the scenario is refused with one sentence. How each stack spends memory (what it stores, shards, saves
for backward and materializes in the loss) is in :mod:`gpuplan.stacks`; this module is the interface.

Sources of the defaults (the recipes people run):

- ``hf``: transformers ``Trainer`` + peft + accelerate/DeepSpeed. peft ``get_peft_model(autocast_adapter_dtype=True)``
  makes adapters fp32 (``peft/tuners/tuners_utils.py`` ``cast_adapter_dtype``); QLoRA goes through
  ``prepare_model_for_kbit_training(use_gradient_checkpointing=True)`` (``peft/utils/other.py``), which casts the
  non-4-bit parameters to fp32 and turns gradient checkpointing on. accelerate's FSDP plugin is FSDP1 unless
  ``fsdp_version: 2``. ``use_liger_kernel=True`` is the Trainer's switch for Liger's fused linear cross-entropy.
- ``torchtune``: the recipe configs (``recipes/configs/llama3_1/*.yaml``): ``dtype: bf16`` with no mixed precision,
  ``enable_activation_checkpointing: True``, ``CEWithChunkedOutputLoss`` (8 chunks), ``compile: False``,
  ``enable_activation_offloading: False``, adapters in the model dtype (``validate_expected_param_dtype``), FSDP2
  (``training.shard_model``).
- ``torchtitan``: ``train_configs/llama3_8b.toml``: FSDP2 with bf16 parameters for compute and fp32 master weights
  and reductions (``MixedPrecisionPolicy``), ``activation_checkpoint.mode = 'selective'`` with
  ``selective_ac_option = 'op'``, ``compile = false``; pre-training and full fine-tuning only.
- ``unsloth``: ``FastLanguageModel.get_peft_model(use_gradient_checkpointing="unsloth", lora_dropout=0)`` (checkpoints
  offloaded to CPU), its fused linear cross-entropy (``unsloth_fused_ce_loss``), fp32 adapters from peft, bf16
  embeddings (no fp32 upcast); one GPU.
- ``axolotl``: the HF Trainer with axolotl's Liger plugin as its example configs enable it (``liger_rope``,
  ``liger_rms_norm``, ``liger_glu_activation``, ``liger_fused_linear_cross_entropy``) and
  ``gradient_checkpointing: true``; QLoRA through ``prepare_model_for_kbit_training``. ``bf16: true`` loads the
  weights in bf16 (``utils/config`` sets ``cfg.torch_dtype``, ``loaders/model.py`` passes it to
  ``from_pretrained``): a full fine-tune holds bf16 weights and states (``bf16-true``) on one GPU or DDP;
  DeepSpeed's bf16 optimizer keeps fp32 masters and accelerate upcasts FSDP shards to fp32 (``bf16-mixed``).
  With an adapter, ``ModelLoader._configure_embedding_dtypes`` casts the norms and embeddings that peft's kbit
  preparation made fp32 back to bf16 (no fp32 upcast, except QLoRA under FSDP).
- ``pytorch``: your own PyTorch loop over a transformers model (Answer.AI's ``fsdp_qlora`` ``train.py`` is the
  model): one dtype throughout (``bf16``), FSDP1 ``FullyShardedDataParallel``, peft adapters, nothing else on
  unless asked.
- ``megatron``: Megatron-Core as NeMo 2's recipes drive it (``nemo/collections/llm/recipes/llama3_*.py``,
  ``nemo/lightning/pytorch/strategies/megatron_strategy.py``): bf16 compute with fp32 master weights inside the
  distributed optimizer (``use_distributed_optimizer=True``: fp32 master weights and Adam moments sharded over the
  data- and context-parallel ranks), fp32 gradient buffers (``grad_reduce_in_fp32=True``) reduce-scattered behind
  the backward (``overlap_grad_reduce``), parameters all-gathered behind the forward (``overlap_param_gather``),
  Transformer Engine's fused kernels and fused attention, sequence parallelism whenever TP > 1, selective
  recomputation (``recompute_granularity='selective'``: core attention only), fp8 through Transformer Engine
  (``fp8='hybrid'``, delayed scaling by default).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

# The models whose shipped chat template TRL's SFTTrainer can mask to the assistant turns (assistant_only_loss):
# trl 1.16.0 chat_template_utils.get_training_chat_template swaps in a {% generation %}-marked copy only for the
# templates it stores (chat_templates/README.md "Training templates": Qwen2.5 and Qwen2.5-VL, Qwen3, Qwen3-VL,
# Qwen3.5/3.6, Gemma and Gemma 2 (one template), Gemma 3, Llama 3 (not 3.1/3.2: llama3_1.jinja and llama3_2.jinja
# have no training copy), Phi-3/3.5, gpt-oss, DeepSeek-R1-Distill, DeepSeek-V3, GLM-4.5 (glm4moe), Nemotron 3 Nano)
# and raises "The chat template is not training-compatible" for any other at start. Matched by the model's repo
# id, as TRL matches the template the repo ships; a local config (no repo id) is not assumed to be one of them.
TRL_MASKED_TEMPLATES = re.compile(
    r"Qwen/Qwen2\.5-.*|Qwen/Qwen3-(0\.6B|1\.7B|4B|8B|14B|32B|30B-A3B|235B-A22B)(-Base)?|Qwen/Qwen3-VL-.*"
    r"|Qwen/Qwen3\.[56]-.*|google/gemma-(2|3)-.*|meta-llama/Meta-Llama-3-.*|microsoft/Phi-3(\.5)?-.*"
    r"|openai/gpt-oss-.*|deepseek-ai/DeepSeek-R1-Distill-.*|deepseek-ai/DeepSeek-V3|zai-org/GLM-4\.5(-Air)?"
    r"|nvidia/NVIDIA-Nemotron-3-Nano-.*", re.IGNORECASE)


def trl_masks_assistant(model_name: str) -> bool:
    """Whether TRL's SFTTrainer can put the loss on the assistant turns only for this model's chat template
    (:data:`TRL_MASKED_TEMPLATES`); where it cannot, the TRL stacks' files train on every token."""
    return TRL_MASKED_TEMPLATES.fullmatch(model_name) is not None


# the fine-tuning stacks recommend and advice switch between, each checked on fake tensors (gpuplan simulate)
STACK_NAMES = ("hf", "torchtune", "torchtitan", "unsloth", "axolotl", "pytorch")
# stacks for training at scale, estimated in closed form (Megatron-Core does not build on the CPU's meta device)
SCALE_STACKS = ("megatron",)
# the fields only Megatron-Core's parallelism and Transformer Engine's fp8 take
MEGATRON_FIELDS = ("cp", "ep", "vpp", "fp8_recipe", "tp_overlap")
# Technique fields whose ``None`` means "the stack's default"; resolved on every scenario.
# the data-parallel shardings a stack may run by default: DDP, DeepSpeed's ZeRO stages, FSDP1 and FSDP2
EVERY_SHARDING = ("ddp", "zero1", "zero2", "zero3", "fsdp1", "fsdp2")
TECHNIQUES = ("precision", "grad_checkpointing", "qlora_fp32_upcast", "loss", "loss_chunks", "activation_offload",
              "compile", "optimizer_in_backward", "adapter_dtype")


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """One training stack: its defaults, what ``sharding: fsdp`` means in it, the statistic its logs print."""

    name: str
    title: str
    defaults: Mapping[str, Any]
    fsdp: str | None  # the engine ``sharding: fsdp`` selects (fsdp1 | fsdp2); None: the stack does not shard
    logs: str  # which allocator statistic the stack's own memory log prints, in words
    logs_level: str  # the estimate level to compare it with: allocated | reserved
    peft_adapters: bool  # adapters built by peft's get_peft_model (autocast_adapter_dtype=True: fp32)
    refuse: Callable[[Any], str | None]
    # the defaults that depend on other fields (QLoRA's checkpointing in hf, ...): ``fill(data, get)`` returns the
    # fields to set, ``data`` the fields given, ``get`` reads them over the stack's plain defaults
    fill: Callable[[Mapping[str, Any], Callable[..., Any]], dict[str, Any]] | None = None
    # the data-parallel shardings it runs, by the names a resolved scenario holds (one GPU and an unset sharding
    # always run; its refusal says the others): recommend searches these (gpuplan.stacks' Stack.shardings), or the
    # stack's own subset where it runs every one
    shardings: tuple[str, ...] = EVERY_SHARDING
    own_loss: bool = False  # it computes the loss with its own code, not transformers' (transformers_version moot)
    versioned_by: str | None = None  # the scenario field naming its release (torchtune_version), None: no such field
    trl_files: bool = False  # its launch files train with TRL's SFTTrainer (launchers/trainer.py, unsloth.py)
    # how it packs records into rows without attention across them (None: it does not; gpuplan.dataset plans bfd
    # packing where records average under half of seq_len), whether a packed row is padded to seq_len (torchtune's
    # PackedDataset), and whether it concatenates its data into full rows instead (torchtitan's pretraining loader)
    packs: str | None = None
    pads_packs: bool = False
    wraps_rows: bool = False
    # global batches of one evaluation pass its recipes run when eval_tokens is not given (None: it evaluates
    # whatever eval set it is given, so eval_tokens is needed)
    eval_batches: int | None = None
    # why it fills a field as it does, from its own code or docs, by (field, value), or by field for any value: every
    # default it fills that is not BASE's says its reason (defaults_in_force; tests/scenario/test_stack_fills.py)
    why: Mapping[Any, str] = dataclasses.field(default_factory=dict)

    @property
    def fsdp_only(self) -> bool:
        """Whether it shards with FSDP only, never DeepSpeed's ZeRO (torchtune, torchtitan)."""
        return self.fsdp is not None and "zero3" not in self.shardings

    @property
    def said(self) -> tuple[str, ...]:
        """The fields its defaults in force name: the techniques, then the others it fills (its reasons' fields:
        torchtitan's and Megatron-Core's sharding, Megatron-Core's fp8 recipe, the diffusion trainers' caches)."""
        own = (k[0] if isinstance(k, tuple) else k for k in (*self.defaults, *self.why))
        return TECHNIQUES + tuple(dict.fromkeys(k for k in own if k not in TECHNIQUES))


# ---- what each stack cannot run ---------------------------------------------------------------------------
def _hf_like(s, name: str, *, chunked: bool, offload: bool) -> str | None:
    if s.loss == "chunked" and not chunked:
        return (f"{name} computes the loss on the full logits; chunked cross-entropy is torchtune's, torchtitan's "
                "or axolotl's: use loss fused-linear (Liger, use_liger_kernel) or stack torchtune")
    if s.activation_offload and not offload:
        return (f"{name} has no activation offloading: use stack axolotl, torchtune or unsloth, or pytorch for "
                "your own loop (torch.autograd.graph.save_on_cpu)")
    if s.optimizer_in_backward:
        return (f"{name}'s Trainer steps the optimizer after backward: optimizer_in_backward needs stack "
                "torchtune, torchtitan or pytorch")
    if s.grad_checkpointing == "selective":
        return (f"transformers has no selective checkpointing ({name}): use grad_checkpointing none or full, or "
                "stack torchtitan / torchtune for per-op selective checkpointing")
    if s.checkpoint_every > 1:
        return (f"transformers checkpoints every decoder layer ({name}): drop checkpoint_every, or use stack "
                "torchtitan, torchtune or pytorch to checkpoint one layer in N")
    return None


def _runs_sharding(s) -> bool:
    """Whether the scenario's stack runs its sharding (:attr:`Recipe.shardings`)."""
    return s.sharding in (None, "single", *RECIPES[s.stack].shardings)


def _refuse_hf(s) -> str | None:
    return _hf_like(s, "the HF Trainer", chunked=False, offload=False)


def _refuse_axolotl(s) -> str | None:
    return _hf_like(s, "axolotl", chunked=True, offload=True)


def _refuse_unsloth(s) -> str | None:
    if not _runs_sharding(s) or s.tp > 1 or s.pp > 1:
        return ("Unsloth trains on one GPU (or DDP replicas): for sharded training use stack hf or axolotl "
                "with sharding fsdp or zero3, or stack torchtune")
    if s.precision not in ("bf16-mixed", "fp16-mixed"):
        return f"Unsloth trains a bf16 or fp16 model under autocast: use precision bf16-mixed, not {s.precision}"
    if s.method == "qlora" and (s.quant or "nf4") not in ("nf4", "fp4"):
        return f"Unsloth's QLoRA runs bitsandbytes 4-bit weights: set quant nf4, not {s.quant}"
    if s.loss == "chunked":
        return "Unsloth's loss is its fused linear cross-entropy (loss fused-linear) or full logits: not chunked"
    return _hf_like(s, "Unsloth", chunked=False, offload=True)


def torchtune_before(s, major: int, minor: int) -> bool:
    """Whether the scenario's ``torchtune_version`` is older than ``major.minor`` (unset: the current release)."""
    if s.torchtune_version is None:
        return False
    numbers = ([int(p) for p in s.torchtune_version.split(".")[:2] if p.isdigit()] + [0, 0])[:2]
    return tuple(numbers) < (major, minor)


def _refuse_torchtune(s) -> str | None:
    if s.method == "qlora" and s.precision == "fp32" and "precision" not in s.model_fields_set:
        # fp32 is what the card took (no bf16: card_precision); torchtune has no fp16 and QLoRA no fp32 base compute
        return ("torchtune's QLoRA computes in bf16 (its recipes refuse fp16, and a 4-bit base computes in 16 bits) "
                "and this card has no bf16: use stack hf or unsloth, which run QLoRA in fp16-mixed there")
    if s.precision not in ("bf16-true", "fp32"):
        return (f"torchtune trains in one dtype (no autocast, no fp32 master weights): use precision bf16-true or "
                f"fp32, not {s.precision}")
    if torchtune_before(s, 0, 3):  # full_finetune_distributed.py: FSDP(...) until 0.3 (training.shard_model)
        if s.sharding not in (None, "single", "fsdp1"):
            return (f"torchtune {s.torchtune_version} wrapped its distributed recipes in FSDP1 (FSDP2 came in 0.3): "
                    "use sharding fsdp1")
    elif not _runs_sharding(s):
        return f"torchtune shards with FSDP2 only: use sharding fsdp (or fsdp2), not {s.sharding}"
    if s.pp > 1:
        return "torchtune has no pipeline parallelism: set pp 1"
    if s.method == "qlora" and (s.quant or "nf4") != "nf4":
        return f"torchtune's QLoRA quantizes to torchao NF4: set quant nf4, not {s.quant}"
    if s.loss == "fused-linear":
        return ("torchtune has no fused linear cross-entropy kernel; its chunked losses (CEWithChunkedOutputLoss, "
                "LinearCrossEntropyLoss) keep each chunk's logits: use loss chunked")
    if s.method != "full" and s.adapter_dtype != s.precision.split("-")[0]:
        return (f"torchtune keeps LoRA adapters in the model dtype ({s.precision}): drop adapter_dtype or set it to "
                f"{s.precision.split('-')[0]}")
    if s.qlora_fp32_upcast:
        return "torchtune keeps embeddings and norms in the model dtype: set qlora_fp32_upcast false"
    if s.optimizer_in_backward and s.method != "full":
        return "torchtune fuses the optimizer into backward in its full fine-tuning recipes only: use method full"
    return None


def _refuse_torchtitan(s) -> str | None:
    if s.method != "full":
        return "torchtitan pre-trains and fully fine-tunes (no LoRA): use method full, or stack torchtune"
    if s.precision not in ("bf16-mixed", "fp8-mixed", "fp32"):
        return (f"torchtitan keeps fp32 parameters and computes in bf16 (FSDP2 MixedPrecisionPolicy) or float8: use "
                f"precision bf16-mixed or fp8-mixed, not {s.precision}")
    if not _runs_sharding(s):
        return f"torchtitan shards with FSDP2: use sharding fsdp (or fsdp2), not {s.sharding}"
    if s.optimizer != "adamw":
        return f"torchtitan builds torch AdamW: use optimizer adamw, not {s.optimizer}"
    if s.loss == "fused-linear":
        return "torchtitan's loss is cross-entropy on full logits (compiled with compile true) or chunked"
    if s.activation_offload:
        return "torchtitan has no activation offloading: use grad_checkpointing full or selective"
    if s.offload == "optimizer":
        return "torchtitan offloads parameters, gradients and optimizer together (FSDP2 CPUOffloadPolicy): use " \
               "offload optimizer+params"
    return None


def _refuse_megatron(s) -> str | None:
    if s.method == "qlora":
        return "Megatron-Core has no 4-bit (QLoRA) base: use method lora (NeMo's LoRA) or full"
    if s.precision not in ("bf16-mixed", "fp16-mixed", "fp8-mixed", "fp4-mixed"):
        return (f"Megatron-Core keeps fp32 master weights in its optimizer and computes in bf16, fp16, fp8 or NVFP4 "
                f"(Transformer Engine): use precision bf16-mixed, fp8-mixed or fp4-mixed, not {s.precision}")
    if s.precision == "fp4-mixed" and s.gpu and not _has_fp4(s.gpu):
        return (f"NVFP4 training (precision fp4-mixed) runs on Blackwell's fp4 tensor cores; {s.gpu} has none: use "
                "precision fp8-mixed")
    if not _runs_sharding(s):
        return (f"Megatron-Core shards optimizer states with its distributed optimizer (sharding zero1) or "
                f"replicates them (ddp); gpuplan does not model its FSDP: use zero1 or ddp, not {s.sharding}")
    if s.optimizer not in ("adamw", "sgd", "sgd-momentum"):
        return f"Megatron-Core's optimizers are Adam(W) and SGD: use optimizer adamw, not {s.optimizer}"
    if s.loss != "full":
        return ("Megatron-Core computes a vocabulary-parallel cross-entropy on the full logits: use loss full, "
                f"not {s.loss}")
    if s.activation_offload or s.offload != "none":
        return "gpuplan does not model Megatron-Core's CPU offloading: set activation_offload false and offload none"
    if s.checkpoint_every > 1:
        return ("Megatron-Core's full recompute is modelled per layer (recompute_num_layers 1): drop "
                "checkpoint_every")
    if s.optimizer_in_backward or s.compile:
        return "Megatron-Core steps after the backward and runs Transformer Engine's kernels uncompiled: drop " \
               "optimizer_in_backward and compile"
    if s.fp8_recipe is not None and s.precision != "fp8-mixed":
        return f"fp8_recipe {s.fp8_recipe} scales fp8 tensors: set precision fp8-mixed, or drop fp8_recipe"
    for name in ("fp8_attention", "fp8_activation_store"):
        if getattr(s, name) and s.precision not in ("fp8-mixed", "fp4-mixed"):
            return f"{name} keeps fp8 tensors: set precision fp8-mixed (or fp4-mixed), or drop {name}"
    if s.vpp > 1 and s.pp == 1:
        return f"vpp={s.vpp} interleaves virtual stages of a pipeline: set pp >= 2, or vpp 1"
    return _megatron_fp8_recompute(s)


def _megatron_fp8_recompute(s) -> str | None:
    """fp8_transpose_cache keeps fp8 weights' transposes (fp8-mixed only); recompute_layers picks Megatron-Core's
    block recompute (full only, one chunk a stage)."""
    if s.fp8_transpose_cache is not None and s.precision != "fp8-mixed":
        return ("fp8_transpose_cache keeps the transposes of fp8 weights: set precision fp8-mixed, or drop "
                "fp8_transpose_cache")
    if s.recompute_layers is not None and s.grad_checkpointing != "full":
        return "recompute_layers picks the layers of full recompute: set grad_checkpointing full, or drop it"
    if s.recompute_layers is not None and s.vpp > 1:
        return ("gpuplan models recompute_layers on pipelines without virtual stages: set vpp 1, or drop "
                "recompute_layers")
    return None


def _has_fp4(gpu: str) -> bool:
    """Whether the catalog gives ``gpu`` a dense fp4 matrix rate (Blackwell); unknown cards pass."""
    from ..errors import GpuplanError
    from ..hardware import load_gpu

    try:
        return bool(load_gpu(gpu).peak_tflops("fp4"))
    except GpuplanError:
        return True


def _refuse_diffusion(s) -> str | None:
    if not _runs_sharding(s) or s.tp > 1 or s.pp > 1:
        return (f"{s.stack} trains a diffusion model on one GPU, or as DDP replicas: use sharding single or ddp "
                "(and tp, pp 1)")
    if s.method == "qlora" and (s.quant or "nf4") not in ("nf4", "fp4"):
        return f"QLoRA of a diffusion model runs a bitsandbytes 4-bit base: set quant nf4, not {s.quant}"
    return None


def _refuse_pytorch(s) -> str | None:
    if s.grad_checkpointing == "selective":  # your own loop: anything PyTorch can do, with no policy of its own
        return ("a plain PyTorch loop has no selective checkpointing policy of its own: use grad_checkpointing full "
                "(checkpoint_every N for one layer in N), or stack torchtitan or torchtune for per-op selective "
                "checkpointing")
    return None


# ---- the defaults that depend on other fields -----------------------------------------------------------------
def _fill_hf(data: Mapping[str, Any], get: Callable[..., Any]) -> dict[str, Any]:
    if data.get("grad_checkpointing") is None and get("method") == "qlora" and get("qlora_fp32_upcast"):
        # peft prepare_model_for_kbit_training(use_gradient_checkpointing=True): the HF QLoRA recipe checkpoints
        return {"grad_checkpointing": "full"}
    return {}


def _fill_axolotl(data: Mapping[str, Any], get: Callable[..., Any]) -> dict[str, Any]:
    """See the module docstring: bf16 weights unless sharded, peft's fp32 upcast undone but under FSDP."""
    out: dict[str, Any] = {}
    sharded = str(data.get("sharding") or "").startswith(("zero", "fsdp"))
    if data.get("precision") is None and get("method") == "full" and not sharded:
        out["precision"] = "bf16-true"
    if data.get("qlora_fp32_upcast") is None and str(data.get("sharding") or "").startswith("fsdp"):
        out["qlora_fp32_upcast"] = True
    return out


def _fill_kohya(data: Mapping[str, Any], get: Callable[..., Any]) -> dict[str, Any]:
    if data.get("text_encoders") is None and data["task"] == "train" and get("method") != "full":
        # sd-scripts train_network.py: train_text_encoder = not args.network_train_unet_only (flux_train_network.py:
        # train_clip likewise, train_t5xxl False); its full fine-tunes (sdxl_train.py) need --train_text_encoder
        return {"text_encoders": "trained"}
    return {}


def _fill_ai_toolkit(data: Mapping[str, Any], get: Callable[..., Any]) -> dict[str, Any]:
    if data.get("quant") is None and data["task"] == "train" and get("method") == "lora" and not _unet(data["model"]):
        # its model.quantize: true (optimum-quanto qfloat8): config/examples/train_lora_flux_24gb.yaml,
        # train_lora_sd35_large_24gb.yaml and the UI's default job (ui/src/app/jobs/new/jobConfig.ts); for sdxl and
        # sd15 its UI sets model.quantize false and disables it (ui/src/app/jobs/new/options.tsx)
        return {"quant": "fp8"}
    return {}


def _unet(model: Any) -> bool:
    """Whether ``model`` is a UNet pipeline known without the hub (SD 1.x/2.x, SDXL: :func:`gpuplan.model.kinds.
    known_here`), which ai-toolkit does not quantize."""
    from ..model.kinds import known_here

    spec = known_here(model)
    return spec is not None and spec.kind == "diffusion" and spec.main.cls == "UNet2DConditionModel"


def _fill_unsloth(data: Mapping[str, Any], get: Callable[..., Any]) -> dict[str, Any]:
    if data.get("activation_offload") is None:
        # unsloth _utils.apply_unsloth_gradient_checkpointing: plain checkpointing below 512 tokens
        return {"activation_offload": get("grad_checkpointing") == "full" and data["seq_len"] >= 512}
    return {}


def _data_parallel(data: Mapping[str, Any]) -> int:
    """The data-parallel ranks the given layout leaves (GPUs over tp x pp x cp)."""
    return data["num_gpus"] * data["num_nodes"] // (data["tp"] * data["pp"] * data["cp"])


def _fill_torchtitan(data: Mapping[str, Any], get: Callable[..., Any]) -> dict[str, Any]:
    if data["task"] == "train" and data.get("sharding") is None and _data_parallel(data) > 1:
        # torchtitan's Parallelism defaults: data_parallel_replicate_degree = 1, data_parallel_shard_degree = -1
        # (the ranks left after TP/PP/CP): FSDP2 over every data-parallel rank, not DDP (config_manager.py)
        return {"sharding": "fsdp2"}
    return {}


def _fill_megatron(data: Mapping[str, Any], get: Callable[..., Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if data["task"] != "train":
        return out
    if data.get("sharding") is None and _data_parallel(data) * data["cp"] > 1:
        out["sharding"] = "zero1"  # NeMo: use_distributed_optimizer=True (shards over DP x CP)
    if data.get("fp8_recipe") is None and get("precision") == "fp8-mixed":
        out["fp8_recipe"] = "delayed"  # NeMo's fp8_recipe default ('delayed', TE DelayedScaling)
    return out


BASE = {"precision": "bf16-mixed", "grad_checkpointing": "none", "qlora_fp32_upcast": False, "loss": "full",
        "activation_offload": False, "compile": False, "optimizer_in_backward": False}
# the reasons of the defaults stack_fills fills for every stack (each recipe's own are its ``why``)
PEFT_ADAPTERS = "peft's get_peft_model(autocast_adapter_dtype=True) upcasts adapters"
RESOLVER_WHY = {"loss_chunks": "torchtune's CEWithChunkedOutputLoss num_output_chunks=8; axolotl's and "
                               "torchtitan's chunked losses take 8 too",
                "adapter_dtype": "adapters built in the model's dtype"}
# diffusion trainers: diffusers' scripts compute the instance prompt's embeddings once and free the text encoders
# (train_dreambooth_lora_*.py, without --train_text_encoder or captions), encode latents every step unless
# --cache_latents, checkpoint only with --gradient_checkpointing; kohya's sd-scripts keep the text encoders on the
# GPU unless --cache_text_encoder_outputs; SimpleTuner always caches VAE latents and text embeddings and
# recommends checkpointing "in practically every situation" (documentation/quickstart); ai-toolkit's example
# configs cache latents (cache_latents_to_disk: true) and set gradient_checkpointing: true, and keep the text
# encoders on the GPU, encoding each step's captions (train_lora_flux_24gb.yaml and the UI's default job leave
# cache_text_embeddings and unload_text_encoder false: extensions_built_in/sd_trainer/SDTrainer.py unloads them only
# with one of those)
LATENTS_EVERY_STEP = "latents encoded every step unless --cache_latents"


RECIPES: dict[str, Recipe] = {s.name: s for s in (
    Recipe(name="hf", title="Hugging Face Trainer + peft + accelerate/DeepSpeed",
          defaults={**BASE, "qlora_fp32_upcast": True}, fsdp="fsdp1",
          logs="none by default (torch.cuda.max_memory_allocated / max_memory_reserved if you log them)",
          logs_level="reserved", peft_adapters=True, refuse=_refuse_hf, fill=_fill_hf, trl_files=True,
          packs="TRL SFTTrainer packing (bfd, padding-free)",
          why={("grad_checkpointing", "full"): "peft's prepare_model_for_kbit_training(use_gradient_checkpointing="
               "True) turns it on for QLoRA",
               ("qlora_fp32_upcast", True): "prepare_model_for_kbit_training casts the non-4-bit weights to fp32"}),
    Recipe(name="torchtune", title="torchtune recipes (pytorch/torchtune)",
          defaults={**BASE, "precision": "bf16-true", "grad_checkpointing": "full", "loss": "chunked"},
          fsdp="fsdp2", logs="peak_memory_active, peak_memory_alloc and peak_memory_reserved per log "
          "(training.get_memory_stats, reset after each log)", logs_level="allocated", peft_adapters=False,
          refuse=_refuse_torchtune, own_loss=True, versioned_by="torchtune_version",
          packs="torchtune packed datasets (block-causal mask)", pads_packs=True,
          shardings=("fsdp2",),  # training.shard_model: FSDP2 only
          why={("precision", "bf16-true"): "its recipe configs' dtype: bf16, no mixed precision",
               ("grad_checkpointing", "full"): "its recipe configs' enable_activation_checkpointing: True",
               ("loss", "chunked"): "CEWithChunkedOutputLoss",
               "adapter_dtype": "adapters in the model's dtype, validate_expected_param_dtype"}),
    Recipe(name="torchtitan", title="torchtitan (pytorch/torchtitan)",
          defaults={**BASE, "grad_checkpointing": "selective"}, fsdp="fsdp2",
          logs="max reserved GiB per log window (DeviceMemoryMonitor, peak reset after each log)",
          logs_level="reserved", peft_adapters=False, refuse=_refuse_torchtitan, fill=_fill_torchtitan,
          own_loss=True, wraps_rows=True,
          shardings=("ddp", "fsdp2"),  # [parallelism] data_parallel_replicate_degree, data_parallel_shard_degree
          why={("grad_checkpointing", "selective"): "train_configs' activation_checkpoint.mode 'selective', "
               "selective_ac_option 'op'",
               ("sharding", "fsdp2"): "config_manager.py's data_parallel_shard_degree -1: FSDP2 over every "
               "data-parallel rank"}),
    Recipe(name="unsloth", title="Unsloth (FastLanguageModel + TRL/HF Trainer)",
          defaults={**BASE, "grad_checkpointing": "full", "activation_offload": True, "loss": "fused-linear"},
          fsdp=None, logs="torch.cuda.max_memory_reserved in its notebooks ('Peak reserved memory')",
          logs_level="reserved", peft_adapters=True, refuse=_refuse_unsloth, fill=_fill_unsloth, own_loss=True,
          trl_files=True, packs="TRL SFTTrainer packing (bfd)", shardings=("ddp",),
          why={("grad_checkpointing", "full"): "get_peft_model's use_gradient_checkpointing='unsloth'",
               ("activation_offload", True): "use_gradient_checkpointing='unsloth' offloads checkpoints to CPU",
               ("activation_offload", False): "use_gradient_checkpointing='unsloth' keeps checkpoints on the GPU "
               "below 512 tokens", ("loss", "fused-linear"): "its fused linear cross-entropy, unsloth_fused_ce_loss"}),
    Recipe(name="axolotl", title="axolotl (HF Trainer + its Liger plugin)",
          defaults={**BASE, "grad_checkpointing": "full", "loss": "fused-linear"},
          fsdp="fsdp1", logs="memory/max_mem_active, max_mem_allocated and device_mem_reserved per log step",
          logs_level="allocated", peft_adapters=True, refuse=_refuse_axolotl, fill=_fill_axolotl,
          packs="axolotl sample_packing (multipack, FlashAttention varlen)",
          why={("grad_checkpointing", "full"): "its example configs' gradient_checkpointing: true",
               ("loss", "fused-linear"): "its example configs' liger_fused_linear_cross_entropy: true",
               ("precision", "bf16-true"): "bf16: true loads the weights in bf16, cfg.torch_dtype",
               ("qlora_fp32_upcast", True): "under FSDP its ModelLoader keeps peft's fp32 norms and embeddings",
               ("qlora_fp32_upcast", False): "ModelLoader._configure_embedding_dtypes casts peft's fp32 norms and "
               "embeddings back to bf16"}),
    Recipe(name="pytorch", title="a plain PyTorch loop over a transformers model (e.g. Answer.AI fsdp_qlora)",
          defaults={**BASE, "precision": "bf16-true"}, fsdp="fsdp1",
          logs="whatever your loop prints (Answer.AI fsdp_qlora: max_memory_reserved over epoch 0)",
          logs_level="reserved", peft_adapters=True, refuse=_refuse_pytorch,
          why={("precision", "bf16-true"): "one dtype throughout, as Answer.AI's fsdp_qlora train.py"}),
    Recipe(name="diffusers", title="diffusers' training scripts (examples/dreambooth, examples/text_to_image)",
          defaults={**BASE, "cache_latents": False, "text_encoders": "cached"}, fsdp=None,
          logs="none by default (its Flux QLoRA example prints torch.cuda.max_memory_allocated)",
          logs_level="allocated", peft_adapters=False, refuse=_refuse_diffusion, shardings=("ddp",),
          why={("cache_latents", False): LATENTS_EVERY_STEP,
               ("text_encoders", "cached"): "the instance prompt's embeddings computed once, encoders freed",
               ("adapter_dtype", "fp32"): "cast_training_params(dtype=torch.float32) under fp16 mixed precision",
               ("adapter_dtype", "bf16"): "peft's add_adapter in the weights' dtype; upcast under fp16 only"}),
    Recipe(name="kohya", title="kohya-ss sd-scripts (train_network.py, sdxl_train_network.py, flux_train_network.py)",
          defaults={**BASE, "cache_latents": False, "text_encoders": "frozen"}, fsdp=None,
          logs="none (nvidia-smi, or the GUI's VRAM readout)", logs_level="reserved", peft_adapters=False,
          refuse=_refuse_diffusion, shardings=("ddp",), fill=_fill_kohya,
          why={("cache_latents", False): LATENTS_EVERY_STEP,
               ("adapter_dtype", "fp32"): "networks/lora.py's LoRAModule Linears are fp32; --full_bf16 casts them",
               ("text_encoders", "frozen"): "sd-scripts keeps the text encoders on the GPU unless "
               "--cache_text_encoder_outputs",
               ("text_encoders", "trained"): "sd-scripts trains the text encoders' LoRA unless "
               "--network_train_unet_only"}),
    Recipe(name="simpletuner", title="SimpleTuner (bghira/SimpleTuner)",
          defaults={**BASE, "grad_checkpointing": "full", "cache_latents": True, "text_encoders": "cached"},
          fsdp=None, logs="none (nvidia-smi)", logs_level="reserved", peft_adapters=False,
          refuse=_refuse_diffusion, shardings=("ddp",),
          why={("grad_checkpointing", "full"): "its quickstarts: 'set this to true in practically every situation'",
               ("cache_latents", True): "it always caches VAE latents",
               ("adapter_dtype", "bf16"): "peft's adapters in the weights' dtype, as its adamw_bf16 requires",
               ("text_encoders", "cached"): "it always caches text embeddings"}),
    Recipe(name="ai-toolkit", title="ai-toolkit (ostris/ai-toolkit)",
          defaults={**BASE, "grad_checkpointing": "full", "cache_latents": True, "text_encoders": "frozen",
                    "optimizer": "adamw-8bit"},
          fsdp=None, logs="none (nvidia-smi)", logs_level="reserved", peft_adapters=False,
          refuse=_refuse_diffusion, shardings=("ddp",), fill=_fill_ai_toolkit,
          why={("grad_checkpointing", "full"): "its example configs set gradient_checkpointing: true",
               ("cache_latents", True): "its example configs: cache_latents_to_disk true",
               ("text_encoders", "frozen"): "its example configs and its UI's default job leave cache_text_embeddings "
               "and unload_text_encoder false: the text encoders stay on the GPU (T5 in qfloat8 with quantize)",
               ("optimizer", "adamw-8bit"): "its example configs and its UI's default job: optimizer adamw8bit",
               ("adapter_dtype", "fp32"): "BaseSDTrainProcess: network.force_to(dtype=torch.float32)",
               ("quant", "fp8"): "its example configs and its UI's default job: model.quantize true, "
               "optimum-quanto qfloat8"}),
    Recipe(name="megatron", title="Megatron-Core with NeMo's recipes (NVIDIA/Megatron-LM, NVIDIA/NeMo)",
          defaults={**BASE, "grad_checkpointing": "selective"}, fsdp=None,
          logs="'memory (MB) | allocated: ... | max allocated: ... | reserved: ... | max reserved: ...' after the "
          "first iterations (megatron/training/training.py report_memory)", logs_level="allocated",
          peft_adapters=False, refuse=_refuse_megatron, fill=_fill_megatron, shardings=("ddp", "zero1"),
          eval_batches=32,  # NeMo 2.0 recipes' trainer limit_val_batches (nemo/collections/llm/recipes/llama3_8b.py)
          why={("grad_checkpointing", "selective"): "recompute_granularity selective: core attention only",
               ("sharding", "zero1"): "NeMo's recipes/optim/adam.py sets use_distributed_optimizer=True: master "
               "weights and Adam moments sharded over DP x CP",
               ("fp8_recipe", "delayed"): "NeMo's DtypeConfig fp8_recipe 'delayed': Transformer Engine's "
               "DelayedScaling"}),
)}
# the scenario fields naming one stack's release -> that stack (Recipe.versioned_by)
VERSION_FIELDS = {r.versioned_by: r.name for r in RECIPES.values() if r.versioned_by}
# the diffusion trainers, whose profiles (gpuplan.scenario.diffusion_stacks) load with the first plan that names one:
# a decoder's plan only asks whether its stack is one (loading them cost every first estimate 1.5 ms)
DIFFUSION_TRAINERS = frozenset(r.name for r in RECIPES.values() if r.refuse is _refuse_diffusion)


def stack_fills(data: Mapping[str, Any], given: AbstractSet[str] | None = None) -> dict[str, Any]:
    """Values for the technique fields ``data`` leaves unset (``None``), from its stack's recipes.

    ``data`` holds the scenario's validated fields; the result holds only the fields to fill in. ``given``: the
    fields the user gave, where known; a field with a value of its own by default (``optimizer``'s adamw) takes the
    stack's when it was not given (ai-toolkit's adamw8bit).
    """
    stack = RECIPES[data["stack"]]
    out: dict[str, Any] = {}
    for name, value in stack.defaults.items():
        if data.get(name) is None or (given is not None and name not in given):
            out[name] = value
    get = {**data, **out}.get
    if data["task"] == "infer":
        out["precision"] = data.get("precision") or "bf16-mixed"
    if stack.fill is not None:  # the stack's defaults that depend on other fields
        out.update(stack.fill(data, get))
    card = card_precision(data, get("precision"))
    if card != get("precision"):
        out["precision"] = card
        get = {**data, **out}.get
    if get("loss") == "chunked" and data.get("loss_chunks") is None:
        out["loss_chunks"] = 8  # torchtune CEWithChunkedOutputLoss(num_output_chunks=8); axolotl's and torchtitan's 8
    if data.get("adapter_dtype") in (None, "auto"):
        compute = "fp32" if get("precision") == "fp32" else get("precision").split("-")[0]
        fp32 = stack.peft_adapters or (stack.name in DIFFUSION_TRAINERS and _fp32_adapters(stack.name,
                                                                                          get("precision")))
        out["adapter_dtype"] = "fp32" if fp32 else compute
    if data.get("sharding") == "fsdp" and stack.fsdp:
        out["sharding"] = stack.fsdp
    return out


def _fp32_adapters(trainer: str, precision: str) -> bool:
    """Whether diffusion trainer ``trainer`` keeps its LoRA adapters in fp32 under ``precision`` (its profile's)."""
    from .diffusion_stacks import diffusion_stack_for

    return diffusion_stack_for(trainer).fp32_adapters(precision)


# training stacks that never compute in fp16: on a card without bf16 they train in fp32. torchtune's recipes
# raise "fp16 precision is not supported in this recipe. Please use fp32 or bf16." and, on a CUDA card without
# bf16, "Full bf16 training is not supported on this hardware" (pytorch/torchtune
# recipes/lora_finetune_single_device.py, LoRAFinetuneRecipeSingleDevice.__init__); torchtitan's FSDP2
# MixedPrecisionPolicy takes mixed_precision_param bfloat16 or float32 (its refusal above, ``_refuse_torchtitan``)
NO_FP16_STACKS = frozenset({"torchtune", "torchtitan"})


def card_precision(data: Mapping[str, Any], precision: str) -> str:
    """The precision that runs on the scenario's card when it was left to the stack: GPUs without bf16 tensor cores
    (V100, T4 and other Turing cards, Apple silicon) run fp16 (``fp16-mixed`` for training as the Trainer's
    ``fp16=True``, ``-true`` where the stack holds one dtype; ``fp16-true`` weights for serving), and fp32 under a
    training stack that has no fp16 (:data:`NO_FP16_STACKS`: fp16 there was refused with advice to use bf16, which
    the card lacks). A card the catalog does not know keeps the stack's."""
    if data.get("precision") is not None or not precision.startswith("bf16") or not data.get("gpu"):
        return precision
    if _has_bf16(str(data["gpu"])):
        return precision
    if data["task"] == "infer":
        return "fp16-true"
    return "fp32" if data.get("stack") in NO_FP16_STACKS else precision.replace("bf16", "fp16")


@functools.cache
def _has_bf16(gpu: str) -> bool:
    """Whether the catalog gives ``gpu`` bf16 tensor cores; unknown cards pass (their name is refused later)."""
    from ..errors import GpuplanError
    from ..hardware import load_gpu

    try:
        return load_gpu(gpu).supports_dtype("bf16")
    except GpuplanError:
        return True


def refusal(s) -> str | None:
    """The sentence that refuses scenario ``s`` (resolved), or None. Rules shared by every stack come first."""
    # ep also splits a served MoE model's experts (engine vllm, sglang or trtllm: gpuplan.plan.refusals)
    used = [f"{k}={getattr(s, k)}" for k in MEGATRON_FIELDS if getattr(s, k) not in (None, 1)
            and not (k == "ep" and s.task == "infer")]
    used += [f"{k}=true" for k in ("cuda_graphs", "fp8_attention", "fp8_activation_store") if getattr(s, k)]
    used += [f"{k}={str(getattr(s, k)).lower()}" for k in ("fp8_transpose_cache", "recompute_layers")
             if getattr(s, k) is not None]
    if s.precision == "fp4-mixed":
        used.append("precision=fp4-mixed")
    if used and (s.stack != "megatron" or s.task != "train"):
        what = "is a Megatron-Core training setting" if len(used) == 1 else "are Megatron-Core training settings"
        return f"{', '.join(used)} {what}: set stack megatron and task train, or drop them"
    if s.task == "infer":
        if s.stack != "hf":
            return (f"stack {s.stack} is a training stack; for inference leave stack hf and choose engine "
                    "transformers, vllm or llama.cpp")
        return None
    why = dpo_refusal(s)
    if why:
        return why
    if s.loss_chunks is not None and s.loss != "chunked":
        return f"loss_chunks applies to loss chunked, not {s.loss}: drop it or set loss chunked"
    if s.checkpoint_every > 1 and s.grad_checkpointing != "full":
        return "checkpoint_every picks one layer in N for full checkpointing: set grad_checkpointing full"
    if s.optimizer_in_backward and s.grad_accum_steps > 1:
        return ("optimizer_in_backward steps each parameter as its gradient is ready, so gradients cannot "
                "accumulate: set grad_accum_steps 1")
    recipe = RECIPES[s.stack]
    if s.transformers_version is not None and recipe.own_loss:
        return (f"stack {s.stack} computes the loss with its own code, not transformers': drop "
                "transformers_version (it applies to hf, axolotl and pytorch)")
    for field, owner in VERSION_FIELDS.items():
        if getattr(s, field) is not None and recipe.versioned_by != field:
            return f"{field} applies to stack {owner}, not {s.stack}: drop it"
    if s.sharding == "fsdp" and RECIPES[s.stack].fsdp is None:
        return f"stack {s.stack} does not shard with FSDP: use sharding single or ddp"
    return RECIPES[s.stack].refuse(s)


# the stacks that train DPO as gpuplan plans it: TRL's DPOTrainer under hf (TRL itself), axolotl (``rl: dpo``: its
# HFRLTrainerBuilder wraps trl's DPOTrainer, axolotl docs/rlhf.qmd) and unsloth (``PatchDPOTrainer()``, then trl's
# DPOTrainer over its patched model); torchtune's own DPO recipes (torchtune 0.6.1 recipes/lora_dpo_single_device.py,
# lora_dpo_distributed.py, full_dpo_distributed.py); why each other LLM stack is refused
DPO_STACKS = ("hf", "axolotl", "unsloth", "torchtune")
_NO_DPO = {
    "torchtitan": "torchtitan has no DPO recipe (pytorch/torchtitan issue 756 asks for one)",
    "megatron": "gpuplan's megatron stack is Megatron-Core's pre-training and SFT loop, which has no DPO loss",
    "pytorch": "stack pytorch is your own loop, whose DPO step gpuplan cannot know",
}


def dpo_refusal(s) -> str | None:
    """One sentence when ``train_objective: dpo`` (or its setting) is asked of what gpuplan does not plan as TRL's
    DPOTrainer or torchtune's DPO recipes run it (:data:`DPO_STACKS`), or with packing: both pad each batch of
    pairs."""
    if s.train_objective != "dpo":
        return ("precompute_ref_log_probs is a setting of TRL's DPOTrainer: set train_objective dpo, or drop it"
                if s.precompute_ref_log_probs else None)
    if s.stack not in DPO_STACKS:
        why = _NO_DPO.get(s.stack, f"{s.stack} trains diffusion models, not on preference pairs")
        return f"{why}: plan DPO with stack hf (TRL's DPOTrainer), axolotl, unsloth or torchtune"
    if s.stack == "torchtune":
        return _torchtune_dpo_refusal(s)
    if "loss" in s.model_fields_set or "loss_chunks" in s.model_fields_set:
        return ("TRL's DPOTrainer scores the pairs with its own fused log-prob head (add_fused_lm_head, no logits), "
                "whatever the stack's loss: drop loss and loss_chunks")
    if s.packing in ("bfd", "wrapped"):
        return (f"packing {s.packing} is not how TRL's DPOTrainer batches pairs (it pads each batch, prompt left "
                "and replies right): set packing none")
    return None


def _torchtune_dpo_refusal(s) -> str | None:
    """What torchtune 0.6.1's DPO recipes cannot run: the keys each reads (``recipes/lora_dpo_single_device.py``,
    ``lora_dpo_distributed.py``, ``full_dpo_distributed.py``), no full DPO on one device, no precomputed reference
    (each step runs the reference forward), fp32 logits whatever the loss (no output chunks), padded pairs."""
    if s.precompute_ref_log_probs:
        return ("torchtune's DPO recipes run the reference forward in every step and have no "
                "precompute_ref_log_probs: drop it, or plan stack hf")
    if s.method == "full" and s.world_size == 1:
        return ("torchtune trains full DPO with full_dpo_distributed only (no single-device recipe): plan 2 or more "
                "GPUs, or method lora")
    if "loss" in s.model_fields_set or "loss_chunks" in s.model_fields_set:
        return ("torchtune's DPO recipes score the pairs from the model's fp32 logits (no output chunks), whatever "
                "the loss: drop loss and loss_chunks")
    if s.compile:
        return "gpuplan does not model torchtune's compiled DPO step: drop compile"
    if s.method != "full" and (s.activation_offload or s.optimizer_in_backward):
        return ("torchtune's LoRA DPO recipes read no enable_activation_offloading or optimizer_in_bwd: drop "
                "activation_offload and optimizer_in_backward")
    if s.packing in ("bfd", "wrapped"):
        return (f"packing {s.packing} is not how torchtune's DPO recipes batch pairs (padded_collate_dpo pads chosen "
                "and rejected rows): set packing none")
    return None


def reason(stack: str, name: str, value: Any) -> str | None:
    """Why stack ``stack`` fills field ``name`` with ``value``: its recipe's own reason (:attr:`Recipe.why`), else
    the common fills' (:func:`stack_fills`: peft's fp32 adapters where the stack builds them with peft, the model's
    dtype otherwise; 8 loss chunks). None where there is none to say (BASE's values: the switches off, bf16
    autocast)."""
    recipe = RECIPES[stack]
    own = recipe.why.get((name, value)) or recipe.why.get(name)
    if own is None and name == "adapter_dtype" and recipe.peft_adapters:
        return PEFT_ADAPTERS
    return own or RESOLVER_WHY.get(name)


def defaults_in_force(s, card_chose: tuple[str, ...] = (), fields: tuple[str, ...] | None = None) -> str | None:
    """One sentence naming the ``fields`` the stack fills (default: every one, :attr:`Recipe.said`) the scenario
    left to its stack, with their values and why (:func:`reason`); those the card chose, ``card_chose``, are said
    apart."""
    if s.task != "train":
        return None
    parts, said = [], RECIPES[s.stack].said
    for name in said if fields is None else (f for f in fields if f in said):
        if name in card_chose or (name in s.model_fields_set and (name != "adapter_dtype" or
                                                                  s.adapter_dtype != "auto")):
            continue
        value = getattr(s, name)
        if value is None or (name == "adapter_dtype" and s.method == "full") or (
                name == "qlora_fp32_upcast" and s.method != "qlora"):
            continue
        why = reason(s.stack, name, value)
        parts.append(f"{name} {str(value).lower()}" + (f" ({why})" if why else ""))
    if not parts:
        return None
    return f"stack {s.stack} ({RECIPES[s.stack].title}) sets the fields not given: " + ", ".join(parts)
