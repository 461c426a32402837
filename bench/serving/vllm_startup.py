"""Score gpuplan's vLLM startup memory against public vLLM logs (bench/serving/vllm_startup_cases.yaml).

    python bench/serving/vllm_startup.py [--out bench/results/vllm_startup.md]

For each case: the weights ("Model loading took"), the KV pool (GiB), KV tokens ("GPU KV cache size") and the
concurrency ("Maximum concurrency for N tokens per request") gpuplan predicts against what vLLM printed. Positive
error = gpuplan more generous than vLLM (the unsafe direction; for weights: gpuplan heavier). A pool vLLM logged as
zero or negative (it refused to start) is scored as a verdict: does gpuplan's pool come out empty too; a case
marked ``started`` (vLLM served it, the pool not printed) asks whether gpuplan's pool holds one request of
``max_model_len``. Check rows are summed up per card class (datacenter SXM, PCIe datacenter, workstation,
consumer) against issue 31's goal of 5 % on KV tokens. Prints the tables and writes them as markdown.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))

from gpuplan import estimate  # noqa: E402
from gpuplan.hardware import load_gpu  # noqa: E402

CLASSES = ("datacenter SXM", "PCIe datacenter", "workstation", "consumer")
GOAL_PCT = 5.0  # issue 31: "vLLM startup KV tokens <= 5% per card class" (held-out median)
QUANTITIES = (("KV pool", "kv_gib"), ("KV tokens", "kv_tokens"), ("weights", "weights_gib"),
              ("concurrency", "concurrency"))

# What changed the check rows' medians, kept with the table it explains (the same rows scored by the code before
# and after; `git log bench/serving/vllm_startup_cases.yaml` has the rows' history).
HISTORY = """Per card class, check rows' KV tokens median |error| before -> after (issue 31, item 5; gpuplan 4f4fe4d ->
this branch): datacenter SXM 1.8% -> 1.8% (n 2), PCIe datacenter 4.7% -> 3.6% (n 3), workstation 1.8% -> 1.8%
(n 2), consumer 7.7% -> 4.3% (n 3); all check rows 2.9% -> 2.9% (n 10), worst +18.6% -> +7.7% on the generous
side. The rules that moved them, each from vLLM's code: V0 from 0.6.5 samples the profiling batch (top-k = vocab
- 1) on the driver rank only and keeps the smallest rank's blocks, so its pool is the driver's (vllm#13061's 2x
RTX 4090: +18.6% -> +4.3%; PR #10511's TP 2 pool +0.7% -> +0.1%); V0 before 0.6.5 chunked its prefill at 512
tokens (PR #10544 raised it to 2,048; vllm#10517's RTX 3090 at 35k, a new row: -4.0% -> -1.3%); V1 0.8.0-0.9.0
counted the CUDA context as non-torch memory (PR #19312 replaced the device-wide count; the L40S 0.8.4 row +4.7%
-> +3.6%, the 4x A10 0.8.5 row -7.6% -> -12.4%, whose gpu_memory_utilization the log does not give: -2.6% at
0.92). vllm#33155's 0.14.1 gpt-oss-120b row is read at its logged 0.97 (it was scored as a 0.9 refusal) and its
0.11.2 run that started with an 85K context is a verdict row. Open: one RTX 4090 on 0.19 (+7.7%: ~0.35 GiB that
no rule here explains), Llama-4-Scout TP 4 on H100s (+17% pool: vLLM 0.19 loads 53.12 GiB per rank where the
checkpoint's share is 50.6), TP over bridged NVLink pairs (RTX 3090, A6000) takes the NVSwitch H100s' non-torch
figure for want of a log.

V0 before 0.6.5 at TP 8 on NVSwitch Hopper (session 6): NCCL's NVLink SHARP buffers, 4.95 GiB per GPU at 8 ranks
(vllm#9699's own on/off pair on 8 H200s, a calibration row), now count as V0's non-torch memory; no other row has
V0 with more than 2 GPUs, so none moved. Its NVLS-on row stays +50.8% (26,528 blocks against the 17,595 logged):
without NVLS gpuplan holds 31,677 blocks where the issue logged 22,7xx, so about 8.6 GiB per GPU of Llama-3.1-405B
at TP 8 in that build is in none of gpuplan's parts (weights 94.5 GiB, profiling peak 0.6 GiB at 1,024 tokens and
sequences, non-torch 0.35 GiB). Not fitted: one source, and dstack's 8 H100 405B rows (load_accuracy.md) show a
gap of the same kind but not the same size.

Session 8: before 0.6.5 on Hopper, V0's non-torch memory is at least the H100 figure 0.6.5 logged (PR #10511: 1.79
GiB at TP 1, 3.58 at TP 2), since 0.6.3's and 0.6.4's accounting count at least what 0.6.5's does
(engines/vllm.py `_hopper`); the RTX 3090's 0.35 stays on other cards. The row above goes +50.8% -> +31.7%
(23,168 blocks); about 5.4 GiB per GPU of that build at 1,024 sequences is still in none of gpuplan's parts.
dstack's pool falls to 97k tokens, 6% above the 91,680 its source states.

Session 13 (s13-kvfresh), a held-out set of 13 logs found after the constants were set: vLLM-benchmarking's A100
runs (0.10.1: Qwen2-7B at 0.25 / 0.5 / TP 2, gpt-oss-120b TP 4) and llm-d-benchmark's H100 runs (0.14-0.15:
Llama-3.1-8B, Qwen3-0.6B at 16k and 32k, gpt-oss-20b and -120b, Llama-3.3-70B FP8 at TP 1 and 2, Qwen3-32B at TP 1
and 2). Two rules from vLLM's code, none fitted to them: (1) up to 0.19 "GPU KV cache size" is the pool's block ids
shared evenly over the KV-cache groups times the block size (``num_blocks // len(kv_cache_groups) *
min_block_size``, vllm#40691), so a sliding-window layer counts every token: gpt-oss-120b TP 4 +70.6% -> -0.7%;
(2) the A100 runs log "Using FlashInfer for top-p & top-k sampling", whose sampler keeps ~14 B per logit (counted
from the code) where the sort keeps 38.9: a scenario input (``flashinfer_sampler``), not a version rule, since
vllm#23278 sorted at the same 0.10.1. Their pools before -> after: -18.7 / -3.9 / -4.0 / -3.4% -> -0.7 / -0.2 / -1.2
/ -0.7%. Check rows' KV tokens median |error| with the new rows, the code before -> after: PCIe datacenter 4.1% ->
1.0% (n 7, worst +70.6% -> -12.4%), datacenter SXM 1.8% -> 1.7% (n 2), workstation 1.8%, consumer 4.3% (unchanged);
all 3.7% -> 1.8% (n 14). Datacenter SXM pool median 0.4% (n 14), the
H100 rows within 0.7% but one: llm-d-benchmark's gpt-oss-120b on one H100 started with 3.33 GiB where gpuplan's
pool is empty (its gpt-oss-20b twin, same vocabulary, matches at -0.0%, so its ~7.4 GiB sampler peak should leave the
120b none: open, the source gives no peak of its own).
A 14th row is the FlashInfer input's control: the same cluster's A100 40GB pair at the same 0.10.1 logs "FlashInfer
is not available. Falling back to the PyTorch-native implementation", is scored with the sort and lands at -3.5%;
its 0.42 GiB gap, like the -1.2% of the 80 GB TP 2 row, is V1's NVLink TP non-torch figure (0.55 GiB against 0.13)
taken for an A100 PCIe whose runs had no P2P (the logs: "lacks GPU P2P capability", "spans across nodes"): open,
gpuplan has no input for a bridged or unbridged PCIe pair."""


def card_class(gpu: str) -> str:
    """The card class a row is summed under: GeForce cards are consumer, RTX workstation cards workstation, and a
    datacenter card is PCIe unless it sits on a baseboard (SXM, OAM, superchip modules)."""
    spec = load_gpu(gpu)
    if spec.segment in ("consumer", "workstation"):
        return spec.segment
    return "PCIe datacenter" if spec.form_factor.startswith("PCIe") else "datacenter SXM"


def predict(scenario: dict) -> dict[str, float]:
    scenario = {"task": "infer", "engine": "vllm", **scenario}
    if str(scenario["model"]).startswith("bench/"):
        scenario["model"] = str(ROOT / scenario["model"])
    memory = estimate(scenario, advise=False).memory
    engine = memory.engine
    return {"kv_gib": engine["available_kv_cache_gib"], "kv_tokens": engine["kv_cache_tokens"],
            "weights_gib": memory.weights_gib, "concurrency": engine["max_concurrency_at_max_model_len"]}


def pct(pred: float, real: float) -> float:
    return 100 * (pred - real) / real


def score(cases: list[dict]) -> list[dict]:
    """One row per case: its role, card class, gpuplan's values and the signed % error of each quantity logged
    (None where the case logged none, or where vLLM refused to start: that is a verdict, not an error)."""
    rows = []
    for c in cases:
        pred = predict(c["scenario"])
        refused = "kv_gib" in c and c["kv_gib"] <= 0
        errors = {what: pct(pred[key], c[key]) if key in c and not (refused and key == "kv_gib") else None
                  for what, key in QUANTITIES}
        rows.append({"case": c, "pred": pred, "errors": errors, "refused": refused,
                     "role": "excluded" if c.get("excluded") else c.get("role", "check"),
                     "class": card_class(c["scenario"]["gpu"])})
    return rows


def class_medians(rows: list[dict], what: str = "KV tokens") -> dict[str, list[float]]:
    """Signed errors of the check rows per card class for one quantity."""
    out: dict[str, list[float]] = {k: [] for k in CLASSES}
    for r in rows:
        if r["role"] == "check" and r["errors"][what] is not None:
            out[r["class"]].append(r["errors"][what])
    return out


def verdict(r: dict) -> str | None:
    c, kv = r["case"], r["pred"]["kv_gib"]
    if r["refused"]:
        return (f"{c['id']}: vLLM logged {c['kv_gib']:+.2f} GiB (refused to start); gpuplan's pool {kv:.2f} GiB "
                f"({'refuses too' if kv <= 0.01 else 'would start: wrong'})")
    if c.get("started"):
        ok = r["pred"]["concurrency"] >= 1
        return (f"{c['id']}: vLLM started; gpuplan's pool {kv:.2f} GiB holds {r['pred']['concurrency']:.2f} "
                f"requests of max_model_len ({'starts too' if ok else 'would refuse: wrong'})")
    return None


def _fmt(v: float | None, spec: str) -> str:
    return "" if v is None else format(v, spec)


def tables(rows: list[dict]) -> list[str]:
    lines = ["| case | vLLM | card class | role | pool logged GiB | gpuplan GiB | err % | tokens logged | "
             "gpuplan tokens | err % |", "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        c, e = r["case"], r["errors"]
        logged = "" if "kv_gib" not in c else f"{c['kv_gib']:.2f}" + ("*" if c.get("derived") else "")
        why = f": {c['excluded']}" if c.get("excluded") else ""
        lines.append(f"| {c['id']} | {c['scenario'].get('engine_version')} | {r['class']} | {r['role']}{why} | "
                     f"{logged} | {r['pred']['kv_gib']:.2f} | {_fmt(e['KV pool'], '+.1f')} | "
                     f"{_fmt(c.get('kv_tokens'), ',')} | {r['pred']['kv_tokens']:,} | {_fmt(e['KV tokens'], '+.1f')} |")
    lines += ["", f"Check rows per card class (goal: KV tokens median |error| <= {GOAL_PCT:g} %):", "",
              "| card class | KV tokens n | median abs | worst | KV pool n | median abs | worst |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    tokens, pools = class_medians(rows, "KV tokens"), class_medians(rows, "KV pool")
    for k in CLASSES:
        cells = []
        for errs in (tokens[k], pools[k]):
            worst = max(errs, key=abs) if errs else None
            mid = statistics.median(map(abs, errs)) if errs else None
            cells += [str(len(errs)), _fmt(mid, ".1f") + "%" * bool(errs), _fmt(worst, "+.1f") + "%" * bool(errs)]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    summary = ["", "| quantity | rows | n | median abs error | most generous | most conservative |",
               "|---|---|---:|---:|---:|---:|"]
    for what, _ in QUANTITIES:
        for role in ("calibration", "check", "excluded"):
            errs = [r["errors"][what] for r in rows if r["role"] == role and r["errors"][what] is not None]
            if errs:
                summary.append(f"| {what} | {role} | {len(errs)} | {statistics.median(map(abs, errs)):.1f}% | "
                               f"{max(errs):+.1f}% | {min(errs):+.1f}% |")
    return lines + summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench/results/vllm_startup.md"))
    args = ap.parse_args()
    rows = score(yaml.safe_load((HERE / "vllm_startup_cases.yaml").read_text()))
    verdicts = [v for v in map(verdict, rows) if v]
    text = "\n".join(["# vLLM startup memory: gpuplan against public logs", "", *tables(rows), "",
                      "Calibration rows set the constants in overheads.py (they check the arithmetic, not the "
                      "model); check rows are independent. * pool derived from the logged parts: requested - "
                      "weights - peak - non-torch.", "", HISTORY, "", *[f"- {v}" for v in verdicts]]) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
