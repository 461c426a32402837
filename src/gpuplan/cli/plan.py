"""``gpuplan recommend`` and ``gpuplan table``: the setups that fit, and the guide's table."""

from __future__ import annotations

import math
import re
import textwrap
from typing import Annotated, Any

import typer
from rich.text import Text

from .. import api
from ..errors import GpuplanError, renamed
from ..result import batch_words, human_count
from .app import OWN_MODULE, JsonFlag, app, module_of, option, overrides, print_json, scenario_command, short
from .render import (
    FORMAT_HELP,
    TECHNIQUE_CELLS,
    Column,
    FormatOption,
    FormatValue,
    bullet,
    err,
    num,
    out,
    plain_width,
    resolve_format,
    show,
    usd,
)


# ---- recommend --------------------------------------------------------------------------------------
def _headroom(min_headroom: str) -> float:
    """``--min-headroom`` as a fraction: ``10%`` (or 10, a number above 1 read as a percentage) is 0.1."""
    try:
        headroom = float(min_headroom.rstrip("%")) / (100 if min_headroom.endswith("%") or
                                                       float(min_headroom.rstrip("%")) > 1 else 1)
    except ValueError:
        raise GpuplanError(f"--min-headroom takes a percentage like 10%, got {min_headroom!r}") from None
    if not (math.isfinite(headroom) and 0 <= headroom < 1):
        raise GpuplanError(f"--min-headroom must be between 0% and 100%, got {min_headroom!r}")
    return headroom


