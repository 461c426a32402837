"""What to change: single fixes from one list, the smallest combination when none is enough, the room it leaves,
and the GPUs the user named kept first; ``gpuplan fit`` built on them."""

from __future__ import annotations

import json
import math
import os
from unittest import mock

import pytest

from conftest import cli_in_process
from gpuplan import estimate
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import bundled, load_model
from gpuplan.plan.capability import what_fits
from gpuplan.plan.fixes import candidate_fixes, smallest_combination
from gpuplan.scenario import Scenario

OOM = dict(model="llama-3-8b", task="train", method="lora", gpu="a100-sxm4-40gb", micro_batch_size=8, seq_len=4096)


def test_the_classic_oom_gets_the_combination_that_fits():
    """Llama-3-8B LoRA at micro-batch 8 x 4,096 tokens on an A100 40GB: 297 GiB. Alone, micro-batch 1 leaves
    52 GiB (the activations of one 4k sequence without checkpointing) and checkpointing 77 GiB (eight sequences'
    layer inputs, one layer's working set and the fp32 logits of 32k tokens): no single change in the HF stack
    fits 39.8 GiB. Two together do, and the answer says how large a micro-batch then fits; the fields it gives
    reproduce a setup that fits, and one micro-batch more does not."""
    r = estimate(OOM)
    assert not r.memory.fits
    singles = [x for x in r.suggestions if not x.combination]
    in_stack = [x for x in singles if not {"seq_len", "num_gpus", "stack"} & set(x.fields)]
    assert in_stack and not any(x.fits for x in in_stack)
    combo = r.suggestions[0]
    assert combo.combination and combo.fits and " + " in combo.change
    assert combo.fields["grad_checkpointing"] == "full" and combo.device_peak_gib < 39.8
    again = estimate({**OOM, **combo.fields}, advise=False).memory
    assert again.fits and again.device_peak_gib == pytest.approx(combo.device_peak_gib)
    top = combo.max_batch_size
    at = {**OOM, **{k: v for k, v in combo.fields.items() if k not in ("micro_batch_size", "grad_accum_steps")}}
    accumulate = "micro_batch_size" in combo.fields  # the global batch of 8 kept through accumulation
    def fits(n):
        steps = {"grad_accum_steps": -(-8 // n)} if accumulate else {}
        return estimate({**at, "micro_batch_size": n, **steps}, advise=False).memory.fits
    assert top and fits(top) and not fits(top + 1)


def test_without_the_stack_techniques_it_is_checkpointing_and_micro_batch_one():
    """With the fused loss already in force, the plain answer comes out: checkpointing + micro-batch 1 with
    accumulation (the global batch of 16 kept, the fields at the largest micro-batch that divides it)."""
    r = estimate({**OOM, "micro_batch_size": 16, "loss": "fused-linear"})
    combo = r.suggestions[0]
    assert combo.combination and combo.fits and "micro-batch 1 with accumulation" in combo.change
    assert combo.fields["grad_checkpointing"] == "full"
    assert combo.fields["micro_batch_size"] * combo.fields["grad_accum_steps"] == 16


@pytest.mark.parametrize(("scenario", "micro", "steps"), [
    # walk s16: Llama-3.2-1B LoRA, 16 x 2,048 tokens on a 3090: 2 fit (said on the line above the fixes), the fix
    # offered micro-batch 1 x 16; the largest divisor of 16 that fits is 2
    ({"model": "llama-3.2-1b", "task": "train", "method": "lora", "gpu": "rtx-3090", "micro_batch_size": 16,
      "seq_len": 2048}, 2, 8),
    # Whisper-large-v3 LoRA, 16 recordings a step on a 3090: 10 fit; the fix was 'micro-batch 1', which also cut the
    # samples per optimizer step from 16 to 1 (another job, said as keeping it); 8 x 2 keeps the 16
    ({"model": "whisper-large-v3", "task": "train", "method": "lora", "gpu": "rtx-3090", "micro_batch_size": 16},
     8, 2),
])
def test_a_smaller_micro_batch_keeps_the_global_batch_at_the_largest_that_fits(scenario, micro, steps):
    plan = estimate(scenario)
    fix = next(x for x in plan.suggestions if "micro_batch_size" in x.fields)
    assert fix.fields == {"micro_batch_size": micro, "grad_accum_steps": steps} and fix.fits
    assert fix.change.startswith(f"micro-batch {micro} x {steps} accumulation steps (same global batch)")
    assert plan.memory.max_batch_size >= micro and 16 % micro == 0
    assert estimate({**scenario, **fix.fields}).memory.fits


def test_when_only_another_method_fits_the_combination_keeping_the_method_is_offered():
    """The s18 walk's finding 8: Qwen3-14B LoRA (hf) on 2x RTX 3090 (59.6 GiB a card) named QLoRA, the one single
    change that fits, and not ZeRO-3 + checkpointing (22.3 GiB in `fit`), which keeps bf16 LoRA. A single fix that
    changes the method does not end the search: the smallest combination that keeps it, on the GPUs named, comes
    first; and its fields, applied, fit at the peak it says."""
    job = {"model": "qwen3-14b", "task": "train", "method": "lora", "gpu": "rtx-3090", "num_gpus": 2}
    r = estimate(job)
    singles = [x for x in r.suggestions if not x.combination and x.fits]
    assert [x.fields["method"] for x in singles if "method" in x.fields] == ["qlora"]
    assert not any(x.fits for x in r.suggestions if not x.combination and "method" not in x.fields
                   and not {"seq_len", "num_gpus", "stack"} & set(x.fields))
    combo = r.suggestions[0]
    assert combo.combination and combo.fits and "method" not in combo.fields and "num_gpus" not in combo.fields
    assert combo.fields == {"grad_checkpointing": "full", "sharding": "zero3"}
    again = estimate({**job, **combo.fields}, advise=False).memory
    assert again.fits and again.device_peak_gib == pytest.approx(combo.device_peak_gib)
    assert combo.device_peak_gib < 23.88
    fit_row = next(row for row in what_fits({"task": "train", "method": "lora"}, load_gpu("rtx-3090"), 2,
                                            ["qwen3-14b"]))
    assert fit_row.device_peak_gib == pytest.approx(combo.device_peak_gib)  # what `fit` finds, one search


def test_a_fix_that_keeps_the_method_asked_comes_before_a_change_of_method():
    """Session 20's walk, item 9 (left for the lead until session 24): a full fine-tune was told first to switch to
    LoRA or QLoRA, a change of what is trained, because their rough slowdown (1.05, 1.5) is below offload's. The user
    asked for full: among the fixes that fit on the GPUs named, those that keep the method come first, the method
    changes after them (both still listed). Qwen2.5-1.5B full on one RTX 4090 (39.1 GiB): ZeRO-3 offload fits at
    10.5 GiB and leads; LoRA and QLoRA follow."""
    r = estimate({"model": "qwen2.5-1.5b", "task": "train", "method": "full", "gpu": "rtx-4090"})
    fitting = [x for x in r.suggestions if x.fits and not x.combination and "num_gpus" not in x.fields]
    methods = [i for i, x in enumerate(fitting) if "method" in x.fields]
    kept = [i for i, x in enumerate(fitting) if "method" not in x.fields and "stack" not in x.fields]
    assert fitting[0].fields.get("offload") and "method" not in fitting[0].fields
    assert {fitting[i].fields["method"] for i in methods} >= {"lora", "qlora"}
    assert max(kept) < min(methods)


def test_fixes_keep_the_gpus_named_before_adding_more():
    """Serving Llama-3.1-70B as two replicas on two 80 GB cards does not fit (131 GiB each); splitting it over
    the same two cards does, and comes before tensor parallel over 4 or 8."""
    r = estimate({"model": "llama-3.1-70b", "task": "infer", "gpu": "h100-sxm", "num_gpus": 2, "sharding": "ddp"})
    gpu_fixes = [x for x in r.suggestions if "tp" in x.fields]
    assert gpu_fixes[0].fields.get("tp") == 2 and "your 2 GPUs" in gpu_fixes[0].change and gpu_fixes[0].fits
    assert r.suggestions.index(gpu_fixes[0]) < min(r.suggestions.index(x) for x in gpu_fixes[1:])


def test_a_fix_that_saves_less_than_its_line_shows_is_not_listed():
    """The rewalk of review-2's "KV pool 6.4 -> 6.4 GiB" on the other engines: Mixtral with transformers on two
    A100 40GB at a 512-token prompt listed "fp8 KV cache: 46.1 -> 46.1 GiB (still too big)" (the KV cache is
    0.03 GiB there). A fix that does not fit must lower the peak by the 0.1 GiB its line shows."""
    r = estimate(dict(model="mixtral-8x7b", task="infer", engine="transformers", gpu="a100-sxm4-40gb",
                      num_gpus=2, tp=2, batch_size=1, prompt_tokens=512))
    assert not r.memory.fits and r.suggestions
    peak = r.memory.device_peak_gib
    assert all(x.fits or x.device_peak_gib <= peak - 0.1 for x in r.suggestions), [x.change for x in r.suggestions]
    assert not any(x.fields.get("kv_cache_dtype") == "fp8" for x in r.suggestions)


def test_fixes_come_from_one_list():
    s = Scenario.model_validate(OOM)
    labels = [f.label for f in candidate_fixes(s, load_model(s.model))]
    assert "enable gradient checkpointing" in labels and any(label.startswith("micro-batch 1") for label in labels)
    assert len(labels) == len(set(labels))


def test_a_hopeless_job_has_no_combination():
    """Llama-3.1-405B on an 8 GB card: even QLoRA with every weight streamed from CPU memory leaves one layer's
    gathered 4-bit weights, its dequantized largest matmul (16,384 x 53,248 x 2 B = 1.62 GiB) and the checkpoints
    of 126 layers beyond 8 GB."""
    s = Scenario.model_validate(dict(model="llama-3.1-405b", task="train", method="full", gpu="rtx-3070"))
    m = load_model(s.model)
    assert smallest_combination(s, m, load_gpu(s.gpu), [f for f in candidate_fixes(s, m) if not f.more_gpus]) \
        is None


def test_one_card_streams_the_weights_when_nothing_else_fits():
    """On one 24 GB card 405B fits only as QLoRA with the 4-bit base streamed from CPU memory (ZeRO-3 offload, the
    path Answer.AI's FSDP QLoRA took for 70B on 24 GB cards), and the plan says how much CPU memory that takes: at
    least the NF4 base, 0.5 B x 405 billion parameters = 189 GiB, so it fits a machine with 256 GiB of RAM and not
    one with the default 64 GiB per GPU (issue 33: offload never fits beyond the host's RAM)."""
    s = Scenario.model_validate(dict(model="llama-3.1-405b", task="train", method="full", gpu="rtx-4090",
                                     host_ram_gib=256))
    m = load_model(s.model)
    best = smallest_combination(s, m, load_gpu(s.gpu), [f for f in candidate_fixes(s, m) if not f.more_gpus])
    assert best is not None and "QLoRA" in best.change and "offload optimizer and parameters" in best.change
    job = {"model": "llama-3.1-405b", "task": "train", "method": "qlora", "gpu": "rtx-4090", "sharding": "zero3",
           "offload": "optimizer+params", "grad_checkpointing": "full", "qlora_fp32_upcast": False}
    plan = estimate({**job, "host_ram_gib": 256}, advise=False)
    assert plan.memory.fits and plan.memory.cpu_gib >= 0.5 * 405e9 / 2**30
    assert estimate(job, advise=False).memory.fits is False


def test_fit_lists_what_your_cards_hold_with_the_numbers_estimate_gives():
    rows = {r.model: r for r in what_fits({"task": "train", "method": "lora"}, load_gpu("rtx-3090"), 2)}
    assert len(rows) == len(bundled())  # every bundled model, fitting or not
    small = rows["Qwen/Qwen2.5-0.5B"]
    assert small.fits and not small.change and small.sharding == "ddp"
    eight = rows["meta-llama/Llama-3.1-8B"]  # not as asked (no checkpointing at 2k tokens), with one change
    assert eight.fits and eight.change and " + " not in eight.change
    for row in (small, eight, rows["mistralai/Mixtral-8x7B-v0.1"]):
        again = estimate({"model": row.model, "task": "train", "method": "lora", "gpu": "rtx-3090", "num_gpus": 2,
                          "sharding": row.sharding, **row.fields})
        assert again.memory.fits and again.memory.max_seq_len == row.max_seq_len, row.model
    order = [r for r in rows.values()]
    assert all(r.fits for r in order[:40])


def test_fit_tries_the_shardings_the_stack_runs():
    """Session 16's walk: fit tried DDP, ZeRO-2 and ZeRO-3 whatever the stack, so on 2 x RTX 3090 under torchtune
    (FSDP2 only) every model read "torchtune shards with FSDP2 only: use sharding fsdp (or fsdp2), not zero3" and
    none fitted. It now tries the stack's own shardings, those recommend searches (Stack.shardings)."""
    gpu = load_gpu("rtx-3090")
    tune = what_fits({"task": "train", "method": "lora", "stack": "torchtune"}, gpu, 2, ["qwen2.5-0.5b"])[0]
    assert tune.fits and tune.sharding == "fsdp2" and not tune.reason
    megatron = what_fits({"task": "train", "method": "full", "stack": "megatron"}, gpu, 2, ["qwen2.5-0.5b"])[0]
    assert megatron.fits and megatron.sharding == "zero1"  # DDP does not fit; ZeRO-2/3 were refused, never tried


def test_fit_s_headline_says_each_row_is_laid_out_as_estimate_lays_it_out():
    """Session 9's walk: `fit --gpu 2xrtx-a6000 --task train --method qlora` read 'micro-batch 1 x 1 accumulation
    ...; 2 x rtx-a6000, DDP' over rows at each model's recipe layout (gpt-oss-120b at 1 x 8, ZeRO-3: 45.37 GiB,
    as estimate gives it): the headline described the template, not the rows. It now says what is each model's."""
    from gpuplan.api.searches import fit

    report = fit(gpu="2xrtx-a6000", task="train", method="qlora", models=["gpt-oss-120b"])
    assert ("seq 2,048 x each model's micro-batch x its recipe's accumulation (the fastest that fits)"
            in report.resolved)
    assert report.resolved.endswith("; 2 x rtx-a6000, DDP, ZeRO-2 or ZeRO-3 (the first that fits)")
    row = report.rows[0]
    again = estimate({"model": "gpt-oss-120b", "task": "train", "method": "qlora", "gpu": "rtx-a6000",
                      "num_gpus": 2, "sharding": row.sharding})
    assert again.memory.device_peak_gib == pytest.approx(row.device_peak_gib) and row.sharding == "zero3"
    given = fit(gpu="rtx-a6000", task="train", method="lora", micro_batch_size=2, grad_accum_steps=4,
                models=["qwen3-0.6b"])
    assert "micro-batch 2 x 4 accumulation" in given.resolved and given.resolved.endswith("single GPU")


def test_estimate_check_exit_codes():
    def code(*args):
        with mock.patch.dict(os.environ, {"COLUMNS": "120"}):
            return cli_in_process("estimate", *args, "--check").returncode

    assert code("--model", "qwen2.5-0.5b", "--task", "infer", "--gpu", "rtx-4090") == 0
    assert code("--model", "llama-3.1-70b", "--task", "infer", "--gpu", "rtx-4090") == 3
    assert code("--model", "llama-3.1-70b", "--task", "infer") == 2  # no GPU to check against


def test_a_change_to_cpu_layers_reads_as_words():
    """fit's row for a model that llama.cpp runs partly from system RAM said "with cpu layers True"."""
    from gpuplan.plan.capability import change_words
    from gpuplan.scenario import scenario_from

    s = scenario_from({"model": "qwen3-8b", "task": "infer", "engine": "llama.cpp"})
    assert change_words({"cpu_layers": True}, s) == "llama.cpp layers on the CPU"
    # session 8's walk: fit's row read "with host ram gib 1472.0 (1,466 GiB of RAM)"
    assert change_words({"host_ram_gib": 1472}, s) == "host RAM of 1,472 GiB"


def test_the_longest_context_found_stays_within_the_models():
    """Phi-3-mini was trained on 4,096 positions: on an L40S `fit` and `estimate` reported sequences of 10k tokens
    (they fit in memory, past the model's context, which estimate warns about). The search stops at the context:
    4,096 tokens of training sequence, and a prompt of 4,096 - 256 output tokens = 3,840 for serving."""
    train = estimate({"model": "phi-3-mini", "task": "train", "method": "qlora", "gpu": "l40s"})
    assert train.memory.max_seq_len == 4096
    serve = estimate({"model": "phi-3-mini", "task": "infer", "gpu": "l40s"})
    assert serve.memory.max_seq_len == 4096 - 256
    assert estimate({"model": "qwen3-8b", "task": "infer", "gpu": "h100-sxm"}).memory.max_seq_len <= 40_960 - 256


def test_a_smaller_batch_is_not_said_to_change_the_pool():
    """Qwen3-32B on two L40S with vLLM: the KV pool holds 7 requests of 8,256 tokens, 8 were asked. The fix "batch 4"
    read "7 -> 7 concurrent requests" (the pool does not change, the batch does); it now says the pool holds it.
    The fixes that grow the pool keep their "before -> after"."""
    plan = estimate({"model": "qwen3-32b", "task": "infer", "engine": "vllm", "gpu": "l40s", "num_gpus": 2,
                     "batch_size": 8, "prompt_tokens": 8000})
    changes = {x.change.split(":")[0]: x.change for x in plan.suggestions}
    assert changes["batch 4"] == "batch 4: the pool's 7 requests of 8,256 tokens hold it"
    assert changes["fp8 KV cache"].startswith("fp8 KV cache: 7 -> 14 concurrent requests")


def test_a_change_with_data_says_its_train_tokens_as_a_count():
    """Review 3 (Q1): "shorter sequences (2,273 tokens) (and, as the stack's recipe then sets, train tokens
    1272447.0, ...)": the data's tokens after the cut, a float, printed raw. 2,000 records of 600 tokens cut at half
    the longest record: the count as the rest of the output writes counts."""
    plan = estimate(dict(model="qwen3-8b", task="train", method="qlora", gpu="rtx-3060", samples=2000,
                         mean_tokens=600, epochs=2))
    shorter = [f.change for f in plan.suggestions if f.change.startswith("shorter sequences")]
    assert len(shorter) == 1
    assert "train tokens 2,381,258, packing bfd)" in shorter[0] and "2381258" not in shorter[0]


def _bisection(ok, hi: int) -> int | None:
    """The plain bisection the steered search must agree with (the largest n in [1, hi] with ok(n))."""
    if not ok(1):
        return None
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


@pytest.mark.parametrize("shape", ["linear", "quadratic", "flat", "step", "refused above"])
def test_the_steered_search_finds_what_bisection_finds(shape):
    """The largest batch and context come from a bisection steered by the peaks (edge.largest): on peaks that
    grow in a line, a curve, not at all (an engine's preallocated pool, where the fit is decided by another count),
    in steps, or that are refused (inf) past a point, it finds bisection's answer for every edge, in at most four
    times bisection's probes, and on a line in at most five."""
    from gpuplan.plan.edge import largest

    peaks = {"linear": lambda n: 10 + 0.01 * n, "quadratic": lambda n: 10 + 1e-6 * n * n, "flat": lambda n: 20.0,
             "step": lambda n: 10 + 2 * (n // 100), "refused above": lambda n: 10 + 0.01 * n if n < 3000 else math.inf}
    hi, checked = 4096, 0
    for edge in (1, 2, 3, 17, 100, 101, 999, 2048, 2999, 3000, 4095, 4096):
        def fits(n, edge=edge):  # the fit flips after edge whatever the peak says (a rule the peak does not show)
            return n <= edge
        probes: list[int] = []

        def at(n, edge=edge, probes=probes):
            probes.append(n)
            return fits(n), peaks[shape](n)
        capacity = peaks[shape](edge) + 1e-9 if math.isfinite(peaks[shape](edge)) else 40.0
        assert largest(at, hi, capacity) == _bisection(fits, hi) == edge
        assert len(set(probes)) == len(probes) and all(1 <= n <= hi for n in probes)
        assert len(probes) <= 4 * (math.ceil(math.log2(hi)) + 1)
        if shape == "linear":
            assert len(probes) <= 5, probes
        checked += 1
    assert checked == 12
    assert largest(lambda n: (False, 50.0), hi, 40.0) is None


def test_the_walk_finds_its_largest_batch_and_context_in_few_probes(monkeypatch):
    """QLoRA on Llama-3.1 8B on an RTX 4090 (the start-up walk, issue 30): the largest micro-batch (3) and the
    longest context (6,636 tokens) that fit, found in 9 memory probes (bisection took 31: 18 over 131,072
    tokens and 13 over 4,096 sequences)."""
    from gpuplan.plan import advice

    calls: list[int] = []
    search = advice.largest

    def counted(at, hi, capacity):
        return search(lambda n: calls.append(n) or at(n), hi, capacity)
    monkeypatch.setattr(advice, "largest", counted)
    # micro-batch 1 as set: the walk at the recipe's layout (2 x 8 here) starts from another micro-batch
    memory = estimate(dict(model="llama-3.1-8b", task="train", method="qlora", gpu="rtx-4090",
                           micro_batch_size=1)).memory
    assert (memory.max_batch_size, memory.max_seq_len) == (3, 6636)
    assert len(calls) == 9, calls


def test_more_host_ram_for_llama_cpp_layers_fits_when_applied():
    """Session 8's walk: Llama-3.1-405B with llama.cpp on an RTX 4080 suggested "a machine with 768 GiB of RAM
    (host_ram_gib 768) ... (fits)", but that change alone read "does not fit: llama.cpp would run 125 of 126 layers
    from system RAM on the CPU (--cpu-layers counts that as fitting)", and fit's row had no largest batch. The
    change now takes --cpu-layers with it, and applying it fits, with the batch and prompt fit says."""
    import gpuplan

    s = {"model": "llama-3.1-405b", "task": "infer", "engine": "llama.cpp", "gpu": "rtx-4080"}
    (ram,) = [x for x in gpuplan.estimate(s).suggestions if "host_ram_gib" in x.fields]
    assert ram.fits and ram.fields == {"host_ram_gib": 768, "cpu_layers": True}
    applied = gpuplan.estimate({**s, **ram.fields})
    assert applied.verdict.fits and (applied.memory.max_batch_size, applied.memory.max_seq_len) == (35, 45_568)


def test_a_combination_says_its_speed_once():
    """Gemma-2-27B QLoRA at 8,192 tokens on an RTX A6000: the combination 'offload optimizer and parameters + offload
    checkpointed activations' read '(fits; about the same step time; about the same step time)': the activation
    fix's measured cost, 'about the same step time', was taken for a cost besides speed."""
    from dataclasses import replace

    from gpuplan.plan.build import build
    from gpuplan.plan.fixes import Fix, Timing, _combined_cost
    from gpuplan.plan.resolve import resolve

    s = Scenario(model="qwen3-0.6b", task="train", method="qlora", gpu="t4", seq_len=1024, stack="axolotl")
    m = load_model("qwen3-0.6b")
    timing = Timing(before=build(resolve(s, m), advise=False), asked=s,
                    plan_of=lambda changed: build(resolve(changed, m), advise=False, recipe=False))
    combo = (replace(Fix(label="act", change={"activation_offload": True}, group="activation offload"),
                     cost="about the same step time"),
             Fix(label="adamw8", change={"optimizer": "adamw-8bit"}, group="optimizer", cost="pages states to CPU"))
    cost = _combined_cost(combo, {"activation_offload": True, "optimizer": "adamw-8bit"}, timing)
    clauses = cost.split("; ")
    assert len(clauses) == len(set(clauses)) == 2 and clauses[1] == "pages states to CPU", cost


def test_a_batch_at_the_search_limit_is_said_as_a_floor():
    """s14 rewalk finding 12: gpt2 serving 128 + 128 tokens on an H200 said "largest batch that fits: 4,096", the
    search's limit (plan.edge.BATCH_LIMIT), though 8,192 fits as well: the report keeps 4,096 and marks it capped
    (every batch up to it fits, none above was tried), and the JSON says so. A batch found below the limit
    (Llama-3.1-8B at its default lengths: 498) is not capped, and its JSON reads as it did (no new key)."""
    from gpuplan.plan.edge import BATCH_LIMIT, batch_fields, fits_with

    job = dict(model="gpt2", task="infer", gpu="h200", prompt_tokens=128, output_tokens=128)
    r = estimate(job)
    assert (r.memory.max_batch_size, r.memory.max_batch_size_capped) == (BATCH_LIMIT, True) == (4096, True)
    assert r.to_dict()["memory"]["max_batch_size_capped"] is True
    ok, peak = fits_with(r.setup.scenario, r.setup.model, {"batch_size": 2 * BATCH_LIMIT})
    assert ok and peak < load_gpu("h200").usable_gib  # the true largest is above the limit: "or more"
    below = estimate(dict(model="llama-3.1-8b", task="infer", gpu="h200"))
    assert (below.memory.max_batch_size, below.memory.max_batch_size_capped) == (498, False)
    assert "max_batch_size_capped" not in below.to_dict()["memory"]
    assert batch_fields(4095) == {"max_batch_size": 4095, "max_batch_size_capped": False}
    assert batch_fields(None)["max_batch_size_capped"] is False
    assert batch_fields(7, math.inf)["max_batch_size_capped"] is False  # a search bounded by the asked batch


def test_fit_rows_carry_the_capped_batch():
    """``gpuplan fit`` on an H200 with 128 + 128 tokens: gpt2's row holds 4,096 or more (capped), Llama-3.1-8B's
    498 (the same number estimate gives, not capped)."""
    gpu = load_gpu("h200")
    rows = {r.model: r for r in what_fits({"task": "infer", "prompt_tokens": 128, "output_tokens": 128}, gpu, 1,
                                         models=["openai-community/gpt2", "meta-llama/Llama-3.1-8B"])}
    gpt2, llama = rows["openai-community/gpt2"], rows["meta-llama/Llama-3.1-8B"]
    assert (gpt2.max_batch_size, gpt2.max_batch_size_capped) == (4096, True)
    assert llama.max_batch_size_capped is False and llama.max_batch_size == estimate(dict(
        model="llama-3.1-8b", task="infer", gpu="h200", prompt_tokens=128, output_tokens=128)).memory.max_batch_size


def test_a_recipe_layout_that_does_not_fit_is_not_called_as_set():
    """Walk s20: QLoRA of Qwen2.5-14B on an RTX 4070 Ti SUPER (paged 8-bit AdamW, bf16 embeddings, checkpointing: a
    setup recommend --have ranks) said 'micro-batch 1 x accumulation 1: as set: the recipe's 1 x 16 would not fit',
    though neither was set: 1 x 16 holds the LoRA gradients whole beside the next micro-step (16.10 GiB of 15.92),
    1 x 1 does not (15.82). The note says why and what the run's global batch then is."""
    from gpuplan import estimate

    plan = estimate({"model": "qwen2.5-14b", "task": "train", "method": "qlora", "gpu": "rtx-4070-ti-super",
                     "optimizer": "paged-adamw-8bit", "qlora_fp32_upcast": False, "grad_checkpointing": "full"})
    text = json.dumps(plan.to_dict())
    assert plan.verdict.fits and plan.scenario["grad_accum_steps"] == 1 and "as set" not in text
    assert ("the recipe's 1 x 16 would not fit GeForce RTX 4070 Ti SUPER (accumulation holds a whole gradient buffer "
            "beside the next micro-step), so 1 x 1, a global batch of 1 sequence against the recipe's 16") in text


def test_qlora_embeddings_are_named_in_the_cards_16_bit_dtype():
    """s24 fuzz: on a card without bf16 (GeForce RTX 2080 Ti, T4) QLoRA computes in fp16, and its embeddings left
    in the compute dtype were called "bf16 embeddings" (fit, recommend, estimate's changes), and from fp32 the QLoRA
    changes set bf16-mixed, which the T4 refused, so estimate offered none."""
    from gpuplan import fit, recommend

    row = fit("rtx-2080-ti", {"task": "train"}, models=["llama-2-13b"]).rows[0]
    assert row.fields["precision"] == "fp16-mixed" and "fp16 embeddings" in row.change
    assert "bf16" not in row.change
    on_ampere = fit("rtx-3080", {"task": "train"}, models=["olmo-2-7b"]).rows[0]
    assert "bf16 embeddings" in on_ampere.change, on_ampere.change
    ranked = recommend({"model": "llama-2-13b", "task": "train", "method": "qlora"}, have=["rtx-2080-ti"], top=3)
    mine = [x for x in ranked.owned if x.gpu_id.endswith("2080-ti")]  # the card --have names
    assert mine and all("bf16 embeddings" not in x.techniques for x in mine)
    assert any("fp16 embeddings" in x.techniques for x in mine)
    plan = estimate({"model": "llama-3.1-8b", "task": "train", "method": "full", "precision": "fp32", "gpu": "t4"})
    qlora = [x for x in plan.suggestions if x.fields.get("method") == "qlora"]
    assert qlora and all(x.fields["precision"] == "fp16-mixed" for x in qlora)
    assert any(x.fits for x in qlora)
