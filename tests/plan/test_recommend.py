"""``recommend`` and ``table``: golden cases with the reasoning written out, constraints, the Pareto front,
and the promise that every recommended setup is exactly what ``estimate`` says about it."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import subprocess
import sys
from unittest import mock

import pytest

from conftest import cli_in_process
from gpuplan import GpuplanError, estimate
from gpuplan.model.catalog import load_model
from gpuplan.plan.recommend import Constraints, parse_have, recommend
from gpuplan.scenario import Scenario

GIB = 2**30
A6000, RTX4090, H100, A100 = "nvidia-rtx-a6000", "nvidia-geforce-rtx-4090", "nvidia-h100-sxm5-80gb", \
    "nvidia-a100-sxm4-80gb"


def run(fields: dict, **constraints):
    s = Scenario.model_validate(fields)
    return recommend(s, load_model(s.model), Constraints(**constraints))


# ---- golden cases ----------------------------------------------------------------------------------------
def test_qlora_llama_70b_fits_one_48gb_card():
    """Llama-3.1-70B has 80 layers of q,o 8192x8192, k,v 8192x1024 and gate/up/down 8192x28672:
    855,638,016 linear weights per layer, 68,451,041,280 in all. NF4 with double quantization stores
    4 + 8/64 + 32/(64*256) = 4.127 bits each: 35.31e9 B = 32.89 GiB. Embeddings and lm_head (2 x 128256 x 8192)
    stay 16-bit when the fp32 upcast is off: 3.91 GiB. Rank-16 adapters on all 7 linears hold
    16*(2*(8192+8192) + 2*(8192+1024) + 3*(8192+28672)) = 2,588,672 parameters per layer, 207,093,760 in fp32:
    0.77 GiB. Weights: 37.57 GiB. At 1,024 tokens, checkpointing keeps one bf16 hidden state per layer (80 x
    1024 x 8192 x 2 B = 1.25 GiB) plus one layer's working set and the logits (3 fp32 copies of 1024 x 128256 in
    the loss backward: 1.5 GiB): the peak stays under the 47.76 GiB an RTX A6000 offers. With the fp32 upcast of
    embeddings peft does by default, the same run is 3.91 GiB over; at 2,048 tokens it no longer fits."""
    linear = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672)
    assert linear == 68_451_041_280
    nf4 = linear * (4 + 8 / 64 + 32 / (64 * 256)) / 8 / GIB
    embeddings = 2 * 128256 * 8192 * 2 / GIB
    adapters = 80 * 16 * (2 * 16384 + 2 * 9216 + 3 * 36864) * 4 / GIB
    fields = dict(model="llama-3.1-70b", task="train", method="qlora", seq_len=1024, train_tokens=1e7)
    result = run(fields, gpus=(A6000,), max_gpus=1)
    assert result.setups, result.changes
    best = result.setups[0]
    assert best.num_gpus == 1 and best.gpu_id == A6000
    assert best.device_peak_gib <= 47.76 and "bf16 embeddings" in best.techniques
    again = estimate(best.scenario.model_dump(), advise=False).memory
    assert again.weights_gib == pytest.approx(nf4 + embeddings + adapters, rel=0.005)
    assert again.fits
    upcast = estimate({**best.scenario.model_dump(), "qlora_fp32_upcast": True}, advise=False).memory
    assert upcast.weights_gib - again.weights_gib == pytest.approx(embeddings, rel=0.01)
    assert not upcast.fits


def test_full_finetune_8b_does_not_fit_24gb_and_the_way_out_is_named():
    """bf16-mixed AdamW holds 4 (fp32 weights) + 4 (fp32 gradients) + 8 (two fp32 moments) = 16 bytes per
    parameter: 8,030,261,248 x 16 B = 119.7 GiB before any activation, five times a 24 GB card, so no
    micro-batch or checkpointing saves it. The recommendation has no setup on one RTX 4090 and names what
    does fit: LoRA/QLoRA on that card, or ZeRO-3 over several of them (8 x 23.9 GiB > 119.7 / 8 per card)."""
    states = 8_030_261_248 * 16 / GIB
    assert states == pytest.approx(119.66, abs=0.01)
    fields = dict(model="llama-3.1-8b", task="train", method="full", precision="bf16-mixed", optimizer="adamw",
                  micro_batch_size=1, grad_checkpointing="full", train_tokens=1e8)
    mem = estimate({**fields, "gpu": RTX4090}, advise=False).memory
    assert mem.weights_gib + mem.gradients_gib + mem.optimizer_gib >= states * 0.999
    result = run(fields, gpus=(RTX4090,), max_gpus=1)
    assert not result.setups and result.fitting == 0
    assert any("--any-method" in c and "1x nvidia-geforce-rtx-4090" in c for c in result.changes)
    more = [c for c in result.changes if "--max-gpus" in c]
    assert more and "zero3" in more[0]


def test_serving_llama_70b_32x4k_needs_four_80gb_cards():
    """bf16 weights: 70,553,706,496 x 2 B = 131.4 GiB, more than an 80 GB card. KV cache: 32 sequences x
    4,096 tokens x 80 layers x 2 (K, V) x 8 KV heads x 128 x 2 B = 40.0 GiB. Two cards hold 65.7 + 20.0 =
    85.7 GiB each, over 79.6; three do not divide the 64 heads; four hold 42.9 GiB each."""
    weights = 70_553_706_496 * 2 / GIB
    kv = 32 * 4096 * 80 * 2 * 8 * 128 * 2 / GIB
    assert kv == pytest.approx(40.0)
    assert weights / 2 + kv / 2 > 79.6 > weights / 4 + kv / 4
    for engine in ("transformers", "vllm"):
        fields = dict(model="llama-3.1-70b", task="infer", batch_size=32, prompt_tokens=3584, output_tokens=512,
                      engine=engine)
        result = run(fields, gpus=(H100, A100), top=50)
        assert result.setups
        assert min(x.num_gpus for x in result.setups) == 4, engine


# ---- recommend == estimate -------------------------------------------------------------------------------
JOBS = [
    (dict(model="llama-3.1-8b", task="train", train_tokens=1e8), {}),
    (dict(model="llama-3.1-8b", task="train", micro_batch_size=4, train_tokens=5e7), {"any_method": True}),
    (dict(model="qwen2.5-72b", task="train", method="qlora", train_tokens=1e7), {"pricing": "spot"}),
    (dict(model="llama-3.1-70b", task="train", train_tokens=1e9), {"max_gpus": 32, "pricing": "any"}),
    (dict(model="llama-3.1-70b", task="infer", engine="vllm", batch_size=32, prompt_tokens=4096), {}),
    (dict(model="mixtral-8x7b", task="infer", batch_size=8, prompt_tokens=2048), {"any_quant": True}),
]


@pytest.mark.parametrize("fields, constraints", JOBS)
def test_each_recommended_setup_is_what_estimate_says(fields, constraints):
    result = run(fields, top=6, **constraints)
    assert len(result.setups) >= 3
    for x in result.setups:
        again = estimate(x.scenario.model_dump())
        assert again.memory.device_peak_gib == pytest.approx(x.device_peak_gib, rel=1e-9)
        assert again.memory.fits
        assert again.speed.tokens_per_s == pytest.approx(x.tokens_per_s, rel=1e-9)
        assert again.cost.offer == x.offer.removesuffix(" (per-GPU price)").replace(
            f"{x.num_gpus // x.scenario.num_nodes}x", f"{again.cost.num_gpus // again.cost.instances}x")
        assert again.cost.usd_per_hour == pytest.approx(x.usd_per_hour, rel=1e-9)
        assert again.cost.usd_per_million_tokens == pytest.approx(x.usd_per_million_tokens, rel=1e-9)
        if x.usd_total is not None:
            assert again.cost.usd_total == pytest.approx(x.usd_total, rel=1e-9)


# ---- constraints -----------------------------------------------------------------------------------------
TRAIN_8B = dict(model="llama-3.1-8b", task="train", train_tokens=1e8)


def test_ranked_by_objective_with_the_pareto_front_marked():
    cost = run(TRAIN_8B, top=30).setups
    per_mtok = [float(f"{x.usd_per_million_tokens:.3g}") for x in cost]  # equal to 3 significant digits: a tie
    assert per_mtok == sorted(per_mtok)
    for a, b in itertools.pairwise(cost):  # within a tie, the faster first
        if f"{a.usd_per_million_tokens:.3g}" == f"{b.usd_per_million_tokens:.3g}":
            assert a.tokens_per_s >= b.tokens_per_s
    fast = run(TRAIN_8B, top=30, objective="time").setups
    speeds = [x.tokens_per_s for x in fast]
    assert speeds == sorted(speeds, reverse=True)
    assert cost[0].pareto and fast[0].pareto  # the cheapest and the fastest are never dominated
    for x in cost:
        dominated = any(y.usd_per_million_tokens < x.usd_per_million_tokens and y.tokens_per_s > x.tokens_per_s
                        for y in cost)
        assert not (x.pareto and dominated)


def test_budget_and_deadline_filter_and_explain():
    cheapest = run(TRAIN_8B).setups[0]
    within = run(TRAIN_8B, budget_usd=cheapest.usd_total * 1.5, top=50).setups
    assert within and all(x.usd_total <= cheapest.usd_total * 1.5 for x in within)
    broke = run(TRAIN_8B, budget_usd=cheapest.usd_total * 0.5)
    assert not broke.setups and broke.fitting > 0
    # the budget that admits it is its cost at the slow end of its likely speed (issue 32)
    assert any(c.startswith(f"raise the budget to ${math.ceil(cheapest.usd_total_high):,}") for c in broke.changes)
    fastest = run(TRAIN_8B, objective="time").setups[0]
    late = run(TRAIN_8B, deadline_hours=fastest.hours * 0.5)
    assert not late.setups and any(c.startswith("extend the deadline") for c in late.changes)


def test_deadline_and_budget_are_met_at_the_slow_end_of_the_band():
    """A setup meets a deadline (or a budget) only when it does at the low end of its likely speed: the central
    estimate inside the deadline but its slow end past it is left out (the review's 8x B200, 305 h of 336 but 363 h
    at its low end). Hand check: hours x tokens_per_s / tokens_per_s_low."""
    every = run(TRAIN_8B, top=200).setups
    x = next(x for x in every if x.tokens_per_s_low < 0.95 * x.tokens_per_s)
    assert x.hours_high == pytest.approx(x.hours * x.tokens_per_s / x.tokens_per_s_low)
    between = (x.hours + x.hours_high) / 2  # the central value meets it, the slow end does not
    met = run(TRAIN_8B, deadline_hours=between, top=200)
    assert met.fitting and all(y.hours_high <= between for y in met.setups)
    assert not any((y.gpu_id, y.num_gpus, y.offer) == (x.gpu_id, x.num_gpus, x.offer) for y in met.setups)
    if met.fewest is not None:
        assert "at the slow end of its likely speed" in met.fewest_line
    cap = (x.usd_total + x.usd_total_high) / 2
    assert all(y.usd_total_high <= cap for y in run(TRAIN_8B, budget_usd=cap, top=200).setups)


def test_every_format_prints_the_deadline_headline():
    """The fewest-GPUs line is the answer to a deadline question: table and plain and markdown print it on stdout,
    csv on stderr (stdout stays one table), json as fewest_line."""
    args = ["recommend", "--model", "llama-3.2-1b", "--task", "train",
            "--method", "lora", "--train-tokens", "1e8", "--deadline-hours", "48", "--gpus", "l4,a10g",
            "--max-gpus", "2", "--top", "3"]
    for fmt in ("table", "plain", "markdown", "csv", "json"):
        done = gpuplan(*args, "--format", fmt)
        assert done.returncode == 0, done.stderr
        where = done.stderr if fmt == "csv" else done.stdout
        assert "fewest GPUs that meet the 48 h deadline" in where, fmt
        if fmt == "json":
            assert json.loads(done.stdout)["fewest_line"].startswith("fewest GPUs")


def test_csv_writes_the_numbers_the_json_holds():
    """CSV is for scripts and writes raw values, but recommend's tok/s, GiB and price-age cells went out as the
    table's text (`"1,981 ±6%"`, `72/80`, `6 d`, session 7's walk): each is now the number the JSON holds."""
    import csv

    args = ["recommend", "--model", "llama-3.2-1b", "--task", "infer", "--gpus", "l4,a10g,l40s", "--max-gpus", "1",
            "--top", "3"]
    rows = list(csv.DictReader(succeeded(*args, "--format", "csv").splitlines()))
    setups = json.loads(succeeded(*args, "--json"))["setups"]
    assert len(rows) == len(setups) == 3
    for row, x in zip(rows, setups, strict=True):
        assert float(row["tok/s"]) == pytest.approx(x["tokens_per_s"], rel=1e-9)
        assert float(row["GiB"]) == pytest.approx(x["device_peak_gib"], rel=1e-9)
        assert int(row["price age"]) == x["price_age_days"]


def test_the_speed_band_is_the_answers_words_the_table_and_page_print():
    """s20's leftover: the CLI computed the table's ``±%`` from tokens_per_s_low/high itself and the page printed
    none. The row carries it (Setup.speed_band, in the JSON); the table's cell and the page's print it."""
    from pathlib import Path

    args = ["recommend", "--model", "llama-3.2-1b", "--task", "infer", "--gpus", "l4,a10g,l40s", "--max-gpus", "1",
            "--top", "3"]
    rows = [line.split("|") for line in succeeded(*args, "--format", "plain").splitlines()]
    setups = json.loads(succeeded(*args, "--json"))["setups"]
    cells = re.findall(r"([\d,]+) (±\d+%|-\d+/\+\d+%)", "\n".join("|".join(r) for r in rows))
    assert len(cells) == len(setups) == 3
    for (speed, band), x in zip(cells, setups, strict=True):
        below = round(100 * (x["tokens_per_s"] - x["tokens_per_s_low"]) / x["tokens_per_s"])
        above = round(100 * (x["tokens_per_s_high"] - x["tokens_per_s"]) / x["tokens_per_s"])
        assert x["speed_band"] == (f"±{below}%" if below == above else f"-{below}/+{above}%")
        assert (speed, band) == (f"{x['tokens_per_s']:,.0f}", x["speed_band"])
    page = (Path(estimate.__code__.co_filename).parents[1] / "web" / "static" / "app.js").read_text()
    assert "${x.speed_band}" in page


def test_the_band_comes_rounded_so_the_table_and_the_page_agree_at_a_half():
    """s20-left2's leftover: the table rounded the ± with ``:.0f`` (half to even: 12.5 -> 12, 2.5 -> 2) and the
    page with ``toLocaleString`` (half away from zero: 13, 3). The answer carries whole percent, half up, and both
    print it as it stands: 87.5 to 112.5 tok/s around 100 is ±12.5 % -> 13 in each; 97.5 to 102.5 is ±2.5 -> 3;
    12.49 stays 12. A band that does not reach as far each way says each side (s25 walk: DeepSeek-R1 on 4x MI300X
    under SGLang, 491 tok/s likely 491-569, was printed "491 ±8%", half the range around a speed at its low end)."""
    from gpuplan.plan.recommend import Setup

    def band(low, high):
        return Setup.model_construct(tokens_per_s=100.0, tokens_per_s_low=low, tokens_per_s_high=high).speed_band

    assert (band(87.5, 112.5), band(97.5, 102.5), band(87.51, 112.49), band(100.0, 100.0)) == \
        ("±13%", "±3%", "±12%", "±0%")
    assert (band(100.0, 115.9), band(87.0, 110.0)) == ("-0/+16%", "-13/+10%")


def test_every_format_says_what_would_fit_when_nothing_does():
    """Review 3's second rewalk: when no setup fits, ``--format plain`` (and csv, markdown) printed an empty header
    and nothing else, where the table lists the smallest changes that would fit and why the own cards have no row.
    Every format now carries them (csv on stderr: stdout stays one table); json has them as changes."""
    args = ["recommend", "--model", "gemma-2-9b", "--task", "train", "--method", "qlora", "--samples", "1200",
            "--mean-tokens", "900", "--have", "1xrtx-4060-ti-16gb", "--gpus", "rtx-4090,l4"]
    said = json.loads(gpuplan(*args, "--json").stdout)
    assert said["setups"] == [] and said["changes"] and said["owned_changes"]
    for fmt in ("plain", "markdown", "csv"):
        done = gpuplan(*args, "--format", fmt)
        assert done.returncode == 0, done.stderr
        where = " ".join((done.stderr if fmt == "csv" else done.stdout).split())  # unwrapped
        for change in said["changes"]:
            assert f"no rented setup fits; a change that would: {change}" in where, fmt
        assert f"your cards: {said['owned_changes'][0]}" in where, fmt
        if fmt == "csv":
            assert done.stdout.splitlines() == ["#,setup,offer,price age,GiB,tok/s,hours,$,$/M tok"]


def test_nothing_fits_under_a_preset_says_what_would_without_shorter_prompts():
    """A preset says the requests' lengths, so a shorter prompt is no change to offer: it was tried, refused ("preset
    chat says the requests' lengths ...: drop prompt_tokens", a field the user never gave), and the whole answer
    failed with that sentence (s29). 70B at 16 bits (70.6e9 x 2 B = 141 GB of weights) fits 8 RTX 4090s (192 GB),
    not 4 (96 GB): more GPUs is the change."""
    result = run(dict(model="llama-3.1-70b", task="infer", preset="chat"), gpus=(RTX4090,), max_gpus=1)
    assert not result.setups and result.changes
    assert result.changes[0].startswith("allow up to 8 GPUs (--max-gpus 8): 8x nvidia-geforce-rtx-4090 tp8")
    assert not any("shorter" in change for change in result.changes)


def test_plain_wraps_the_deadline_headline_to_the_width():
    """Review 3 (Q3, top problem 8): ``--format plain`` printed the headline of a size-only model as one 378-column
    line (its synthetic config said in it); through a pipe every plain line keeps to 120 columns, and the words are
    all there."""
    args = [sys.executable, "-m", "gpuplan", "recommend", "--model-size", "3B", "--task", "train", "--method", "full",
            "--train-tokens", "3e11", "--deadline-hours", "336", "--gpus", "h100-sxm,b200", "--max-gpus", "64",
            "--top", "3", "--format", "plain"]
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120
    head = " ".join(lines[:lines.index(next(x for x in lines if x.lstrip().startswith("#")))])
    assert head.startswith("fewest GPUs that meet the 336 h deadline: ") and "(3,426,473,600 parameters)" in head
    assert head.endswith("300.0B tokens")


def test_allow_lists_pricing_and_headroom():
    only = run(TRAIN_8B, providers=("runpod",), gpus=(H100, A100), top=50).setups
    assert only and {x.provider for x in only} == {"runpod"} and {x.gpu_id for x in only} <= {H100, A100}
    spot_answer = run(TRAIN_8B, pricing="spot", top=50)
    spot = spot_answer.setups
    assert spot and all(x.pricing in ("spot", "interruptible") for x in spot)
    # review 3 (Q3): spot hours leave out waiting for capacity, and say so; on demand has no such note
    assert spot_answer.notes[-1] == ("spot hours count restarts after interruptions (Daly's overhead) but not waiting "
                                     "for spot capacity: the cards must be free to start and to come back, which for "
                                     "many GPUs over days is not assured")
    assert not any("spot capacity" in n for n in run(TRAIN_8B, top=5).notes)
    roomy = run(TRAIN_8B, min_headroom=0.25, top=50).setups
    assert roomy and all(x.headroom_pct >= 25 for x in roomy)


def test_equal_cost_ranks_the_faster_setup_first():
    """LoRA of an 8B on L40S scales about linearly from 1 to 8 cards on one provider's per-GPU price
    (compute-bound, PCIe enough): the job costs the same to 3 significant digits, so the most cards (the
    shortest time) rank first."""
    # accumulation 1 as set: at the recipe's (16 / GPUs) fewer cards amortize the optimizer step over more tokens
    setups = run(dict(model="llama-3.1-8b", task="train", method="lora", train_tokens=1e8, grad_accum_steps=1),
                 gpus=("nvidia-l40s",),
                 providers=("runpod",), top=20).setups
    same = [x for x in setups if f"{x.usd_per_million_tokens:.3g}" == f"{setups[0].usd_per_million_tokens:.3g}"]
    assert len(same) >= 2
    assert [x.tokens_per_s for x in same] == sorted((x.tokens_per_s for x in same), reverse=True)
    assert same[0].num_gpus > same[-1].num_gpus


def test_a_technique_is_taken_only_where_it_saves_more_than_noise():
    """s18 walk: Gemma-3-12B LoRA with axolotl (checkpointing on) fits one H100 at 31.7 GiB of 79.6, yet recommend
    showed "1x h100-sxm single+adam8": 8-bit AdamW's step ran 4,944.23 tokens/s against 4,944.01 (0.004 %, LoRA's
    65M-parameter optimizer), so the row changed the optimizer for nothing. The job as asked is shown where a
    technique saves under 0.5 %; where the job needs it (two 3090s hold Gemma only with ZeRO-3) it stays."""
    fields = {"model": "gemma-3-12b", "task": "train", "method": "lora", "stack": "axolotl", "train_tokens": 2e7}
    result = run(fields, gpus=("nvidia-h100-sxm5-80gb",), have=(("nvidia-geforce-rtx-3090", 3),), top=30)
    h100 = [x for x in result.setups if x.num_gpus == 1]
    assert h100 and all(x.techniques == [] and x.scenario.optimizer == "adamw" for x in h100)
    assert [(x.num_gpus, x.sharding, x.techniques) for x in result.owned[:1]] == [(2, "zero3", [])]


def test_owned_hardware_is_priced_by_power():
    """Two RTX 3090 (350 W TDP) under load, PUE 1.0 and $0.16/kWh (the US residential price buy takes): 2 x 0.35 x
    0.16 = $0.112 per hour; QLoRA of an 8B model fits a 24 GB card. Per token the owned pair is among the cheapest,
    behind only H100-class rentals at $1.29-1.49/h that run ~8x faster (``pricing="any"`` adds spot)."""
    assert parse_have("2x3090") == ("nvidia-geforce-rtx-3090", 2)
    fields = dict(model="llama-3.1-8b", task="train", method="qlora", train_tokens=1e7)
    result = run(fields, have=(parse_have("2x3090"),))
    best = result.owned[0]  # the user's own cards come in their own list, first
    assert best.owned and best.gpu_id == "nvidia-geforce-rtx-3090" and best.num_gpus <= 2
    assert best.usd_per_hour == pytest.approx(best.num_gpus * 0.35 * 0.16)
    assert best.offer == "your 2x rtx-3090 (power only)"
    assert result.setups and not any(x.owned for x in result.setups)  # rentals: the alternatives
    anywhere = run(fields, have=(parse_have("2x3090"),), pricing="any", top=50)
    assert anywhere.owned and any(x.pricing in ("spot", "interruptible") for x in anywhere.setups)
    with pytest.raises(GpuplanError, match="did you mean"):
        parse_have("2x3909ti")
    with pytest.raises(GpuplanError, match="a count of cards starts at 1: '0x3090' has 0") as err:
        parse_have("0x3090")  # fit --gpu and buy read it too: the sentence named --have in every command
    assert "--have" not in str(err.value)


def test_owned_cards_that_cannot_hold_the_job_get_the_change_that_would():
    """Llama-3.1-8B LoRA at micro-batch 8 x 4,096 tokens holds ~300 GiB of activations: nothing fits one RTX
    3090 as asked. Checkpointing plus micro-batch 1 with accumulation (the global batch kept) brings it under
    24 GiB, which ``estimate`` would advise too; the advice names the user's card, not a rental."""
    fields = dict(model="llama-3.1-8b", task="train", method="lora", micro_batch_size=8, seq_len=4096,
                  train_tokens=1e7)
    result = run(fields, have=(parse_have("1x3090"),))
    assert not result.owned and len(result.owned_changes) == 1
    advice = result.owned_changes[0]
    assert advice.startswith("your 1x rtx-3090: ") and "checkpointing" in advice and "accumulation" in advice