def recommend_cmd(scenario: str | None = None, as_json: bool = False, budget_usd: float | None = None,
                  deadline_hours: float | None = None, max_gpus: int = 8, gpus: str | None = None,
                  providers: str | None = None, have: list[str] | None = None, min_headroom: str = "0%",
                  objective: str = "cost", top: int = 10, any_method: bool = False, any_quant: bool = False,
                  any_stack: bool = False, catalog: list[str] | None = None, launch: int | None = None,
                  launch_dir: str = "gpuplan-launch", per_gpu: bool = False, fmt: str | None = None,
                  any_framework: bool = False, **fields: Any) -> None:
    """Which GPUs, how many, where: the setups that fit, ranked.

    Memory first, then communication, then cost, then headroom. Searches GPU type x count (1-8, multi-node for
    training) x sharding (single, DDP, ZeRO-2, ZeRO-3, and when none fits Megatron's and torchtitan's tensor x
    pipeline parallel; tensor parallel for serving, on vLLM and transformers unless --engine is given) x techniques
    (checkpointing, micro-batch 1 with accumulation, 8-bit AdamW; LoRA/QLoRA with --any-method; int8, fp8, AWQ
    weights and an fp8 KV cache with --any-quant; every other training stack with its defaults and activation
    offloading with --any-stack, or one with --stack) x every offer. Your own cards (--have) come first, with what
    would make the job fit on them when nothing does. Marks the Pareto front of cost vs speed; at equal cost the
    faster setup ranks first; when nothing fits, lists the smallest changes that would.

    Examples:

    \b
      gpuplan recommend --model llama-3.1-8b --task train --train-tokens 2e8 --any-method
      gpuplan recommend --model llama-3.1-70b --task infer --batch-size 32 --prompt-tokens 4096 --objective time
      gpuplan recommend examples/lora-llama-8b.yaml --have 2x3090 --budget-usd 50 --pricing any
      gpuplan recommend examples/lora-llama-8b.yaml --gpus a100-80gb,h100,l40s --max-gpus 1 --per-gpu
      gpuplan recommend examples/lora-llama-8b.yaml --pricing spot --launch 1 --launch-dir run/
    """
    fmt = resolve_format(fmt, as_json)
    if any_framework:
        renamed("any_framework", "flag")
    headroom = _headroom(min_headroom)
    target, s = module_of(fields), api.load_scenario(scenario, overrides(fields))  # --module first: it sets model
    result = api.recommend(s, module=target, budget_usd=budget_usd, deadline_hours=deadline_hours, max_gpus=max_gpus,
                           gpus=gpus or (), providers=providers or (), have=have or (),
                           min_headroom=headroom, objective=objective, top=top, any_method=any_method,
                           any_quant=any_quant, any_stack=any_stack or any_framework, catalogs=tuple(catalog or ()),
                           per_gpu=per_gpu)
    if isinstance(result, api.ModuleChoices):  # a diffusion pipeline, an encoder-decoder, an encoder
        from .modules import render_choices

        if launch is not None:
            raise GpuplanError("--launch writes decoder LLMs' setups; for this model run `gpuplan launch` with the "
                               "card you pick (--gpu NAME) and the same fields")
        render_choices(result, fmt, ranked=True)
        return
    listed = result.owned + result.setups  # numbered as shown: your cards first
    if launch is not None and not 1 <= launch <= len(listed):
        raise GpuplanError(f"--launch {launch}: the recommendation lists {len(listed)} setup(s); pick one of 1 to "
                           f"{len(listed)}" if listed else "--launch: no setup fits, so there is nothing to launch")
    if fmt == "table" or (launch is not None and not as_json):  # what was assumed first, then its notes
        bullet(result.resolved, prefix="", style="bold")
        if result.fewest_line:  # the answer to "how many GPUs for this deadline", in one line
            bullet(result.fewest_line, prefix="", style="bold green")
    for warning in result.warnings:  # first, before the numbers they put in doubt
        bullet(warning, prefix="warning: ", style="bold yellow", stream=err)
    for note in result.defaults:  # printed after every input was checked: an error stays one line
        bullet(note, prefix="note: ", style="yellow", stream=err)
    if launch is not None:
        from .launch import launch_setup

        if not as_json:
            render_recommendation(s, result)
        launch_setup(listed, launch, tuple(have or ()), launch_dir, as_json)
        return
    if fmt == "json":
        print_json(result)  # its fewest_line field holds the headline
        return
    if result.fewest_line and fmt == "plain":  # the headline in every format, wrapped as plain's rows wrap
        out.print(textwrap.fill(result.fewest_line, plain_width()), highlight=False, soft_wrap=True)
    elif result.fewest_line and fmt == "markdown":  # one paragraph: the Markdown renderer wraps it
        out.print(result.fewest_line, highlight=False, soft_wrap=True)
    elif result.fewest_line and fmt == "csv":  # stdout stays one CSV table
        bullet(result.fewest_line, prefix="note: ", stream=err)
    render_recommendation(s, result, fmt)


def _rows(s, setups, start: int = 1) -> list[dict[str, Any]]:
    rows = []
    for i, x in enumerate(setups, start):
        techniques = [TECHNIQUE_CELLS.get(t, t) for t in x.techniques]
        tags = techniques if s.task == "infer" else [x.sharding, *techniques]  # serving: tensor parallel over all
        fields = {k: v for k, v in x.__dict__.items() if k != "band" or v is not None}  # band: serving only
        rows.append({**fields, "rank": f"{i}{'*' if x.pareto else ''}",
                     "setup": f"{x.num_gpus}x {short(x.gpu_id)}" + (f" {'+'.join(tags)}" if tags else ""),
                     "where": _where(x), "memory": f"{x.device_peak_gib:.0f}/{x.capacity_gib:.0f}",
                     "speed": f"{x.tokens_per_s:,.0f} {x.speed_band}",
                     "age": None if x.owned else f"{x.price_age_days} d" + (" low" if x.price_confidence == "low"
                                                                           else ""),
                     "price_age_days": None if x.owned else x.price_age_days})
    return rows


def _where(x) -> str:
    """The offer in a cell: the provider, and the pricing when it is not on-demand."""
    if x.owned:
        return "power only"
    return x.provider if x.pricing == "on_demand" else f"{x.provider} {x.pricing.replace('_', '-')}"


