"""What ``gpuplan probe`` runs on a CUDA GPU: each installed library's own modules, so that a probe measures what
users run, and the record says which it used (issue 20).

On fake tensors the simulator emulates the kernels it cannot run (bitsandbytes' NF4 matmul and 8-bit optimizers,
Liger's and Unsloth's Triton kernels) with the bytes they allocate and save: right for memory, not for time. On a
GPU the probe swaps in the real ones where the library is installed:

- QLoRA's 4-bit base: bitsandbytes ``Linear4bit`` (NF4, double-quantized statistics, the compute dtype of the
  scenario) under peft's adapters, quantized from the random weights by ``Params4bit`` on the device;
- 8-bit optimizers: ``bitsandbytes.optim.AdamW8bit`` / ``PagedAdamW8bit``;
- Liger (where the stack's profile runs it, ``Stack.liger_kernels``: ``loss: fused-linear`` under hf and pytorch,
  always under axolotl's plugin):
  ``_apply_liger_kernel_to_instance``, its RMSNorm, RoPE, SwiGLU and fused linear cross-entropy in the model's own
  forward;
- torchtune and torchtitan: their own model builders (``torchtune.models.llama3*``, torchtitan's ``Transformer``)
  and losses, as the simulator builds them, on the device;
- the training loop: the HF ``Trainer`` for ``stack: hf`` (``TrainingArguments`` from the scenario: batch,
  accumulation, precision, checkpointing, optimizer, Liger), timed per optimizer step by a callback; the other
  stacks run gpuplan's plain loop (two optimizer steps per timed run).

Unsloth loads only from a checkpoint with its tokenizer, which a probe built from a config does not have: its
kernels stay emulated, and the record says so. A library that is not installed leaves its part emulated, said in
the record (``backends``), never silently.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ..scenario import Scenario
from ..stacks import STACKS

TRAINER_OPTIM = {("adamw", "fused"): "adamw_torch_fused", ("adamw", "foreach"): "adamw_torch",
                 ("adamw", None): "adamw_torch_fused", ("adamw-8bit", None): "adamw_bnb_8bit",
                 ("paged-adamw-8bit", None): "paged_adamw_8bit", ("sgd", None): "sgd", ("sgd-momentum", None): "sgd",
                 ("adafactor", None): "adafactor", ("lion", None): "lion_32bit"}


@dataclass(frozen=True, kw_only=True)
class Backend:
    """One part of the step and what runs it: the library's own code (``real``) or gpuplan's stand-in."""

    part: str
    runs: str
    real: bool
    why: str = ""


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _liger(s: Scenario) -> bool:
    """Whether the probe applies Liger's kernels: where the stack's profile says they run
    (:meth:`~gpuplan.stacks.base.Stack.liger_kernels`, what the memory and the speed read)."""
    stack = STACKS.get(s.stack)  # the diffusion trainers have no profile: no Liger
    return stack is not None and stack.liger_kernels(s)


def backends(s: Scenario, have: Callable[[str], bool] = installed) -> list[Backend]:
    """What a probe of ``s`` runs for each part, given the libraries ``have`` says are installed."""
    out: list[Backend] = []
    missing = "not installed: emulated with the bytes it allocates (memory right, time not)"
    if s.task == "infer":
        out.append(Backend(part="model", runs="transformers generate (eager, DynamicCache)", real=True))
        if s.quant in ("nf4", "fp4"):
            out.append(Backend(part="4-bit weights", runs="bitsandbytes Linear4bit" if have("bitsandbytes") else
                               "gpuplan's NF4 stand-in", real=have("bitsandbytes"),
                               why="" if have("bitsandbytes") else f"bitsandbytes {missing}"))
        return out
    profile = STACKS.get(s.stack)
    own = profile is not None and profile.own_model  # torchtune's, torchtitan's own decoder (Stack.own_model)
    if own:
        out.append(Backend(part="model", runs=f"{s.stack}'s own model builder and loss", real=have(s.stack),
                           why="" if have(s.stack) else f"{s.stack} not installed: the probe refuses"))
    else:
        out.append(Backend(part="model", runs="transformers" + (" + peft" if s.method != "full" else ""), real=True))
    if s.method == "qlora" and not own:
        real = have("bitsandbytes")
        out.append(Backend(part="4-bit base", runs="bitsandbytes Linear4bit (nf4, double quant) under peft" if real
                           else "gpuplan's NF4 stand-in", real=real, why="" if real else f"bitsandbytes {missing}"))
    if "8bit" in s.optimizer:
        real = have("bitsandbytes")
        out.append(Backend(part="optimizer", runs=("bitsandbytes " + ("PagedAdamW8bit" if "paged" in s.optimizer
                                                                      else "AdamW8bit")) if real
                           else "gpuplan's 8-bit stand-in", real=real, why="" if real else f"bitsandbytes {missing}"))
    if _liger(s):
        real = have("liger_kernel")
        out.append(Backend(part="fused kernels", runs="Liger (_apply_liger_kernel_to_instance)" if real
                           else "gpuplan's emulation of Liger's kernels", real=real,
                           why="" if real else f"liger_kernel {missing}"))
    if s.stack == "unsloth":
        out.append(Backend(part="fused kernels", runs="gpuplan's emulation of Unsloth's kernels", real=False,
                           why="Unsloth loads only from a checkpoint with its tokenizer; the probe builds random "
                               "weights from the config"))
    if s.stack == "hf":
        out.append(Backend(part="training loop", runs="transformers Trainer (timed per optimizer step)", real=True))
    else:
        out.append(Backend(part="training loop", runs="gpuplan's plain loop (two optimizer steps per timed run)",
                           real=s.stack == "pytorch"))
    return out


def record_of(chosen: list[Backend]) -> list[dict[str, Any]]:
    return [asdict(b) for b in chosen]


def uses(chosen: list[Backend], part: str) -> bool:
    return any(b.part == part and b.real for b in chosen)


def quantize_4bit(model, compute_dtype, skip: tuple[str, ...] = ("lm_head", "lora_")) -> int:
    """Swap every plain ``nn.Linear`` on the device (peft's base layers included, ``skip`` left out) for
    bitsandbytes' ``Linear4bit``, quantizing its current weight; returns how many were swapped."""
    import bitsandbytes as bnb
    import torch

    swapped = 0
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if type(child) is not torch.nn.Linear or any(part in full for part in skip):
                continue
            q = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                  compute_dtype=compute_dtype, compress_statistics=True, quant_type="nf4",
                                  device="meta")
            q.weight = bnb.nn.Params4bit(child.weight.data, requires_grad=False, quant_type="nf4",
                                         compress_statistics=True)
            if child.bias is not None:
                q.bias = torch.nn.Parameter(child.bias.data, requires_grad=False)
            setattr(module, child_name, q.to(child.weight.device))
            swapped += 1
    return swapped


