"""Formulas of speed (training step, decode, time to first token) and cost (per hour, per token, per job).

The rules are those of :mod:`gpuplan.speed` and :mod:`gpuplan.market.cost`, written out with the scenario's values.
"""

from __future__ import annotations

import math

from .. import overheads as oh
from ..speed import compute_dtype, matmul_params
from .accuracy import price_accuracy, speed_accuracy
from .formula import Constant, Context, Formula, count


def _flops_per_token(x: Context) -> tuple[float, str]:
    s, m = x.s, x.m
    n = matmul_params(m)
    attention = sum(12 * m.num_heads * m.head_dim * (min(s.seq_len, layer.window) if layer.window else s.seq_len)
                    for layer in m.layers)
    k = 6 if s.method == "full" else 4
    dense = k * n + (2 * n if s.grad_checkpointing == "full" else 0)
    if s.grad_checkpointing in ("full", "selective"):
        attention *= 16 / 12
    text = f"{k} x N{' + 2 x N (recompute)' if s.grad_checkpointing == 'full' else ''} + attention, N = {count(n)}"
    return dense + attention, text


def training_speed(x: Context) -> dict[str, Formula]:
    s, sp, gpu = x.s, x.r.speed or {}, x.gpu
    assert gpu is not None
    dtype = compute_dtype(s)
    peak = (gpu.peak_tflops(dtype) or gpu.peak_tflops("bf16") or gpu.peak_tflops("fp16") or 0) * 1e12
    fpt, fpt_text = _flops_per_token(x)
    tokens_step = s.micro_batch_size * s.seq_len * s.grad_accum_steps * s.dp
    mfu = sp.get("mfu_assumed") or 0.0
    compute = tokens_step * fpt / (s.world_size * peak * mfu) if peak and mfu else math.inf
    step = max(compute, sp.get("communication_s", 0.0))
    acc = speed_accuracy("train")
    mfu_const = Constant(name="MFU", value=f"{mfu:.3f}", source=f"overheads.mfu: {oh.mfu_source(gpu, s)}")
    return {
        "speed.flops_per_token": Formula(
            label="FLOPs per token", value=sp.get("flops_per_token") or 0.0, unit="FLOP", computed=fpt,
            formula="F = 6N (4N with LoRA: no weight gradients; +2N with full recomputation) + 12 x L x a x d x s "
                    "(PaLM appendix B)", substituted=f"{fpt_text} = {fpt / 1e9:,.2f} GFLOP", accuracy=acc),
        "speed.step_time_s": Formula(
            label="step time", value=sp.get("step_time_s", 0.0), unit="s", computed=step, accuracy=acc,
            formula="step = max(tokens per step x F / (GPUs x dense peak x MFU), communication)",
            substituted=f"max({tokens_step:,} x {fpt / 1e9:,.2f} GFLOP / ({s.world_size} x {peak / 1e12:,.0f} TFLOPS "
                        f"{dtype} x {mfu:.3f}), {sp.get('communication_s', 0.0):.3f} s) = {step:,.3f} s",
            constants=[mfu_const, Constant(name=f"{gpu.name} dense {dtype}", value=f"{peak / 1e12:,.1f} TFLOPS",
                                           source="data/gpus.yaml (dense, no sparsity)")]),
        "speed.tokens_per_s": Formula(
            label="tokens/s", value=sp.get("tokens_per_s", 0.0), unit="tokens/s", computed=tokens_step / step,
            formula="tokens/s = micro_batch x seq_len x accumulation x data-parallel ranks / step time",
            substituted=f"{tokens_step:,} / {step:,.3f} s = {tokens_step / step:,.0f} tokens/s", accuracy=acc),
    }


