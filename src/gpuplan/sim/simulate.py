"""``simulate(scenario)``: the scenario's step run by the real ``transformers`` code on fake tensors, with the
tensor memory of every op counted; no GPU, no weights, no data.

The model is built from its config on the meta device, materialized as ``FakeTensor``s on the CPU
(``FakeTensorMode``: shapes, dtypes and storages without bytes), set up as the scenario says (peft LoRA on the
targets, ``gradient_checkpointing_enable``, the attention implementation, the optimizer class), and stepped as the
Hugging Face Trainer steps: forward with labels, loss, backward, ``optimizer.step()``, ``zero_grad(set_to_none)``;
two optimizer steps, so that the second runs with the optimizer states the first created (and, with gradient
accumulation, with gradients from an earlier micro-batch alive). Inference runs ``generate``'s loop: a prefill
that keeps the last position's logits, then the last decode step with a ``DynamicCache`` filled to its length
(the middle steps only grow the cache: see :func:`generate_steps`).
:mod:`gpuplan.sim.tracker` counts storages as the CUDA caching allocator does (512-byte blocks).

Depth: identical decoder layers make memory affine in their number, so a model is simulated with a base of few
layers and once more with one more layer of each kind (full, sliding, MLA, dense or MoE), and each phase's peak is
extrapolated exactly to the full depth: ``peak(n) = peak(base) + sum_k (n_k - base_k) * delta_k``.

Emulated where fake CPU tensors cannot run the real kernels, with the same byte counts and said in the notes:
4-bit NF4 weights (bitsandbytes ``Params4bit``: packed uint8 pairs, uint8 absmax per 64 values with double
quantization, an fp32 scale per 256 absmax; dequantized to a full compute-dtype weight per matmul, as
``MatMul4Bit`` does in forward and backward) and 8-bit / paged 8-bit AdamW and Lion (one or two states of the
bitsandbytes sizes: uint8 moments plus an fp32 absmax per 256 values). Everything else is the real code.
CUDA-only allocations (cuBLAS workspace, NCCL buffers, the CUDA context) do not exist on the CPU: compare with
the estimate's allocated peak without its cuBLAS workspace.

Needs the ``sim`` extra (transformers, peft; torch installed with ``pip install torch==2.13.0`` first).
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

from ..engines import engine_for
from ..errors import GpuplanError
from ..hardware import resolve_gpu
from ..model.catalog import load_model
from ..model.meta_layers import decoder_layers, is_tower
from ..model.spec import ModelSpec
from ..model.trace import cache_keyword, cache_layer_tensors, forward, instantiate, new_cache, own_cache, quiet
from ..plan.refusals import card_refusal, scenario_refusal
from ..scenario import Scenario, scenario_from
from ..tensors.state import PEFT_MAMBA_REFUSED, PEFT_MAMBA_TYPES
from . import depth, stacks
from .depth import cut_config

GIB = 2**30
SAFE_IDS = 1000  # input ids below every model's special tokens (a multimodal model's image token expects pixels)
ATTENTION_DROPOUT = ("attn_pdrop", "attention_dropout")
NF4_BLOCK, NF4_DQ_BLOCK, BNB_OPT_BLOCK = 64, 256, 256
EVERY_STEP_MAX = 64  # decode steps run one by one for a cache gpuplan cannot fill (about 0.3 s each on a CPU)


@dataclass(kw_only=True)
class Simulation:
    """What a simulated step allocated, extrapolated to the model's full depth. Bytes are GiB."""

    model: str
    scenario: dict[str, Any]
    allocated_peak_gib: float
    peak_phase: str
    peak_op: str
    parts_gib: dict[str, float]  # categories at the peak
    phase_parts_gib: dict[str, dict[str, float]]  # categories at each phase's peak
    phases_gib: dict[str, float]  # each phase's peak
    runs: list[dict[str, Any]]  # layer counts simulated, with their peaks
    params_trainable: int = 0  # parameters the step trains (LoRA: peft's own count), extrapolated like memory
    cache_gib: float = 0.0  # inference: the cache after the last token (keys, values, recurrent states)
    notes: list[str] = field(default_factory=list)
    # (event, GiB, phase) of the last run, stretched to the full depth: at each phase's peak the extrapolated
    # peak, in between interpolated (see _full_depth); timeline_layers: the layers that run had
    timeline: list[tuple[int, float, str]] = field(default_factory=list)
    timeline_layers: int = 0
    elapsed_s: float = 0.0