def test_owned_cards_advice_names_the_sharding_and_the_hours_estimate_gives():
    """The s20 walk: a student's 4 RTX 3090s for Qwen3-32B LoRA on 50k chats (3 epochs) got "your 4x rtx-3090:
    enable gradient checkpointing + torch.compile: 74.7 -> 22.7 GiB" and no hours; it was planned sharded by
    ZeRO-3, which the line did not say, so estimate with the same change (DDP, its default on 4 GPUs) did not fit.
    The line now names the sharding and gives the changed plan's hours and power bill, estimate's own."""
    fields = dict(model="qwen3-32b", task="train", method="lora", samples=50_000, mean_tokens=438, max_tokens=2048,
                  seq_len=2048, epochs=3)
    result = run(fields, have=(parse_have("4x3090"),), gpus=("nvidia-h100-sxm5-80gb",), max_gpus=1)
    assert not result.owned and len(result.owned_changes) == 1
    advice = result.owned_changes[0]
    assert advice.startswith("your 4x rtx-3090, sharded zero3: enable gradient checkpointing + torch.compile")
    plan = estimate({**fields, "gpu": "rtx-3090", "num_gpus": 4, "sharding": "zero3",
                     "grad_checkpointing": "full", "compile": True, "pricing": "owned"})
    assert plan.memory.fits and plan.cost.usd_per_hour == pytest.approx(4 * 0.350 * 0.16)  # 4 x 350 W x $0.16
    assert advice.endswith(f"; with it {plan.cost.hours:,.1f} h at {plan.speed.tokens_per_s:,.0f} tokens/s, "
                           f"${plan.cost.usd_total:,.2f} of power")
    # 65.7M tokens (50,000 x 438 x 3) at the plan's tokens/s
    assert plan.cost.hours == pytest.approx(65_700_000 / plan.speed.tokens_per_s / 3600, rel=1e-6)


