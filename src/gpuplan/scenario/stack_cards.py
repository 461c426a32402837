"""Which cards each training stack runs on, by the card's vendor (the GPU catalog's ``vendor``: NVIDIA's CUDA,
AMD's ROCm, Intel's Gaudi, Apple's Metal / MPS), from each project's own documentation or code: the training
stacks' counterpart of a serving engine's :meth:`gpuplan.engines.base.Engine.card_refusal`.

A vendor a stack runs on plans without a word; one it runs on in part (a port, a backend its project calls partial
or new) plans with a warning saying what is missing; any other is refused (:func:`refusal`, raised by
:mod:`gpuplan.plan.refusals`), since the plan would time kernels the stack has none of there. A ROCm build of
PyTorch answers the ``torch.cuda`` calls a CUDA stack makes ("HIP interfaces reuse the CUDA interfaces",
pytorch/pytorch ``docs/source/notes/hip.rst``), so a stack that reaches its card through ``torch.cuda`` alone runs
on AMD Instinct and Radeon cards. Intel's cards in the catalog are Gaudi accelerators (the ``hpu`` device of Intel
Gaudi's PyTorch bridge), not the Arc / Data Center GPU Max ``xpu`` devices several stacks name as "Intel GPUs".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

VENDORS = ("NVIDIA", "AMD", "Intel", "Apple")  # the GPU catalog's vendors
LABELS = {"NVIDIA": "NVIDIA (CUDA)", "AMD": "AMD (ROCm)", "Intel": "Intel Gaudi", "Apple": "Apple silicon (MPS)"}

# the Unsloth sentence the Apple warning said first (s22), kept word for word
UNSLOTH_APPLE = ("stack unsloth on Apple silicon: its device check accepts MPS, but its Apple port was merged only "
                 "in part (unslothai/unsloth#4259) and its Triton kernels have no Metal backend; the plan times "
                 "Unsloth's CUDA kernels, which no run on a Mac has measured (stack hf plans the same job with "
                 "PyTorch's own kernels)")


@dataclass(frozen=True)
class StackCards:
    """The vendors one stack runs on (``runs``), those it runs on in part with the warning that says what is
    missing (``partial``), and where that is written (``source``). Every other vendor is refused."""

    runs: tuple[str, ...]
    source: str
    partial: Mapping[str, str] = field(default_factory=dict)

    def said(self) -> str:
        """The vendors in words, the partial ones marked: the docs' "runs on" column."""
        return ", ".join([LABELS[v] for v in self.runs] + [f"{LABELS[v]} in part" for v in self.partial])


