"""What the training and serving stacks are told, shared by the writers: the distributed backend a plan uses,
the dtype the model is loaded in and the optimizer's name in the Hugging Face Trainer (the packages to install are
each stack's, :meth:`gpuplan.stacks.base.Stack.packages`).

The dtypes follow the memory model (``gpuplan.memory.training``): ``-mixed`` full fine-tuning keeps fp32 weights
and autocasts (the model is loaded in float32), except under DeepSpeed ZeRO, which holds bf16/fp16 weights and
keeps the fp32 master copy in its optimizer (DeepSpeed ``runtime/bf16_optimizer.py``,
``zero/stage_1_and_2.py``); LoRA and QLoRA load the frozen base in the compute dtype; ``-true`` loads everything
in that dtype.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..errors import GpuplanError, no_control
from ..plan.refusals import offload_refusal
from ..scenario import Scenario

SFT_SCRIPT = ("-m", "trl.scripts.sft")
DPO_SCRIPT = ("-m", "trl.scripts.dpo")  # TRL's DPO script: ScriptArguments, DPOConfig, ModelConfig (trl 1.16)
SFT_DATASET = "trl-lib/Capybara"
DPO_DATASET = "trl-lib/ultrafeedback_binarized"  # TRL's own DPO example (trl/scripts/dpo.py docstring)


def is_dpo(scenario: Scenario) -> bool:
    """Whether the plan trains TRL's DPO objective (scenario ``train_objective: dpo``)."""
    return getattr(scenario, "train_objective", "sft") == "dpo"


def entry_script(scenario: Scenario, opts: LaunchOptions) -> tuple[str, ...]:
    """The training entry point: the user's ``--script``, else TRL's SFT or DPO script by the objective."""
    return DPO_SCRIPT if is_dpo(scenario) and opts.script == SFT_SCRIPT else opts.script


def dataset_for(scenario: Scenario, opts: LaunchOptions) -> LaunchOptions:
    """``opts`` with TRL's preference example as the data of a DPO plan that names none (the SFT default
    ``trl-lib/Capybara`` has no chosen/rejected columns)."""
    if is_dpo(scenario) and opts.dataset == SFT_DATASET:
        return replace(opts, dataset=DPO_DATASET)
    return opts


@dataclass(frozen=True, kw_only=True)
class LaunchOptions:
    """How to run the plan, beyond what the scenario holds."""

    dataset: str = SFT_DATASET  # TRL's own SFT example; replace with yours
    script: tuple[str, ...] = SFT_SCRIPT  # the training entry point; reads trainer.yaml
    bucket: str | None = None  # SkyPilot storage for checkpoints that survive spot interruptions
    output_dir: str = "checkpoints"
    port: int = 8000  # vLLM's default port
    # a smoke run (gpuplan launch --smoke, gpuplan.launchers.smoke): the files as written, on the CPU when there is
    # no GPU, for max_steps optimizer steps, logging each
    device: str = "cuda"
    max_steps: int | None = None

    def __post_init__(self):
        """Each value is written into the files (quoted for each format): text without control characters."""
        texts = {"--dataset": [self.dataset], "--script": self.script, "--bucket": [self.bucket or ""],
                 "the output_dir": [self.output_dir]}
        for flag, values in texts.items():
            if isinstance(values, str) or not all(isinstance(v, str) for v in values):
                raise GpuplanError(f"{flag} must be text (a tuple of words for --script), got {values!r:.60}")
            for value in values:
                no_control(value, flag)
        if self.device not in ("cuda", "cpu"):
            raise GpuplanError(f"the device is cuda or cpu, not {self.device!r:.20}")
        if self.max_steps is not None and (isinstance(self.max_steps, bool) or not isinstance(self.max_steps, int)
                                           or not 0 < self.max_steps <= 10_000):
            raise GpuplanError(f"max_steps must be a whole number from 1 to 10,000, got {self.max_steps!r:.20}")
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 < self.port < 65536:
            raise GpuplanError(f"the port must be a whole number from 1 to 65535, got {self.port!r:.20}")