def test_nothing_fits_lists_changes_best_first():
    result = run(dict(model="llama-3.1-405b", task="train", train_tokens=1e8), max_gpus=1)
    assert not result.setups and result.changes
    assert "--max-gpus" in result.changes[0]
    serve = run(dict(model="llama-3.1-70b", task="infer", batch_size=32, prompt_tokens=4096), max_gpus=1)
    assert any("--any-quant" in c for c in serve.changes)
    assert any("--prompt-tokens" in c for c in serve.changes)


# ---- the guide's table -----------------------------------------------------------------------------------
def test_guide_table_numbers_and_footnotes():
    from gpuplan.plan.table import guide_table

    rows = {r.guide.model: r for r in guide_table(cheapest=False)}
    assert len(rows) == 11
    r1 = rows["deepseek-r1"]
    # FP8 experts and attention (1 B each) + bf16 embeddings and lm_head (2 x 129280 x 7168 x 2 B) + one fp32
    # scale per 128 x 128 block: about 673 GB, half the guide's 1,342 GB.
    hand = (671_026_404_352 - 2 * 129280 * 7168) * (1 + 4 / 128**2) + 2 * 129280 * 7168 * 2
    assert r1.shipped_gib * GIB == pytest.approx(hand, rel=0.005)
    assert "FP8" in r1.notes[0] and "1,280 GB" in r1.notes[0]
    assert r1.infer_gib["8-bit"] * GIB / 1e9 < 8 * 141  # 8 x H200 hold R1 as shipped
    q7 = rows["r1-distill-qwen-7b"]
    # 7.62B x 4 bits = 3.8 GB: the guide's 3.3 GB counts 4-bit weights and nothing else
    assert q7.params_total * 0.5 / 1e9 == pytest.approx(3.8, abs=0.1)
    assert q7.infer_gib["4-bit"] * GIB / 1e9 > 2 * 3.3
    assert "4-bit weights alone" in q7.notes[0]
    assert rows["bloom"].train_gib["QLoRA"] * GIB / 1e9 > 40 * 3
    # GPT-NeoX at bf16: 20.55B x 2 B = 41.1 GB of weights, 20.6 GB per RTX 3090 under TP=2, plus the 4k KV
    # cache, the embeddings' logits and ~0.5 GB of CUDA context per card: over 24 GB. 8-bit halves the weights.
    neox = rows["gpt-neox-20b"].notes[0]
    assert "hold inference at 8-bit, 4-bit but not at bf16" in neox
    for r in rows.values():
        assert r.infer_gib["bf16"] > r.infer_gib["8-bit"] > r.infer_gib["4-bit"]
        assert r.train_gib["LoRA"] > r.train_gib["QLoRA"]