CARDS: dict[str, StackCards] = {
    "hf": StackCards(
        runs=VENDORS,
        source="transformers' Trainer runs on accelerate's device: cuda (ROCm builds too), mps, hpu "
               "(huggingface/accelerate utils/imports.py is_mps_available, is_hpu_available); on Gaudi as "
               "optimum-habana's GaudiTrainer (huggingface/optimum-habana), which Intel's MLPerf Training v4.0 "
               "Llama-2-70B LoRA submission runs (bench/data/mlperf-training-other.csv V001)"),
    "pytorch": StackCards(
        runs=VENDORS,
        source="a loop of your own runs where PyTorch has a device: cuda (and ROCm's), hpu through Intel Gaudi's "
               "PyTorch bridge (habana_frameworks.torch), mps"),
    "torchtune": StackCards(
        runs=("NVIDIA", "AMD"),
        partial={"Apple": "stack torchtune on Apple silicon: its get_device accepts mps from torch 2.4 "
                          "(pytorch/torchtune torchtune/utils/_device.py), but its recipes' kernels and dtypes are "
                          "tested on CUDA, and no run on a Mac has measured the plan's speed"},
        source="pytorch/torchtune torchtune/utils/_device.py: cuda (ROCm builds answer it), cpu, mps; no hpu"),
    "torchtitan": StackCards(
        runs=("NVIDIA", "AMD"),
        source="pytorch/torchtitan trains on cuda devices with NCCL (RCCL on ROCm); AMD's rocm/primus containers "
               "run it on Instinct (ROCm docs how-to/rocm-for-ai/training/benchmark-docker/pytorch-training)"),
    "unsloth": StackCards(
        runs=("NVIDIA", "AMD"),
        partial={"Apple": UNSLOTH_APPLE},
        source="unsloth.ai/docs/get-started/install: 'Unsloth works on Linux, Windows, NVIDIA, AMD'; its Intel "
               "support is Intel's xpu GPUs (unsloth-requirements: 'NVIDIA ... + Intel GPUs'), not Gaudi"),
    "axolotl": StackCards(
        runs=("NVIDIA", "AMD"),
        partial={"Apple": "stack axolotl on Apple silicon: its docs call a Mac 'partially usable' (axolotl-ai-cloud/"
                          "axolotl docs/mac.qmd): no fp16/bf16 autocast on MPS, no flash-attn, xformers, "
                          "bitsandbytes (QLoRA, 8-bit optimizers) or DeepSpeed, FSDP untested"},
        source="axolotl-ai-cloud/axolotl README, requirements: 'NVIDIA GPU (Ampere or newer for bf16 and Flash "
               "Attention) or AMD GPU'; docs/mac.qmd"),
    "megatron": StackCards(
        runs=("NVIDIA", "AMD"),
        partial={"Intel": "stack megatron on Intel Gaudi: Intel's port (HabanaAI/Megatron-LM, from Megatron-Core "
                          "core_r0.9.0, HPU fused ops in place of Transformer Engine) is validated for Llama 3.1 "
                          "pretraining and Mixtral 8x7B in bf16, while the plan times NeMo's recipes on Transformer "
                          "Engine's CUDA kernels, which no Gaudi run has measured"},
        source="NVIDIA/Megatron-LM and NVIDIA/NeMo on CUDA; AMD's fork ROCm/Megatron-LM, which AMD's MLPerf "
               "Training Llama-2-70B LoRA and Llama-3.1-8B submissions run on MI300X, MI325X and MI355X "
               "(bench/data/mlperf-training-other.csv V002-V030); HabanaAI/Megatron-LM for Gaudi"),
    "diffusers": StackCards(
        runs=("NVIDIA", "AMD"),
        partial={"Apple": "stack diffusers on Apple silicon: its training scripts run on accelerate's mps device, "
                          "but diffusers documents MPS for inference (docs optimization/mps), and no training run "
                          "on a Mac has measured the plan's speed",
                 "Intel": "stack diffusers on Intel Gaudi: optimum-habana's own copies of the scripts run there "
                          "(huggingface/optimum-habana examples/stable-diffusion/training: train_dreambooth_lora_flux"
                          ".py, train_dreambooth_lora_sdxl.py, train_text_to_image_sdxl.py), not diffusers' own, "
                          "and the plan times CUDA kernels"},
        source="huggingface/diffusers examples (accelerate's device); optimum-habana's Gaudi copies"),
    "kohya": StackCards(
        runs=("NVIDIA",),
        partial={"AMD": "stack kohya on AMD: sd-scripts documents CUDA only (kohya-ss/sd-scripts README); a ROCm "
                        "build of PyTorch answers its torch.cuda path, but its xformers and bitsandbytes options "
                        "need their ROCm builds, and no AMD run has measured the plan's speed",
                 "Apple": "stack kohya on Apple silicon: sd-scripts picks mps when there is no CUDA device "
                          "(library/device_utils.py get_preferred_device), but it documents CUDA only, and no run "
                          "on a Mac has measured the plan's speed"},
        source="kohya-ss/sd-scripts library/device_utils.py: cuda, xpu (Intel Arc through IPEX), mps; no hpu"),
    "simpletuner": StackCards(
        runs=("NVIDIA", "AMD", "Apple"),
        source="bghira/SimpleTuner README, hardware requirements: NVIDIA 3080 and up, AMD (LoRA and full-rank "
               "tuning verified on 7900 XTX and MI300X), Apple (M3 Max); no Gaudi"),
    "ai-toolkit": StackCards(
        runs=("NVIDIA",),
        source="ostris/ai-toolkit README, requirements: 'Nvidia GPU with enough ram to do what you need'"),
}


def refusal(stack: str, vendor: str, card: str, family: Iterable[str]) -> str | None:
    """Why ``stack`` cannot train on ``card`` (the card's name) of ``vendor``, in one sentence naming the stacks of
    ``family`` (those that train the same kind of model) that do run there; None where it runs, fully or in part,
    or where the vendor is none of the catalog's (a card file of your own: its vendor is not judged)."""
    cards = CARDS.get(stack)
    if cards is None or vendor not in VENDORS or vendor in cards.runs or vendor in cards.partial:
        return None
    there = [name for name in family if name in CARDS and vendor in (*CARDS[name].runs, *CARDS[name].partial)]
    where = _listed([LABELS[v] for v in cards.runs]) + "".join(f", {LABELS[v]} in part" for v in cards.partial)
    instead = f"train there with stack {_listed(there, 'or')}" if there else "no stack gpuplan plans trains there"
    return f"stack {stack} does not run on {card}, an {LABELS[vendor]} card (it runs on {where}): {instead}"


def _listed(names: list[str], last: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"


def warning(stack: str, vendor: str) -> str | None:
    """What ``stack`` lacks on ``vendor``'s cards where it runs there in part (None: it runs fully, or not)."""
    cards = CARDS.get(stack)
    return cards.partial.get(vendor) if cards else None


def table(order: Iterable[str]) -> str:
    """The docs' table of the stacks in ``order``, each with the cards it runs on and where that is written."""
    rows = ["| stack | runs on | source |", "|---|---|---|"]
    rows += [f"| {name} | {CARDS[name].said()} | {CARDS[name].source} |" for name in order]
    return "\n".join(rows)
