"""Published serving runs at a load, replayed through ``gpuplan.estimate`` (issue 31 item 1): the plan's own
``load`` (users or a rate) and ``offline`` (the batch queued at once) against what the benchmark client printed.

    python bench/serving/load_accuracy.py [--out bench/results/load_accuracy.md]

Each row of bench/data/serving_load_runs.csv (its ``source`` column names where it was published) becomes a scenario
as a user would write it: the engine and release, the model, the card and tensor parallelism, the engine's memory
flags, and the load (``users`` and ``num_requests``, or ``rate_rps``, or ``batch_size`` for an offline run) with the
run's lengths (``length_spread`` as the client drew them: 0 for fixed lengths), and the prefix cache as the
client's code leaves it where it does (``prefix_hit_tokens``, ``warm_requests``: :func:`cached_ttft_ms`). The
numbers compared are the ones the plan shows: median (or mean, as the source gives) TTFT and TPOT, and request
throughput. Every row is held out:
no constant of gpuplan was fitted on these runs. error = (gpuplan - measured) / measured.

The issue's goals, for the rows this bench can reach: TTFT p50 within 20 %, TPOT within 10 % (median |error|).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))

from gpuplan import estimate  # noqa: E402
from gpuplan.hardware import load_gpu  # noqa: E402
from gpuplan.model.catalog import load_model  # noqa: E402
from gpuplan.speed.bands import model_class  # noqa: E402
from gpuplan.speed.flops import matmul_params  # noqa: E402
from gpuplan.speed.gemm import peak_flops  # noqa: E402

DATA = ROOT / "bench" / "data" / "serving_load_runs.csv"
GOALS = {"TTFT": 0.20, "TPOT": 0.10}
ABOVE = "TTFT, rows above the floor"
# What the misses say (read off the rows below; kept with the table when it is regenerated).
NOTES = """What the misses say, row by row:

- **SGLang, dense (Llama-3.3-70B on 4 H200, Poisson 1-4 requests/s):** median TTFT within 13 % (goal met); the
  source gives no TPOT.
- **tt-inference-server#340 (A100, one request at a time): the release.** The report names no vLLM commit; its
  dates (2025-06-24, 2025-07-18) put it at 0.9.1 and 0.9.2 (PyPI), before async scheduling (0.14): the engine
  loop adds to every step instead of hiding behind it. Read that way, TPOT went from -34 % to -18 % (Qwen3-1.7B)
  and from -19 % to -11 % (Qwen3-30B-A3B).
- **Piecewise CUDA graphs: most of the rest of those TPOTs.** vLLM V1 before 0.11 ran each layer's attention
  eagerly between piecewise CUDA graphs (the default `cudagraph_mode` until v0.11.0 turned on FULL_AND_PIECEWISE);
  gpuplan now adds 14.3 us per layer and step for those releases (overheads.VLLM_PIECEWISE_GRAPH_LAYER_S,
  measured in vLLM PR #20059 on Qwen2.5-1.5B, not on these rows). TPOT: Qwen3-30B-A3B (48 layers, +0.69 ms a
  step) -10..-14 % -> -3..-7 %, Qwen3-1.7B (28 layers, +0.40 ms) -17..-21 % -> -8..-12 %. What is left is the
  host: the same report's Qwen3-0.6B (not scored here) decodes in 4.2 ms and Qwen3-1.7B in 4.6 ms; the larger
  model reads 2.2 GB more weights per step, at least 1.1 ms at the A100's 2.04 TB/s, yet its steps are 0.4 ms
  longer. Something the two share (the engine loop on that host) sets the pace;
  overheads.VLLM_V1_STEP_OVERHEAD_S (0.77 ms) was measured on KubeCon's H100 host.
