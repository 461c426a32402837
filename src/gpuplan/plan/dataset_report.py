"""What an estimate says about its data: the ``dataset`` section of the result, and the warnings the data draws
under the plan's recipe (the recipe itself is :func:`gpuplan.plan.recipe.plan_recipe`)."""

from __future__ import annotations

from typing import Any

from ..dataset import profile


def dataset_section(s, cost) -> dict[str, Any] | None:
    """Samples, tokens (the records' own, and the EOS/template tokens apart), lengths, truncation, tokens trained
    (and those the loss is on), the batching (rows, padding in % and $) and the epochs."""
    p = profile(s)
    if p is None:
        return None
    st, b = p.stats, p.batching
    out: dict[str, Any] = {
        "source": p.source, "tokenizer": p.tokenizer, "kind": p.lengths.kind, "samples": st.samples,
        "tokens_total": st.tokens_total, "special_tokens": st.special_tokens,
        "mean_tokens": round(st.mean_tokens, 1), "p50_tokens": st.p50_tokens, "p95_tokens": st.p95_tokens,
        "max_tokens": st.max_tokens, "seq_len": s.seq_len, "truncated": st.truncated,
        "tokens_trained": st.tokens_trained, "loss_tokens": st.loss_tokens, "prompt_masked": st.prompt_masked,
        "epochs": p.epochs, "packing": b.packing, "packed_sequences": b.rows, "padded_tokens": b.padded_tokens,
        "padding_pct": round(100 * b.waste, 2), "longest_row": b.longest_row,
        "packing_fill_pct": round(100 * b.fill, 2) if b.packing in ("bfd", "wrapped") else None,
        "notes": list(p.notes)}
    if cost is not None and cost.usd_total:
        out["padding_usd"] = round(cost.usd_total * b.waste, 2)
    return out


def data_warnings(s, typed) -> tuple[str, ...]:
    """What the data would do wrong under the recipe ``typed``: chat records with no assistant turn, where the loss
    is on the assistant turns only (:func:`gpuplan.dataset.reply_warning`)."""
    p = profile(s)
    return p.warnings if p is not None and typed.assistant_only else ()