def _columns(s, train: bool) -> list[Column]:
    old = lambda r: "yellow" if r["stale"] or r["price_confidence"] == "low" else None  # noqa: E731
    cols = [Column("rank", "#", align="right", priority=0), Column("setup", "setup", priority=0),
            Column("where", "offer", priority=1, style=old),
            Column("age", "price age", align="right", priority=3, style=old, raw="price_age_days"),
            Column("memory", "GiB", align="right", priority=5, raw="device_peak_gib"),
            Column("speed", "tok/s", align="right", priority=2, raw="tokens_per_s")]
    if s.task == "infer":
        cols += [Column("tokens_per_s_per_user", "tok/s/user", fmt=num("{:,.1f}"), align="right", priority=1),
                 Column("ttft_s", "TTFT alone s", fmt=num("{:,.2f}"), align="right", priority=3)]
    if train:
        cols += [Column("hours", "hours", fmt=num("{:,.1f}"), align="right"),
                 Column("usd_total", "$", fmt=usd, align="right")]
    cols.append(Column("usd_per_million_tokens", "$/M tok", fmt=usd, align="right", priority=2 if train else 1))
    return cols


def _said_below(result) -> list[str]:
    """What the table format says beside the rows, as lines for the other formats: why the own cards have no row,
    the smallest changes that would make a setup fit when none does, and the notes on prices left out."""
    lines = []
    if result.owned_changes and not result.owned:
        lines += [f"your cards: {change}" for change in result.owned_changes]
    if not result.setups:
        lines += [f"no rented setup fits; a change that would: {change}" for change in result.changes]
    return [*lines, *result.notes]


def render_recommendation(s, result, fmt: str = "table") -> None:
    train = bool(s.task == "train" and s.train_tokens)
    columns = _columns(s, train)
    if fmt != "table":  # one listing for scripts: owned setups first, then rentals, then what the table says
        said = _said_below(result)  # below its rows (csv: on stderr, stdout stays one CSV table)
        show(_rows(s, result.owned) + _rows(s, result.setups, len(result.owned) + 1), columns, fmt,
             notes=said if fmt != "csv" else ())
        for line in said if fmt == "csv" else ():
            bullet(line, prefix="note: ", stream=err)
        return
    out.print(Text(f"{result.evaluated:,} setups evaluated in {result.elapsed_s:.2f} s, {result.fitting:,} fit",
                   style="dim"))
    if result.owned or result.owned_changes:
        if result.owned:
            show(_rows(s, result.owned), columns, title="on your own cards (power only), best first")
        else:
            out.print(Text("no setup on your own cards to rank; on each:", style="yellow"))
        for change in result.owned_changes:
            bullet(change)
    if not result.setups:
        if result.changes:
            out.print(Text("no rented setup fits the constraints", style="red") + Text("; smallest changes that "
                                                                                       "would:"))
            for change in result.changes:
                bullet(change)
        return
    tokens = "output" if s.task == "infer" else "training"
    show(_rows(s, result.setups, len(result.owned) + 1), columns,
         title=f"rented setups that fit, best first (on-demand unless marked; $/M tok: per million {tokens} "
         "tokens; * Pareto front of cost vs speed; tok/s and the speed model's likely range below/above it; "
         "yellow: price over 30 days old or low confidence)")
    for i, x in enumerate(result.setups[:3], len(result.owned) + 1):
        bullet(f"{x.num_gpus}x {short(x.gpu_id)} on {_where(x)}: {x.rationale}", prefix=f"{i}. ")
    for band in dict.fromkeys(x.band for x in result.setups if x.band):  # serving: each range's source, once
        bullet(f"tok/s range: {band}", prefix="", style="dim")
    if s.task == "train" and not s.train_tokens:
        bullet("set --train-tokens for hours and totals; ranked by $ per million training tokens", prefix="",
               style="yellow")
    for note in result.notes:
        bullet(note, prefix="", style="dim")