- **tt340's prompts were in vLLM's prefix cache, and the bench now replays the client's cache.** The report's
  client draws prompt `i` of every run with seed `42 + i` (tt-inference-server `CleanedPromptGenerator`:
  `torch.manual_seed`, then `torch.randint` of the run's length), so each prompt is the start of the same-index
  prompt of every longer run; the runs go in ascending prompt length against one server (vLLM V1 caches prefixes
  by default), and vLLM's `benchmark_serving.py` sends the first prompt once before the timed run. The rows'
  `prefix_hit_tokens` (the previous run's prompt, less its last, partial block) and `warm_requests` (1) say so,
  and `cached_ttft_ms` weighs the two cases (concurrency 1: the requests never meet). Read from the client's code,
  not from the TTFTs: no constant moved. Before (every prompt computed whole): Qwen3-30B-A3B TTFT +6..+212 %
  (median +105 %), Qwen3-1.7B +18..+69 %; now -10..-1 % on the five MoE rows of 1,024 tokens or more, -1 %
  and +4 % on Qwen3-1.7B's two. The prompts below the floor (`floor_ms`, the whole prompt at datasheet peak) are
  the ones this explains: 4,096 tokens in 75 ms where the FLOPs alone take 93 ms (3,056 of them cached).
  Not modelled, and it could only add hits: tt-inference-server's trace capture, which sends requests of every
  length before the sweep on Tenstorrent cards.
- **The fixed cost of a request depends on the host and the network: the 128-token rows' +36..+72 %.** gpuplan
  adds 14.7 ms to every TTFT (overheads.VLLM_V1_REQUEST_S: the median, over the 7 calibration configurations of
  bench/serving/serving_cases.yaml, of measured less simulated TTFT at the lowest rate; all are inference-perf
  clients in a Kubernetes cluster: 6-15 ms for inference-sim's 4, which address the pod directly, 21-23 ms for
  KubeCon's 3, through a ClusterIP Service). A client on the same host paid 6-9 ms on tt340's A100 (Qwen3-0.6B
  and -1.7B at 128 tokens: TTFT less one step), and kvcached's H100 host 28-30 ms at 16 requests/s (TTFT 36 ms
  for a 0.6B model whose 512-token prefill takes about 2 ms): no one constant is within 20 % of all three, and
  vLLM's code does not set it (HTTP parsing, tokenizing, the ZMQ hand-off to the engine core and the first
  streamed chunk are Python on the host's CPU). A same-host value would need a public single-request run outside
  the held-out rows; none with its host stated was found.
- **vLLM, 500 requests at once through the API server (kvcached offline): TTFT -88 %, throughput +135 %.** The run
  took 5.4 s, 10.8 ms per request: vLLM's API server is one process by default (`--api-server-count`, vLLM PR
  #17546, added to scale it out) that tokenizes each request and detokenizes and streams each of its tokens, so a
  burst queues in front of the engine (median TTFT 2.9 s, about 67 requests streaming at a time, each at 5.7 ms
  a token) and the server, not the GPU, sets the pace. gpuplan's per-request latency is a delay each request
  pays, not a queue; an offline run through the LLM class (vllm bench throughput) has no such server.
- **Two sources added, both vLLM's own publications, each with its setup stated.** The vLLM blog's FP8 KV-cache
  post (2026-04-22: one H100, v0.19.1, 150 requests at concurrency 8, ~20k prompt and ~2k output tokens): Llama-3.1-8B
  TTFT +6 % and +7 % (BF16 and FP8 KV), ITL -7 % and -21 %, requests/s +4 % and +16 %; gpt-oss-20b TTFT -22 % and
  -20 %, ITL -19 % and -27 %, requests/s +21 % and +31 %. Before the fix named in its commit the gpt-oss TTFTs were
  +331 % and +347 %: gpuplan timed vLLM's prefill of gpt-oss with transformers' eager attention (gpt-oss has no SDPA
  path in transformers; vLLM runs its own FlashAttention-3 with sinks, speed.inference.engine_attention).
  vLLM's recipe for Nemotron-3-Nano (FP8 on one H200, v0.12.0, 1,024 users, 2,048 prompts of 1,024 + 1,024
  tokens): TPOT +1 %, requests/s -9 %, mean TTFT -3 % (4,361 against 4,491 ms) but median TTFT +166 % (4,089
  against 1,535 ms): the measured TTFTs are skewed (median 1.5 s, mean 4.5 s, p99 15.5 s: the first 1,024 requests
  arrive at once and queue for their prefills, the second 1,024 arrive one by one as the first finish and start
  at once); gpuplan's are spread evenly (p90 8.6 s). gpuplan's pool holds 841 of the 1,024 sequences of 2,048
  tokens (about 110 MB each, most of it the Mamba layers' state), so its run preempts 323 times; the recipe
  publishes no startup log to say how many vLLM held, so the cause is not settled.
- **What shows across sources, and what does not.** Where the client's prompts are fresh (the vLLM blog's) or
  their cache state is replayed (tt340 from 1,024 prompt tokens), vLLM TTFT lands within 22 % (the two sources'
  11 such rows: -22..+7 %): the chunked-prefill budget shared with running decodes (serving/simulate.py, vLLM V1's
  Scheduler.schedule: 2,048 tokens a step on an A100 in 0.9, 8,192 on an H100), the closed loop's queueing and the
  prefix cache are in the simulation. The large misses left are each source's own: the per-request cost of
  tt340's and kvcached's hosts, kvcached's API-server burst, the Nemotron run's wave shape.
- **Looked at and left out** (setup not stated in full, or a feature gpuplan does not model): vLLM recipes whose
  card is ambiguous ("8xH200 (or H20)", "80G*1 GPU") or on H20 (not in the catalog); tt-inference-server's other GPU
  reports (concurrency 1 only, same client); InferenceX's gpt-oss H100 sweep (TPOT only in the thread);
  inference-atlas (DGX Spark with MTP speculative decoding); LambdaLabsML/vllm-benchmark (ShareGPT bursts on
  0.6.0 with multi-step scheduling); vLLM #13412 (V0, --num-scheduler-steps 10); blog posts whose tables are
  images (vLLM on MI300X) or lie past the stored page's start.
"""


def scenario(row: dict) -> dict:
    """The row as the scenario a user would give ``gpuplan estimate``."""
    tp = int(row["tp"])
    s = {"model": row["model"], "task": "infer", "engine": row["engine"], "gpu": row["gpu"], "num_gpus": tp, "tp": tp,
         "prompt_tokens": int(row["prompt_tokens"]), "output_tokens": int(row["output_tokens"])}
    for key, kind in (("engine_version", str), ("gpu_memory_utilization", float), ("max_model_len", int),
                      ("quant", str), ("kv_cache_dtype", str)):
        if row[key]:
            s[key] = kind(row[key])
    if row["mode"] == "offline":
        return {**s, "batch_size": int(row["num_requests"])}
    load = {"users": int(row["users"])} if row["mode"] == "closed" else {"rate_rps": float(row["rate_rps"])}
    return {**s, **load, "num_requests": int(row["num_requests"]), "length_spread": float(row["length_spread"])}


def floor_ms(row: dict) -> float:
    """The least time the row's cards could take to prefill one of its prompts, at their datasheet peaks: the
    larger of the prompt's matmul and attention FLOPs (``2 N p`` for the ``N`` parameters a token multiplies, the
    output head once; ``4 a d p^2 / 2`` per full-attention layer, causal) over the dense bf16 rate, and the weights
    the prompt reads (every dense weight once, of each MoE layer's experts the ones ``p`` tokens reach under uniform
    routing, ``E (1 - (1 - k/E)^p)``) over the memory bandwidth. A measured TTFT below it (fixed costs included)
    cannot have computed the whole prompt: its prompt was found in the engine's prefix cache."""
    m, gpu, tp, p = load_model(row["model"]), load_gpu(row["gpu"]), int(row["tp"]), int(row["prompt_tokens"])
    head = m.vocab_size * m.hidden_size
    attention = sum(4 * m.num_heads * m.head_dim * (min(p, layer.window) if layer.window else p) * p / 2
                    for layer in m.layers)
    flops = 2 * (matmul_params(m) - head) * p + 2 * head + attention
    read = head
    for layer, count in m.layer_kinds():
        for lin in layer.linears:
            if lin.group == "experts" and lin.count > 1:
                k, e = layer.experts_per_token, lin.count
                read += count * lin.weight_params * (1 - (1 - k / e) ** p)
            else:
                read += count * lin.weight_params
    return 1e3 * max(flops / (peak_flops(gpu, "bf16") * tp), 2 * read / (gpu.bandwidth_gbs * 1e9 * tp))


