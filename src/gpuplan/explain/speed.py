"""Formulas of speed (training step, decode, time to first token) and cost (per hour, per token, per job).

The rules are those of :mod:`gpuplan.speed` and :mod:`gpuplan.market.cost`, written out with the scenario's values.
"""

from __future__ import annotations

from .. import overheads as oh
from ..speed import compute_dtype
from ..speed.breakdown import Speed
from ..speed.flops import (
    active_params_of,
    attended_length,
    attention_flops_per_token,
    attention_forward_flops,
    run_params,
)
from ..speed.gemm import peak_flops
from ..stacks import Recompute, stack_for
from .accuracy import Accuracy, price_accuracy, serving_accuracy, speed_accuracy
from .formula import Constant, Context, Formula, count


def _flops_per_token(x: Context, recompute: bool = True, keys: int | None = None) -> tuple[float, str]:
    """FLOPs per token with their formula in words; ``keys``: the length attention runs over (default seq_len).
    The terms are :func:`gpuplan.speed.flops.training_flops_per_token`'s."""
    s, m = x.s, x.m
    n, n_back = run_params(m), run_params(m, grad=True)
    keys = keys or s.seq_len
    attention = attention_flops_per_token(m, keys)
    k = 4 if s.method == "full" else 2
    dense = 2 * n + k * n_back
    words = f"{k + 2} x N" if n == n_back else f"2 x N + {k} x N_backward"
    again = ""
    rc = stack_for(s).recompute(s, m) if recompute else Recompute()
    if rc.selective:  # the matmuls the stack's per-op policy does not save
        re_run = active_params_of(m, rc.linears)
        dense += 2 * re_run
        again = f" + 2 x {count(re_run)} (matmuls re-run by {s.stack}'s per-op checkpointing)"
    elif rc.layers:
        dense += 2 * n_back * rc.layers
        attention += rc.layers * attention_forward_flops(m, keys, grad=True)
        again = " + 2 x N (recompute)" if rc.layers == 1 else f" + 2 x N x {rc.layers:.3g} (recompute)"
    backward = "" if n == n_back else f", N_backward = {count(n_back)} (layer runs with autograd on)"
    return dense + attention, f"{words}{again} + attention, N = {count(n)}{backward}"


def _range(sp, kind: str) -> Constant:
    if sp.band:  # serving: the engine x model class's band (speed/bands.py); training: uncalibrated off NVIDIA
        rate = sp.tokens_per_s or 1.0
        low, high = (sp.tokens_per_s_low or 0) / rate - 1, (sp.tokens_per_s_high or 0) / rate - 1
        return Constant(name="range", value=f"{(sp.tokens_per_s_low or 0):,.0f} to {(sp.tokens_per_s_high or 0):,.0f} "
                        f"tokens/s ({low:+.0%} / {high:+.0%} of the estimate)",
                        source=f"{sp.band}; " + ("overheads.SPEED_SPREAD x SPEED_SPREAD_WIDENING" if kind == "train"
                                                 else "overheads.DECODE_BANDS"))
    low, high = oh.SPEED_SPREAD[kind]
    return Constant(name="calibration spread", value=f"{(sp.tokens_per_s_low or 0):,.0f} to "
                    f"{(sp.tokens_per_s_high or 0):,.0f} tokens/s ({low:+.0%} / {high:+.0%} of the estimate, "
                    "wider on defaults)", source="overheads.SPEED_SPREAD: 10th-90th percentile of measured / "
                    "estimated - 1 over the held-out bench rows (bench/throughput.py)")


def _parts(sp: dict) -> tuple[float, str]:
    parts = sp.parts_s or {}
    total = sum(parts.values())
    text = " + ".join(f"{k.replace('_', ' ')} {v * 1000:,.1f} ms" for k, v in parts.items())
    return total, f"{text} = {total * 1000:,.1f} ms"


def _data_tokens_per_step(s) -> float | None:
    """The tokens of the scenario's data one step trains, as the plan's speed counts them (None without data)."""
    if not (s.dataset or s.samples):
        return None
    from ..dataset import profile
    from ..dataset.mix import real_tokens_per_step

    p = profile(s)
    return real_tokens_per_step(s, p.batching) if p else None