def simulate(scenario: Scenario | dict[str, Any], *, timeline: bool = False, layers: int | None = None) -> Simulation:
    """Simulate ``scenario``. ``layers`` runs the model's first ``layers`` decoder layers once, without
    extrapolation (for tests and small models); by default one period of the model's layer pattern and one more
    are run and extrapolated to the full depth (:mod:`gpuplan.sim.depth`)."""
    torch = _require()
    s = scenario_from(scenario)
    scenario_refusal(s)  # what the stack cannot run
    m = load_model(s.model)
    refusal(s, m)
    if layers is not None and not 1 <= layers <= m.num_layers:
        raise GpuplanError(f"--layers must be between 1 and {m.name}'s {m.num_layers} layers, got {layers}")
    started = time.perf_counter()
    torch.manual_seed(0)
    depths, steps = ([layers], 0) if layers is not None else depth.plan(list(m.layers))
    trackers = []
    notes: list[str] = []
    grad = torch.is_grad_enabled()
    try:
        for i, n in enumerate(depths):
            tracker, run_notes = _run(s, m, n, timeline=timeline and i == len(depths) - 1)
            trackers.append(tracker)
            notes += [note for note in run_notes if note not in notes]
    finally:  # generate_steps turns gradients off: a refusal inside it must not leave them off for the caller
        torch.set_grad_enabled(grad)
    phases, parts, ops = depth.extrapolate(trackers, steps)
    phase = max(phases, key=phases.get)
    trainable, cache = (_extrapolated([getattr(t, name) for t in trackers], steps) for name in ("trainable", "cache"))
    sim = Simulation(model=m.name, scenario=s.model_dump(), allocated_peak_gib=phases[phase] / GIB,
                     peak_phase=phase, peak_op=ops[phase], parts_gib={k: v / GIB for k, v in parts[phase].items()},
                     phase_parts_gib={p: {k: v / GIB for k, v in split.items()} for p, split in parts.items()},
                     phases_gib={k: v / GIB for k, v in phases.items()}, params_trainable=int(trainable),
                     cache_gib=cache / GIB,
                     runs=[{"layers": _kinds_of(m.layers[:n]), "peak_gib": t.peak.bytes / GIB}
                           for n, t in zip(depths, trackers, strict=True)], notes=notes,
                     elapsed_s=time.perf_counter() - started)
    if len(depths) > 1:
        sim.notes.append(f"extrapolated from runs of {depths[0]} and {depths[1]} layers (one period of its layer "
                         f"pattern apart) to {m.num_layers}: memory is affine in the number of periods")
    if timeline:
        sim.timeline = _full_depth(trackers[-1].timeline, _phase_shifts(trackers, steps))
        sim.timeline_layers = depths[-1]
    return sim


def _extrapolated(values: list[float], steps: int) -> float:
    """A per-run quantity at full depth, as :func:`depth.extrapolate` does the peaks."""
    return values[-1] + (steps - 1) * (values[-1] - values[-2]) if len(values) > 1 else values[-1]


def _kinds_of(layers) -> dict[str, int]:
    counts: dict[str, int] = {}
    for layer in layers:
        counts[_kind_name(layer)] = counts.get(_kind_name(layer), 0) + 1
    return counts


def _full_depth(timeline: list[tuple[int, int, str]], shifts: dict[str, float]) -> list[tuple[int, float, str]]:
    """The short run's timeline raised to the full depth. Extra layers add bytes that build up through the
    forward (saved activations) and drain through the backward, so the bytes added are anchored at each phase
    segment's peak event (the phase's extrapolated peak there, exactly) and interpolated linearly in between."""
    anchors: list[tuple[int, float]] = []
    start = 0
    for i in range(1, len(timeline) + 1):
        if i == len(timeline) or timeline[i][2] != timeline[start][2]:
            segment = timeline[start:i]
            event, _, phase = max(segment, key=lambda x: x[1])
            anchors.append((event, shifts.get(phase, 0.0)))
            start = i
    out = []
    k = 0
    for event, live, phase in timeline:
        while k + 1 < len(anchors) and anchors[k + 1][0] <= event:
            k += 1
        (e0, s0), (e1, s1) = anchors[k], anchors[min(k + 1, len(anchors) - 1)]
        shift = s0 if e1 == e0 or event <= e0 else s0 + (s1 - s0) * (event - e0) / (e1 - e0)
        out.append((event, (live + shift) / GIB, phase))
    return out


def _phase_shifts(trackers, steps: int) -> dict[str, float]:
    """Bytes to add to each phase of the last run's timeline so that it stands at the full depth: ``steps - 1``
    times the growth of the phase's peak over one period (setup and zero_grad included)."""
    if len(trackers) < 2:
        return {}
    before, last = trackers[-2], trackers[-1]
    return {phase: (steps - 1) * (peak.bytes - before.peaks[phase].bytes)
            for phase, peak in last.peaks.items() if phase in before.peaks}


def _require():
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError:
        raise GpuplanError("simulate needs the sim extra: pip install torch==2.13.0 && pip install "
                           "'gpuplan[sim]'") from None
    return torch


# ---- what can be simulated -----------------------------------------------------------------------------
def refusal(s: Scenario, m: ModelSpec) -> None:
    """What the simulation (and ``probe``, which measures the same step) cannot run, in one sentence: first what
    the card the scenario names cannot run, as estimate refuses it (:func:`gpuplan.plan.refusals.card_refusal`:
    bf16 on a V100 or T4, fp8 before Ada/Hopper, FlashAttention 2 before Ampere), then the layouts, engines,
    checkpointing, fp8 training and weight formats that fake CPU tensors do not run."""
    if s.gpu:
        card_refusal(s, resolve_gpu(s.gpu)[0])
    if s.world_size > 1 or s.tp > 1 or s.pp > 1:
        raise GpuplanError("simulate runs one GPU's step: set num_gpus 1 (sharded and parallel layouts are "
                           "estimated by gpuplan estimate)")
    if s.offload != "none":
        raise GpuplanError("simulate does not model CPU offload: set offload none")
    if s.task == "infer" and not engine_for(s).runs_model_modules:
        raise GpuplanError(f"simulate runs transformers; {s.engine}'s memory is its allocation policy, which "
                           "gpuplan estimate models: set engine transformers")
    if s.task == "train" and s.grad_checkpointing == "selective" and not stacks.own_model(s):
        raise GpuplanError("transformers has no selective checkpointing to run: set grad_checkpointing none or full")
    stacks.check(s, m, list(m.layer_kinds()))
    if s.precision == "fp8-mixed":
        raise GpuplanError("fp8 training needs CUDA fp8 kernels that fake CPU tensors cannot run: use bf16-mixed")
    quant = s.quant if s.quant not in (None, "none") else None
    if s.task == "train" and s.method == "qlora":
        quant = None if quant in (None, "nf4", "fp4") else quant
    if quant is not None and not (s.task == "infer" and quant in ("nf4", "fp4")):
        raise GpuplanError(f"simulate emulates 4-bit bitsandbytes weights (nf4/fp4), not {s.quant!r}: drop quant "
                           "or use gpuplan estimate")
    if m.quantization and s.quant is None:
        raise GpuplanError(f"{m.name} ships quantized weights ({m.quantization.get('quant_method')}) that "
                           "simulate cannot build: set quant none to simulate it in the compute dtype")
    if m.is_moe and s.task == "train" and s.method == "full" and s.precision.endswith("-mixed"):
        raise GpuplanError("transformers runs MoE experts with grouped_mm, which takes 16-bit weights, not the fp32 "
                           "master weights of -mixed precision: simulate with precision bf16-true")