scenario_command(
    "recommend", recommend_cmd,
    *[option(name, kind, default, text, "Constraints") for name, kind, default, text in (
        ("budget_usd", float | None, None, "Most the job may cost, USD."),
        ("deadline_hours", float | None, None, "Longest the job may take, hours."),
        ("max_gpus", int, 8, "Most GPUs in a setup (above 8: several nodes)."),
        ("gpus", str | None, None, "Only these GPUs, comma-separated: h100-sxm,l40s."),
        ("providers", str | None, None, "Only these providers, comma-separated: runpod,vast."),
        ("have", list[str] | None, None, "Hardware you own, priced by power only, listed first: 2x3090 "
                                         "(repeatable, or comma-separated: 2x3090,1x4090); a screen card left less "
                                         "free than a desktop holds is warned of (--display plans with it)."),
        ("min_headroom", str, "0%", "Leave this share of GPU memory free: 10%."),
        ("objective", str, "cost", "Rank by cost, time or balanced."),
        ("top", int, 10, "Show this many setups."),
        ("any_method", bool, False, "Allow LoRA / QLoRA instead of the scenario's method."),
        ("any_quant", bool, False, "Allow int8, fp8 and AWQ weights and an fp8 KV cache for serving."),
        ("any_stack", bool, False, "Allow every training stack (torchtune, torchtitan, Unsloth, axolotl, a "
         "plain PyTorch loop) with its defaults: which stack for this job on this card?"),
        ("catalog", list[str] | None, None, "Extra offers CSV overriding bundled prices (repeatable)."),
        ("per_gpu", bool, False, "One row per GPU type, its best setup: to compare cards."))],
    option("launch", int | None, None, "Write the files that run the N-th setup (as gpuplan launch does).", "Launch"),
    option("launch_dir", str, "gpuplan-launch", "Folder --launch writes into.", "Launch"),
    option("fmt", FormatValue, None, FORMAT_HELP, param_decls=("--format",)),
    option("any_framework", bool, False, "old name of --any-stack", hidden=True), OWN_MODULE,
    skip=("gpu", "num_gpus", "num_nodes", "tp", "pp", "sharding"))


@app.command("table")
def table_cmd(
    cheapest: Annotated[bool, typer.Option("--cheapest/--no-cheapest",
                                           help="Search the cheapest setups (22 searches: seconds more).")] = True,
    catalog: Annotated[list[str] | None, typer.Option(help="Extra offers CSV overriding bundled prices.")] = None,
    markdown: Annotated[bool, typer.Option("--markdown", help="Same as --format markdown.")] = False,
    fmt: FormatOption = None,
    as_json: JsonFlag = False,
) -> None:
    """A GPU guide's model table, recomputed.

    The table comes from a Spanish-language GPU buying guide this project started from (not shipped; its figures
    are quoted in English): the VRAM it says each popular model needs. Recomputed here: serving memory at bf16 /
    8-bit / 4-bit with a 4k context, LoRA and QLoRA fine-tuning memory, the cheapest setups, and footnotes where the
    guide's figures are off.

    Settings: one 4,096-token sequence in transformers (8-bit = LLM.int8, 4-bit = AWQ); fine-tuning at rank 16 on
    all linear layers, micro-batch 1 x 4,096 tokens, full checkpointing. Device peak in GB (10^9 bytes, as the
    guide writes). Re-run any cell with gpuplan estimate.

    Examples:

    \b
      gpuplan table --markdown
      gpuplan table --no-cheapest --format csv
    """
    fmt = resolve_format(fmt, as_json, markdown)
    table = api.table(catalogs=tuple(catalog or ()), cheapest=cheapest)
    rows = table.cells
    if fmt == "json":
        print_json(table)
        return
    gb = 2**30 / 1e9
    notes: list[str] = []
    cells = []
    for r in rows:
        marks = ""
        for note in r.notes:
            notes.append(note)
            marks += f" [{len(notes)}]"
        cells.append({"model": r.guide.guide_name.removeprefix("DeepSeek-") + marks,
                      "params": human_count(r.params_total), "guide": r.guide.said,
                      **{k: f"{r.infer_gib[k] * gb:,.1f}" for k in ("bf16", "8-bit", "4-bit")},
                      **{k: f"{r.train_gib[k] * gb:,.1f}" for k in ("LoRA", "QLoRA")},
                      "serve": _cheapest(r.serve), "qlora": _cheapest(r.qlora)})
    columns = [Column("model", "model", priority=0), Column("params", "params", align="right", priority=3),
               Column("guide", "guide says", priority=2),
               *(Column(k, k, align="right") for k in ("bf16", "8-bit", "4-bit", "LoRA", "QLoRA")),
               Column("serve", "cheapest to serve bf16", priority=4), Column("qlora", "cheapest QLoRA", priority=4)]
    if not cheapest:
        columns = columns[:-2]
    if fmt == "markdown":
        show(cells, columns, fmt, notes=[f"{i}. {note}" for i, note in enumerate(notes, 1)])
        return
    show(cells, columns, fmt, title="A GPU guide's table, recomputed (GB = 10^9 bytes; 4k tokens; [n] = footnote)",
         notes=[f"[{i}] {note}" for i, note in enumerate(notes, 1)])


