"""What to change when a scenario does not fit, and the largest batch and context that do.

Each suggestion is one change to the scenario, re-estimated with the same functions, with what it
costs in speed. For checkpointing and the training stacks' techniques (loss, activation offloading, compile,
optimizer in backward, another stack) the cost is the speed model's: the ratio of the time per token with and
without the change on the card (:func:`speed_change`). The other changes keep a rule of thumb with its source:
4-bit base weights dequantize on every matmul (QLoRA paper, section 4: slower than LoRA); ZeRO-3 all-gathers
the weights twice per step (Rajbhandari et al. 2020, section 7).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import GpuplanError
from ..hardware import GpuSpec
from ..memory import fits_only
from ..memory.runtimes import runtime_for
from ..model.spec import ModelSpec
from ..result import Suggestion
from ..scenario import Scenario
from ..speed import training_speed
from ..stacks import FRAMEWORKS, STACKS


def _largest(ok: Callable[[int], bool], hi: int) -> int | None:
    """Largest n in [1, hi] with ok(n), assuming ok is monotone (True then False); None if ok(1) fails."""
    if not ok(1):
        return None
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def largest_fitting(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> tuple[int | None, int | None]:
    """(largest batch, longest context) that fit on ``gpu``, all else equal. Training varies
    ``micro_batch_size`` and ``seq_len``; inference ``batch_size`` and ``prompt_tokens``."""
    def fits(**change) -> bool:
        return fits_only(s.model_copy(update=change), m, gpu)[0]

    limit = max(m.max_context or 0, 131_072)
    if s.task == "train":
        return (_largest(lambda n: fits(micro_batch_size=n), 4096),
                _largest(lambda n: fits(seq_len=n), limit))
    return (_largest(lambda n: fits(batch_size=n), 4096),
            _largest(lambda n: fits(prompt_tokens=n), limit))


def _candidates(s: Scenario, m: ModelSpec) -> list[tuple[str, dict, str]]:
    out: list[tuple[str, dict, str]] = []
    if s.task == "train":
        if s.grad_checkpointing != "full":
            out.append(("enable gradient checkpointing", {"grad_checkpointing": "full"}, ""))
        if s.micro_batch_size > 1:
            out.append((f"micro-batch 1 x {s.grad_accum_steps * s.micro_batch_size} accumulation steps "
                        "(same global batch)", {"micro_batch_size": 1,
                                                "grad_accum_steps": s.grad_accum_steps * s.micro_batch_size},
                        "same tokens per step, lower GPU utilization"))
        if s.attention == "eager":
            out.append(("use sdpa attention", {"attention": "sdpa"}, "faster, same result"))
        if s.optimizer in ("adamw", "lion", "sgd-momentum"):
            out.append(("8-bit AdamW (bitsandbytes)", {"optimizer": "adamw-8bit"}, "about the same speed"))
            out.append(("paged 8-bit AdamW", {"optimizer": "paged-adamw-8bit"},
                        "about the same speed; pages states to CPU under pressure"))
        if s.method == "full":
            out.append(("LoRA instead of full fine-tuning", {"method": "lora"},
                        "about 1/3 less compute per step; trains adapters only"))
        if s.method == "qlora" and s.qlora_fp32_upcast and (s.quant or "nf4") in ("nf4", "fp4"):
            out.append(("keep embeddings and norms in bf16 (no fp32 upcast by prepare_model_for_kbit_training)",
                        {"qlora_fp32_upcast": False}, "same speed; as Unsloth and torchtune run QLoRA"))
        if s.method != "qlora":
            out.append(("QLoRA (4-bit base)", {"method": "qlora", "quant": None,
                                               "precision": "bf16-mixed" if s.precision == "fp32" else s.precision},
                        "slower than LoRA (dequantization on every matmul); small quality cost"))
        if s.offload == "none":
            out.append(("offload the optimizer to CPU", {"offload": "optimizer"},
                        "the step runs on the CPU: often 2-5x slower steps; needs CPU RAM"))
        for n in (2, 4, 8):
            if n > s.num_gpus:
                out.append((f"ZeRO-3 over {n} GPUs", {"num_gpus": n, "strategy": "zero3"},
                            "all-gathers weights each step: NVLink recommended"))
        out += _stack_candidates(s)
        if s.seq_len > 512:
            out.append((f"shorter sequences ({s.seq_len // 2:,} tokens)", {"seq_len": s.seq_len // 2},
                        "less context per sample"))
    else:
        if (s.quant or "none") == "none" and s.engine != "llama.cpp":
            out.append(("8-bit weights (int8)", {"quant": "int8"}, "LLM.int8 is slower than bf16; small quality cost"))
            out.append(("4-bit weights (AWQ)", {"quant": "awq-int4"}, "fast kernels; small quality cost"))
        if s.kv_cache_dtype in ("auto", "fp16", "bf16") and s.engine != "llama.cpp":
            out.append(("fp8 KV cache", {"kv_cache_dtype": "fp8"}, "half the KV memory; tiny quality cost"))
        if s.batch_size > 1:
            out.append((f"batch {max(s.batch_size // 2, 1)}", {"batch_size": max(s.batch_size // 2, 1)},
                        "fewer concurrent requests"))
        if s.prompt_tokens > 512:
            out.append((f"shorter prompts ({s.prompt_tokens // 2:,} tokens)", {"prompt_tokens": s.prompt_tokens // 2},
                        "less context"))
        for n in (2, 4, 8):
            if n > s.num_gpus and m.num_heads % n == 0:
                out.append((f"tensor parallel over {n} GPUs", {"num_gpus": n, "tp": n},
                            "all-reduce per layer: NVLink recommended"))
    return out


def _stack_candidates(s: Scenario) -> list[tuple[str, dict, str]]:
    """The training stacks' techniques (each kept only where the scenario's framework runs it), then the other
    stacks themselves with their recipe defaults. Their speed cost is filled in by :func:`speed_change`."""
    out: list[tuple[str, dict, str]] = []
    if s.loss != "fused-linear":
        out.append(("fused linear cross-entropy, no logits (Liger; Trainer use_liger_kernel=True)",
                    {"loss": "fused-linear"}, ""))
    if s.loss == "full":
        out.append(("chunked cross-entropy (8 chunks)", {"loss": "chunked"}, ""))
    if not s.activation_offload and s.grad_checkpointing != "none":
        out.append(("offload checkpointed activations to CPU", {"activation_offload": True}, ""))
    if not s.optimizer_in_backward and s.method == "full":
        out.append((f"optimizer step in backward (grad accumulation 1, micro-batch x{s.grad_accum_steps})",
                    {"optimizer_in_backward": True, "grad_accum_steps": 1,
                     "micro_batch_size": s.micro_batch_size * s.grad_accum_steps}, ""))
    if not s.compile:
        out.append(("torch.compile", {"compile": True}, ""))
    if s.grad_checkpointing == "none":
        out.append(("selective (per-op) checkpointing", {"grad_checkpointing": "selective"}, ""))
    for name in FRAMEWORKS:
        if name != s.framework:
            out.append((f"switch to {STACKS[name].title}, with its defaults", {"framework": name}, ""))
    return out


def speed_change(s: Scenario, changed: Scenario, m: ModelSpec, gpu: GpuSpec) -> str:
    """How a change of stack or technique changes the time per token on ``gpu``: the ratio of the speed model's
    times with and without it (:func:`gpuplan.speed.training_speed`: recomputation's extra work as the stack's
    checkpointing runs it, the PCIe time activation offloading leaves exposed, the stacks' published factors for
    compile and fused kernels), with the parts of the step that moved most and the stack factor's source."""
    before, after = training_speed(s, m, gpu), training_speed(changed, m, gpu)
    ratio = before.tokens_per_s / after.tokens_per_s  # time per token, after over before
    same_tokens = s.micro_batch_size * s.seq_len * s.grad_accum_steps == \
        changed.micro_batch_size * changed.seq_len * changed.grad_accum_steps
    unit = "steps" if same_tokens else "per token"
    if abs(ratio - 1) < 0.005:
        text = "about the same step time" if same_tokens else "about the same time per token"
    else:
        text = f"{abs(1 - ratio) * 100:.0f}% {'slower' if ratio > 1 else 'faster'} {unit}"
    # each part's time per token, as a share of the time per token before the change
    def shares(sp) -> dict[str, float]:
        return {k: v / (sp.tokens_per_s * sp.step_time_s) * before.tokens_per_s for k, v in sp.parts_s.items()}

    old, new = shares(before), shares(after)
    moved = {k: new.get(k, 0.0) - old.get(k, 0.0) for k in {*old, *new}}
    big = sorted((k for k in moved if abs(moved[k]) >= 0.01), key=lambda k: -abs(moved[k]))[:2]
    why = [", ".join(f"{k.replace('_', ' ')} {moved[k]:+.0%}" for k in big)] if big else []
    factor_before, _ = runtime_for(s).step_time_factor(s)
    factor_after, factor_why = runtime_for(changed).step_time_factor(changed)
    if factor_why and abs(factor_after / factor_before - 1) >= 0.005:
        why.append(factor_why)
    return f"{text} ({'; '.join(why)})" if why else text


def suggestions(s: Scenario, m: ModelSpec, gpu: GpuSpec, report) -> list:
    """Every single change from :func:`_candidates` that lowers the device peak, fitting ones first; a change the
    scenario's framework cannot run is left out."""
    found = []
    for label, change, cost in _candidates(s, m):
        try:
            changed = s.model_copy(update=change)
        except GpuplanError:
            continue
        if not cost:
            cost = speed_change(s, changed, m, gpu)
        ok, peak = fits_only(changed, m, gpu)
        if peak >= report.device_peak_gib and not ok:
            continue
        found.append(Suggestion(change=f"{label}: {report.device_peak_gib:.1f} -> {peak:.1f} GiB",
                                fields={k: v for k, v in change.items() if v is not None}, device_peak_gib=peak,
                                fits=ok, cost=cost))
    found.sort(key=lambda x: (not x.fits, x.device_peak_gib))
    return found