def _kind_name(layer) -> str:
    return layer.attention + ("-moe" if layer.moe else "")


def sized_config(m: ModelSpec, kinds=None, counts: list[int] | None = None, *, depth: int | None = None) -> dict:
    """The model's config.json cut to its first ``depth`` decoder layers (default: ``sum(counts)``, all of them),
    as transformers builds it: no dropout, quantization dropped, legacy Falcon keys renamed."""
    config = {k: v for k, v in m.config.items() if not k.startswith("_")}
    config.pop("quantization_config", None)
    config.pop("auto_map", None)  # the repo's own code, never read (docs/security.md)
    if config.get("model_type") == "RefinedWeb":  # falcon-40b's legacy keys, as transformers' falcon names them
        config = {k: v for k, v in config.items() if k not in ("n_head", "n_head_kv", "n_layer")} | {
            "model_type": "falcon", "num_attention_heads": m.config["n_head"],
            "num_kv_heads": m.config["n_head_kv"], "num_hidden_layers": m.config["n_layer"],
            "new_decoder_architecture": True}
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    for key in ATTENTION_DROPOUT:  # CUDA's fused SDPA applies it in-kernel; the CPU falls back to s x s math
        if text.get(key):
            text[key] = 0.0
    n = depth if depth is not None else (sum(counts) if counts else m.num_layers)
    return config if n == m.num_layers else cut_config(config, n)  # the whole model as its config says


# ---- one run -------------------------------------------------------------------------------------------
def _run(s: Scenario, m: ModelSpec, n: int, *, timeline: bool):
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from .tracker import MemoryTracker

    notes: list[str] = []
    if stacks.own_model(s):  # the stack's own model, built on fake tensors
        with FakeTensorMode(allow_non_fake_inputs=True):
            model, forward_loss = stacks.build_own(s, m, n, notes)
            tracker = MemoryTracker(timeline=timeline)
            tracker.trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
            tracker.cache = 0
            stacks.relabel_parameters(model, tracker)
            with tracker, _cuda_dropout(), stacks.offloading(s, model, tracker, stacks.offload_resident(s)):
                train_steps(_pair_rows(s), m, model, tracker, notes, forward_loss=forward_loss)
            del model, forward_loss
        torch.set_grad_enabled(True)
        return tracker, notes
    model = build(s, m, sized_config(m, depth=n), notes)
    ref = _dpo_reference(s, m, n, notes)  # DPO under method full: a frozen copy, built as the policy is
    with FakeTensorMode(allow_non_fake_inputs=True):
        model = model.to_empty(device="cpu")
        model.tie_weights()  # to_empty gives every module its own tensor: tie embeddings again
        tracker = MemoryTracker(timeline=timeline)
        tracker.trainable = sum(p.numel() for p in model.parameters() if p.requires_grad) if s.task == "train" else 0
        tracker.cache = 0
        for tensor in [*model.parameters(), *model.buffers()]:
            tracker.relabel(tensor, "parameters")
        with (tracker, _cuda_dropout(), _unpacked_rows(), _explained(m, n),
              stacks.offloading(s, model, tracker, stacks.offload_resident(s))):
            if s.task == "train" and s.train_objective == "dpo":
                _dpo_steps(s, m, model, ref, tracker, notes)
            elif s.task == "train":
                train_steps(s, m, model, tracker, notes, forward_loss=stacks.fused_loss(s, m, model))
            else:
                generate_steps(s, m, model, tracker, notes=notes)
        del model, ref
    torch.set_grad_enabled(True)
    return tracker, notes


def _pair_rows(s: Scenario) -> Scenario:
    """The batch a step runs: a DPO plan's pairs as two rows each (:func:`gpuplan.memory.dpo.pair_rows`)."""
    from ..memory.dpo import pair_rows

    return pair_rows(s)


def _dpo_reference(s: Scenario, m: ModelSpec, n: int, notes: list[str]):
    """The DPO reference on the meta device (:func:`gpuplan.sim.dpo.reference`), or None."""
    if s.task != "train" or s.train_objective != "dpo":
        return None
    from .dpo import reference, require_trl

    require_trl()
    return reference(s, lambda: build(s, m, sized_config(m, depth=n), notes))