def predict(row: dict) -> dict[str, float]:
    """TTFT, TPOT and ITL (ms, the row's statistic) and requests/s of the plan's run; TTFT with the client's
    prefix-cache state where the row gives it (:func:`cached_ttft_ms`)."""
    plan = estimate(scenario(row), advise=False)
    run = plan.offline if row["mode"] == "offline" else plan.load
    stat = row["statistic"]
    ttft = cached_ttft_ms(row) if row["prefix_hit_tokens"] else getattr(run, f"{stat}_ttft_ms")
    return {"TTFT": ttft, "TPOT": getattr(run, f"{stat}_tpot_ms"),
            "ITL": getattr(run, f"{stat}_itl_ms"), "req/s": run.request_throughput}


def cached_ttft_ms(row: dict) -> float:
    """Mean TTFT of a one-request-at-a-time run whose prompts the engine's prefix cache partly holds when they
    arrive, as the row's client left it: each prompt's first ``prefix_hit_tokens`` tokens, and the whole prompt
    (all but the block vLLM recomputes for the logits, ``(p - 1) // 16 * 16`` cached) for ``warm_requests`` of
    them. At concurrency 1 the requests do not meet, so the run's mean TTFT is the two cases' TTFTs weighted by
    their counts, each the median of a plan whose ``shared_prefix_tokens`` is that many tokens (every request
    after the plan's first finds them).

    tt-inference-server#340's client (tenstorrent/tt-inference-server ``benchmarking/run_benchmarks.py``, vLLM's
    ``benchmark_serving.py`` with its ``cleaned-random`` dataset): prompt ``i`` of every run is drawn by
    ``CleanedPromptGenerator.generate_stable_tokens`` with seed ``42 + i`` (``torch.manual_seed`` then
    ``torch.randint(0, vocab, (input_len,))``), so it is the start of prompt ``i`` of every longer run; the runs
    go in ascending prompt length against one server (``benchmarking/benchmark_config.py``
    ``BENCHMARK_ISL_OSL_PAIRS``, the report's order), so each finds the previous run's prompts in the cache (the
    last, partial block of each excepted: re-tokenizing the decoded text may differ at the cut); and
    ``benchmark_serving.py`` sends the first prompt once before the timed run ("Starting initial single prompt
    test run"), so one request of each run finds its whole prompt."""
    n, p = int(row["num_requests"]), int(row["prompt_tokens"])
    warm, hit, whole = int(row["warm_requests"] or 0), int(row["prefix_hit_tokens"]), (p - 1) // 16 * 16

    def median_ms(cached: int) -> float:
        s = {**scenario(row), "num_requests": max(int(row["num_requests"]), 3)}
        if cached:
            s["shared_prefix_tokens"] = cached
        return estimate(s, advise=False).load.median_ttft_ms

    return ((n - warm) * median_ms(hit) + warm * median_ms(whole)) / n