def training_speed(x: Context) -> dict[str, Formula]:
    s, sp, gpu = x.s, x.r.speed, x.gpu
    assert gpu is not None
    dtype = compute_dtype(s)
    peak = peak_flops(gpu, dtype)
    fpt, fpt_text = _flops_per_token(x)
    tokens_step = s.micro_batch_size * s.seq_len * s.grad_accum_steps * s.dp
    rate_formula = "tokens/s = micro_batch x seq_len x accumulation x data-parallel ranks / step time"
    real = _data_tokens_per_step(s)
    if real is not None:  # the data's own tokens (dataset/mix.py), padding left out
        tokens_step = real
        rate_formula = "tokens/s = the data's own tokens per step (padding left out) / step time"
    step, parts_text = _parts(sp)
    acc = speed_accuracy("train")
    summary = next((a for a in x.r.assumptions if a.startswith("step = ")), "")
    out = {
        "speed.flops_per_token": Formula(
            label="FLOPs per token", value=sp.flops_per_token or 0.0, unit="FLOP", computed=fpt,
            formula="F = 6N (4N with LoRA: no weight gradients; +2N with full recomputation, the re-run "
                    "matmuls with per-op selective) + 12 x L x a x d x s (PaLM appendix B)",
            substituted=f"{fpt_text} = {fpt / 1e9:,.2f} GFLOP", accuracy=acc),
        "speed.step_time_s": Formula(
            label="step time", value=(sp.step_time_s or 0.0), unit="s", computed=step, accuracy=acc, note=summary,
            formula="step = the work of each micro-step x accumulation steps (GEMMs at the efficiency their shapes "
                    "reach, attention, element-wise kernels, kernel launches, collectives) + per-step costs",
            substituted=parts_text,
            constants=[Constant(name=f"{gpu.name} dense {dtype}", value=f"{peak / 1e12:,.1f} TFLOPS",
                                source="data/gpus.yaml (dense, no sparsity)")]),
        "speed.tokens_per_s": Formula(
            label="tokens/s", value=(sp.tokens_per_s or 0.0), unit="tokens/s", computed=tokens_step / step,
            formula=rate_formula,
            substituted=f"{tokens_step:,.0f} / {step:,.4f} s = {tokens_step / step:,.0f} tokens/s", accuracy=acc,
            constants=[_range(sp, "train")]),
    }
    if sp.mfu and peak:
        keys = attended_length(s) if s.dataset or s.samples else s.seq_len  # the data's tokens attend to their own
        model_fpt = _flops_per_token(x, recompute=False, keys=keys)[0]
        mfu = model_fpt * sp.tokens_per_s / (s.world_size * peak)
        out["speed.mfu"] = Formula(
            label="implied MFU", value=sp.mfu, unit="", computed=mfu, accuracy=acc,
            formula="MFU = FLOPs per token without recomputation (attention over the keys a token attends to: "
                    "sum(len^2) / sum(len) over the data's records) x tokens/s / (GPUs x dense peak)",
            substituted=f"{model_fpt / 1e9:,.2f} GFLOP ({keys:,} keys) x {sp.tokens_per_s:,.0f} / ({s.world_size} x "
                        f"{peak / 1e12:,.1f} TFLOPS) = {mfu:.3f}")
    return out


