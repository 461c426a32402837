"""Training speed at the data's real mix of lengths, in tokens of the data (padding excluded).

The speed model (:func:`gpuplan.speed.training_speed`) times a step of full rows of ``seq_len`` tokens. With data:

- padded batches (``none``, ``bucket``): each micro-batch runs at its padded length; the step time is the
  expectation over the batch-length distribution (:class:`~gpuplan.dataset.batching.Batching`), taken at
  :data:`TIME_BINS` weighted lengths, and only the records' own tokens count as trained;
- ``bfd`` packing: rows of ``seq_len``; padding-free batches (TRL, axolotl) process only the real tokens, so the
  per-token work scales with the fill, and attention, masked per record, with ``sum(len^2) / (rows x seq_len^2)``;
  the per-step work (optimizer, trainer loop, gradient sync, ZeRO gathers) does not change; torchtune pads each
  pack, so only attention shrinks;
- ``wrapped``: full rows with attention across records: the speed model as it is.
"""

from __future__ import annotations

from dataclasses import replace

TIME_BINS = 6  # batch lengths at which the step is timed for padded batches
PER_TOKEN = ("gemm", "elementwise", "lora_adapters", "tensor_parallel", "activation_offload")
# the parts :attr:`~gpuplan.speed.Speed.compute_s` counts (speed/training.py: the micro-steps' busy time)
BUSY = ("gemm", "attention", "ssm_scan", "elementwise", "lora_adapters", "dequant_and_casts", "host_overhead")


def _bins(dist: tuple[tuple[int, float], ...], n: int) -> list[tuple[int, float]]:
    """``n`` (length, weight) pairs standing for the distribution: the weighted mean length of each 1/n of it."""
    out: list[tuple[int, float]] = []
    acc_w = acc_lw = 0.0
    edge = 1.0 / n
    for length, w in dist:
        acc_w += w
        acc_lw += w * length
        if acc_w >= edge - 1e-12:
            out.append((max(1, round(acc_lw / acc_w)), acc_w))
            acc_w = acc_lw = 0.0
    if acc_w > 0:
        out.append((max(1, round(acc_lw / acc_w)), acc_w))
    return out


def real_tokens_per_step(s, b) -> float | None:
    """The data's own tokens one optimizer step of ``s`` trains under the data's batching ``b`` (padding left
    out): padded batches carry their records' tokens, packed rows ``seq_len x fill``; None for full rows."""
    rows_per_step = s.micro_batch_size * s.grad_accum_steps * s.dp
    if b.packing in ("none", "bucket"):
        return rows_per_step * b.real_tokens / max(b.rows, 1)
    if b.packing == "bfd":
        return rows_per_step * s.seq_len * b.fill
    return None


def speed_at_mix(s, m, gpu, network, timer):
    """``timer(s, m, gpu, network)``'s speed of ``s`` at its data's mix (module docstring)."""
    from . import profile

    p = profile(s)
    base = timer(s, m, gpu, network)
    if p is None:
        return base
    b = p.batching
    if b.packing in ("none", "bucket"):
        parts: dict[str, float] = {}
        compute = comm = 0.0
        for length, weight in _bins(b.row_lengths, TIME_BINS):
            at = base if length == s.seq_len else timer(s.model_copy(update={"seq_len": length}), m, gpu, network)
            for k, v in at.parts_s.items():
                parts[k] = parts.get(k, 0.0) + weight * v
            compute += weight * at.compute_s
            comm += weight * at.communication_s
        step = sum(parts.values())
        how = (f"padded batches ({b.packing}): step timed at the batch lengths of the data (mean padded "
               f"{b.padded_tokens / max(b.rows, 1):,.0f} tokens per record, {100 * b.waste:.0f}% padding)")
    elif b.packing == "bfd":
        parts = dict(base.parts_s)
        fill = 1.0 if s.recipe.pads_packs else b.fill
        parts = {k: v * (fill if k in PER_TOKEN else b.attention_ratio if k == "attention" else 1.0)
                 for k, v in parts.items()}
        step = sum(parts.values())
        compute = sum(v for k, v in parts.items() if k in BUSY)
        comm = base.communication_s
        how = (f"packed rows {100 * b.fill:.0f}% full, attention masked per record "
               f"({100 * b.attention_ratio:.0f}% of full rows' attention work)")
    else:
        return base
    tps = real_tokens_per_step(s, b) / step
    k = tps / base.tokens_per_s
    scaled = replace(base, tokens_per_s=tps, step_time_s=step, tokens_per_s_low=base.tokens_per_s_low * k,
                     tokens_per_s_high=base.tokens_per_s_high * k, mfu=base.mfu * k if base.mfu else base.mfu,
                     parts_s=parts, compute_s=compute, communication_s=comm,
                     assumptions=[*base.assumptions, f"tokens/s counts the data's own tokens: {how}"])
    return scaled