def _dpo_steps(s: Scenario, m: ModelSpec, model, ref, tracker, notes: list[str]) -> None:
    """Two DPO steps (:mod:`gpuplan.sim.dpo`): the paired batch (twice the micro-batch) and TRL's loss, with the
    frozen reference (``ref``, on the meta device: materialized here, its weights counted as parameters)."""
    from ..memory.dpo import pair_rows
    from .dpo import cuda_head, dpo_loss

    if ref is not None:
        ref = ref.to_empty(device="cpu")
        ref.tie_weights()
        for tensor in [*ref.parameters(), *ref.buffers()]:
            tracker.relabel(tensor, "parameters")
    notes.append("DPO: chosen and rejected as one batch of twice the micro-batch, TRL's fused log-prob head, the "
                 + ("reference's log-probabilities precomputed" if s.precompute_ref_log_probs else
                    "reference forward without gradients " + ("(a frozen copy)" if ref is not None else
                                                              "(adapters off)")))
    with cuda_head():
        train_steps(pair_rows(s), m, model, tracker, notes, forward_loss=dpo_loss(s, model, ref))


@contextlib.contextmanager
def _explained(m: ModelSpec, n: int):
    """A failure of the model's own code on fake CPU tensors, as one sentence."""
    try:
        yield
    except GpuplanError:
        raise
    except Exception as err:
        line = (str(err).strip().splitlines() or [""])[0][:160]
        what = m.architecture if m.architecture != "?" else m.family
        raise GpuplanError(f"transformers cannot run {m.name} ({what}, {n} layers) on fake CPU tensors: "
                           f"{type(err).__name__}: {line}; gpuplan estimate still answers") from None


@contextlib.contextmanager
def _unpacked_rows():
    """Each simulated row one sequence, as transformers sees it on real tensors. Without a mask and a cache it looks
    for packed sequences in the position ids (transformers 5.24 ``masking_utils.find_packed_sequence_indices``),
    and on real tensors finds none (one sequence a row: ``None``), so SDPA runs ``is_causal`` without a mask and
    grouped heads with ``enable_gqa``; on fake tensors ``is_tracing`` holds, the check is skipped and the rows read
    as packed: a ``b·s²`` mask per layer and ``repeat_kv``'s copies of the keys and values (80 MiB a layer of
    Llama-3.2-1B at 4 x 2,048) that no GPU run makes. The simulator feeds no position ids, so none is packed."""
    from transformers import masking_utils

    original = getattr(masking_utils, "find_packed_sequence_indices", None)
    if original is not None:
        masking_utils.find_packed_sequence_indices = lambda position_ids: None
    try:
        yield
    finally:
        if original is not None:
            masking_utils.find_packed_sequence_indices = original


