"""Replay public llama-bench (and MLX) tables with gpuplan: prompt processing and generation, CUDA and Metal.

    python bench/llama_bench.py [--out bench/results/llama_bench.md] [--fit]

Each row of bench/data/llama-bench.csv (card, model, GGUF type, flash attention, micro-batch, test) becomes an
``engine: llama.cpp`` (or ``mlx``) scenario on one GPU with every layer on it. ``pp512`` is llama-bench's prompt
test: 512 tokens from an empty cache, one sequence: gpuplan's ``512 / time to first token``. ``tg128`` generates 128
tokens from an empty cache: one over the mean decode step, at 64 tokens of context (``@dN``: after N cached
tokens). error = (gpuplan - published) /
published. Rows marked ``fitted`` set the constants of overheads.py (``--fit`` grid-searches them on those rows
only); ``check`` rows are held out; ``excluded`` rows are shown with why and not scored.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import statistics
import sys
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))

from gpuplan import overheads as oh  # noqa: E402
from gpuplan.hardware import load_gpu  # noqa: E402
from gpuplan.model.catalog import load_model  # noqa: E402
from gpuplan.scenario import scenario_from  # noqa: E402
from gpuplan.speed.inference import step_timer  # noqa: E402

DATA = ROOT / "bench" / "data" / "llama-bench.csv"
KERNELS = ROOT / "bench" / "data" / "llama-cpp-cuda-kernels.csv"
# llama.cpp release tags and their dates (b1843: PR #4766's table; b6263: PR #15451's log; b6341: PR #15715's table;
# b7818: PR #19057's table base; b9578: PR #24481's log; b5778: 2025-06-29 at b6263-b6341's pace, as
# bench/data/llama-cpp-cuda-kernels.csv estimates it): a CUDA generation row's graph date to its build.
TAGS = (("2024-01-10", 1843), ("2025-06-29", 5778), ("2025-08-24", 6263), ("2025-09-02", 6341), ("2026-01-24", 7818),
        ("2026-06-11", 9578))


def load_rows(path: Path = DATA) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def backend(row: dict) -> str:
    """cuda / metal / mlx: the kind of kernels the row ran."""
    if row["engine"] == "mlx":
        return "mlx"
    return "metal" if row["gpu"].startswith("apple-") else "cuda"


def scenario(row: dict):
    """The row's scenario: its card, model, type, flash attention, micro-batch and build (:func:`graph_build`)."""
    fields = {"task": "infer", "engine": row["engine"], "model": row["model"], "gpu": row["gpu"], "batch_size": 1,
              "prompt_tokens": 512, "output_tokens": 128, "quant": None if row["quant"] == "none" else row["quant"]}
    gpus = int(row.get("gpus") or 1)
    if gpus > 1:  # llama.cpp's default --split-mode layer: the layers split over the cards, one stage each
        fields.update(num_gpus=gpus, pp=gpus)
    if row["engine"] == "llama.cpp":
        fields.update(flash_attention=row["fa"] or "auto", ubatch_tokens=int(row["ubatch"] or 512))
        if row.get("build") or row.get("graph"):  # the build's own prompt path and kernels (speed/ggml.py)
            fields["engine_version"] = f"b{graph_build(row)}"
    return scenario_from(fields)


def predict(row: dict) -> float:
    """gpuplan's tokens/s for the row's test."""
    s = scenario(row)
    timer = step_timer(s, load_model(s.model), load_gpu(s.gpu))
    test, _, depth = row["test"].partition("@d")  # llama-bench's depth notation: tokens already in the cache
    n, depth = int(test[2:]), int(depth or 0)
    if test.startswith("pp"):
        return n / timer.prefill_s(n, context=depth)
    return 1 / timer.decode_s(1, depth + n / 2)


def graph_build(row: dict) -> int:
    """The llama.cpp build of ``row``: the release tag its ``graph`` date falls on (linear between the known
    :data:`TAGS`, past the last pair at its pace; a PR column's merge is a build with the PR), else its ``build``:
    what bench/data/llama-cpp-cuda-kernels.csv's ``build_from`` estimates, so the same build of each change."""
    if not row.get("graph"):
        return int(row["build"])
    day = date.fromisoformat(row["graph"]).toordinal()
    tags = [(date.fromisoformat(d).toordinal(), b) for d, b in TAGS]
    i = min(max(next((k for k, t in enumerate(tags) if t[0] > day), len(tags)) - 1, 0), len(tags) - 2)
    (d0, b0), (d1, b1) = tags[i], tags[i + 1]
    return round(b0 + (day - d0) * (b1 - b0) / (d1 - d0))


def work(row: dict) -> str:
    """pp / tg: the kind of step the row times. A CUDA prompt run in micro-batches of at most 8 tokens is
    generation's step (MMVQ, not MMQ: speed/ggml.py), so it counts with the tg rows."""
    if row["test"].startswith("tg") or (backend(row) == "cuda" and int(row["ubatch"] or 512) <= 8):
        return "tg"
    return "pp"


def err(row: dict) -> float:
    return predict(row) / float(row["value"]) - 1


def twin(row: dict, rows: list[dict]) -> dict | None:
    """The row of a build from PR #15541 on (Metal's id maps in threadgroup memory) with the same card, model, type,
    test and micro-batch as ``row``, a build before it: the same table's two columns."""
    key = ("gpu", "model", "quant", "fa", "ubatch", "test")
    return next((r for r in rows if r["build"] and int(r["build"]) >= oh.LLAMA_CPP_METAL_MMID_MAP_BUILD
                 and all(r[k] == row[k] for k in key)), None)


def maps_err(row: dict, rows: list[dict]) -> float:
    """(gpuplan - published) / published of the time a build before PR #15541 adds to its twin (:func:`twin`): what
    PR #13388's id maps cost (speed/ggml.py expert_maps_s)."""
    other, n = twin(row, rows), int(row["test"][2:].partition("@")[0])
    published = n / float(row["value"]) - n / float(other["value"])
    return (n / predict(row) - n / predict(other)) / published - 1


def median_abs(errors: list[float]) -> float:
    return statistics.median(abs(e) for e in errors) if errors else float("nan")


def mean_abs(errors: list[float]) -> float:
    return statistics.mean(abs(e) for e in errors)


def _best(rows: list[dict], grid: dict[str, tuple], score=median_abs, error=err) -> tuple:
    """The grid point of overheads constants (name -> values) with the lowest ``score`` of the errors on ``rows``
    (median |error|, or the mean where the median of a few rows would leave one out)."""
    scores = []
    for values in itertools.product(*grid.values()):
        for name, v in zip(grid, values, strict=True):
            setattr(oh, name, v)
        scores.append((score([error(r) for r in rows]), values))
    best = min(scores)
    for name, v in zip(grid, best[1], strict=True):
        setattr(oh, name, v)
    return best


# ggml-org/llama.cpp PR #19057 (CUDA: re-use MLA K data for V in MMA FA), JohannesGaessler's table, column b7818
# (January 2026): RTX 3090, deepseek2 16B Q4_0, pp512@d32768, tokens/s by micro-batch. Not a row of llama-bench.csv:
# it sizes MMQ's weight streaming alone (:func:`fit_mmq_stream`), on how much a step grows over -ub 1's.
MMQ_STREAM_TABLE = {1: 140.61, 2: 158.14, 4: 251.75, 8: 383.29, 16: 554.66, 32: 728.44}