def source_of(row: dict) -> str:
    """The publication a run comes from: the part of its id before the first dash."""
    return row["id"].split("-", 1)[0]


def source_lines(sources: dict) -> list[str]:
    """The goals' quantities by engine and source: median |error| and median signed error."""
    lines = ["", "By source (the part of each run's id before its first dash; a source's rows share its client, "
             "host and prompts, so one artefact of a source moves all of them):", "",
             "| engine | source | quantity | runs | median abs error | median signed |",
             "|---|---|---|---:|---:|---:|"]
    for (engine, src, q), errs in sorted(sources.items()):
        lines.append(f"| {engine} | {src} | {q} | {len(errs)} | {statistics.median(map(abs, errs)):.1%} | "
                     f"{statistics.median(errs):+.1%} |")
    return lines


def _pair(row: dict, pred: dict, col: str, q: str, spec: str = "{:,.1f}") -> str:
    """"measured / gpuplan" of one quantity (measured "-" where the source does not give it)."""
    measured = spec.format(float(row[col])) if row[col] else "-"
    return f"{measured} / {spec.format(pred[q])}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "load_accuracy.md")
    args = ap.parse_args()
    t0 = time.perf_counter()
    with DATA.open(newline="") as f:
        rows = list(csv.DictReader(f))
    scored, groups, sources = [], {}, {}
    for r in rows:
        pred, floor = predict(r), floor_ms(r)
        cls = model_class(load_model(r["model"]))
        errs = {}
        for q, col in (("TTFT", "median_ttft_ms"), ("TPOT", "median_tpot_ms"), ("ITL", "median_itl_ms"),
                       ("req/s", "request_throughput")):
            if r[col]:
                errs[q] = pred[q] / float(r[col]) - 1
                groups.setdefault((r["engine"], cls, q), []).append(errs[q])
                if q in GOALS:
                    sources.setdefault((r["engine"], source_of(r), q), []).append(errs[q])
        if "TTFT" in errs and float(r["median_ttft_ms"]) >= floor:
            groups.setdefault((r["engine"], cls, ABOVE), []).append(errs["TTFT"])
        scored.append((r, floor, pred, errs))
    lines = ["# Serving at a load: `gpuplan estimate --users / --rate / --batch-size` against published runs", "",
             f"Generated by `python bench/serving/load_accuracy.py` in {time.perf_counter() - t0:.0f} s: "
             f"{len(rows)} runs of bench/data/serving_load_runs.csv, all held out (no constant fitted on them); "
             "error = (gpuplan - measured) / measured on the statistic the source gives (median or mean). "
             f"The goals are judged on every row; '{ABOVE}' leaves out, for reading only, the rows whose measured "
             "TTFT is below what their cards could prefill the prompt in at datasheet peak (`floor_ms`: the "
             "prompt was found in the prefix cache).", "",
             "| engine | class | quantity | runs | median abs error | median signed | worst | goal |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    for (engine, cls, q), errs in sorted(groups.items()):
        goal = GOALS.get(q)
        mark = f"<= {goal:.0%}: {'met' if statistics.median(map(abs, errs)) <= goal else 'not met'}" if goal else ""
        lines.append(f"| {engine} | {cls} | {q} | {len(errs)} | {statistics.median(map(abs, errs)):.1%} | "
                     f"{statistics.median(errs):+.1%} | {max(errs, key=abs):+.1%} | {mark} |")
    lines += source_lines(sources)
    lines += ["", "| run | mode | measured TTFT / gpuplan | TTFT floor | measured TPOT / gpuplan | "
              "measured ITL / gpuplan | req/s measured / gpuplan | errors |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for r, floor, p, e in scored:
        below = " (below: cached)" if r["median_ttft_ms"] and float(r["median_ttft_ms"]) < floor else ""
        lines.append(f"| {r['id']} | {r['mode']} | {_pair(r, p, 'median_ttft_ms', 'TTFT')} | {floor:,.1f}{below} | "
                     f"{_pair(r, p, 'median_tpot_ms', 'TPOT', '{:,.2f}')} | "
                     f"{_pair(r, p, 'median_itl_ms', 'ITL', '{:,.2f}')} | "
                     f"{_pair(r, p, 'request_throughput', 'req/s', '{:,.2f}')} "
                     f"| {', '.join(f'{k} {v:+.0%}' for k, v in e.items())} |")
    text = "\n".join(lines) + "\n\n" + NOTES
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