@contextlib.contextmanager
def _cuda_dropout():
    """Dropout as CUDA runs it: ``native_dropout`` saves a one-byte mask. The CPU's ``F.dropout`` multiplies by
    a noise tensor of the input's dtype and saves that instead (4 bytes per element for fp32 adapters)."""
    import torch

    functional = torch.nn.functional
    original = functional.dropout

    def dropout(x, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            return x
        return torch.native_dropout(x, p, True)[0]

    functional.dropout = dropout
    try:
        yield
    finally:
        functional.dropout = original


def _dtype(name: str):
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def build(s: Scenario, m: ModelSpec, config: dict[str, Any], notes: list[str]):
    """The model on the meta device, set up as the scenario says (nothing is materialized yet)."""

    import torch
    import transformers

    compute = _dtype("fp32" if s.precision == "fp32" else s.precision.split("-")[0])
    mixed = s.precision.endswith("-mixed")
    full = s.task == "train" and s.method == "full"
    dtype = torch.float32 if (full and mixed) else compute
    from ..tensors.state import attention_kernel

    attention = {"flash": "sdpa"}.get(attention_kernel(s, m), attention_kernel(s, m))
    if s.attention == "flash":
        notes.append("attention flash runs as sdpa on the CPU (both keep O(s) memory)")
    elif attention != s.attention:
        notes.append(f"{m.family} has no SDPA attention in transformers: it runs eager")
    with quiet(), torch.device("meta"), _explained(m, sized_depth(config)):
        cfg = transformers.AutoConfig.for_model(**config)
        try:
            model = instantiate(config, cfg, dtype=dtype, attn_implementation=attention)
        except ValueError as err:  # a family without SDPA (transformers' _supports_sdpa): it runs eager
            if attention != "sdpa" or "attention implementation" not in str(err):
                raise
            model = instantiate(config, cfg, dtype=dtype, attn_implementation="eager")
            notes.append(f"{m.family} has no SDPA attention in transformers: it runs eager")
    _check_layers(m, model, sized_depth(config))
    if s.task == "infer":
        if s.quant in ("nf4", "fp4"):
            _quantize_4bit(model, compute, skip=("lm_head",))
            notes.append("4-bit weights emulated with bitsandbytes' byte counts (packed NF4, double-quantized absmax)")
        return model.eval()
    model.train()
    if s.grad_checkpointing == "full":  # gradient_checkpointing_enable, renamed in transformers 5
        if hasattr(model, "activation_checkpointing_enable"):
            model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if s.method == "full":
        stacks.patch_hf(s, m, model, notes)
        return model
    from peft import LoraConfig, get_peft_model

    targets = "all-linear" if s.lora_targets == "all-linear" else list(s.lora_targets)
    skip = _not_adaptable(model, towers=not m.tower_linears)
    if skip:
        notes.append(f"LoRA skips {len(skip)} modules peft's all-linear would wrap but that are not plain linears "
                     "(routers returning tuples) or belong to a vision / audio tower")
    lora = LoraConfig(r=s.lora_rank, lora_alpha=2 * s.lora_rank, lora_dropout=s.lora_dropout,
                      target_modules=targets, task_type="CAUSAL_LM",
                      exclude_modules="|".join(re.escape(name) for name in skip) or None)
    with quiet(), _explained(m, sized_depth(config)), torch.device("meta"):  # adapters too: no CPU init
        # peft's default autocast_adapter_dtype=True makes the adapters fp32 whatever the base (adapter_dtype fp32)
        model = get_peft_model(model, lora, autocast_adapter_dtype=s.adapter_dtype == "fp32")
    # on the meta device peft leaves new adapters in torch's default dtype (it moves them to the base layer's
    # dtype only on a real device): set the dtype the scenario's stack gives them
    want = _dtype(s.adapter_dtype) if s.adapter_dtype in ("fp32", "bf16", "fp16") else compute
    for name, p in model.named_parameters():
        if "lora_" in name and p.dtype != want:
            p.data = p.data.to(want)
    if s.method == "qlora":
        _quantize_4bit(model, compute, skip=("lm_head", "lora_"))
        notes.append("QLoRA: NF4 base emulated with bitsandbytes' byte counts (packed 4-bit pairs, uint8 absmax "
                     "per 64, fp32 scale per 256 absmax); dequantized per matmul as MatMul4Bit does")
        if s.qlora_fp32_upcast:  # peft prepare_model_for_kbit_training
            for name, p in model.named_parameters():
                if p.dtype in (torch.bfloat16, torch.float16) and "lora_" not in name:
                    p.data = p.data.to(torch.float32)
    stacks.patch_hf(s, m, model, notes)
    return model


def sized_depth(config: dict[str, Any]) -> int:
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    return next((text[k] for k in depth.LAYER_KEYS if isinstance(text.get(k), int)), 0)


def _check_layers(m: ModelSpec, model, n: int) -> None:
    """Each decoder layer built holds the parameters of the full model's layer of the same index: the cut config
    is the real model's beginning."""
    try:
        _, blocks = decoder_layers(model, n)
    except ValueError as err:
        raise GpuplanError(f"simulate cannot run {m.name}: {err}") from None
    seen: set[int] = set()
    for k, block in enumerate(blocks[:n]):
        own = [p for p in block.parameters() if id(p) not in seen]
        seen.update(id(p) for p in own)
        built = sum(p.numel() for p in own)
        if built != m.layers[k].params:
            raise GpuplanError(f"simulate cannot cut {m.name} to {n} layers: its layer {k} then holds {built:,} "
                               f"parameters, not the full model's {m.layers[k].params:,}; pass --layers "
                               f"{m.num_layers} to run the whole model")


def _not_adaptable(model, towers: bool = True) -> list[str]:
    """Modules peft's ``all-linear`` would wrap but must not: subclasses of ``nn.Linear`` whose forward returns
    something else than a tensor (Llama 4's router returns scores and logits: a LoRA around it fails; each is
    called once on a meta tensor to see), with ``towers`` the linears of vision and audio towers (where the
    estimate adapts the language model alone: a model without ``ModelSpec.tower_linears``), and what peft refuses
    on Mamba models (``out_proj`` and ``conv1d``)."""
    import torch

    out = []
    mamba = getattr(model.config, "model_type", None) in PEFT_MAMBA_TYPES
    for name, module in model.named_modules():
        if mamba and name.rsplit(".", 1)[-1] in PEFT_MAMBA_REFUSED:
            out.append(name)
        if not isinstance(module, torch.nn.Linear):
            continue
        if is_tower(name):
            if towers:
                out.append(name)
        elif type(module).forward is not torch.nn.Linear.forward:
            try:
                with torch.no_grad():
                    probe = module(torch.empty(1, module.in_features, dtype=module.weight.dtype, device="meta"))
            except Exception:  # a forward that needs more than a tensor of features: not a plain linear
                probe = None
            if not isinstance(probe, torch.Tensor):
                out.append(name)
    return out


def _quantize_4bit(model, compute, skip: tuple[str, ...]) -> None:
    """Swap every ``nn.Linear`` weight (but ``skip``) for bitsandbytes' NF4 storage, on the meta device."""
    import types

    import torch

    for name, module in list(model.named_modules()):
        if type(module) is not torch.nn.Linear or any(part in name for part in skip):
            continue
        out_f, in_f = module.weight.shape
        n = out_f * in_f
        del module.weight
        blocks = math.ceil(n / NF4_BLOCK)
        module.register_buffer("weight_packed", torch.empty(math.ceil(n / 2), dtype=torch.uint8, device="meta"))
        module.register_buffer("weight_absmax", torch.empty(blocks, dtype=torch.uint8, device="meta"))
        module.register_buffer("weight_absmax_scale", torch.empty(math.ceil(blocks / NF4_DQ_BLOCK),
                                                                  dtype=torch.float32, device="meta"))
        module.weight_shape, module.compute_dtype = (out_f, in_f), compute
        module.forward = types.MethodType(_forward_4bit, module)


def _forward_4bit(self, x):
    return _matmul_4bit().apply(x.to(self.compute_dtype), self.weight_packed, self.weight_shape, self.bias)


_MATMUL_4BIT = None


def _matmul_4bit():
    """bitsandbytes ``MatMul4Bit``'s memory: the weight dequantized to the input's dtype for the matmul (and
    again for the input gradient), the input saved when a gradient is needed."""
    global _MATMUL_4BIT
    if _MATMUL_4BIT is None:
        import torch

        class MatMul4Bit(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, packed, shape, bias):
                weight = torch.empty(shape, dtype=x.dtype, device=x.device)
                ctx.shape = shape
                if ctx.needs_input_grad[0]:
                    ctx.save_for_backward(x)
                return torch.nn.functional.linear(x, weight, bias)

            @staticmethod
            def backward(ctx, grad):
                weight = torch.empty(ctx.shape, dtype=grad.dtype, device=grad.device)
                return grad @ weight, None, None, None

        _MATMUL_4BIT = MatMul4Bit
    return _MATMUL_4BIT


# ---- optimizers ----------------------------------------------------------------------------------------
def _optimizer(s: Scenario, params: list, notes: list[str]):
    import torch

    if s.optimizer == "adamw":
        impl = {"fused": {"fused": True}, "foreach": {"foreach": True}}.get(s.optimizer_impl, {"fused": True})
        return torch.optim.AdamW(params, lr=1e-5, **impl)
    if s.optimizer == "sgd":
        return torch.optim.SGD(params, lr=1e-3, foreach=True)
    if s.optimizer == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=True)
    if s.optimizer == "adafactor":
        from transformers.optimization import Adafactor

        return Adafactor(params, lr=1e-3, scale_parameter=False, relative_step=False)  # the Trainer's settings
    notes.append(f"{s.optimizer} is a stand-in with bitsandbytes' state sizes (its CUDA kernels cannot run on "
                 "fake tensors)" if "8bit" in s.optimizer else "lion is a stand-in with bitsandbytes' one fp32 state")
    return _StandIn(params, eight_bit="8bit" in s.optimizer, states=1 if s.optimizer == "lion" else 2)


