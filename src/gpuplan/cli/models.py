"""``gpuplan models`` and ``gpuplan model``: the bundled models and one model's facts."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from .. import api
from ..result import human_count
from .app import JsonFlag, app, print_json
from .render import Column, FormatOption, err, num, out, resolve_format, show

SORT_KEYS = api.MODEL_SORT


@app.command("models")
def models_cmd(
    family: Annotated[str | None, typer.Option(help="Only this family (model_type): llama, qwen2, gemma2...")] = None,
    search: Annotated[str | None, typer.Option("--search", "-s", help="Only names containing this text.")] = None,
    moe: Annotated[bool | None, typer.Option("--moe/--dense", help="Only mixture-of-experts / only dense models.",
                                             show_default=False)] = None,
    min_params: Annotated[float, typer.Option(help="At least this many parameters, in billions.")] = 0.0,
    max_params: Annotated[float | None, typer.Option(help="At most this many parameters, in billions.")] = None,
    sort: Annotated[str, typer.Option(help=f"Sort by one of: {', '.join(SORT_KEYS)}.")] = "params",
    reverse: Annotated[bool, typer.Option("--reverse", help="Largest first.")] = False,
    fmt: FormatOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The bundled models: parameters, layers, KV heads, context.

    Parameters (total and active), layers, width, KV heads, context, dtype.

    Any of these names works wherever a model is asked for (the repo id, the part after the slash, or a short
    name), as do Hugging Face repo ids, their -Instruct / -Chat variants and paths to a config.json.

    Examples:

    \b
      gpuplan models --family qwen2 --sort params
      gpuplan models --moe --sort active --format csv
    """
    rows = api.models(family=family, search=search, moe=moe, min_params=min_params, max_params=max_params,
                      sort=sort, reverse=reverse)
    for r in rows:
        r["short"] = r["names"][0] if r["names"] else r["name"].split("/", 1)[-1]
        r["active_if_moe"] = r["params_active"] if r["moe"] else None
        r["heads"] = f"{r['num_heads']}/{r['num_kv_heads']}"
        r["format"] = r["quantization"] or r["dtype"]
        r["params_cell"] = human_count(r["params_total"]) + ("" if r["exact"] else "*")
    columns = [Column("short", "model", priority=0), Column("name", "repo id", priority=2),
               Column("family", "family", priority=3),
               Column("params_cell", "params", align="right"),
               Column("active_if_moe", "active", fmt=human_count, align="right"),
               Column("num_layers", "layers", align="right", priority=4),
               Column("hidden_size", "hidden", fmt=num(), align="right", priority=5),
               Column("heads", "heads/kv", align="right", priority=4),
               Column("max_context", "context", fmt=num(), align="right"),
               Column("format", "dtype", priority=3)]
    shown = ("short", "active_if_moe", "heads", "format", "params_cell")
    json_rows = [{k: v for k, v in r.items() if k not in shown} for r in rows]
    fmt = resolve_format(fmt, as_json)
    inexact = [] if all(r["exact"] for r in rows) else ["* not exact: `gpuplan model NAME` says why"]
    show(rows, columns, fmt, title=f"{len(rows)} bundled models", json_data=json_rows,
         notes=inexact)


@app.command("model")
def model_cmd(
    name: Annotated[str, typer.Argument(help="Bundled name or alias, Hugging Face repo id, or path to a "
                                        "config.json / model folder.")],
    as_json: JsonFlag = False,
) -> None:
    """One model: parameters by part, KV bytes per token, weight sizes.

    Parameter breakdown, layer kinds, KV-cache bytes per token, and weight sizes as
    shipped and at bf16 / int8 / int4.

    Examples:

    \b
      gpuplan model llama-3.1-8b --json
      gpuplan model meta-llama/Llama-3.1-8B-Instruct
      gpuplan model deepseek-r1
    """
    facts = api.model(name)
    if as_json:
        print_json(facts)
        return
    if "components" in facts:  # a diffusion pipeline, an encoder-decoder, an encoder
        from .modules import render_module

        render_module(facts)
        return
    if not facts["exact"]:
        err.print(Text("warning:", style="bold yellow") + f" not counted exactly: {facts['exact_reason']}")
    for note in facts["notes"]:
        err.print(Text("note:", style="yellow") + f" {note}")
    out.print(Text(facts["name"], style="bold") + f"  ({facts['family']}, {facts['architecture']})")
    out.print(f"{facts['params_total']:,} parameters" + (
        f", {facts['params_active']:,} active per token ({facts['experts_per_token']} of {facts['num_experts']} "
        "experts)" if facts["num_experts"] else ""))
    parts = Table(title="parameters by part", title_justify="left")
    parts.add_column("part")
    parts.add_column("params", justify="right")
    parts.add_column("share", justify="right")
    recurrent = facts["state_bytes_per_sequence_bf16"]  # Mamba or linear-attention layers: counted as attention
    for part, n in facts["params_breakdown"].items():
        if n:
            said = "attention and recurrent mixers" if part == "attention" and recurrent else part
            parts.add_row(said, f"{n:,}", f"{100 * n / facts['params_total']:.1f}%")
    out.print(parts)
    kinds = Table(title="layer kinds", title_justify="left")
    state = facts["state_bytes_per_sequence_bf16"]
    for col in ("kind", "layers", "params/layer", "KV B/token/layer (bf16)", *(("state KiB/sequence/layer",)
                                                                               if state else ())):
        kinds.add_column(col, justify="left" if col == "kind" else "right")
    for k in facts["layer_kinds"]:
        kinds.add_row(k["kind"], str(k["count"]), f"{k['params_per_layer']:,}", f"{2 * k['kv_elements_per_token']:,}",
                      *((f"{2 * k['state_elements'] / 1024:,.1f}",) if state else ()))
    out.print(kinds)
    mla = any("mla" in k["kind"] for k in facts["layer_kinds"])
    out.print(f"KV cache per token, all layers, bf16: {facts['kv_bytes_per_token_bf16_total']:,.0f} B "
              f"({facts['kv_bytes_per_token_bf16_total'] / 1024:,.1f} KiB; sliding and chunked layers stop growing "
              "at their window" + ("; MLA layers cache their latent, as vLLM and transformers 5 do" if mla else "")
              + ")"
              + (f"; recurrent state per sequence: {state / 2**20:,.1f} MiB, whatever its length" if state else ""))
    w = facts["weight_gib"]
    out.print(f"weights as shipped ({facts['shipped_format']}): {w['as_shipped']:.2f} GiB;  bf16 {w['bf16']:.2f} GiB, "
              f"int8 {w['int8']:.2f} GiB, int4 (nf4) {w['int4']:.2f} GiB  [GiB = 2^30 B]")
    out.print(Text(f"counted by {facts['counted_by']}", style="dim"))
    if facts["dtype_assumed"]:
        out.print(Text("the config does not state its dtype; the shipped size is an assumption", style="yellow"))