def inference_speed(x: Context) -> dict[str, Formula]:
    s, sp = x.s, x.r.speed
    step, parts_text = _parts(sp)
    rate = sp.tokens_per_s or 0.0
    acc = serving_accuracy(sp.band, (sp.tokens_per_s_low or 0) / rate - 1, (sp.tokens_per_s_high or 0) / rate - 1,
                           s.engine) if sp.band and rate else speed_accuracy("infer")
    decode = next((a for a in x.r.assumptions if a.startswith("decode step")), "")
    ttft = next((a for a in x.r.assumptions if a.startswith("time to first token")), "")
    out = {
        "speed.step_time_s": Formula(
            label="decode step", value=(sp.step_time_s or 0.0), unit="s", computed=step, accuracy=acc, note=decode,
            formula="step = weights and KV cache read at the card's bandwidth + kernel latency + element-wise kernels "
                    "+ host work not hidden + TP all-reduces", substituted=parts_text,
            constants=[Constant(name=f"{x.gpu.name} bandwidth" if x.gpu else "bandwidth",
                                value=f"{x.gpu.bandwidth_gbs:,.0f} GB/s" if x.gpu else "-",
                                source="data/gpus.yaml")]),
    }
    b, o = sp.batch_held or s.batch_size, max(s.output_tokens, 1)  # (users the KV pool cannot hold wait)
    a = s.acceptance_length if s.speculative_method != "none" else 1.0  # tokens a step yields a sequence
    steps = o / a
    latency = sp.request_latency_s or 0.0
    server = sp.request_overhead_s or 0.0  # in the TTFTs, not in the cycle: it overlaps other requests' steps
    prefill = sp.ttft_burst_s - server if b > 1 and sp.ttft_burst_s is not None else latency - steps * step
    cycle = steps * step + prefill
    per_step = f" / {a:g} tokens a step" if a != 1 else ""
    out["speed.tokens_per_s"] = Formula(
        label="output tokens/s", value=(sp.tokens_per_s or 0.0), unit="tokens/s", accuracy=acc,
        computed=b * o / cycle if cycle > 0 else None,
        formula="tokens/s = sequences x output tokens / cycle, cycle = output tokens x decode step + the prefill of "
                "the next prompts (continuous batching, as vLLM and TGI serve)" + (
                    "; with speculative decoding a step yields the acceptance length's tokens a sequence, so the "
                    "cycle holds output tokens / acceptance length steps" if a != 1 else ""),
        substituted=f"{b} x {o:,} / ({o:,}{per_step} x {step * 1000:,.1f} ms + {prefill:,.3f} s) = "
                    f"{b * o / cycle if cycle > 0 else 0:,.1f} tokens/s", constants=[_range(sp, "decode")])
    if sp.streaming_tokens_per_s_per_user:
        out["speed.streaming_tokens_per_s_per_user"] = Formula(
            label="streaming tokens/s per user", value=sp.streaming_tokens_per_s_per_user, unit="tokens/s",
            accuracy=acc, computed=a / step if step > 0 else None,
            formula=("streaming speed = 1 / decode step" if a == 1 else
                     "streaming speed = acceptance length / decode step (speculative decoding)")
            + ": the tokens each user sees per second while the batch decodes (vLLM's inter-token latency); other "
              "users' prompts prefilled in between add stalls",
            substituted=(f"{a:g} / " if a != 1 else "1 / ") + f"{step * 1000:,.1f} ms = "
                        f"{a / step if step > 0 else 0:,.1f} tokens/s")
    if sp.ttft_s is not None:
        out["speed.ttft_s"] = _ttft(sp, b, bool(s.shared_prefix_tokens), acc, ttft)
        if sp.ttft_burst_s is not None and b > 1:  # the same formula, read at its second value
            out["speed.ttft_burst_s"] = out["speed.ttft_s"].model_copy(update={
                "label": f"time to first token, the last of {b} arriving together",
                "value": sp.ttft_burst_s})
    return out


def _ttft(sp: Speed, batch: int, shared: bool, acc: Accuracy, note: str) -> Formula:
    """A user's time to first token alone: the engine's prefill of the prompt plus its latency per request outside
    its steps (the API server's path, which a client-measured TTFT includes, as ``--users 1`` does)."""
    server = sp.request_overhead_s or 0.0
    alone, burst = sp.ttft_s - server, (sp.ttft_burst_s or server) - server
    return Formula(
        label="time to first token", value=sp.ttft_s, unit="s", accuracy=acc, note=note,
        formula="TTFT = the prefill of one prompt alone (its GEMMs at the efficiency their shapes reach, attention "
                "over the prompt, kernel launches: gpuplan/speed/inference.py StepTimer; a prompt longer than the "
                "engine's step budget in its chunks, each attending to the earlier ones) + the engine's latency per "
                "request outside its steps (HTTP, tokenizing, streaming)"
                + ("; with a shared prefix the engine caches, only the tokens after it (vLLM: whole 16-token "
                   "blocks; SGLang: token by token)" if shared else ""),
        substituted=f"{alone:,.3f} s + {1e3 * server:,.1f} ms = {sp.ttft_s:,.3f} s alone"
                    + (f"; {burst:,.3f} s + {1e3 * server:,.1f} ms = {sp.ttft_burst_s or 0:,.3f} s for the last of "
                       f"{batch} arriving together" if batch > 1 else ""))


def _hours(s, c, tps: float, acc) -> Formula:
    """The job's hours (gpuplan/market/job.py ``job_time``, gpuplan/market/cost.py ``price_job``): training, the
    evaluation passes and checkpoint saves asked for; on spot, Daly's wall time over the training and evaluation,
    whose checkpoint writes are the saves."""
    train = s.train_tokens / tps / 3600
    j = c.job
    evals, saves = (j.eval_h, j.checkpoint_h) if j else (0.0, 0.0)
    if c.spot:
        hours = (train + evals) * c.spot.overhead
        return Formula(
            label="hours", value=c.hours, unit="h", computed=hours, accuracy=acc,
            formula="hours = (train_tokens / tokens/s / 3600 + evaluation) x spot overhead (Daly: checkpoint "
                    "writes, re-done work and restarts)",
            substituted=f"({s.train_tokens:,.3g} / {tps:,.0f} / 3600 + {evals:,.2f}) x {c.spot.overhead:.2f} = "
                        f"{hours:,.2f} h")
    hours = train + evals + saves
    return Formula(label="hours", value=c.hours, unit="h", computed=hours, accuracy=acc,
                   formula="hours = train_tokens / tokens/s / 3600 + evaluation + checkpoint saves",
                   substituted=f"{s.train_tokens:,.3g} / {tps:,.0f} / 3600 + {evals:,.2f} + {saves:,.2f} = "
                               f"{hours:,.2f} h")