class _StandIn:
    """An optimizer with the state sizes of bitsandbytes' blockwise 8-bit AdamW (two uint8 moments, fp32
    absmax per 256) or of its 32-bit Lion, the Trainer's ``lion_32bit`` (one fp32 state whatever the parameter's
    dtype: :data:`gpuplan.tensors.state.LION_STATE_BYTES`); it updates in place, as their kernels do."""

    def __init__(self, params: list, *, eight_bit: bool, states: int) -> None:
        self.params, self.eight_bit, self.states = params, eight_bit, states
        self.state: dict[Any, dict[str, Any]] = {}

    def step(self) -> None:
        import torch

        for p in self.params:
            if p.grad is None:
                continue
            if p not in self.state:
                if self.eight_bit:
                    n = p.numel()
                    blocks = math.ceil(n / BNB_OPT_BLOCK)
                    self.state[p] = {f"state{i}": torch.zeros(n, dtype=torch.uint8, device=p.device)
                                     for i in (1, 2)} | {
                        f"absmax{i}": torch.zeros(blocks, dtype=torch.float32, device=p.device) for i in (1, 2)}
                else:
                    self.state[p] = {"exp_avg": torch.zeros_like(p, dtype=torch.float32)}
            p.data.add_(p.grad, alpha=-1e-5)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None