def mmq_stream_errors() -> list[float]:
    """gpuplan's growth of the step over -ub 1's against :data:`MMQ_STREAM_TABLE`'s at each larger micro-batch:
    the attention after 32,768 cached tokens, the same at every micro-batch size, drops out."""
    base = {"id": "pr19057", "engine": "llama.cpp", "gpu": "nvidia-geforce-rtx-3090", "quant": "gguf-q4_0",
            "model": "bench/models/DeepSeek-V2-Lite.json", "fa": "auto", "build": "7818", "graph": "",
            "test": "pp512@d32768"}
    step = {ub: (ub / tps, ub / predict(dict(base, ubatch=str(ub)))) for ub, tps in MMQ_STREAM_TABLE.items()}
    return [(step[ub][1] - step[1][1]) / (step[ub][0] - step[1][0]) - 1 for ub in MMQ_STREAM_TABLE if ub > 1]


def fit_mmq_stream() -> None:
    """Grid-search :data:`~gpuplan.overheads.LLAMA_CPP_MMQ_WEIGHT_BYTES_PER_SM_CYCLE` on :func:`mmq_stream_errors`
    (mean |error|)."""
    scores = []
    for value in (x / 10 for x in range(15, 41)):
        oh.LLAMA_CPP_MMQ_WEIGHT_BYTES_PER_SM_CYCLE = value
        scores.append((mean_abs(mmq_stream_errors()), value))
    score, value = min(scores)
    oh.LLAMA_CPP_MMQ_WEIGHT_BYTES_PER_SM_CYCLE = value
    print(f"mmq stream: LLAMA_CPP_MMQ_WEIGHT_BYTES_PER_SM_CYCLE {value} -> mean |error| {score:.1%} on PR #19057's "
          f"growth of the step over -ub 1 at -ub 2 to 32")


def fit(rows: list[dict]) -> None:
    """Grid-search the constants on the fitted rows, each group on its own rows: MMQ on the CUDA Q4_0 prompts,
    cuBLAS's f16 GEMMs on Ampere on the CUDA F16 prompts,
    CUDA generation's bandwidth share, time per layer and MMVQ's rate on its 1-, 4- and 8-row steps (mean |error|:
    the median of four rows would leave one out), Metal's matmuls on its prompts, Metal's generation on its tg rows,
    MLX's fixed time per token (per step and per layer) on its tg rows, and the time per id of PR #13388's Metal id
    maps on the time its rows add to their twins of a later build (:func:`maps_err`)."""
    fitted = [r for r in rows if r["role"] == "fitted"]
    pick = {"mmq": lambda r: backend(r) == "cuda" and r["quant"] != "none" and work(r) == "pp",
            "cublas f16 ampere": lambda r: backend(r) == "cuda" and r["quant"] == "none" and work(r) == "pp",
            "cuda tg": lambda r: backend(r) == "cuda" and work(r) == "tg",
            "metal pp": lambda r: backend(r) == "metal" and r["test"].startswith("pp") and not r["build"],
            "metal maps": lambda r: backend(r) == "metal" and r["build"] and twin(r, rows) is not None,
            "metal tg": lambda r: backend(r) == "metal" and r["test"].startswith("tg"),
            "mlx tg": lambda r: backend(r) == "mlx" and r["test"].startswith("tg")}
    grids = {"mmq": {"LLAMA_CPP_MMQ_FLOP_PER_SM_CYCLE": tuple(range(600, 2601, 50))},
             "cublas f16 ampere": {"LLAMA_CPP_CUBLAS_F16_AMPERE_SHARE": tuple(x / 100 for x in range(50, 101))},
             "cuda tg": {"LLAMA_CPP_CUDA_DECODE_BANDWIDTH_FRACTION": tuple(x / 100 for x in range(80, 101, 2)),
                         "LLAMA_CPP_CUDA_KERNEL_S": tuple(x * 1e-8 for x in range(200, 301, 5)),
                         "LLAMA_CPP_MMVQ_FLOP_PER_SM_CYCLE": tuple(range(50, 121, 5))},
             "metal pp": {"LLAMA_CPP_METAL_MATMUL_FRACTION": tuple(
                 {"plain": p / 100, "quantized": q / 100} for p in range(50, 101, 2) for q in range(50, 101, 2))},
             "metal tg": {"LLAMA_CPP_METAL_DECODE_BANDWIDTH_FRACTION": tuple(x / 100 for x in range(70, 101)),
                          "LLAMA_CPP_METAL_LAYER_S": tuple(x * 1e-6 for x in range(40, 241, 5))},
             "mlx tg": {"MLX_STEP_OVERHEAD_S": tuple(x * 1e-4 for x in range(0, 21)),
                        "MLX_LAYER_S": tuple(x * 1e-6 for x in range(0, 241, 5))},
             "metal maps": {"LLAMA_CPP_METAL_MAP0_ID_S": tuple(x * 1e-9 for x in range(50, 251, 5))}}
    fit_mmq_stream()
    for name, grid in grids.items():
        sel = [r for r in fitted if pick[name](r)]
        how = "mean" if name == "cuda tg" else "median"
        error = (lambda r: maps_err(r, rows)) if name == "metal maps" else err
        score, values = _best(sel, grid, mean_abs if how == "mean" else median_abs, error)
        print(f"{name}: {dict(zip(grid, values, strict=True))} -> {how} |error| {score:.1%} on {len(sel)} fitted rows")


def kernel_table(path: Path = KERNELS) -> dict[str, list[dict]]:
    """bench/data/llama-cpp-cuda-kernels.csv by model family, each family's rows in date order."""
    table: dict[str, list[dict]] = {}
    for k in load_rows(path):
        table.setdefault(k["family"], []).append(k)
    return {family: sorted(ks, key=lambda k: k["from"]) for family, ks in table.items()}


def groups(rows: list[dict]) -> list[tuple[str, list[dict]]]:
    out = []
    for kind in ("cuda", "metal", "mlx"):
        for test in ("pp", "tg"):
            for role in ("fitted", "check"):
                sel = [r for r in rows if backend(r) == kind and work(r) == test and r["role"] == role]
                if sel:
                    out.append((f"{kind} {test} {role}", sel))
    return out


def report(rows: list[dict]) -> str:
    lines = ["# llama.cpp and MLX on public llama-bench tables: prompt processing and generation", "",
             "Generated by `python bench/llama_bench.py` from bench/data/llama-bench.csv (each row's source is "
             "there). pp512: 512 prompt tokens from an empty cache; tg128: 128 generated tokens. error = (gpuplan - "
             "published) / published; fitted rows set the constants (`--fit`), check rows are held out. CUDA prompt "
             "rows run in micro-batches of at most 8 tokens count as generation (the same MMVQ steps).", "",
             "| backend, test, role | n | median abs error | most generous | most conservative |",
             "|---|---:|---:|---:|---:|"]
    errors = {r["id"]: err(r) for r in rows}
    for name, sel in groups(rows):
        es = [errors[r["id"]] for r in sel]
        lines.append(f"| {name} | {len(sel)} | {median_abs(es):.1%} | {max(es):+.0%} | {min(es):+.0%} |")
    lines += ["", "| row | card | model | type | test | role | published | gpuplan | error |",
              "|---|---|---|---|---|---|---:|---:|---:|"]
    for r in rows:
        pub = float(r["value"])
        lines.append(f"| {r['id']} | {r['gpu']} | {r['model'].split('/')[-1]} | {r['quant']} | {r['test']} | "
                     f"{r['role']} | {pub:,.1f} | {pub * (1 + errors[r['id']]):,.1f} | {errors[r['id']]:+.0%} |")
    why = [f"- {r['id']}: {r['notes']}" for r in rows if r["notes"]]
    return "\n".join([*lines, "", "Notes:", *why, "", *MOE_NOTE, "", *SPLIT_NOTE, ""])