def cost(x: Context) -> dict[str, Formula]:
    s, c, sp = x.s, x.r.cost, x.r.speed
    per_hour, rented = c.usd_per_hour, c.num_gpus
    served = getattr(x.r, "priced_tokens_per_s", None)  # a load run's tokens/s (gpuplan.plan.build.priced_on_load)
    tps = served or sp.tokens_per_s or 0.0
    acc = price_accuracy()
    overhead = c.spot.overhead if c.spot else 1.0
    price = Constant(name=c.offer, value=f"${per_hour / rented:,.3f} per GPU-hour, {c.price_age_days} days old",
                     source=c.price_origin or "data/offers.csv")
    out = {"cost.usd_per_hour": Formula(
        label="$ per hour", value=per_hour, unit="$/h", computed=per_hour, accuracy=acc, constants=[price],
        formula="$/h = GPUs rented (whole instances) x price per GPU-hour",
        substituted=f"{rented} x ${per_hour / rented:,.3f} = ${per_hour:,.2f}/h")}
    if c.usd_per_million_tokens is not None and tps:
        per_m = per_hour * overhead / (tps * 3600) * 1e6
        out["cost.usd_per_million_tokens"] = Formula(
            label="$ per million tokens", value=c.usd_per_million_tokens, unit="$", computed=per_m, accuracy=acc,
            formula="$/M tokens = $/h x spot overhead / (tokens/s x 3600) x 10^6"
                    + (" (tokens/s: the output tokens/s the simulated run at the load served)" if served else ""),
            substituted=f"{per_hour:,.2f} x {overhead:.2f} / ({tps:,.0f} x 3600) x 1e6 = ${per_m:,.3f}")
    run = getattr(x.r, "load", None)
    if served and run is not None:
        steady = run.steady_request_throughput
        out["load.output_throughput"] = Formula(
            label="output tokens/s served", value=served, unit="tok/s",
            computed=run.total_output_tokens / run.duration if steady is None else
            steady * run.total_output_tokens / run.completed,
            formula="output tokens/s served = the run's output tokens / its duration, first request sent to last "
                    "token (vllm bench serve's output_throughput; gpuplan/serving/load.py summary)" if steady is None
            else "output tokens/s served = requests/s completed in the steady window (after the warm-up, before the "
                 "drain, as capacity judges) x the run's output tokens per request (gpuplan/serving/load.py summary)",
            substituted=f"{run.total_output_tokens:,} / {run.duration:,.1f} s = {served:,.0f} tok/s" if steady is None
            else f"{steady:,.3g} req/s x {run.total_output_tokens:,} / {run.completed:,} = {served:,.0f} tok/s")
    if s.task == "train" and s.train_tokens and tps:
        out["cost.hours"] = _hours(s, c, tps, acc)
        if c.job:  # evaluation passes or checkpoint saves: their hours are priced too
            per_m = per_hour * c.hours / s.train_tokens * 1e6
            out["cost.usd_per_million_tokens"] = Formula(
                label="$ per million tokens", value=c.usd_per_million_tokens, unit="$", computed=per_m,
                accuracy=acc, formula="$/M tokens = $/h x hours / train_tokens x 10^6",
                substituted=f"{per_hour:,.2f} x {c.hours:,.2f} / {s.train_tokens:,.3g} x 1e6 = ${per_m:,.3f}")
        out["cost.usd_total"] = Formula(
            label="GPU time $", value=c.usd_total, unit="$", computed=c.hours * per_hour, accuracy=acc,
            formula="GPU time = hours x $/h", substituted=f"{c.hours:,.2f} x {per_hour:,.2f} = "
                                                          f"${c.hours * per_hour:,.2f}")
    if c.bill and c.bill_usd is not None:
        items = c.bill
        out["cost.bill_usd"] = Formula(
            label="the whole bill", value=c.bill_usd, unit="$", computed=sum(i.usd for i in items),
            accuracy=acc, formula="bill = the sum of its lines (GPU time, billing rounding, storage, egress)",
            substituted=" + ".join(f"{i.item} ${i.usd:,.3f}" for i in items) +
            f" = ${sum(i.usd for i in items):,.2f}",
            constants=[Constant(name=i.item, value=f"{i.quantity:,.4g} {i.unit} x ${i.usd_per_unit:,.3g}",
                                source=i.note or "data/providers.yaml") for i in items])
    return out
