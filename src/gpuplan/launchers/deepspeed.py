"""``ds_config.json``: the DeepSpeed config (``deepspeed.runtime.config.DeepSpeedConfig``) of a ZeRO plan.

It holds the settings the memory estimate assumed, written out rather than left ``"auto"`` so the run cannot
drift from the plan: the ZeRO stage and CPU offload; bf16/fp16 (``bf16-true`` keeps bf16 master weights and
optimizer states: ``bf16_master_weights_and_grads``, ``bf16_optimizer_states``); the batch
(``train_batch_size = micro-batch x accumulation x data-parallel ranks``, which DeepSpeed checks); gradient
clipping; and the communication buckets as the Hugging Face integration sizes them for the model
(``reduce_bucket_size = hidden^2``, ``stage3_prefetch_bucket_size = 0.9 hidden^2``,
``stage3_param_persistence_threshold = 10 hidden``: transformers ``integrations/deepspeed.py``
``trainer_config_finalize``; :func:`gpuplan.overheads.deepspeed_bucket_elements`), with DeepSpeed's default
``stage3_max_live_parameters`` of 1e9. JSON has no comments: the plan's header sits under ``_gpuplan``, a key
DeepSpeed's parser ignores (a test loads the file with it).
"""

from __future__ import annotations

from typing import Any

from .. import overheads as oh
from .files import LaunchFile, json_text
from .plan import LaunchPlan
from .settings import LaunchOptions, backend, zero_stage
from .trainer import applies as trainer_applies

NAME = "deepspeed"
FILE = "ds_config.json"
MAX_LIVE_PARAMETERS = 1_000_000_000  # DeepSpeed zero/config.py default of stage3_max_live_parameters


def applies(plan: LaunchPlan) -> str | None:
    why = trainer_applies(plan)
    if why:
        return why
    s = plan.scenario
    try:
        kind = backend(s)
    except ValueError as err:
        return str(err)
    if kind != "deepspeed":
        what = {"none": "a single GPU without ZeRO or offload", "ddp": "plain DDP"}.get(kind, kind.upper())
        return (f"the plan runs {what}, not DeepSpeed: use --target accelerate or torchrun, or plan with sharding "
                "zero1/zero2/zero3 (or offload on one GPU)")
    if s.precision in ("fp16-true", "fp8-mixed"):
        return f"DeepSpeed's config has no {s.precision} training: use bf16-mixed, fp16-mixed or bf16-true"
    return None


def config(plan: LaunchPlan) -> dict[str, Any]:
    s = plan.scenario
    hidden = plan.model.hidden_size
    stage = zero_stage(s)
    zero: dict[str, Any] = {"stage": stage, "overlap_comm": True, "contiguous_gradients": True,
                            "reduce_bucket_size": oh.deepspeed_bucket_elements(hidden)}
    if s.offload != "none":
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if s.offload == "optimizer+params":
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    if stage == 3:
        zero.update({"stage3_prefetch_bucket_size": int(0.9 * oh.deepspeed_bucket_elements(hidden)),
                     "stage3_param_persistence_threshold": 10 * hidden,
                     "stage3_max_live_parameters": MAX_LIVE_PARAMETERS,
                     "stage3_gather_16bit_weights_on_model_save": True})
    data: dict[str, Any] = {"train_batch_size": s.micro_batch_size * s.grad_accum_steps * s.dp,
                            "train_micro_batch_size_per_gpu": s.micro_batch_size,
                            "gradient_accumulation_steps": s.grad_accum_steps,
                            "gradient_clipping": plan.recipe.max_grad_norm if plan.recipe else 1.0}
    if s.precision == "bf16-mixed":
        data["bf16"] = {"enabled": True}
    elif s.precision == "bf16-true":
        data["bf16"] = {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True}
    elif s.precision == "fp16-mixed":
        data["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16}
    data["zero_optimization"] = zero
    if s.offload != "none":  # ZeRO-Offload steps on the CPU with DeepSpeed's own Adam; the Trainer fills "auto"
        data["optimizer"] = {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto",
                                                         "weight_decay": "auto"}}
    data["steps_per_print"] = 10
    data["wall_clock_breakdown"] = False
    return data


def notes(plan: LaunchPlan) -> list[str]:
    s = plan.scenario
    out = []
    if s.offload != "none" and s.optimizer != "adamw":
        out.append(f"offload runs DeepSpeed's CPU AdamW, not {s.optimizer}: optimizer states are fp32 on the CPU")
    return out


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    return [LaunchFile(name=FILE, target=NAME, text=json_text(plan, config(plan), notes(plan)),
                       reader="DeepSpeed, via the Trainer's deepspeed= and accelerate")]