def inference_speed(x: Context) -> dict[str, Formula]:
    s, m, sp, gpu = x.s, x.m, x.r.speed or {}, x.gpu
    assert gpu is not None
    dtype = "fp16" if not gpu.supports_dtype("bf16") else ("fp8" if s.quant == "fp8" and gpu.supports_dtype("fp8")
                                                           else "bf16")
    peak = (gpu.peak_tflops(dtype) or gpu.peak_tflops("fp16") or 0) * 1e12
    n = matmul_params(m)
    attn = sum(4 * m.num_heads * m.head_dim * min(s.prompt_tokens, layer.window or s.prompt_tokens) / 2
               for layer in m.layers)
    gpus_ = s.tp * s.pp
    ttft = s.batch_size * s.prompt_tokens * (2 * n + attn) / (gpus_ * peak * oh.PREFILL_EFFICIENCY)
    step = sp.get("step_time_s", 0.0)
    acc = speed_accuracy("infer")
    return {
        "speed.ttft_s": Formula(
            label="time to first token", value=sp.get("ttft_s") or 0.0, unit="s", computed=ttft,
            formula="TTFT = sequences x prompt x (2N + attention) / (GPUs x peak x prefill efficiency)",
            substituted=f"{s.batch_size} x {s.prompt_tokens:,} x (2 x {count(n)} + {attn / 1e6:,.1f}M) / ({gpus_} x "
                        f"{peak / 1e12:,.0f} TFLOPS x {oh.PREFILL_EFFICIENCY}) = {ttft:,.3f} s",
            constants=[Constant(name="prefill efficiency", value=str(oh.PREFILL_EFFICIENCY),
                                source="overheads.PREFILL_EFFICIENCY (roofline practice, formulas.md section 10)")]),
        "speed.step_time_s": Formula(
            label="decode step", value=step, unit="s", accuracy=acc,
            formula="step = max(bytes read / (bandwidth x 0.8), FLOPs / (peak x 0.6), host overhead) + TP "
                    "all-reduces + engine loop", substituted=f"{step * 1000:,.2f} ms; bound: {sp.get('bound')}",
            note=next((a for a in x.r.assumptions if a.startswith("decode reads")), ""),
            constants=[Constant(name="bandwidth efficiency", value=str(oh.DECODE_BW_EFFICIENCY),
                                source="overheads.DECODE_BW_EFFICIENCY (aiconfigurator 0.8)"),
                       Constant(name="eager host overhead", value=f"{oh.EAGER_OPS_PER_LAYER} ops x "
                                f"{oh.EAGER_OP_OVERHEAD_S * 1e6:g} us per layer + "
                                f"{oh.GENERATE_STEP_OVERHEAD_S * 1e3:g} "
                                "ms per step", source="overheads.EAGER_* (transformers generate)")]),
        "speed.tokens_per_s": Formula(
            label="output tokens/s", value=sp.get("tokens_per_s", 0.0), unit="tokens/s", accuracy=acc,
            computed=s.batch_size / step if step else None, formula="tokens/s = sequences / decode step",
            substituted=f"{s.batch_size} / {step:,.4f} s = {s.batch_size / step:,.1f} tokens/s" if step else "-"),
    }


def cost(x: Context) -> dict[str, Formula]:
    s, c, sp = x.s, x.r.cost or {}, x.r.speed or {}
    per_hour, rented = c["usd_per_hour"], c["num_gpus"]
    tps = sp.get("tokens_per_s") or 0.0
    acc = price_accuracy()
    overhead = c["spot"]["overhead"] if c.get("spot") else 1.0
    price = Constant(name=c["offer"], value=f"${per_hour / rented:,.3f} per GPU-hour, {c['price_age_days']} days old",
                     source=c.get("price_origin") or "data/offers.csv")
    out = {"cost.usd_per_hour": Formula(
        label="$ per hour", value=per_hour, unit="$/h", computed=per_hour, accuracy=acc, constants=[price],
        formula="$/h = GPUs rented (whole instances) x price per GPU-hour",
        substituted=f"{rented} x ${per_hour / rented:,.3f} = ${per_hour:,.2f}/h")}
    if c.get("usd_per_million_tokens") is not None and tps:
        per_m = per_hour * overhead / (tps * 3600) * 1e6
        out["cost.usd_per_million_tokens"] = Formula(
            label="$ per million tokens", value=c["usd_per_million_tokens"], unit="$", computed=per_m, accuracy=acc,
            formula="$/M tokens = $/h x spot overhead / (tokens/s x 3600) x 10^6",
            substituted=f"{per_hour:,.2f} x {overhead:.2f} / ({tps:,.0f} x 3600) x 1e6 = ${per_m:,.3f}")
    if s.task == "train" and s.train_tokens and tps:
        hours = s.train_tokens / tps / 3600
        out["cost.hours"] = Formula(
            label="hours", value=c["hours"], unit="h", computed=hours * overhead, accuracy=acc,
            formula="hours = train_tokens / tokens/s / 3600 (x spot overhead: Daly checkpointing and restarts)",
            substituted=f"{s.train_tokens:,.3g} / {tps:,.0f} / 3600 x {overhead:.2f} = {hours * overhead:,.2f} h")
        out["cost.usd_total"] = Formula(
            label="total $", value=c["usd_total"], unit="$", computed=c["hours"] * per_hour, accuracy=acc,
            formula="total = hours x $/h", substituted=f"{c['hours']:,.2f} x {per_hour:,.2f} = "
                                                       f"${c['hours'] * per_hour:,.2f}")
    return out