MOE_NOTE = (
    "## Mixture-of-experts models", "",
    "Held-out MoE rows (pr15525-*, pr15631-*, pr16649-*, pr16991-*, pr19378-*-qwen3moe-*, pr13388-*, pr16057-*, "
    "pr15541-*, pr15616-*): "
    "DeepSeek-V2-Lite, Qwen3-30B-A3B, gpt-oss-20b and Mixtral-8x7B on an RTX 3090, RTX 4090, RTX PRO 6000 and "
    "(taken as) ggerganov's M2 Ultra. A prompt's routed experts fill whole tiles (speed/ggml.py "
    "`expert_tile_rows`): on CUDA `mul_mat_id` runs one MMQ launch over every expert with the micro-batch's tokens "
    "as `ncols_max` (`ggml_cuda_mul_mat_q`), so `mul_mat_q_case` sizes the tiles for all the tokens (128 wide at "
    "`-ub` 128 and up) and Qwen3-30B-A3B's 32 rows an expert at `-ub 512` do four times their math; on Metal "
    "`kernel_mul_mm_id` runs 32 of an expert's tokens a threadgroup, so an expert sent 33 runs two (counted over "
    "the spread of uniform routing). CUDA MoE prompts: +195 % at worst (DeepSeek-V2-Lite at `-ub 128`; +166 % at "
    "256, Qwen3-30B-A3B over 4 RTX 4090s +7 %) -> +65 % at worst (DeepSeek-V2-Lite at `-ub 32`), mean |error| "
    "60 % -> 21 %, median 10 % -> 16 % (Qwen3-30B-A3B at `-ub 32`/64 -12/-8 % -> -14/-17 %, gpt-oss-20b at "
    "`-ub 1024`/2048 +2/+1 % -> -9/-4 %); Metal MoE prompts: Qwen3-30B-A3B +101 % to +115 % -> +72 % to +75 %, "
    "Mixtral-8x7B +10 % -> +0 %, then +21 % to +22 % and -4 % with their build's id maps (below). Open: "
    "DeepSeek-V2-Lite (MLA, 2 shared experts, an August 2025 build) +22 % to +65 % on its CUDA prompts and "
    "+81 % / +84 % at `-ub 1` / 8 (+14 % / +53 % since session 18 times each build's kernels: 'Counted (session "
    "18)' below); gpt-oss-20b generation 40-44 % slower on an RTX 3090 and 4090 than gpuplan said (+14 % to +20 % "
    "since; 12-13 % faster on the RTX PRO 6000). Metal MoE generation is -6 % and -7 %.", "",
    "Metal's id maps (session 15). PR #13388's rows ran that PR's `mul_mat_id` (ggml-metal.m and "
    "ggml-metal.metal at ggml-org/ggml@878a093f, the PR's sync; timed as b5330): `kernel_mul_mm_id_map0` runs "
    "one threadgroup per expert, each walking the whole `tokens x k` id table in device memory one id after "
    "another and copying each routed token's row into an f16 buffer, then the matmul, then "
    "`kernel_mul_mm_id_map1` copying the routed rows of the f32 result back, for each of a layer's three "
    "`mul_mat_id` (speed/ggml.py `expert_maps_s`). The experts' threadgroups run side by side, so the walk costs "
    "`tokens x k` ids whatever the number of experts: 4,096 ids a call for Qwen3-30B-A3B at pp512 (8 of 128), "
    "1,024 for Mixtral (2 of 8). PR #15541 (2025-08-26) built the maps in threadgroup memory and dropped the "
    "copies; its own M2 Ultra table, master against PR column (DeepSeek-V2-Lite Q4_K_M and Q8_0, pp512 to "
    "pp2048 in one `-ub 2048` micro-batch), puts 158-166 ns on each id of each call, 37 of them the copies at "
    "the bandwidth: 125 ns an id (`LLAMA_CPP_METAL_MAP0_ID_S`, fitted on those five master rows against their "
    "twins, median 2.1 %; the PR column and the Q8_0 pp2048 master row held out: +2 % to +20 % and -1 %). Held "
    "out, Qwen3-30B-A3B pp512 +72..+75 % -> +21..+22 % (92 ms of maps in a 377 ms prompt), Mixtral +0 % -> -4 %. "
    "Builds from b6293 (and today's, with no `--engine-version`) are timed without them.", "",
    "Left: Qwen3-30B-A3B's prompts still ~65 ms short, ~1.4 ms a layer, the same in Q4_0, Q8_0 and F16 (so not "
    "the dequantization per tile). Read and ruled out: waves of the map kernel (128 threadgroups of 512 or 192 "
    "threads fit at once on the 76 cores, which hold 384 to 3,072 threads each: philipturner/metal-benchmarks); "
    "the empty threadgroups of the `((ne21 + 31)/32, (ne01 + 63)/64, ne02)` grid (an expert's tiles past its "
    "tokens return at once; ~5 M at this prompt), a cost today's path shares, where PR #15541's DeepSeek-V2-Lite "
    "rows leave gpuplan short by a gap that shrinks as the prompt grows (Q8_0 12 ms at pp512, 6 ms at pp1024) "
    "while those threadgroups grow as its square; the router's softmax and argsort over 128 experts (one "
    "128-thread threadgroup a token, about 1 %); the weighting multiply and the 7 adds that sum the 8 experts' "
    "outputs, not fused on Metal before PR #14596 (July 2025) and not in gpuplan's element-wise bytes for any "
    "MoE (~0.3 MB a token and layer, ~12 ms here, 3 %: a change for CUDA's MoE prompts too). Not measured: "
    "real routing, less even than uniform (more half-empty 32-column tiles). The gap is not the old build's alone: "
    "PR #15616's M2 Ultra table (pr15616-*, held out, after PR #15541) has Qwen3-30B-A3B Q8_0 at +14 % (pp512) "
    "and +2 % (pp2048) beside its dense Qwen2.5-Coder-7B Q8_0 at -4 % and -11 %, so ~15 % particular to the "
    "MoE in both builds; across the MoE rows it grows as the experts' matrices shrink (Mixtral's K 4,096 and "
    "14,336 -4 %, DeepSeek-V2-Lite's 2,048 and 1,408 +2..+7 % in Q8_0, Qwen3's 2,048 and 768 +14..+21 %), "
    "as a fixed cost per 64 x 32 threadgroup against a K loop of 24 to 64 steps would; not adopted: no row "
    "outside these held-out ones measures it.", "",
    "A micro-batch of 2 to 8 tokens (session 15): before PR #18958 (February 2026, "
    "overheads.LLAMA_CPP_MMVQ_MOE_BATCH_BUILD) `ggml_cuda_mul_mat_id` kept MMVQ for one token only (`ne2 == 1`) "
    "and sent 2 to 8 to `ggml_cuda_mul_mat_q` with the ids, so the reached experts ran MMQ's 8-column tiles "
    "whatever each got, the rest MMVQ (speed/ggml.py `routed_mmq`; PR #15525's own table shows the step: -ub 2 "
    "runs at -ub 1's rate, 180.9 against 180.5 t/s, and PR #18958 measures MMQ at 4 and 8 rows 2.6x and 1.6x "
    "slower than MMVQ for Qwen3's expert shape). The rows of PRs #15525 and #15631 carry b6263 (their month); "
    "`-ub 8`: DeepSeek-V2-Lite +120 % -> +84 %, Qwen3-30B-A3B +27 % -> +10 %; today's code is unchanged.", "",
    "Tested and not adopted (session 14): a cost per graph node instead of per layer. CUDA generation's fixed "
    "time (`LLAMA_CPP_CUDA_LAYER_S`, 60 us a layer) is fitted on Llama, whose layer is 19 kernel nodes "
    "(llama.cpp src/models/*.cpp and llama-graph.cpp `build_moe_ffn`, with flash attention: two for each "
    "`build_norm`, one per matmul, rope, set_rows, flash_attn_ext, swiglu and add; views free), 3.2 us a node. "
    "Counted the same way: Qwen3-30B-A3B 38 nodes a layer (q/k norms, router, softmax, argsort, get_rows, "
    "sum_rows/clamp/div, 3 mul_mat_id, 7 adds over the 8 experts), gpt-oss-20b 36 (q/k/v/o biases, softmax after "
    "the top-k, 3 add_id biases), DeepSeek-V2-Lite 43 (MLA without flash attention: wk_b, wv_b, 2 concats, "
    "KQ/softmax/KQV; 2 shared experts; 5 adds over 6 experts). The fixed time the rows leave over gpuplan's bytes: "
    "DeepSeek-V2-Lite at `-ub 1` 152 us a layer (3.6 us a node), gpt-oss-20b 128 us on both the RTX 3090 and "
    "4090 (3.6 us a node), but Qwen3-30B-A3B on the 4090 63 us (1.7 us a node) and gpt-oss-20b on the RTX PRO "
    "6000 at most 43 us (1.2 us a node, a later build running kernels on several streams). Priced at Llama's "
    "3.2 us a node, the RTX 3090/4090 rows come right (DeepSeek-V2-Lite `-ub 1` +81 % -> +10 %, gpt-oss-20b +44 % "
    "/ +40 % -> +10 % / +9 %) but Qwen3-30B-A3B `-ub 1` goes +3 % -> -35 % and the RTX PRO 6000 -13 % -> -38 % "
    "(mean |error| of the 8 CUDA MoE rows at 1-8 tokens 42 % -> 27 %): Qwen3's layer has as many nodes as "
    "gpt-oss's and JohannesGaessler's build of the same month runs it at half the cost a node, so the node count "
    "is not the cause. At `-ub 8` the CUDA backend runs no graph at all for an MoE "
    "(ggml-cuda.cu: `GGML_OP_MUL_MAT_ID && node->ne[2] != 1` disables CUDA graphs), yet the gap left is 8.0 us a "
    "node for DeepSeek-V2-Lite (+120 %: 16.8 ms a micro-batch measured against 7.7) and 1.6 us for Qwen3-30B-A3B "
    "(+27 %), again not one cost (session 14's figures; the routed experts on MMQ since bring the two to +84 % "
    "and +10 %: above). Left open: something particular to DeepSeek-V2-Lite's and gpt-oss-20b's "
    "layers on Ampere/Ada (MLA's batched per-head wk_b/wv_b products without flash attention; MXFP4 MMVQ).", "",
    "Read again (session 15), one token still not explained. More public numbers, not rows: am17an's RTX 4090 "
    "DeepSeek-V2-Lite Q4_0 tg128 in PR #16630's master column (October 2025), 200.5 t/s against gpuplan's 321 "
    "(+60 %); JohannesGaessler's RTX 3090 `-ub 1` pp512@d32768 in PR #19057 (b7818, January 2026), 156.7 t/s "
    "against 238 (+52 %); PR #15451's RTX A5000 gpt-oss-20b tg128 at b6263, 138.3 t/s against 199 (+44 %). "
    "DeepSeek-V2-Lite leaves 3.5-4.1 ms a token over its bytes on Ampere and Ada, with and without flash "
    "attention, from August 2025 to January 2026; gpt-oss-20b 3.1-3.7 ms on the A5000, 3090 and 4090; "
    "Qwen3-30B-A3B 3.2 ms over twice the layers. Ruled out: the small kernels' cost (PR #15631's fused adds, 3 "
    "to 1 a layer plus the add into the next rms_norm, take 0.10 ms a token off gpt-oss-20b on the 3090, "
    "182.9 -> 186.3 t/s: 1.0-1.4 us a kernel, so 3 ms would need ~100 more kernels a layer than its ~45); MXFP4's "
    "dot product (`vec_dot_mxfp4_q8_1`: a byte-wise `get_int_b1` gather of the 17-byte blocks, six `__byte_perm` "
    "a word for the table, the e8m0 scale; one code for every NVIDIA card, no Blackwell path in MMVQ): its extra "
    "time is alike on the A5000, 3090 and 4090, as if the experts streamed at 0.44 of the bandwidth on all three, "
    "not in proportion to their SMs x clock (1 : 1.3 : 3.0), so not its instructions, and DeepSeek's Q4_0 "
    "leaves as large a gap; CUDA graphs at one token: ggml-cuda's checks (`MUL_MAT_ID` with `ne[2] != 1`, an "
    "`ADD` whose src1 has `ne[1] > 1`) pass both models' single-token graphs (gpt-oss adds its expert biases "
    "with `ADD_ID`), and `supports_op` takes every op of both on the GPU (no split, so no graph re-captured "
    "each token): ggml-cuda.cu at PR #15631's merge (ggml-org/ggml 81415da3, the llama.cpp sync).", "",
    "Read again (session 16), the one-token expert path itself; nothing found that sets DeepSeek-V2-Lite and "
    "gpt-oss-20b apart from Qwen3-30B-A3B, so nothing adopted (ggml-org/ggml 81415da3, and 06034b3c^ before PR "
    "#15525: the one-token path is the same at b6263). The experts' grid: at `ne2 == 1` `ggml_cuda_mul_mat_id` "
    "(ggml-cuda.cu:2099) hands the whole `mul_mat_id` to `ggml_cuda_mul_mat_vec_q` with the ids: one q8_1 "
    "quantize of the activations and one `mul_mat_vec_q` launch on a (rows, experts used, 1) grid "
    "(mmvq.cu `calc_launch_params`), one row a block of 4 warps at one column (`calc_nwarps`, "
    "`calc_rows_per_block`), the expert read on the device (`channel_x = ids[channel_dst]`, mmvq.cu:165). That "
    "is 2,880 x 4 = 11,520 blocks for gpt-oss-20b, 1,408 x 6 = 8,448 (gate, up) and 2,048 x 6 = 12,288 (down) for "
    "DeepSeek-V2-Lite, 768 x 8 = 6,144 and 2,048 x 8 = 16,384 for Qwen3-30B-A3B, against at most 12 resident "
    "128-thread blocks an SM (1,536 threads on sm_86 and sm_89): 984 on the RTX 3090, 1,536 on the 4090, so 4 to "
    "17 waves, the card filled. A block walks its row `vdr x 128 / qi` = 64 quant blocks a pass (Q4_0 and MXFP4 "
    "alike), so a pass holds 1,088 bytes in flight on gpt-oss's 2,880-wide MXFP4 row (90 blocks of 17 bytes; a "
    "second pass of 442), 1,152 on DeepSeek's and Qwen3's 2,048-wide Q4_0 rows, 792 on DeepSeek's down (1,408 "
    "wide) and 432 on Qwen3's down (768 wide: 48 of the 128 threads busy). Little's law asks ~5.7 KB an SM on "
    "the 3090 (936 GB/s x ~0.5 us of DRAM latency over 82 SMs), 12 blocks give 5.2 to 13.8 KB; whatever the "
    "latency, Qwen3's down projection has the fewest bytes in flight and its gate/up the largest last-wave tail "
    "(6.2 waves), and Qwen3 lands (+3 %), so the expert kernels' grid is not the gap. The ids and routing "
    "weights make no host round trip at one token: the ids' `cudaMemcpyAsync` to the host and the "
    "`cudaStreamSynchronize` (ggml-cuda.cu:2140-2141, 2162) sit on the `ne2 > 1` fallback, past the return; the "
    "router's argsort (argsort.cu: one block a row), get_rows, soft_max and ADD_ID (add-id.cu: an (experts, "
    "tokens) grid) are kernels on the stream. MLA without flash attention: DeepSeek-V2-Lite's gap is alike with "
    "flash attention on by default (PR #16630's October master on the 4090, +60 %; PR #19057's January 3090 at "
    "32k, +52 %) and off (PR #15525's `-ub 1`, +81 %), so not the unfused KQ/KQV graph. Seen on the way and not "
    "adopted: MLA's per-head `wk_b` product reads rows 128 wide (4 Q4_0 blocks: 8 of a block's 128 threads "
    "busy, 512 x 16 = 8,192 blocks of 72 bytes, 8 waves of DRAM round trips on the 3090 where gpuplan counts "
    "its 0.6 MB at the bandwidth), a latency-bound kernel of the order of 10 us a layer, a small share of the "
    "~90 us a layer left; whether the table's GGUF carries split `wk_b`/`wv_b`, and in which type, is not "
    "stated. Nor a graph rebuilt each token: PR #14482 (July 2025) reuses the ggml graph of the last micro-batch "
    "when its inputs keep their shapes, for any model (its description), and where a rebuild was measured it "
    "costs a few percent of a token (ik_llama.cpp PR #947, adding the same reuse there: +1 % for Llama-3-8B to "
    "+5.7 % for Qwen3-30B-A3B in generation on an RTX 4080), not the 40-80 % here. Still open: a per-token cost "
    "of DeepSeek-V2-Lite's and gpt-oss-20b's single-token graphs on Ampere and Ada that Qwen3-30B-A3B's does "
    "not pay; a kernel-level trace (nsys) of one token would settle it.", "",
    "Read again (session 17): the same models' public generation numbers across cards, hosts and builds "
    "(held-out rows since s17-ggml2: pr20586-*, pr16130-*, pr16649-*-master, pr16630-*, pr16834-*, pr16884-*, "
    "ik758-*, pr15451-*, pr26767-*), each with the time left over gpuplan's bytes (its 60 us a layer taken off) "
    "divided by the layer's graph nodes as session 14 counted them (Llama 19, Qwen3-4B 23, Qwen3-30B-A3B 38, "
    "gpt-oss-20b 36, DeepSeek-V2-Lite 43); gpuplan's numbers as of this session:", "",
    "| host, card | when (build) | model | test | published t/s | gpuplan | error | left a node | locator |",
    "|---|---|---|---|---:|---:|---:|---:|---|",
    "| JohannesGaessler, RTX 3090 | Sep 2025 | Llama-3.1-8B Q4_0 | `-ub 1` pp512 | 156.6 | 156.7 | +0 % | 3.2 us "
    "| PR #15802 (fitted row) |",
    "| JohannesGaessler, RTX 3090 | Aug 2025 (b6263) | gpt-oss-20b | `-ub 1` pp4096 | 186.3 | 267.8 | +44 % | "
    "3.6 us | PR #15631 (row) |",
    "| JohannesGaessler, RTX 3090 | Aug 2025 | DeepSeek-V2-Lite Q4_0 | `-ub 1` pp512 | 180.5 | 326.2 | +81 % | "
    "3.5 us | PR #15525 (row) |",
    "| JohannesGaessler, RTX 3090 | 2026 | gpt-oss-20b | `-ub 1` pp512 | 238.9 | 271.0 | +13 % | 2.2 us | "
    "PR #20586, first column |",
    "| JohannesGaessler, RTX 3090 | 2026 | Llama-3.2-1B Q4_0 | `-ub 1` pp512 | 744.0 | 629.2 | -15 % | 2.4 us | "
    "PR #20586, first column |",
    "| JohannesGaessler, RTX 4090 | Nov 2025 | Llama-3.1-8B Q4_0 | `-ub 1` pp512@d32768 | 102.8 | 95.6 | -7 % | "
    "2.0 us | PR #17505 (fitted row) |",
    "| JohannesGaessler, RTX 4090 | Aug 2025 (b6263) | Qwen3-30B-A3B Q4_0 | `-ub 1` pp4096 | 205.9 | 211.7 | "
    "+3 % | 1.7 us | PR #15631 (row) |",
    "| am17an, card not named (his later tables': RTX 4090) | 2025-09-20 | Qwen3-30B-A3B Q4_K_M | tg128 | "
    "194.6 / 207.8 | 205.3 | +5 / -1 % | 1.7 / 1.5 us | PR #16130, master / PR |",
    "| am17an, RTX 4090 | 2025-10-18 | gpt-oss-20b | tg128 | 167.0 / 173.3 | 242.1 | +45 / +40 % | 3.8 / 3.6 us "
    "| PR #16649, master / PR (row) |",
    "| am17an, RTX 4090 | Oct 2025 | DeepSeek-V2-Lite Q4_0 | tg128 | 200.5 | 320.8 | +60 % | 3.0 us | PR "
    "#16630, master |",
    "| am17an, RTX 4090 | 2025-10-29 | gpt-oss-20b | tg128 | 186.1 | 242.1 | +30 % | 3.1 us | PR #16834, master "
    "|",
    "| am17an, RTX 4090 | 2025-10-29 | Qwen3-30B-A3B Q4_0 | tg128 | 161.6 | 209.0 | +29 % | 2.3 us | PR "
    "#16834, master |",
    "| am17an, RTX 4090 | 2025-10-31 | Llama-3.1-8B Q4_K_M | tg128 | 130.5 | 149.1 | +14 % | 4.7 us | PR "
    "#16884, master |",
    "| am17an, RTX 4090 | 2025-10-31 | Qwen3-30B-A3B Q4_0 | tg128 | 158.8 | 209.0 | +32 % | 2.4 us | PR "
    "#16884, master |",
    "| ikawrakow, RTX 4080 (Ryzen 7950X) | Sep 2025 | gpt-oss-20b | tg512 from an empty cache | 186.1 | 190.9 | "
    "+3 % | 1.8 us | ik_llama.cpp discussion #758 (mainline under sweep-bench, with and without --swa-full) |",
    "| not named, RTX A5000 | Aug 2025 (b6263) | gpt-oss-20b | tg128 | 138.3 | 199.2 | +44 % | 4.2 us | PR "
    "#15451 |",
    "| ORippler, RTX PRO 6000 | Nov 2025 | gpt-oss-20b | tg128 | 391.2 | 338.4 | -13 % | 1.2 us | PR #16991 "
    "(row) |",
    "| grafail, RTX 5090 | Aug 2026 (CUDA 13.3) | Qwen3-4B Q4_K_M | tg128 | 373.0 | 276.4 | -26 % | 1.5 us | PR "
    "#26767, master |",
    "| grafail, RTX 5090 | Aug 2026 (CUDA 13.3) | Qwen3-30B-A3B Q4_K_M | tg128 | 365.8 | 249.8 | -32 % | 0.9 us "
    "| PR #26767, master |", "",
    "On one card, host and build the cost a node is alike across models: JohannesGaessler's 3090 of August and "
    "September 2025 leaves 3.2 to 3.6 us a node on Llama-3.1-8B, gpt-oss-20b and DeepSeek-V2-Lite, his 4090 1.7 to "
    "2.0 on Llama-3.1-8B and Qwen3-30B-A3B, his 3090 of 2026 2.2 to 2.4 on gpt-oss-20b and Llama-3.2-1B. Session 14's"
    " contrast (Qwen3-30B-A3B at 1.7 us a node against 3.6) set his 4090 against his 3090 and am17an's 4090; on one "
    "card the node count orders the models as measured. The cost a node moves with the card (3090 : 4090 about 1.8 : "
    "1, their clocks 1 : 1.49), with the build (the same 3090 a quarter to two fifths cheaper a node from b6263 to "
    "2026, the fusions between at +1 to +7 % each in their own tables: PR #15631's adds, #16130's and #16649's top-k "
    "MoE for Qwen3 and gpt-oss, #16834's set_rows, #16884's rope + set_rows; a 2026 RTX 5090 spends 34 us a layer on "
    "the dense Qwen3-4B and on Qwen3-30B-A3B alike) and with the host: am17an's 4090 of October 2025 is alike across "
    "Llama-3.1-8B, Qwen3-30B-A3B and gpt-oss-20b only if it streams at 0.72 of the bandwidth (that share and 2.1 us a"
    " node, set by its Llama-3.1-8B and Qwen3-30B-A3B, give gpt-oss-20b's 5.37 ms a token within 1 %); Qwen3-30B-A3B "
    "misses there as gpt-oss-20b does (+29 to +32 %), where his table of 2025-09-20 (card not named) had it at +5/-1 "
    "%; ikawrakow's 4080 runs gpt-oss-20b as fast as am17an's 4090 on 71 % of its bandwidth. Tried, not adopted: a "
    "cost a node of 3.2 us x 1,695 MHz / the card's clock (5,400 cycles, fitted on the same four fitted rows; the "
    "exponent not fitted) in place of the 60 us a layer moves the CUDA tg check median 10.6 % -> 6.9 %, pr15525 `-ub "
    "1` +81 % -> +7 % (`-ub 8` +84 % -> +50 %: no CUDA graph there), pr15631's gpt-oss-20b +44 % -> +6 %, pr16649 +40"
    " % -> +27 %, #15013's RTX 5090 -19 % -> -7 %, A100 +24 % -> +12 %, H100 +12 % -> +22 %, pr16991 -13 % -> -23 %, "
    "pr15631's Qwen3-30B-A3B `-ub 1` +3 % -> -16 %, and in the table PR #20586's gpt-oss-20b +13 % -> -17 %, PR "
    "#26767's Qwen3-30B-A3B -32 % -> -48 %, am17an's Llama-3.1-8B +14 % -> +26 %: the August 2025 graph's nodes "
    "overcount a later build's kernels, and the 3090 : 4090 ratio is more than their clocks'. What it needs: the "
    "kernels of each arch's graph at each build (ggml-cuda's fusions by release), a cost a kernel by card from the "
    "fitted rows' cards, and for the hosts' spread an input gpuplan does not have. The bytes were read again: "
    "gpt-oss-20b's MXFP4 scales are in its 17-byte blocks (11.27 GiB, as the file), the head (token_embd, Q8_0, 0.62 "
    "GB) is read each token, its biases, sinks and f32 router add ~12 MB a token (under 0.5 %); DeepSeek-V2-Lite's "
    "wk_b and wv_b hold kv_b's bytes, absorbed or not.", "",
    "Tried again with the table's numbers as held-out rows (s17-ggml2), not adopted. The fixed time as a layer's "
    "graph nodes (the counts above; the five architectures of the CUDA rows) x a cost a node by card, fitted on the "
    "four fitted CUDA rows only (JohannesGaessler's RTX 3090 at `-ub 1`/4/8 and RTX 4090 at `-ub 1` after 32,768 "
    "tokens, grid over cycles a node, the clock's exponent and the bandwidth share, mean |error| 0.16 %): 5,400 "
    "cycles at the 3090's 1,695 MHz scaled by (1,695 MHz / the card's boost clock)^1.25 (3.2 us a node on the 3090, "
    "1.9 on the 4090), bandwidth share 0.96 as now. Held out: CUDA tg median 12.7 % -> 10.4 % (38 rows), CUDA pp "
    "7.8 % unchanged; by line (source, class, test as inference_sources.py counts them) pr15525 MoE tg 82 % -> 29 %, "
    "pr15451 44 % -> 14 %, pr16630 60 % -> 33 %, pr16649 42 % -> 35 %, pr16834 30 % -> 18 %, pr16884 MoE 32 % -> "
    "16 %, pr26767 dense 26 % -> 15 %, #15013's tg 9.8 % -> 5.3 %, but pr16884 dense (am17an's Llama-3.1-8B Q4_K_M) "
    "+14 % -> +28 %, a line under 25 % going above, and pr16130 3 % -> 10 %, pr16991 13 % -> 17 %, pr20586 MoE "
    "13 % -> 16 %, pr4766 tg 8 % -> 15 %, pr26767 MoE 32 % -> 44 %; rows: #15013's H100 +12 % -> +25 %, A100 +24 % "
    "-> +10 %, RTX 5090 -19 % -> -4 %. The clock alone (exponent 1, 5,600 cycles, share 0.98) is no better: tg "
    "11.1 %, pr16884 dense +27 %, pr16991 -23 %, pr26767 MoE -49 %. The cause is the host, not the form: a cost "
    "a node by card is pinned on the 4090 by JohannesGaessler's fitted row (-7 % today, +0 % then), and am17an's "
    "4090 runs the same Llama-3.1-8B 14 % slower than gpuplan already at 60 us a layer, so any card-based cost "
    "that lands the one sends the other higher; a per-build factor (fewer nodes after each fusion) moves it the "
    "same way and was not tried (it needs ggml-cuda's fusions read by release). Model left as it was.", "",
    "Counted (session 18) and adopted: the kernels of each build's graph. "
    "bench/data/llama-cpp-cuda-kernels.csv holds the CUDA kernels one token launches a layer for the five "
    "families of the CUDA rows, from the date each change landed, read from llama.cpp's graph builders "
    "(src/llama-model.cpp, llama-graph.cpp) and ggml-cuda.cu's fusions at each ggml-org/ggml sync commit (a "
    "quantized matmul at one row is two kernels, its q8_1 quantization and `mul_mat_vec_q`; flash attention two, "
    "the vector kernel and its combine; views free): Llama 25 from July 2025 (rms_norm + mul, PR #14800), 22 "
    "from the GEMV fusion of gate + up + swiglu (PR #16715, 2025-10-26), 21 from rope + set_rows (PR #16884, "
    "2025-11-13); Qwen3-30B-A3B 41, 35 (PR #15631's add chains, 2025-08-29), 31 (PR #16130's top-k MoE), 28, 27, "
    "25 (PR #26767, 2026-08-08); gpt-oss-20b 41, 39, 37 (PR #16649), 26 (PR #16715 with its bias adds), 25; "
    "DeepSeek-V2-Lite 50, 46, 44, 38, 37; one or two more without flash attention, llama-bench's default before "
    "b6343 (2025-09-01). The model counts any model's layers from their structure (speed/ggml.py "
    "`layer_kernels`: hidden-size norms, q/k norms, biases, MLA's latent norm, wk_b/wv_b and concats, router, "
    "top-k with or without its norm, the experts' adds, shared experts, and each change by the build it landed "
    "in, `CUDA_KERNEL_CHANGES`), equal to the file at every one of its rows (tests/speed/test_ggml.py), and "
    "CUDA generation spends `LLAMA_CPP_CUDA_KERNEL_S` on each. Each CUDA generation row names the date of its "
    "build's master (llama-bench.csv `graph`), taken to a build by the known release tags' dates "
    "(`graph_build`); #15013's scoreboard and PR #20586's rows state none, and a user's estimate names none: "
    "today's graph. The time a token leaves over gpuplan's bytes a kernel (at the 60 us a layer's bandwidth "
    "share): JohannesGaessler's RTX 3090 2.4 us on Llama-3.1-8B (September 2025), 3.1 on "
    "gpt-oss-20b and 3.0 on DeepSeek-V2-Lite (August, no flash attention), 3.2 on gpt-oss-20b and 2.1 on "
    "Llama-3.2-1B in 2026; his RTX 4090 1.8 on Llama-3.1-8B (November) and 1.7 on Qwen3-30B-A3B (August); am17an's "
    "RTX 4090 1.9 on Qwen3-30B-A3B (September), 3.5 on gpt-oss-20b and 2.9 on DeepSeek-V2-Lite (October), then "
    "4.1 on Llama-3.1-8B, 3.2-3.3 on Qwen3-30B-A3B and 4.3 on gpt-oss-20b (29-31 October); ikawrakow's RTX 4080 "
    "1.7 and ORippler's RTX PRO 6000 1.7 on gpt-oss-20b; grafail's RTX 5090 1.5 and 1.2 on Qwen3-4B and "
    "Qwen3-30B-A3B (2026). Fitted on the four fitted CUDA rows only (`--fit`: grid over the cost a kernel, the "
    "bandwidth share and MMVQ's rate, mean |error| 0.8 %): one cost for every card, 2.55 us a kernel, the "
    "bandwidth share 0.96 -> 1.00, MMVQ's 70 FLOPs a cycle as before. Before -> after (held out): CUDA tg median "
    "12.7 % -> 13.2 % (38 rows), its lines above 25 % 8 -> 2 (pr15525 MoE 82 % -> 34 %: `-ub 1` +81 % -> +14 %, "
    "`-ub 8` +84 % -> +53 %; pr26767 MoE 32 % -> 38 %; pr15451 44 % -> 19 %, pr16630 60 % -> 12 %, pr16649 42 % "
    "-> 20 %, pr16834 30 % -> 23 %, pr16884 MoE 32 % -> 20 %, pr26767 dense 26 % -> 24 %; am17an's Llama line "
    "+14 % -> +20 %), but JohannesGaessler's RTX 4090 Qwen3-30B-A3B `-ub 1` +3 % -> -23 % and pr16130 +5/-1 % -> "
    "-17/-16 %, #15013's A100 +24 % -> +33 % and H100 +12 % -> +21 %: the median worsens by half a point; every "
    "held-out number (bench/results/inference_sources.md) 7.5 % -> 7.6 %, lines above 25 % 18 -> 12. Tried, not "
    "adopted: scaled by the clock, 2.46 us x (1,695 MHz / the card's boost clock)^0.65 (share 0.97, fitted "
    "0.08 %): median 12.7 % -> 8.9 %, lines 8 -> 7 (pr15525 35 %, pr16630 33 %, pr16649 34 %, pr16834 39 %, "
    "pr16884 MoE 42 %, pr26767 MoE 25 %, and am17an's Llama line +14 % -> +26 %, pushed above), #15013's H100 "
    "+12 % -> +30 %. What the count settles: the model and the build on one host (DeepSeek-V2-Lite's and "
    "gpt-oss-20b's +44 to +81 % on JohannesGaessler's 3090 and the A5000 fall to +14 to +19 %), not the host: "
    "on one card (RTX 4090) and one model (Llama-3.1-8B) am17an's build of 2025-10-31 leaves 4.1 us a kernel "
    "where JohannesGaessler's of a month later leaves 1.8 with one kernel fewer, and nothing gpuplan is told "
    "(card, model, build) tells the two apart; and on one host a MoE's kernel (`mul_mat_id`, the router's) costs "
    "~1.3x a dense layer's (JohannesGaessler's 3090: 3.0-3.2 us against 2.1-2.4), which no fitted row (all "
    "Llama) can set. Metal keeps its own fixed time a layer (`LLAMA_CPP_METAL_LAYER_S`, its own fusions not "
    "counted).", "",
    "Read again (session 19): which steps run as a CUDA graph, by build, and what a kernel costs in one and out of "
    "one (bench/results/llama_cpp_s19.md has every what-if). ggml-cuda.cu's `ggml_cuda_graph_check_compability` "
    "(ggml-org/ggml history): graphs from PR #6766 (May 2024); until PR #19645 (2026-02-17, ggml 23c1635e) an `ADD` "
    "whose second operand has more than one row ('disable CUDA graphs for batch size > 1 for now') turned them off "
    "for every step of 2 to 8 rows, dense or MoE, so the fitted RTX 3090 `-ub 4`/`8` rows ran their kernels one by "
    "one; from PR #19645 a quantized `MUL_MAT_ID` of up to 4 rows keeps them, from PR #26802 (2026-08-14, ggml "
    "e661b3d4) only one that syncs the stream stops them. A cost in a graph and another launched one by one, fitted "
    "apart on the four fitted rows (the graph's on the `-ub 1` rows, the eager one and MMVQ's rate on `-ub 4`/`8`, "
    "bandwidth share 0.88-1.00): 2.6 us and 2.5 us at share 1.00 and 70 FLOPs a cycle (mean |error| 0.79 %); an "
    "eager 3.0/3.5/4.0/5.0 us puts `-ub 4` at -0.7/-5.1/-6.7/-12.3 % whatever MMVQ's rate. On that host the launches "
    "hide behind kernels that run as long at 4 and 8 rows: nothing to split, not adopted. Nor is the graph "
    "DeepSeek-V2-Lite's `-ub 8` miss (+53 %): the same build's Qwen3-30B-A3B `-ub 8` on JohannesGaessler's RTX 4090 "
    "runs without a graph too and lands (-3 %), its time over gpuplan's bytes 2.3 us a kernel against 1.7 at `-ub 1`, "
    "DeepSeek-V2-Lite's 6.9 against 3.1; its step grows 5.5 -> 16.8 ms from `-ub 1` to 8 where gpuplan's grows 4.8 -> "
    "11.0 (4.4 of the 4.9 GB a step the routed experts on MMQ), and the PR column these rows take builds the ids on "
    "the device (mmq.cu `mmq_ids_helper`; master copied them to the host and synced twice a `mul_mat_id`). Left: the "
    "routed MMQ of DeepSeek-V2-Lite's 1,408-wide experts on the 3090 (its `-ub 32` is +65 %). Scaled by the card "
    "(today's constants, fitted on the fitted rows): (1,695 MHz / boost clock)^0.3 (2.55 us, fitted 0.38 %) CUDA tg "
    "median 13.25 % -> 10.9 % but lines above 25 % 3 -> 6 (am17an's RTX 4090: pr16649 26 %, pr16834 31 %, pr16884 "
    "29 %; pr26767 33 %); ^0.65 10.8 %, 7 lines; (82 / SMs)^0.3 10.8 %, 6 lines; ^0.65 10.6 %, 6 lines, #15013's "
    "H100 +42 % and A100 +43 %: not adopted, as in sessions 17 and 18. Adopted: programmatic dependent launch. "
    "From PR #22522 (2026-05-20, ggml 7b28f950; b9297 by date) ggml-cuda launches with "
    "`cudaLaunchAttributeProgrammaticStreamSerialization`, inside graphs too, and on compute capability 9.0 and "
    "later (`ggml_cuda_pdl_sync`: `__CUDA_ARCH__ >= GGML_CUDA_CC_HOPPER`) a kernel's start overlaps the tail of the "
    "one before; the host side needs CUDA 11.8 (12.3 with MSVC), so grafail's CUDA 13.3 build has it, and no public "
    "table of one build under CUDA 12 and 13 was found. The PR's own llama-bench row, gpt-oss-20b tg128 332.05 -> "
    "376.31 t/s, is 0.354 ms a token over its graph's 600 kernels: 0.59 us a kernel (`LLAMA_CPP_CUDA_PDL_SAVING_S`; "
    "its tg256 gives 0.53, its tg512 0.23, whose master ran faster than its tg128), so a Hopper or Blackwell card on "
    "such a build, and on today's code, spends 1.96 us a kernel (speed/ggml.py `cuda_kernel_s`). Before -> after "
    "(held out): CUDA tg median 13.25 % -> 13.12 %; pr26767 MoE 38 % -> 24 % (-38 % -> -24 %), its dense row -24 % "
    "-> -11 %; #15013's tg line 7.4 % -> 5.2 % (RTX 5090 -13 % -> -3 %, RTX PRO 6000 -7 % -> +4 %, RTX 5080 -5 % -> "
    "+3 %, RTX 5070 Ti -8 % -> -1 %, but H100 +21 % -> +40 %, RTX 5070 +4 % -> +10 %, DGX Spark +12 % -> +15 %: the "
    "scoreboard's rows name no build and are timed as today's, with the launch); ORippler's RTX PRO 6000 "
    "(November 2025) keeps -14 %/-13 %. At the tg256 row's 0.53 us pr26767 MoE would be 26 %, at 0.45 us 28 %.", "",
    "Read again (session 20) and adopted: MMQ's weight streaming by the SMs (bench/results/llama_cpp_s20.md). At the "
    "PR's build (ggml-org/ggml 06034b3c) a `mul_mat_id` of more than one row is one MMQ launch over every expert, "
    "its ids sorted on the device (`mmq_ids_helper`, one warp an expert): no loop of a launch an expert and no host "
    "sync. On NVIDIA from Volta on it is stream-k: `nsm` blocks, one an SM (`__launch_bounds__(..., 1)`), each "
    "taking an equal share of the (row tile, expert, column tile, k block) space and skipping an expert's empty "
    "tiles, plus a fixup kernel where the tiles do not divide by the SMs (DeepSeek-V2-Lite's 704 and 1,024 on the "
    "3090's 82; never Qwen3-30B-A3B's 768 and 2,048 on the 4090's 128). The blocks' uneven shares of the reached "
    "experts (simulated over uniform routing: the slowest 1.6x and 1.4x the mean at `-ub 8`, 1.04x at 32) would "
    "slow Qwen3-30B-A3B on the 4090 more (2.1x at 8), which lands: not the cause. What sets the two apart is the "
    "SMs: each block loads and unpacks its 128-row weight tiles whatever their few columns, so past a few rows "
    "MMQ's time is the SMs' work on the weight, not the bandwidth. PR #19057's b7818 table (JohannesGaessler's RTX "
    "3090, DeepSeek-V2-Lite Q4_0 at 32k context, January 2026, before PR #18958; not a row here) grows the step "
    "over `-ub 1`'s by 5.5/8.8/13.8/21.7/36.8 ms at `-ub` 2/4/8/16/32, gpuplan by 1.2/3.0/6.1/13.6/24.5 (mean "
    "|error| 54 %); a bound of 2.3 bytes a cycle an SM (`LLAMA_CPP_MMQ_WEIGHT_BYTES_PER_SM_CYCLE`, speed/ggml.py "
    "`mmq_stream_bw`, `--fit`) brings it to 13 %: 320 GB/s on the 3090 (936), 742 on the 4090 (1,008), where PR "
    "#15131's RTX 4090 Llama-3.1-8B Q4_0 rows at `-ub` 10-16 (August 2025, not rows here) go +6 % -> +1..+3 %. "
    "Before -> after (held out): pr15525 `-ub 8` +53 % -> -11 %, 32 +65 % -> -9 %, 128 +22 % -> +14 %, 256 +33 % "
    "-> +26 % (tg line 33.7 % -> 12.5 %, pp line 33.4 % -> 14.0 %); PR #7676's RTX 4090 Llama-3-8B `-ub` 16/32/64 "
    "+6/+10/+15 % -> +1/+5/+11 %; but Qwen3-30B-A3B on the 4090 (pr15631) `-ub` 8/32/64 -3/-14/-17 % -> "
    "-8/-19/-20 % and pr19378's four 4090s -3 % -> -6 %; CUDA pp median 7.8 % -> 6.9 % (worst +65 % -> +30 %), "
    "CUDA tg 13.1 % -> 12.7 % (worst +53 % -> +40 %, #15013's H100). No row here runs MMQ at a few rows on a "
    "data-centre card, where the bound binds hardest (A100 350 GB/s of 2,039, H100 SXM 601 of 3,350): unchecked.")