def backend(s: Scenario) -> str:
    """``none`` (one process), ``ddp``, ``deepspeed`` (ZeRO stages, or CPU offload on one GPU), ``fsdp1`` or
    ``fsdp2`` (the code that shards the scenario: ``sharding fsdp`` is FSDP1 in the HF stack)."""
    why = offload_refusal(s, every_stack=True)
    if why:
        raise GpuplanError(why)
    sharded_by = s.sharded_by
    if sharded_by in ("fsdp1", "fsdp2"):
        return sharded_by
    if sharded_by == "deepspeed" or (sharded_by == "single" and s.offload != "none"):
        return "deepspeed"
    return "ddp" if sharded_by == "ddp" else "none"


def fsdp_settings(s: Scenario, *, accelerate_names: bool = False) -> dict[str, Any]:
    """FULL_SHARD FSDP of the plan's version, keyed as transformers' ``fsdp_config`` names them
    (``TrainingArguments._process_fsdp_args``); accelerate's config prefixes them with ``fsdp_`` and calls CPU
    offload ``offload_params``. FSDP offloads parameters, gradients and optimizer states together. FSDP1 takes
    accelerate's defaults for a transformers model (BACKWARD_PRE prefetch, ``use_orig_params``, synced module
    states); FSDP2 (``fully_shard``) reshards after forward."""
    offload = s.offload == "optimizer+params"
    version = 2 if backend(s) == "fsdp2" else 1
    out: dict[str, Any] = {"version": version, "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                           "offload_params" if accelerate_names else "cpu_offload": offload,
                           "cpu_ram_efficient_loading": True, "state_dict_type": "SHARDED_STATE_DICT",
                           "activation_checkpointing": False}
    if version == 2:
        out["reshard_after_forward"] = True
    elif accelerate_names:
        out.update({"sharding_strategy": "FULL_SHARD", "backward_prefetch": "BACKWARD_PRE",
                    "forward_prefetch": False, "use_orig_params": True, "sync_module_states": True})
    else:
        out.update({"reshard_after_forward": "full_shard", "backward_prefetch": "backward_pre",
                    "forward_prefetch": False, "use_orig_params": True, "sync_module_states": True})
    return out


def zero_stage(s: Scenario) -> int:
    """ZeRO stage: the sharding's, or 1 for a single GPU with its optimizer offloaded (ZeRO-Offload; DeepSpeed
    accepts ``offload_optimizer`` for stages 1-3, and stage 1 on one GPU shards nothing)."""
    sharding = s.resolved_sharding
    return int(sharding[-1]) if sharding.startswith("zero") else 1


def model_dtype(s: Scenario) -> str:
    """The dtype ``from_pretrained`` loads the model in (``dtype=``)."""
    if s.precision == "fp32":
        return "float32"
    half = "bfloat16" if s.precision.startswith("bf16") or s.precision == "fp8-mixed" else "float16"
    if s.precision.endswith("-mixed") and s.method == "full" and backend(s) != "deepspeed":
        return "float32"  # autocast over fp32 weights (DDP) or fp32 shards cast for compute (FSDP mixed precision)
    return half


def autocast(s: Scenario) -> str | None:
    """The autocast dtype of ``-mixed`` precision (``bf16``, ``fp16``, ``fp8``), None for ``-true`` and fp32."""
    return s.precision.split("-")[0] if s.precision.endswith("-mixed") else None


def hf_optim(s: Scenario) -> tuple[str, str | None]:
    """``optim`` and ``optim_args`` of ``TrainingArguments`` (transformers ``OptimizerNames``)."""
    names = {"adamw-8bit": "adamw_bnb_8bit", "paged-adamw-8bit": "paged_adamw_8bit", "sgd": "sgd",
             "sgd-momentum": "sgd", "adafactor": "adafactor", "lion": "lion_32bit"}
    if s.optimizer == "adamw":
        return ("adamw_torch_fused" if s.optimizer_impl == "fused" else "adamw_torch"), None
    return names[s.optimizer], "momentum=0.9" if s.optimizer == "sgd-momentum" else None