def _cheapest(rec) -> str:
    if rec is None:
        return ""
    if not rec.setups:
        return "no fit on 8 GPUs"
    x = rec.setups[0]
    return f"{x.num_gpus}x {short(x.gpu_id)} ${x.usd_per_hour:,.2f}/h {x.provider}"


# ---- fit ----------------------------------------------------------------------------------------------
def fit_cmd(scenario: str | None = None, as_json: bool = False, gpu: str = "", show_all: bool = False,
            fmt: str | None = None, *, ctx: typer.Context, **fields: Any) -> None:
    """What can my hardware do? Every bundled model on your cards.

    For each model: does the job fit, with which change, and the largest batch and longest context that then
    fit.

    The job is the scenario's (serving by default; --task train --method lora for fine-tuning), each model in
    turn. Several cards split a served model (tensor parallel with vLLM, layers with transformers) and shard
    training (DDP, then ZeRO-2, then ZeRO-3: the first that fits). When a model does not fit as asked, the
    smallest change on the same cards that makes it fit is named (checkpointing, micro-batch 1 with
    accumulation, 8-bit AdamW, QLoRA, 4-bit weights, ...).

    Examples:

    \b
      gpuplan fit --gpu 2x3090 --task train --method lora
      gpuplan fit --gpu rtx-4090 --engine vllm --prompt-tokens 8192
      gpuplan fit --gpu 8xh100-sxm --task train --method full --seq-len 4096 --format csv
    """
    fmt = resolve_format(fmt, as_json)
    _one_card_word(gpu, [scenario or "", *ctx.args])
    target = fields.pop("module", None)
    report = api.fit(gpu, scenario, module=target, **overrides(fields))
    rows = report.rows
    if fmt == "json":
        print_json(report)
        return
    shown = rows if show_all or fmt != "table" else [r for r in rows if r.fits]
    names = api.short_names()
    data = []
    for r in shown:
        data.append({**r.__dict__, "name": (names.get(r.model) or [r.model.split("/", 1)[-1]])[0],
                     "params": human_count(r.params_total),
                     "batch": batch_words(r.max_batch_size, r.max_batch_size_capped, why=False)
                     if r.max_batch_size else "",
                     "verdict": ("yes" if not r.change else f"with {r.change}") if r.fits else
                     f"no: {r.reason}"})
    if fmt == "table":
        bullet(report.resolved, prefix="", style="bold")
        for note in report.notes:
            bullet(note, prefix="note: ", style="yellow")
    train = report.task == "train"
    columns = [Column("name", "model", priority=0), Column("params", "params", align="right", priority=2),
               Column("verdict", "fits", priority=1),
               Column("device_peak_gib", "GiB/card", fmt=num("{:,.1f}"), align="right", priority=3),
               Column("sharding", "sharding", priority=4) if train else None,
               Column("batch", "max micro-batch" if train else "max batch", align="right", raw="max_batch_size"),
               Column("max_seq_len", "max seq_len" if train else "max prompt", fmt=num(), align="right")]
    for c in columns:  # the batch and the context are the answer: they stay at any width
        if c is not None and c.key in ("batch", "max_seq_len"):
            object.__setattr__(c, "priority", 0)
    show(data, [c for c in columns if c], fmt,
         title=_fit_title(report, target is None),
         notes=[*_hidden_note([r for r in rows if r not in shown]), *_capped_note(shown)])