SPLIT_NOTE = (
    "## Several cards: llama.cpp's layer split (`-sm layer`)", "",
    "PR #6017's table has Llama 7B F16 pp512 (one micro-batch) on one A100 80GB PCIe, 8,668 tokens/s, and on eight, "
    "8,381: the 7 card boundaries cost (61.1 - 59.1) ms = 0.29 ms each. gpuplan times each boundary as ggml runs it "
    "(speed/inference.py `_split_handoffs_s`): `ggml_backend_sched_compute_splits` copies the next split's input, "
    "the micro-batch's fp32 residual (512 x 4,096 x 4 B = 8 MiB), with the CUDA backend's `cpy_tensor_async` "
    "(`cudaMemcpyPeerAsync` on the source stream, an event the destination waits on; the host does not wait), "
    "so 8 MiB over PCIe gen4 at 25.6 GB/s plus 20 us = 0.35 ms, 2.4 ms for the 7. Both rows were +44 % and +41 % "
    "(41 ms for the card's own F16 prompt against 59 ms measured) until the rows ran their build's path "
    "(speed/ggml.py): b2413 sends all 512 rows through the output matrix; cuBLAS's f16 output is converted to "
    "f32 after every matmul; without flash attention KQ and KQV cover every cache cell and the scores go through "
    "memory between cuBLAS, the f16 -> f32 copy, the softmax and the second GEMM's f16 copy (24 bytes a score, "
    "4.2 ms at pp512: a layer's 34 MB of scores do not fit in one of the A100's two 20 MB L2 halves; the RTX "
    "4090's 72 MB holds them), which left +21 % and +19 %; and cuBLAS's COMPUTE_16F GEMMs on Ampere run at 0.75 "
    "of the GEMM model's rate, a share fitted on one independent row, PR #3816's RTX A6000 F16 pp512 of October "
    "2023 (+19 % at 1.0; the same PR measured COMPUTE_32F 5 % faster there). Held out, the A100 rows now land "
    "at -1 % and +0 %, and the same table's one-card pp1024 ... pp8192 at +0 % to +1 % (5.5 ms more a "
    "micro-batch per 512 more cells in gpuplan against 5.4 to 6.0 ms measured). "
    "The closing note's '~2.9 ms a boundary' divided gpuplan's one-card time, not a measured one, by the "
    "boundaries. A recent build's split, PR #19378's 4x RTX 4090 (-sm layer, 3 boundaries), is held out too: "
    "Llama-3.1-70B Q4_K_M pp512 -19 % and tg128 -3 %, Qwen3-30B-A3B Q8_0 pp512 -3 % (+7 % before its routed "
    "experts filled MMQ's tiles sized for the whole micro-batch: see the MoE section).", "",
    "Not modelled: the overlap of micro-batches across cards when `n_batch > n_ubatch` (the scheduler keeps "
    "`GGML_SCHED_MAX_COPIES` copies of each split's inputs with an event per copy, so card k can run micro-batch "
    "j+1 while card k+1 runs j). PR #6017's eight cards reach 1.61x one card's rate at pp1024 and 1.94x at pp2048, "
    "well under an ideal pipeline's 1.78x and 2.91x; gpuplan times the micro-batches one after another. On ROCm the "
    "loss per card is of another kind: PR #19922 (10 MI50s) found prompt processing 'spent on the CPU hitting "
    "blocking sync points between split submissions' (the scheduler's fallback when a backend's async copy is "
    "refused: `ggml_backend_synchronize` on the source, then a blocking copy), and its gpt-oss-120B pp16384 falls "
    "from 890 tokens/s on two MI50s to 550 on eight: 11.4 s more for 6 more boundaries, tens of milliseconds per "
    "boundary and micro-batch of 512 or 1,024 tokens, far above any copy; gpuplan does not time llama.cpp on "
    "ROCm.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "llama_bench.md")
    ap.add_argument("--fit", action="store_true", help="grid-search the constants on the fitted rows")
    args = ap.parse_args()
    rows = load_rows()
    if args.fit:
        fit(rows)
        return
    text = report(rows)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
