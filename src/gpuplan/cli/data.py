"""The data and recipe lines of ``gpuplan estimate``: what the dataset holds, how it is batched, what it costs in
padding, and the recipe with the reason for each value."""

from __future__ import annotations

from .render import bullet


def render_data(result) -> None:
    d, r = result.dataset, result.recipe
    if d:
        source = d["source"] + (f" (tokenizer {d['tokenizer']})" if d.get("tokenizer") else "")
        bullet(f"data: {source}: {d['samples']:,} {d['kind']} records, {d['tokens_total']:,} tokens of their own "
               f"+ {d['special_tokens']:,} EOS/template tokens the stack adds; per record mean "
               f"{d['mean_tokens']:,.0f}, p50 {d['p50_tokens']:,}, p95 {d['p95_tokens']:,}, max "
               f"{d['max_tokens']:,}; {d['truncated']:,} cut at {d['seq_len']:,}", prefix="", style="bold")
        loss = (f", the loss on {d['loss_tokens']:,} (prompts masked)" if d["prompt_masked"] else "")
        bullet(f"trained per epoch: {d['tokens_trained']:,} tokens{loss}; {d['epochs']:g} epoch(s) = "
               f"{result.scenario['train_tokens']:,.0f} train tokens", prefix="  ")
        packing = {"none": "padded per batch", "bucket": "grouped by length, padded per batch",
                   "bfd": "packed (best fit, no attention across records)",
                   "wrapped": "concatenated and cut (attention across records)"}[d["packing"]]
        waste = f"padding {d['padding_pct']:.1f}% of the tokens processed"
        if d.get("padding_usd") is not None and d["padding_pct"] > 0:
            waste += f" (${d['padding_usd']:,.2f} of the total)"
        fill = f", rows {d['packing_fill_pct']:.0f}% full" if d.get("packing_fill_pct") else ""
        bullet(f"batching: {packing}: {d['packed_sequences']:,} sequences per epoch{fill}; {waste}; memory at the "
               f"longest row, {d['longest_row']:,} tokens", prefix="  ")
        for note in d["notes"]:
            bullet(note, prefix="  note: ", style="dim")
    if r:
        bullet(f"recipe ({r['kind']}): why each value", prefix="", style="bold")
        for c in r["choices"]:
            bullet(f"{c['name']}: {c['value']}: {c['why']}", prefix="  - ")