# ---- steps ---------------------------------------------------------------------------------------------
def train_steps(s: Scenario, m: ModelSpec, model, tracker, notes: list[str], device: str = "cpu",
                forward_loss=None, make_optimizer=None) -> int:
    """Two Trainer-shaped optimizer steps (the second with up to two accumulated micro-batches); returns the
    tokens processed. ``tracker`` needs a ``phase`` attribute and ``relabel``; :class:`Phases` is a silent one.
    ``forward_loss(ids)`` replaces the transformers forward with labels (other stacks' models and losses);
    ``optimizer_in_backward`` steps each parameter in its post-accumulate-grad hook (torchtune's
    ``OptimizerInBackwardWrapper``: one optimizer per parameter) and skips the optimizer phase;
    ``make_optimizer(params)`` replaces the stand-ins with a real optimizer (the probe's bitsandbytes one)."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:
        p.register_post_accumulate_grad_hook(lambda p: tracker.relabel(p.grad, "gradients"))
    if s.optimizer_in_backward:
        per_param = {p: _optimizer(s, [p], notes) for p in params}

        def step_now(p):
            per_param[p].step()
            for value in per_param[p].state.get(p, {}).values():
                if isinstance(value, torch.Tensor):
                    tracker.relabel(value, "optimizer")
            per_param[p].zero_grad(set_to_none=True)

        for p in params:
            p.register_post_accumulate_grad_hook(step_now)
        opt = None
    else:
        opt = make_optimizer(params) if make_optimizer else _optimizer(s, params, notes)
    mixed = s.precision.endswith("-mixed")
    compute = _dtype(s.precision.split("-")[0]) if mixed else None
    autocast = (lambda: torch.autocast(device, dtype=compute)) if mixed else contextlib.nullcontext
    from ..stacks import stack_for

    # the HF Trainer's compute_loss drops the model output before the backward; a plain loop (Answer.AI
    # fsdp_qlora's train.py) keeps ``output`` until the optimizer has stepped
    holds_output = stack_for(s).holds_output
    tokens, output = 0, None
    for step in range(2):
        micro_steps = 1 if step == 0 else min(s.grad_accum_steps, 2)
        for micro in range(micro_steps):
            tracker.phase = "forward"
            ids = torch.randint(0, min(m.vocab_size, SAFE_IDS), (s.micro_batch_size, s.seq_len), device=device)
            tokens += ids.numel()
            with autocast():
                if forward_loss is None:
                    output = forward(model, input_ids=ids, labels=ids, use_cache=False)
                    loss = output.loss / s.grad_accum_steps
                    if not holds_output:
                        output = None
                else:
                    loss = forward_loss(ids) / s.grad_accum_steps
            tracker.phase = "backward"
            loss.backward()
            del loss, ids
            if micro < micro_steps - 1:
                output = None  # freed at the end of each iteration; the last one lives through the step
        if opt is None:
            output = None
            continue
        tracker.phase = "optimizer_step"
        opt.step()
        output = None
        for state in opt.state.values():
            for value in state.values():
                if isinstance(value, torch.Tensor):
                    tracker.relabel(value, "optimizer")
        tracker.phase = "zero_grad"
        opt.zero_grad(set_to_none=True)
    return tokens


def generate_steps(s: Scenario, m: ModelSpec, model, tracker, device: str = "cpu", *, every_step: bool = False,
                   notes: list[str] | None = None) -> int:
    """``generate``'s loop: prefill keeping the last position's logits (``logits_to_keep=1``), the fp32 copy of
    the next-token logits, one decode step per further output token.

    Unless ``every_step`` (the probe times the whole loop on a GPU), only the prefill and the last decode step
    run: a decode step's memory grows with the cache and the generated ids and nothing else, so the last one
    holds the decode peak. The steps between are not run; the cache is brought to their end by its own
    ``update`` (:func:`_fill`), so a million output tokens cost what two do. A compressed-attention cache also
    runs the last step that closes each window size (:func:`_window_closings`)."""
    import inspect

    import torch
    keep = {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}
    torch.set_grad_enabled(False)
    tracker.phase = "prefill"
    # DynamicCache, which also knows its length with linear-attention layers only; a layer per run of each layer;
    # a model with a cache class of its own (xLSTM's xLSTMCache) builds it in the prefill
    cache = None if own_cache(model) else new_cache(model.config, [layer.runs for layer in m.layers])
    ids = torch.randint(0, min(m.vocab_size, SAFE_IDS), (s.batch_size, s.prompt_tokens), device=device)
    if cache is not None:
        _label_cache_writes(cache, tracker)
        keep[cache_keyword(model)] = cache
    out = forward(model, input_ids=ids, use_cache=True, **keep)
    if cache is None:
        cache = keep[cache_keyword(model)] = getattr(out, cache_keyword(model))
    cache.tokens = s.prompt_tokens
    next_ids = ids[:, -1:]  # a view: no allocation
    last = s.output_tokens - 1
    skipped = _unfillable(cache) if not every_step and last > 1 else "every step"
    closing = _window_closings(cache, s.prompt_tokens, last) if skipped is None else []
    if skipped is None and notes is not None:
        tokens = ("s of tokens " if len(closing) > 1 else " of token ") + " and ".join(f"{k + 1:,}" for k in closing)
        also = f", the last step (token {last + 1:,}) and the step{tokens}, the last to close a compressed-" \
               "attention window (with its own temporaries)," if closing else \
               f" and the last step (token {last + 1:,}, the decode peak)"
        notes.append(f"decode steps for output tokens 2..{last:,} not run: the cache filled to "
                     f"{s.prompt_tokens + last - 1:,} tokens by its own update; the prefill{also} run")
    elif skipped != "every step":
        if last > EVERY_STEP_MAX:
            raise GpuplanError(f"simulate would run every decode step, as {skipped}: at most "
                               f"{EVERY_STEP_MAX + 1} output tokens, got {s.output_tokens:,}; gpuplan estimate "
                               "still answers")
        if notes is not None:
            notes.append(f"every decode step run: {skipped}")
    done = 0  # the steps in the cache
    for step in (0, *closing, last) if skipped is None else range(s.output_tokens):
        if step:
            tracker.phase = "decode"
            if step - done > 1:
                ids = _fill(cache, tracker, ids, step - done - 1)
            out = forward(model, input_ids=next_ids, use_cache=True, **keep)
            cache.tokens += 1
            done = step
        logits = out.logits[:, -1, :].to(dtype=torch.float32, copy=True)
        del out
        _relabel_cache(cache, tracker)
        next_ids = logits.argmax(-1, keepdim=True)
        ids = torch.cat([ids, next_ids], dim=-1)
        del logits
    if hasattr(tracker, "parts"):
        tracker.cache = tracker.parts["kv_cache"]
    return s.batch_size * s.output_tokens


def _window_closings(cache, prompt: int, last: int) -> list[int]:
    """The decode steps before ``last`` that run beside it: for each compressed-attention window size of the
    cache (DeepSeek-V4's ``compress_rate``: 4 and 128), the last step whose token closes such a window (the
    compressor's windows start at position 0, so token ``prompt + step`` closes one when it is a multiple of the
    size). Such a step holds the window's temporaries beside the cache, so it, not the last step, may be the
    decode peak; the steps between two such windows differ only by a smaller cache."""
    rates = {r for layer in getattr(cache, "layers", []) if isinstance(r := getattr(layer, "compress_rate", None),
                                                                       int) and r > 0}
    steps = {last - (prompt + last) % r for r in rates}
    return sorted(k for k in steps if 0 < k < last)


def _unfillable(cache) -> str | None:
    """Why :func:`_fill` cannot stand for the middle decode steps of ``cache``, or None: it knows transformers'
    standard cache layers only (a state kept elsewhere may grow in ways it cannot see)."""
    from ..model.trace import KNOWN_CACHES

    fillable = {*KNOWN_CACHES, *COMPRESSED_CACHES}
    odd = sorted({type(layer).__name__ for layer in _layers(cache)} - fillable)
    return f"the cache holds {', '.join(odd)}, which gpuplan cannot fill without the model" if odd else None


COMPRESSED_CACHES = ("DeepseekV4HCACache", "DeepseekV4CSACache")  # filled by _fill_compressed


def _layers(cache) -> list:
    """transformers' cache layers; a cache class of a model's own (:func:`~gpuplan.model.trace.own_cache`:
    xLSTM's, whose states keep their size: nothing to fill) stands for itself, its states its public tensors."""
    return cache.layers if isinstance(getattr(cache, "layers", None), list) else [cache]


def _fill(cache, tracker, ids, tokens: int):
    """The cache and the generated ids as ``tokens`` decode steps leave them, without running the model: each
    attention layer's ``update`` (and a sparse-attention indexer's ``update_indexer``) takes ``tokens - 1``
    fake keys and values, then 1, as a decode step hands it one, so the storages are those the steps leave
    (a sliding-window layer keeps the last window - 1 tokens, a view of the window its last concatenation
    made; transformers ``cache_utils.DynamicSlidingWindowLayer.update``). Linear-attention and Mamba states
    keep their size; DeepSeek-V4's compressors take the tokens as their forwards hand them over
    (:func:`_fill_compressed`). The transients of the fill are no step's and make no peak
    (``tracker.unmeasured``)."""
    import torch

    def chunk(tensor, dim: int, n: int):
        shape = list(tensor.shape)
        shape[dim] = n
        return torch.zeros(shape, dtype=tensor.dtype, device=tensor.device)

    with getattr(tracker, "unmeasured", contextlib.nullcontext)():
        for n in (tokens - 1, 1):
            if n < 1:
                continue
            for layer in _layers(cache):
                keys = getattr(layer, "keys", None)
                if isinstance(keys, torch.Tensor) and keys.numel():
                    layer.update(chunk(keys, -2, n), chunk(layer.values, -2, n))
                indexer = getattr(layer, "indexer_keys", None)
                if isinstance(indexer, torch.Tensor) and indexer.numel():
                    layer.update_indexer(chunk(indexer, 1, n))
                if type(layer).__name__ in COMPRESSED_CACHES:
                    _fill_compressed(layer, n, chunk)
        ids = torch.cat([ids, chunk(ids, -1, tokens)], dim=-1)
    cache.tokens += tokens
    _relabel_cache(cache, tracker)
    return ids


def _fill_compressed(layer, n: int, chunk) -> None:
    """DeepSeek-V4's compressed-attention states as ``n`` more tokens leave them, through the layer's own methods
    as its compressors call them (transformers ``models/deepseek_v4/modeling_deepseek_v4.py``,
    ``DeepseekV4HCACompressor``, ``DeepseekV4CSACompressor`` and ``DeepseekV4Indexer`` ``forward``): each named
    buffer takes the tokens (``store_compression_weights``); each ``compress_rate`` of them closes a window that
    emits one compressed entry (``update_compressor_states``) and, in a CSA layer, leaves that window's overlap
    slice (``update_overlap_state``, whose gate the position bias made fp32)."""
    import torch

    for name, buffered in layer.buffer_kv.items():
        if buffered is None:
            continue
        kv, gate, _ = layer.store_compression_weights(name, chunk(buffered, 1, n), chunk(layer.buffer_gate[name], 1, n))
        windows = kv.shape[1] // layer.compress_rate
        entries = layer.update_compressor_states(name, chunk(layer.compressed_kv[name], 1, windows))
        if windows and hasattr(layer, "update_overlap_state"):
            shape = (kv.shape[0], windows, layer.compress_rate, -1)
            layer.update_overlap_state(name, kv.view(shape), gate.view(shape).to(torch.promote_types(
                gate.dtype, torch.float32)), entries.shape[-1])


class Phases:
    """A tracker that only takes the phase names: what the steps run with on a real GPU."""

    phase = ""

    def relabel(self, tensor, category: str) -> None:
        pass


CACHE_WRITES = ("update", "lazy_initialization", "store_")  # a cache layer's methods that make its storages


def _label_cache_writes(cache, tracker) -> None:
    """Each storage a cache layer's own methods make (``update``, ``lazy_initialization``, an indexer's or a
    compressor's ``update_*`` and ``store_*``) counts as the KV cache from its making. Before, a step's new keys
    and values (the concatenation each layer's ``update`` makes, transformers ``cache_utils.DynamicLayer.update``)
    counted as activations until the forward ended, so the decode peak, reached inside the forward, read
    "activations 0.273 GiB, kv_cache 0.005 GiB" for a 0.27 GiB cache (Qwen3-0.6B, 4 x 640 tokens)."""
    labelled = getattr(tracker, "labelled", None)
    if labelled is None:
        return

    def in_cache(method):
        @functools.wraps(method)
        def write(*args, **kwargs):
            with labelled("kv_cache"):
                return method(*args, **kwargs)
        return write

    for layer in getattr(cache, "layers", []):
        for name in dir(type(layer)):
            if name.startswith(CACHE_WRITES) and callable(getattr(layer, name, None)):
                setattr(layer, name, in_cache(getattr(layer, name)))


def _relabel_cache(cache, tracker) -> None:
    """Every tensor a cache layer holds: keys and values, MLA latents, indexer keys, convolution and recurrent
    states."""
    for layer in _layers(cache):
        for tensor in cache_layer_tensors(layer):
            tracker.relabel(tensor, "kv_cache")