def _fit_title(report, bundled: bool) -> str:
    """fit's headline: the models that fit as asked, and apart from them those that fit only with a change (review
    3 s27: "70 of 92 bundled models fit 1 x GeForce RTX 4090" for QLoRA counted 27 that need another stack, ZeRO-3
    with CPU offload or a fused loss as fitting); the counts are the answer's (FitReport.fit_as_asked,
    fit_with_change), as its JSON carries them."""
    cards = f"{report.num_gpus} x {api.gpu_name(report.gpu_id)}"
    if not bundled:
        return f"your module {'fits' if report.fitting else 'does not fit'} {cards}"
    head = f"{report.fit_as_asked} of {len(report.rows)} bundled models fit {cards} as asked"
    if not report.fit_with_change:
        return head
    changes = {r.change for r in report.rows if r.fits and r.change}
    which = changes.pop() if len(changes) == 1 else "the fits column names each"
    return f"{head}; {report.fit_with_change} more fit with a change ({which})"


def _hidden_note(hidden: list) -> list[str]:
    """What the rows left out of the table are: models that fit no change on these cards, and models the job
    refused as asked (no plan: a draft model that is no decoder, speculation a model cannot run), said apart (the
    outside fuzzer's session 17: 92 models refused an SDXL draft, and the note said they did not fit)."""
    refused = sum(r.device_peak_gib is None for r in hidden)
    parts = ([f"{len(hidden) - refused} more do not fit even with changes on these cards"] if len(hidden) > refused
             else []) + ([f"{refused} {'is' if refused == 1 else 'are'} refused as asked"] if refused else [])
    return [f"{'; '.join(parts)}; --all lists them and why"] if parts else []


def _one_card_word(gpu: str, words: list[str]) -> None:
    """``fit 2x rtx-3060`` (a space inside the card count: a scenario file "2x" and an extra word) or ``fit --gpu
    2x rtx-3060``: said in the sentence ``fit 2x3090`` gets, with the form to use; other extra words, named."""
    words = [w for w in words if w]
    count_only = not gpu or re.fullmatch(r"\d+\s*x?", gpu.strip(), flags=re.IGNORECASE)  # "", "2x" or "2"
    card = [w for w in words if not w.lower().endswith((".yaml", ".yml", ".json"))]  # a scenario file aside
    joined = re.sub(r"\s+", "", gpu + "".join(card))
    if count_only and (gpu or len(card) > 1) and re.fullmatch(r"\d+x\S+", joined, flags=re.IGNORECASE):
        raise GpuplanError(f"fit needs your cards in one word: --gpu {joined} (count x name, or a name for one card)")
    if len(words) > 1:
        raise GpuplanError(f"fit takes one scenario file, not also {' '.join(words[1:])}")


def _capped_note(rows: list) -> list[str]:
    """What "4,096 or more" in the batch column means (``max_batch_size_capped``: the search's limit)."""
    most = next((r.max_batch_size for r in rows if r.max_batch_size_capped), None)
    return [f"{most:,} or more: every batch up to {most:,} fits, and the search stops there"] if most else []


scenario_command(
    "fit", fit_cmd,
    option("gpu", str, "", "Your cards: 2x3090, rtx-4090, 8xh100-sxm.", param_decls=("--gpu",)),
    option("show_all", bool, False, "Also list the models that do not fit.", param_decls=("--all",)),
    option("fmt", FormatValue, None, FORMAT_HELP, param_decls=("--format",)), OWN_MODULE,
    skip=("model", "gpu", "num_gpus", "num_nodes"), extra_words=True)