def test_guide_table_cheapest_setups_hold_the_model():
    from gpuplan.plan.table import guide_table

    for r in guide_table():
        best = r.serve.setups[0]
        assert best.num_gpus * best.capacity_gib >= r.weights_gib["bf16"]
        assert r.qlora.setups, r.guide.model


# ---- CLI -------------------------------------------------------------------------------------------------
def gpuplan(*args: str) -> subprocess.CompletedProcess:
    """``gpuplan ARGS`` in this process (conftest.cli_in_process) at 200 columns."""
    with mock.patch.dict(os.environ, {"COLUMNS": "200"}):
        return cli_in_process(*args)


def succeeded(*args: str) -> str:
    """The stdout of ``gpuplan ARGS`` run in this process, which must exit 0."""
    done = cli_in_process(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_recommend_cli_json_and_table():
    done = gpuplan("recommend", "--model", "llama-3.1-8b", "--task", "train", "--method", "qlora",
                   "--train-tokens", "1e7", "--top", "3", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert len(data["setups"]) == 3 and data["evaluated"] >= data["fitting"] > 0
    assert data["setups"][0]["scenario"]["gpu"] == data["setups"][0]["gpu_id"]
    table = gpuplan("recommend", "--model", "llama-3.1-8b", "--task", "train", "--train-tokens", "1e7")
    assert table.returncode == 0 and "Pareto" in table.stdout and "headroom" in table.stdout


@pytest.mark.parametrize("args, text", [
    (["--objective", "fastest"], "cost, time or balanced"),
    (["--min-headroom", "lots"], "percentage"),
    (["--gpus", "h100-sxm,rtx-9090"], "did you mean"),
    (["--have", "2xa7000"], "did you mean"),
    (["--providers", "runpd"], "did you mean 'runpod'"),
])
def test_recommend_bad_input(args, text, capsys):
    """In this process (gpuplan.cli.run, as ``python -m gpuplan`` runs it): a traceback would fail the test here
    too, and five fresh interpreters cost about a second each."""
    from gpuplan.cli import run as cli

    code = cli(["recommend", "--model", "llama-3.1-8b", "--task", "train", *args])
    said = capsys.readouterr().err
    assert code == 2 and text in said and "Traceback" not in said


def test_table_cli_prints_footnotes():
    done = gpuplan("table", "--no-cheapest")
    assert done.returncode == 0, done.stderr
    assert "[1]" in done.stdout and "FP8" in done.stdout and "R1-Distill-Qwen-7B" in done.stdout


def test_any_quant_serves_a_quantized_checkpoint_as_shipped():
    """gpt-oss ships its experts in MXFP4: --any-quant tries it as shipped and as shipped with an fp8 KV cache,
    never re-quantized to AWQ, int8 or fp8 (that needs a converted checkpoint: a note says so)."""
    from gpuplan.plan.recommend import Constraints, recommend
    from gpuplan.scenario import scenario_from

    s = scenario_from({"model": "gpt-oss-120b", "task": "infer", "engine": "vllm", "batch_size": 20,
                       "prompt_tokens": 8192})
    r = recommend(s, load_model("gpt-oss-120b"), Constraints(any_quant=True, top=8), explain=False)
    assert r.setups and all(x.scenario.quant is None for x in r.setups)
    assert {tuple(x.techniques) for x in r.setups} <= {(), ("mxfp4 as shipped", "fp8 KV cache")}
    assert any("ships as mxfp4" in n and "re-quantizing" in n for n in r.notes)


def test_a_technique_the_scenario_already_has_is_not_searched_again():
    """QLoRA with paged 8-bit AdamW tries the scenario as given, with checkpointing, and with checkpointing and
    bf16 embeddings: 3 variants. With checkpointing already on, the second is the first again, so 2 variants are
    searched (the same layouts and cards each: evaluated falls by exactly a third), and no setup is labelled with a
    technique that changes nothing."""
    fields = {"model": "qwen2.5-7b", "task": "train", "method": "qlora", "optimizer": "paged-adamw-8bit",
              "seq_len": 4096}
    off = run({**fields, "grad_checkpointing": "none"}, top=1)
    on = run({**fields, "grad_checkpointing": "full"}, top=1)
    assert on.evaluated * 3 == off.evaluated * 2 and on.evaluated > 0
    assert on.setups[0].techniques != ["gradient checkpointing"]


def test_every_technique_a_row_names_is_one_it_changes():
    """s13 walk: Qwen2.5-14B QLoRA (the hf stack's recipe: checkpointing on, AdamW) ranked first a 4090 row labelled
    "gradient checkpointing + bf16 embeddings" whose scenario had switched the optimizer to paged 8-bit AdamW unsaid
    (its 28.1 -> 20.9 GiB is mostly that and the bf16 embeddings) and named checkpointing the recipe had on already.
    The row now names exactly what it changes: the optimizer and the upcast, not checkpointing; a user's 8-bit
    AdamW is kept, not swapped for the paged one. s30 walk: the row names the paged optimizer it runs ("8-bit AdamW"
    named bitsandbytes' unpaged one)."""
    fields = {"model": "qwen2.5-14b", "task": "train", "method": "qlora", "train_tokens": 1e8}
    result = run(fields, gpus=("nvidia-geforce-rtx-4090",), max_gpus=1, top=20)
    given = estimate(fields, advise=False).setup.scenario
    assert given.grad_checkpointing == "full" and given.optimizer == "adamw" and given.qlora_fp32_upcast
    bf16 = [x for x in result.setups if "bf16 embeddings" in x.techniques]
    assert bf16 and all(x.techniques == ["paged 8-bit AdamW", "bf16 embeddings"] for x in bf16)
    assert {(x.scenario.optimizer, x.scenario.qlora_fp32_upcast) for x in bf16} == {("paged-adamw-8bit", False)}
    assert not any("gradient checkpointing" in x.techniques for x in result.setups)
    mine = run({**fields, "optimizer": "adamw-8bit"}, gpus=("nvidia-geforce-rtx-4090",), max_gpus=1, top=20)
    kept = [x for x in mine.setups if "bf16 embeddings" in x.techniques]
    assert kept and all(x.techniques == ["bf16 embeddings"] and x.scenario.optimizer == "adamw-8bit" for x in kept)


def test_an_owned_mac_is_timed_beside_the_rented_setups():
    """An Apple M4 Max owned (`--have 1xapple-m4-max`) once made the whole recommendation fail ("no dense 16-bit matrix
    rate"), then was listed as fitting but untimed. Since issue 31 a Mac is timed (llama.cpp's Metal kernels, the
    unified memory's bandwidth): Gemma-3-1B on it is an owned setup with a speed, and the rented setups are still
    ranked; its rationale does not ask for ROCm or Gaudi software. (An M2 Max: its Mac Studio's measured draw prices
    its hours, 145 W x $0.16/kWh; an M4 Max has no draw on file and is one sentence:
    tests/market/test_owned_draw.py.)"""
    import gpuplan

    rec = gpuplan.recommend({"model": "gemma-3-1b", "task": "infer", "engine": "llama.cpp"}, have=["1xapple-m2-max"],
                            top=2)
    assert rec.setups and len(rec.owned) == 1 and not rec.owned_changes
    assert rec.owned[0].tokens_per_s > 0 and "ROCm" not in rec.owned[0].rationale
    assert rec.owned[0].usd_per_hour == pytest.approx(0.145 * 0.16)


def test_llama_cpp_setups_split_layers_as_estimate_does():
    """llama.cpp spreads a model over cards by layers (--split-mode layer: estimate's default for several GPUs);
    recommend tried tensor-parallel groups for it and said "(tensor parallel)". Its multi-GPU setups are layer
    splits, labelled so, and each is what estimate says of its scenario."""
    import gpuplan

    rec = gpuplan.recommend({"model": "llama-3.3-70b", "task": "infer", "engine": "llama.cpp",
                             "quant": "gguf-q4_k_m"}, gpus=["rtx-3090", "rtx-4090"], max_gpus=4, top=5)
    assert "layers split" in rec.resolved
    multi = [x for x in rec.setups if x.num_gpus > 1]
    assert multi and all(x.scenario.pp == x.num_gpus and x.scenario.tp == 1 and x.sharding == f"pp{x.num_gpus}"
                         for x in multi)
    x = multi[0]
    assert estimate(x.scenario, advise=False).memory.device_peak_gib == pytest.approx(x.device_peak_gib)


def test_every_stack_is_searched_over_its_own_shardings():
    """`recommend --stack megatron` raised KeyError 'megatron' (the fuzzer, seed 6): the search knew the
    shardings of every stack but Megatron-Core. Each stack the scenario accepts now has its list, and Megatron's
    multi-GPU setups use DDP or its distributed optimizer (zero1), each what estimate says of its scenario."""
    import typing

    import gpuplan
    from gpuplan.scenario.diffusion_stacks import DIFFUSION_STACKS
    from gpuplan.stacks import STACKS

    stacks = set(typing.get_args(Scenario.model_fields["stack"].annotation)) - set(DIFFUSION_STACKS)
    assert len(stacks) >= 7 and stacks <= set(STACKS)
    from gpuplan.scenario import scenario_from
    from gpuplan.scenario import stacks as rules

    # each profile names what it shards with, and the stack's own rules take each of them
    tried = [(name, sh) for name in sorted(stacks) for sh in STACKS[name].shardings]
    assert len(tried) >= 14
    for name, sh in tried:
        method = "full" if name in ("torchtitan", "megatron") else "lora"
        assert rules.refusal(scenario_from({"model": "qwen3-0.6b", "task": "train", "stack": name, "sharding": sh,
                                            "num_gpus": 2, "method": method})) is None, (name, sh)
    # the diffusion trainers plan diffusion pipelines, which recommend does not: refused before the search (it
    # raised KeyError 'kohya')
    with pytest.raises(GpuplanError, match="stack kohya trains diffusion models"):
        gpuplan.recommend({"model": "qwen3-0.6b", "task": "train", "stack": "kohya"}, gpus=["h100-sxm"], max_gpus=2)
    rec = gpuplan.recommend({"model": "qwen3-0.6b", "task": "train", "stack": "megatron"}, gpus=["h100-sxm"],
                            max_gpus=2, top=10)
    multi = [x for x in rec.setups if x.num_gpus > 1]
    assert multi and {x.scenario.sharding for x in multi} <= {"ddp", "zero1"}
    x = multi[0]
    assert estimate(x.scenario, advise=False).memory.device_peak_gib == pytest.approx(x.device_peak_gib)


def test_stacks_that_split_the_model_are_offered_tp_and_pp_when_sharding_alone_does_not_fit():
    """Review 3: recommend tried data-parallel layouts only, so Megatron-Core full fine-tuning of a 70B model (ZeRO-1
    over 16 GPUs still holds 140 GB of bf16 weights on each) found nothing, though estimate plans it with tp and
    pp. When no data-parallel layout fits, the stacks whose profile splits the model (Megatron-Core, torchtitan)
    are searched over tp (inside a node) x pp, each row the plan estimate makes of its scenario."""
    import gpuplan

    job = {"model": "llama-3.1-70b", "task": "train", "method": "full", "stack": "megatron", "seq_len": 4096,
           "train_tokens": 1e8}
    rec = gpuplan.recommend(job, gpus=["h200-sxm"], max_gpus=16, top=20)
    assert "(data parallel or ZeRO, then tensor x pipeline parallel)" in rec.resolved
    assert rec.setups and all(x.scenario.tp * x.scenario.pp > 1 and x.scenario.tp <= 8 for x in rec.setups)
    assert {x.scenario.sharding for x in rec.setups} <= {None, "ddp", "zero1"}
    assert any(x.scenario.pp > 1 for x in rec.setups)
    for x in rec.setups[:3]:
        again = estimate(x.scenario, advise=False)
        assert again.memory.device_peak_gib == pytest.approx(x.device_peak_gib, rel=1e-9)
        assert again.speed.tokens_per_s == pytest.approx(x.tokens_per_s, rel=1e-9)
        assert again.cost.usd_per_million_tokens == pytest.approx(x.usd_per_million_tokens, rel=1e-9)
    # the HF Trainer splits no model: nothing fits two cards, and no tp or pp layout is tried for it
    hf = gpuplan.recommend({**job, "stack": "hf"}, gpus=["h200-sxm"], max_gpus=2)
    assert hf.setups == [] and "tensor x pipeline" not in hf.resolved


def test_a_small_job_is_priced_in_cents_not_zero_dollars():
    """Review 3's second rewalk: a 2.2M-token LoRA's cheapest change read ``$0 ($0.05/M tokens)`` and a small job's
    deadline pick ``$0 (at most ... $0 ...)``: whole dollars hid the price. Amounts under $100 keep their cents,
    under $1 three decimals (the tables' rule, gpuplan.result.usd_amount)."""
    import gpuplan
    from gpuplan.result import usd_amount

    assert [usd_amount(v) for v in (0.0883, 0.102, 12.345, 16_423.4)] == ["0.088", "0.102", "12.35", "16,423"]
    report = gpuplan.recommend({"model": "qwen3-0.6b", "task": "train", "method": "lora", "samples": 1200,
                                "mean_tokens": 900}, deadline_hours=2, gpus=["l4"])
    x = report.setups[0]
    assert 0 < x.usd_total < 1 and report.fewest_line
    assert f"h, ${usd_amount(x.usd_total)} (at most" in report.fewest_line
    assert f"and ${usd_amount(x.usd_total_high)} at the slow end" in report.fewest_line


def test_a_price_below_a_tenth_of_a_cent_keeps_two_digits(capsys):
    """Session 9's walk: SigLIP on an RTX 4090 costs $0.00045 per 1,000 samples, which recommend's table and
    estimate's cost line wrote '0.000' and '$0.000 per 1,000 samples': below $0.001, two significant digits."""
    from gpuplan.cli import run
    from gpuplan.result import usd_amount

    assert [usd_amount(v) for v in (0.00045, 4.5e-6, 0.0, 0.004)] == ["0.00045", "0.0000045", "0.000", "0.004"]
    code = run(["estimate", "--model", "google/siglip-so400m-patch14-384", "--task", "infer", "--gpu", "rtx-4090",
                "--batch-size", "32"])
    out = capsys.readouterr().out
    assert code == 0 and "$0.000 per" not in out and "per 1,000 samples" in out
    cost = out.split("per 1,000 samples")[0].rsplit("$", 1)[1].strip()
    assert 0 < float(cost) < 0.001 and len(cost.rstrip("0").split(".")[1].lstrip("0")) == 2, cost


def test_any_stack_change_note_reads_the_rows_card_as_estimate_does():
    """An ``--any-stack`` row's change note names the peak ``estimate`` gives on the same card: before, the scenario
    as given at the row's layout; after, the row's own device peak. Unsloth sizes its loss chunks from the card's
    free memory, so the card-free layout the search shares across cards (86.9 -> 23.4 GiB) is not what the row or
    ``estimate`` says (87.4 -> 23.1 GiB on an RTX 4090, 8B LoRA at 8,192 tokens)."""
    fields = {"model": "llama-3.1-8b", "task": "train", "method": "lora", "seq_len": 8192}
    result = run(fields, gpus=[RTX4090], any_stack=True, top=3)
    row = next(x for x in result.setups if x.scenario.stack == "unsloth" and x.num_gpus == 1)
    as_given = estimate({**fields, "gpu": RTX4090, "micro_batch_size": row.scenario.micro_batch_size,
                         "grad_accum_steps": row.scenario.grad_accum_steps})
    assert not as_given.verdict.fits
    assert row.change.startswith(f"unsloth: {as_given.memory.device_peak_gib:.1f} -> {row.device_peak_gib:.1f} GiB, ")
    assert row.change in row.rationale and row.rationale.startswith("fits with ")


def test_recommend_s_ttft_column_says_it_is_one_request_alone(capsys):
    """Session 10's walk: `recommend --users 64` showed 'TTFT s 0.08' per setup, one request alone, while estimate
    said 3.40 s for the last of the 64 and the simulated p99 3.3 s. The column is named as capacity names it."""
    from gpuplan.cli import run

    code = run(["recommend", "--model", "llama-3.1-8b", "--task", "infer", "--engine", "vllm", "--batch-size", "16",
                "--gpus", "l40s", "--format", "plain"])
    out = capsys.readouterr().out
    assert code == 0 and "TTFT alone s" in out and "TTFT s" not in out


def test_a_setup_over_several_nodes_names_the_fabric_its_collectives_were_timed_on():
    """A training setup over 2 nodes of 8 H100s said its collectives took their share 'over NVLink 450 GB/s' (the
    node's own link), where its speed timed the data-parallel ring on the fabric between the nodes, as its
    estimate says ('collectives over infiniband ...'): the words name the link the plan's speed was timed on."""
    import gpuplan

    result = gpuplan.recommend({"model_size": "1B", "task": "train", "train_tokens": 1e10}, gpus=["h100-sxm"],
                               max_gpus=16, top=50)
    rows = [x for x in result.setups if x.scenario.num_nodes > 1]
    assert rows
    for x in rows:
        timed = next(a for a in x.plan.assumptions if a.startswith("collectives over "))
        fabric = timed.removeprefix("collectives over ").split(";")[0]
        assert f"of the step over {fabric} between nodes" in x.rationale, (timed, x.rationale)
        assert "NVLink" not in x.rationale
    one = [x for x in result.setups if x.scenario.num_nodes == 1 and x.num_gpus > 1]
    assert one and all("over NVLink 450 GB/s" in x.rationale for x in one)


def test_the_first_line_says_the_rows_lay_out_their_own_batches():
    """recommend and cost wrote "micro-batch 1 x 1 accumulation" in their first line while their rows ran each
    setup's layout (1 x 4, 4 x 4, 8 x 2...: gpuplan/plan/layout.py, as estimate lays it out): the line says what
    was left to each row, and the scenario's own numbers where it gives them (as fit's does)."""
    import gpuplan

    job = {"model": "qwen3-0.6b", "task": "train", "method": "lora", "train_tokens": 1e8}
    rec = gpuplan.recommend(job, gpus=["h100-sxm"], max_gpus=2, top=5)
    layouts = {(x.scenario.micro_batch_size, x.scenario.grad_accum_steps) for x in rec.setups}
    assert layouts - {(1, 1)}  # the rows' own layouts
    assert "seq 2,048 x each setup's micro-batch x its recipe's accumulation (the fastest that fits)," in rec.resolved
    cost = gpuplan.cost({**job, "gpu": "h100-sxm"})
    assert "seq 2,048 x each offer's micro-batch x its recipe's accumulation (the fastest that fits)," in cost.resolved
    given = gpuplan.cost({**job, "gpu": "h100-sxm", "micro_batch_size": 2})
    assert "seq 2,048 x micro-batch 2 x its recipe's accumulation," in given.resolved
    both = gpuplan.recommend({**job, "micro_batch_size": 2, "grad_accum_steps": 3}, gpus=["h100-sxm"], max_gpus=1)
    assert "seq 2,048 x micro-batch 2 x 3 accumulation," in both.resolved


LLAMA_SERVED = {"model": "llama-3.1-8b", "task": "infer", "engine": "vllm"}


@pytest.mark.parametrize("fields, said", [
    ({"speculative_method": "mtp"}, "Llama-3.1-8B's config has no MTP layers"),
    ({"speculative_method": "draft", "draft_model": "qwen2.5-0.5b", "acceptance_length": 2.0},
     "draft_model qwen2.5-0.5b has a vocabulary of 151,936 tokens and meta-llama/Llama-3.1-8B 128,256"),
    ({"speculative_method": "draft", "draft_model": "sdxl", "acceptance_length": 2.0},
     "draft_model sdxl: stabilityai/stable-diffusion-xl-base-1.0 is a diffusion pipeline"),
    # s19's fuzz: both were recommend's "nothing in the catalog fits, even on 8 x Instinct MI300X"
    ({"extra_gpus": ["rtx-3090"]}, "extra_gpus and tensor_split split a model's layers over devices by shares, "
     "which vLLM does not"),
    ({"engine": "llama.cpp", "extra_gpus": ["1_000"]}, "unknown GPU '1_000'"),
])
def test_the_searches_refuse_what_no_card_changes_in_estimates_sentence(fields, said):
    """Session 17's outside fuzzer: recommend answered "nothing in the catalog fits, even on 8 x Instinct MI300X: a
    smaller model or more GPUs" and cost "no offer in force fits" to speculation the model cannot run, since each
    search leaves out every card whose plan is refused; estimate said why. The refusal no card changes is asked
    once before the search (refusals.engine_refusal), in estimate's sentence."""
    import gpuplan

    for ask in (lambda s: gpuplan.estimate({**s, "gpu": "h100-sxm"}), gpuplan.cost, gpuplan.recommend):
        with pytest.raises(GpuplanError, match=re.escape(said)):
            ask({**LLAMA_SERVED, **fields})


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llama.cpp"])
def test_a_training_search_given_a_serving_engine_refuses_it_as_estimate_does(engine):
    """s19-fuzz2 (seed 2004): ``recommend --task train --engine llama.cpp`` warned "engine is a serving setting:
    this training plan leaves it out", then refused every variant with it and answered "nothing in the catalog
    fits, even on 8 x Instinct MI300X"; ``fit --task train --engine sglang`` listed 92 models refused so. Estimate,
    cost, recommend and fit now give estimate's sentence (refusals.training_engine, one of scenario_refusal's)."""
    import gpuplan

    job = {"model": "llama-3.2-1b", "task": "train", "method": "lora", "engine": engine}
    said = f"engine '{engine}' serves models; training runs on transformers (drop engine)"
    for ask in (lambda s: gpuplan.estimate({**s, "gpu": "h100-sxm"}), lambda s: gpuplan.cost({**s, "gpu": "h100-sxm"}),
                gpuplan.recommend, lambda s: gpuplan.fit("h100-sxm", {k: v for k, v in s.items() if k != "model"})):
        with pytest.raises(GpuplanError, match=re.escape(said)):
            ask(job)
    assert gpuplan.recommend({**job, "engine": "transformers"}, gpus=["h100-sxm"], max_gpus=1, top=1).setups


@pytest.mark.parametrize("fields, said", [
    ({"num_gpus": 3, "tp": 3}, "tp=3 does not divide the 32 attention heads of meta-llama/Llama-3.1-8B"),
    ({"provider": "../../x"}, "unknown provider '../../x'"),
])
def test_cost_refuses_its_scenarios_own_layout_and_provider_before_it_searches(fields, said):
    """cost plans the scenario as given on every card: a layout no card runs (tp 3 of 32 heads) or a provider the
    catalog lacks was "no offer in force fits this scenario (try ... more GPUs, quantized weights ...)"."""
    import gpuplan

    with pytest.raises(GpuplanError, match=re.escape(said)):
        gpuplan.cost({**LLAMA_SERVED, **fields})


def test_recommend_ranks_the_offers_of_the_scenarios_provider_as_cost_prices_them():
    """Session 17's outside fuzzer: the scenario's provider was left out of recommend's constraints (its pricing
    was taken), so `recommend --provider runpod` ranked hyperbolic and vast first; cost priced runpod's alone."""
    import gpuplan

    ranked = gpuplan.recommend({**LLAMA_SERVED, "provider": "runpod"}, top=50)
    priced = gpuplan.cost({**LLAMA_SERVED, "provider": "runpod", "gpu": "rtx-4090"})
    assert ranked.setups and {x.provider for x in ranked.setups} == {"runpod"}
    assert priced.rows and {r.provider for r in priced.rows} == {"runpod"}
    with pytest.raises(GpuplanError, match="provider 'runpod' is not one of providers vast: give one or the other"):
        gpuplan.recommend({**LLAMA_SERVED, "provider": "runpod"}, providers=["vast"])


def test_one_owned_cards_advice_names_the_zero3_its_offload_sets():
    """One RTX 3060 for Qwen3-32B LoRA: the change that fits offloads parameters, which sets sharding zero3 (ZeRO-3
    offload, on one GPU too), yet the line read "your 1x rtx-3060: enable gradient checkpointing + offload optimizer
    and parameters to CPU" (the 4-card line names its sharding, the 1-card one did not), and estimate with those
    changes under its one-card default refuses: "offloading parameters needs ZeRO-3" (s20 fuzz2)."""
    fields = dict(model="qwen3-32b", task="train", method="lora", train_tokens=6.5e7)
    result = run(fields, have=(parse_have("1x3060"),), gpus=("nvidia-h100-sxm5-80gb",), max_gpus=1)
    advice = result.owned_changes[0]
    assert advice.startswith("your 1x rtx-3060, sharded zero3: enable gradient checkpointing + offload optimizer "
                             "and parameters to CPU")
    with pytest.raises(GpuplanError, match="offloading parameters needs ZeRO-3"):
        estimate({**fields, "gpu": "rtx-3060", "grad_checkpointing": "full", "offload": "optimizer+params"})
    plan = estimate({**fields, "gpu": "rtx-3060", "grad_checkpointing": "full", "offload": "optimizer+params",
                     "sharding": "zero3", "pricing": "owned"})
    assert plan.memory.fits and advice.endswith(f"; with it {plan.cost.hours:,.1f} h at "
                                                f"{plan.speed.tokens_per_s:,.0f} tokens/s, "
                                                f"${plan.cost.usd_total:,.2f} of power")


def test_owned_cards_hours_take_the_layout_estimate_takes_with_the_change():
    """s27 walk: Llama-3.1-70B QLoRA on one RTX 4090 nothing fits as asked; with ZeRO-3 offload the line read
    "with it 19.2 h at 145 tokens/s", the change planned at the micro-batch 1 x 16 laid out for the plan that did not
    fit, where estimate with the change lays out 2 x 8 and plans 15.4 h at 180 tokens/s."""
    fields = dict(model="llama-3.1-70b", task="train", method="qlora", train_tokens=1e7)
    result = run(fields, have=(parse_have("1x4090"),), gpus=("nvidia-geforce-rtx-4090",), max_gpus=1)
    advice = result.owned_changes[0]
    assert advice.startswith("your 1x rtx-4090, sharded zero3: offload optimizer and parameters to CPU")
    plan = estimate({**fields, "gpu": "rtx-4090", "offload": "optimizer+params", "sharding": "zero3",
                     "pricing": "owned"})
    assert plan.scenario["micro_batch_size"] == 2 and plan.memory.fits
    assert advice.endswith(f"; with it {plan.cost.hours:,.1f} h at {plan.speed.tokens_per_s:,.0f} tokens/s, "
                           f"${plan.cost.usd_total:,.2f} of power")


def test_owned_cards_advice_reads_one_plan_as_estimate_does():
    """The line's memory came from a memory-only plan at accumulation 1 (122.9 -> 7.7 GiB, 3,741 tokens) and its hours
    from the full plan at micro-batch 1 x accumulation 16, whose change estimate advises as 123.4 -> 8.2 GiB and 3,526
    tokens (s20 fuzz2): the advice now reads the full plan, the one estimate prints for that card."""
    fields = dict(model="qwen3-32b", task="train", method="lora", train_tokens=6.5e7)
    advice = run(fields, have=(parse_have("1x3060"),), gpus=("nvidia-h100-sxm5-80gb",), max_gpus=1).owned_changes[0]
    plan = estimate({**fields, "gpu": "rtx-3060"})
    fix = next(f for f in plan.suggestions if f.fits and "offload optimizer and parameters" in f.change)
    assert fix.change in advice and "123.4 -> 8.2 GiB" in advice and "3,526 tokens" in advice


def test_an_owned_screen_card_with_less_free_than_a_desktop_holds_is_warned_of():
    """s20 rewalk's leftover 2: `recommend --have 1xrtx-4070-ti-super` ranked QLoRA of Qwen2.5-14B first at 15.82 of
    15.92 GiB, 0.10 GiB free, without a word, where a desktop on the card holds about 0.39 GiB (Linux, ComfyUI's
    400 MiB reserve) or 0.68 (Windows: 600 MiB and 100 more on a card over 15 GiB). It is said now, with the flag
    that plans with the desktop; not for a data-centre card, unified memory, a card with room, or display set."""
    from gpuplan.hardware import load_gpu
    from gpuplan.plan.desktop import desktop_warning

    fields = {"model": "qwen2.5-14b", "task": "train", "method": "qlora"}
    s = Scenario.model_validate(fields)
    result = run(fields, have=(parse_have("1xrtx-4070-ti-super"),), gpus=(RTX4090,), max_gpus=1, top=3)
    x = result.owned[0]
    assert (round(x.device_peak_gib, 2), x.capacity_gib) == (15.82, 15.92)
    said = [w for w in result.warnings if w.startswith("your 1x rtx-4070-ti-super: 15.82 of 15.92 GiB leaves 0.10")]
    assert len(said) == 1 and "about 0.39 GiB on Linux, 0.68 on Windows" in said[0] and "--display" in said[0]
    card = load_gpu("rtx-4070-ti-super")
    assert desktop_warning(s, card, 1, 15.5, 15.92) is None  # 0.42 GiB free: a Linux desktop's 0.39 fits
    assert desktop_warning(s.model_copy(update={"display": "linux"}), card, 1, 15.82, 15.92) is None
    assert desktop_warning(s, load_gpu("l4"), 1, 21.9, 22.0) is None
    assert desktop_warning(s, load_gpu("apple-m4-max"), 1, 95.9, 96.0) is None


def test_recommend_with_users_ranks_its_best_rows_on_their_simulated_run_and_its_think_time():
    """Session 22 (the s20b walk's left 3): `recommend --users N --think-time T` ranked on the decode step at N at
    once and ignored T. Now its best rows are priced on the closed-loop run `estimate --users` prices on (the same
    tokens/s and $/M on the same offer). Hand bound: 40 users who each wait 15 s after a 300-token reply ask for at
    most 40 x 300 / 15 = 800 tokens/s, so the H100's 2,300 tokens/s at 40 at once cannot be sold: with the think
    time it falls behind two RTX A4000s, which it beats without one."""
    import gpuplan as api

    job = dict(model="llama-3.1-8b", task="infer", engine="vllm", users=40, prompt_tokens=2000, output_tokens=300)
    cards = ["h100-sxm", "rtx-a4000", "rtx-4090"]

    def order(think: float) -> tuple[list[tuple[str, int]], object]:
        r = api.recommend({**job, "think_time_s": think}, gpus=cards, top=5)
        return [(x.gpu_id, x.num_gpus) for x in r.setups], r

    busy, _ = order(0)
    thinking, r = order(15)
    h100, a4000 = ("nvidia-h100-sxm5-80gb", 1), ("nvidia-rtx-a4000", 2)
    assert busy.index(h100) < busy.index(a4000) and thinking.index(h100) > thinking.index(a4000)
    row = next(x for x in r.setups if x.gpu_id == h100[0])
    assert row.tokens_per_s < 40 * 300 / 15 and "simulated run of the 40 users" in row.rationale
    alone = api.estimate({**job, "think_time_s": 15, "gpu": "h100-sxm", "provider": row.provider})
    assert row.tokens_per_s == pytest.approx(alone.priced_tokens_per_s, rel=1e-9)
    assert row.usd_per_million_tokens == pytest.approx(alone.cost.usd_per_million_tokens, rel=1e-9)
    assert any("priced on their simulated run of 40 users, each thinking 15 s" in n for n in r.notes)


def test_recommend_with_a_rate_ranks_its_best_rows_on_their_simulated_open_loop_run():
    """Session 24 (a leftover since session 20): `recommend --rate 4` priced every row at its decode step at
    ``batch_size`` (1 for a rate): Llama-3.1-8B at 4 requests/s of 1,000 + 200 tokens ranked an RTX 4090 first at
    49 tokens/s, while the rate asks 4 x 200 = 800 (hand bound: an open loop serves no more than arrives). Now rows
    are run best first on their floor (the rate's tokens at their $/h, or less where capacity's closed-form bound
    says the engine full completes fewer requests/s) as `estimate --rate` runs them, a row whose queue grows ranked
    after those that keep up, and a row not run is priced at its floor, never above what its run would cost."""
    import gpuplan as api

    job = dict(model="llama-3.1-8b", task="infer", engine="vllm", rate_rps=4, prompt_tokens=1000, output_tokens=200)
    r = api.recommend(job, gpus=["rtx-4090", "rtx-a4000", "a10", "l40s"], top=50)
    top = r.setups[0]
    assert "simulated run of 4 requests/s" in top.rationale
    step = float(top.rationale.rsplit("request at once: ", 1)[1].split(")")[0])
    assert 5 * step < top.tokens_per_s <= 4 * 200
    alone = api.estimate({**job, "gpu": top.gpu_id, "num_gpus": top.num_gpus, "provider": top.provider})
    assert top.tokens_per_s == pytest.approx(alone.priced_tokens_per_s, rel=1e-9)
    assert top.usd_per_million_tokens == pytest.approx(alone.cost.usd_per_million_tokens, rel=1e-9)
    # one A10 full completes ~1.7 requests/s (closed form; its simulated run 1.6): it cannot hold 4, and ranks
    # after every row that can, though its $/h is among the lowest
    holds = [i for i, x in enumerate(r.setups) if "queue grows" not in x.rationale and "serves at most" not in
             x.rationale]
    a10 = next(i for i, x in enumerate(r.setups) if (x.gpu_id, x.num_gpus) == ("nvidia-a10", 1))
    assert a10 > max(holds) and r.setups[a10].tokens_per_s < 400 and "serves at most" in r.setups[a10].rationale
    floor = next(x for x in r.setups if "not simulated" in x.rationale)
    assert "at least $" in floor.rationale
    run = api.estimate({**job, "gpu": floor.gpu_id, "num_gpus": floor.num_gpus, "provider": floor.provider})
    assert floor.usd_per_million_tokens <= run.cost.usd_per_million_tokens * (1 + 1e-9)
    assert any("priced on their simulated run of --rate 4" in n for n in r.notes)


def test_a_stream_slower_than_reading_notes_capacity_tpot():
    """Session 24: a serving recommend whose best row streams each user fewer than ~10 tokens/s (238-400 words/min
    read at ~1.3 tokens a word is 5.2-8.7 tokens/s) says so, and points to `gpuplan capacity --tpot` (capacity's
    per-token latency SLO); a best row that streams faster gets no such note."""
    job = dict(model="llama-3.1-70b", task="infer", engine="vllm", prompt_tokens=1000, output_tokens=300)
    slow = run({**job, "users": 400}, gpus=[H100], top=3)
    best = slow.setups[0].tokens_per_s_per_user
    said = [n for n in slow.notes if "slower than people read" in n]
    assert best < 10 and said == [f"the best row streams {best:.1f} tokens/s to each user, slower than people read "
                                  "(about 10): `gpuplan capacity --tpot 0.1` (with the same model, load and request "
                                  "lengths) ranks setups on that per-token latency target"]
    fast = run({**job, "users": 4}, gpus=[H100], top=3)
    assert fast.setups[0].tokens_per_s_per_user >= 10 and not [n for n in fast.notes if "people read" in n]
    trained = run({"model": "llama-3.1-8b", "task": "train", "method": "lora"}, gpus=[H100], top=1)
    assert not [n for n in trained.notes if "people read" in n]


def test_a_card_named_in_gpus_but_ranked_below_the_rows_shown_is_said():
    """s25 walk: `recommend --gpus l4,a10g,rtx-4090,l40s` for a Gemma-3-12B QLoRA showed ten RTX 4090 and L40S rows
    and said nothing of the L4 and the A10G the user had named (capacity says so of its own). The note names each
    one's best row and its rank in the whole ranking, which the longer list confirms."""
    L4, A10G, L40S = "nvidia-l4", "nvidia-a10g", "nvidia-l40s"
    fields = {"model": "gemma-3-12b", "task": "train", "method": "qlora", "train_tokens": 5e7}
    short = run(fields, gpus=(L4, A10G, RTX4090, L40S), top=3)
    whole = run(fields, gpus=(L4, A10G, RTX4090, L40S), top=500).setups
    assert {x.gpu_id for x in short.setups} == {RTX4090}
    for gpu_id, name in ((L4, "L4"), (A10G, "A10G (AWS)"), (L40S, "L40S")):
        rank = next(i for i, x in enumerate(whole, 1) if x.gpu_id == gpu_id)
        best = whole[rank - 1]
        note = next(n for n in short.notes if n.startswith(f"{name}: "))
        assert note == (f"{name}: its best setup ranks #{rank}, below the 3 shown ({best.num_gpus}x, "
                        f"{best.tokens_per_s:,.0f} tokens/s, ${best.usd_per_million_tokens:,.3g} per million "
                        f"tokens): raise --top to {rank}, or give --gpus {gpu_id} alone")
    assert not any(n.startswith("GeForce RTX 4090: ") for n in short.notes)
    assert not any(": its best setup ranks" in n for n in run(fields, gpus=(RTX4090, L40S), top=10).notes)


def test_a_rows_memory_is_said_as_estimate_says_it():
    """The memory in a row's line is estimate's verdict's, to the same two decimals and words (recommend said it
    to one decimal, "21.0 of 23.9 GiB", where estimate's verdict of the same setup says two and "usable per
    GPU")."""
    import gpuplan

    s = {"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "prompt_tokens": 1024, "output_tokens": 256}
    row = gpuplan.recommend(s, gpus=["rtx-4090"], max_gpus=1, top=1).setups[0]
    alone = gpuplan.estimate({**s, "gpu": "rtx-4090"}, advise=False).verdict
    said = f"{alone.device_peak_gib:,.2f} of {alone.capacity_gib:,.2f} GiB usable per GPU"
    assert said in alone.sentence and f"headroom ({said})" in row.rationale