def apply_liger(model, *, fused_loss: bool = True) -> None:
    """Liger's RMSNorm, RoPE and SwiGLU on ``model``, and its fused linear cross-entropy where ``fused_loss``
    (axolotl's plugin passes ``liger_fused_linear_cross_entropy`` through as that keyword;
    ``_apply_liger_kernel_to_instance`` hands each model's ``apply_liger_kernel_to_*`` the keywords it takes)."""
    from liger_kernel.transformers import _apply_liger_kernel_to_instance

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    _apply_liger_kernel_to_instance(model=base, fused_linear_cross_entropy=fused_loss)


def optimizer(s: Scenario, params: list):
    """bitsandbytes' 8-bit AdamW (paged or not) for ``params``."""
    import bitsandbytes as bnb

    cls = bnb.optim.PagedAdamW8bit if "paged" in s.optimizer else bnb.optim.AdamW8bit
    return cls(params, lr=1e-5)


def trainer_arguments(s: Scenario, output_dir: str, steps: int, *, liger: bool) -> dict[str, Any]:
    """``TrainingArguments`` of the scenario for ``steps`` optimizer steps (no logging, saving or evaluation)."""
    optim = TRAINER_OPTIM.get((s.optimizer, s.optimizer_impl)) or TRAINER_OPTIM[(s.optimizer, None)]
    return dict(output_dir=output_dir, per_device_train_batch_size=s.micro_batch_size,
                gradient_accumulation_steps=s.grad_accum_steps, max_steps=steps, learning_rate=1e-5,
                bf16=s.precision == "bf16-mixed", fp16=s.precision == "fp16-mixed",
                gradient_checkpointing=s.grad_checkpointing == "full",
                gradient_checkpointing_kwargs={"use_reentrant": False} if s.grad_checkpointing == "full" else None,
                optim=optim, use_liger_kernel=liger, logging_strategy="no", save_strategy="no", report_to=[],
                dataloader_num_workers=0, remove_unused_columns=False, disable_tqdm=True)


def trainer_step_times(s: Scenario, model, vocab: int, steps: int, *, liger: bool) -> list[float]:
    """Seconds of each optimizer step after the first (warm-up) of ``steps + 1``, run by the HF Trainer on random
    token ids, timed by a callback that synchronizes the device at each step's start and end."""
    import torch
    from transformers import Trainer, TrainerCallback, TrainingArguments

    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)

    class Timer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self.start = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            sync()
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            sync()
            self.times.append(time.perf_counter() - self.start)

    per_step = s.micro_batch_size * s.grad_accum_steps
    rows = [{"input_ids": torch.randint(0, vocab, (s.seq_len,))} for _ in range(per_step * (steps + 1))]

    def collate(batch):
        ids = torch.stack([b["input_ids"] for b in batch])
        return {"input_ids": ids, "labels": ids.clone()}

    timer = Timer()
    with tempfile.TemporaryDirectory() as tmp:
        kwargs = trainer_arguments(s, tmp, steps + 1, liger=liger)
        if "activation_checkpointing" in {f.name for f in dataclasses.fields(TrainingArguments)}:  # transformers 5
            kwargs["activation_checkpointing"] = kwargs.pop("gradient_checkpointing")
            kwargs["activation_checkpointing_kwargs"] = kwargs.pop("gradient_checkpointing_kwargs")
        args = TrainingArguments(**kwargs)
        Trainer(model=model, args=args, train_dataset=rows, data_collator=collate, callbacks=[timer]).train()
    return timer.times[1:]
