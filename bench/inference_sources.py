"""Every public inference source the benches score, one line per source, engine, class and quantity (issue 31).

    python bench/inference_sources.py [--out bench/results/inference_sources.md] [--max-requests 1500]

The issue's hidden check asks of its own rows a median within 15 % with no source above 25 %, the MoE serving rows
within 20 % and vLLM's KV tokens within 8 %. Its rows are not ours to see, but every source we score is, and a source
above 25 % here is the first place to look. Nothing is scored here: each bench's own row scorer runs as a library
call, with that bench's split (fitted rows set a constant; held-out rows are independent):

- bench/serving/serving_accuracy.py ``run_case`` (vLLM runs: ``calibration`` fitted, ``check`` held out;
  ``excluded`` left out), by its quantities (TTFT and TPOT below the knee, throughput when saturated);
- bench/serving/load_accuracy.py ``predict`` (vLLM and SGLang at a load or offline; every row held out): TTFT,
  TPOT, ITL and requests/s where the source gives them;
- bench/serving/rocm_dense.py ``amd_rps`` (vLLM's ROCm build on MI300X, dense, offline: ``rocm-fit`` fitted,
  ``rocm-check`` held out): requests/s;
- bench/serving/sglang_serving.py ``run`` (``calibration`` and ``rocm-fit`` fitted; ``check``, ``moe`` and
  ``rocm-check`` held out): its ``scored`` quantities;
- bench/serving/trtllm_serving.py ``predict`` (trtllm-serve; ``calibration`` fitted): TTFT and TPOT;
- bench/trtllm.py ``offline`` (NVIDIA's performance overview; ``role`` names the fitted ones) and
  bench/mlperf_inference.py ``predict`` (MLPerf Offline; nothing fitted): output tokens/s;
- bench/llama_bench.py ``err`` (llama.cpp and MLX on llama-bench tables; ``fitted`` rows set constants): prompt
  processing and generation tokens/s;
- bench/throughput.py ``run`` (one request's decode tokens/s; ``held_out`` is its fixed split);
- bench/serving/vllm_startup.py ``score`` (vLLM's startup logs; ``calibration`` fitted): KV tokens;
- bench/serving/speculative.py ``run`` (one request at a time with and without speculative decoding; every row held
  out): TPS per user, or 1 / TPOT where the source gives TPOT.

A row's source is the part of its id before the first dash (a source's rows share a client, a host and prompts),
the MLPerf round, NVIDIA's table, or the throughput case's publication. error = (gpuplan - published) / published.
Not here: bench/llama_server.py (it builds llama-server, it scores nothing), the SGLang startup logs (3 rows within
0.6 %, bench/results/sglang_startup.md), trtllm_capacity.py (NVIDIA's table again, through the scheduler) and
capacity_accuracy.py (serving_accuracy's runs again, as a highest rate).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "serving"))

import load_accuracy  # noqa: E402
import rocm_dense  # noqa: E402
import serving_accuracy  # noqa: E402
import sglang_serving  # noqa: E402
import speculative  # noqa: E402
import trtllm_serving  # noqa: E402
import vllm_startup  # noqa: E402

import llama_bench  # noqa: E402
import mlperf_inference  # noqa: E402
import throughput  # noqa: E402
import trtllm  # noqa: E402
from gpuplan import overheads as oh  # noqa: E402
from gpuplan.model.catalog import load_model  # noqa: E402
from gpuplan.speed.bands import model_class  # noqa: E402

LIMIT = 0.25  # the "no source above 25 %"


@dataclass(frozen=True)
class Scored:
    """One published number against gpuplan's: where it comes from, what it is, and the split it is in."""
    bench: str
    source: str
    engine: str
    cls: str  # dense / MoE / hybrid (speed.bands.model_class)
    quantity: str
    fitted: bool
    error: float  # (gpuplan - published) / published
    row: str


def _cls(model: str) -> str:
    return model_class(load_model(str(ROOT / model) if str(model).startswith("bench/") else model))


def _id_source(row_id: str) -> str:
    return row_id.split("-", 1)[0]


def serving_rows(max_requests: int) -> list[Scored]:
    """vLLM's serving runs (serving_cases.yaml), as serving_accuracy.py scores them."""
    out = []
    for c in yaml.safe_load((HERE / "serving" / "serving_cases.yaml").read_text()):
        if c["role"] == "excluded":
            continue
        pred, cls = serving_accuracy.run_case(c, max_requests), _cls(c["scenario"]["model"])
        for name, key, regime in serving_accuracy.QUANTITIES:
            if c["regime"] == regime:
                out.append(Scored("serving_accuracy", serving_accuracy.source_of(c), "vllm", cls, name,
                                  c["role"] == "calibration", pred[key] / c["measured"][key] - 1, c["id"]))
    return out


def load_rows() -> list[Scored]:
    """Runs at a load or offline (serving_load_runs.csv), every one held out, as load_accuracy.py scores them."""
    out = []
    for r in _csv(load_accuracy.DATA):
        pred, cls = load_accuracy.predict(r), _cls(r["model"])
        for q, col in (("TTFT", "median_ttft_ms"), ("TPOT", "median_tpot_ms"), ("ITL", "median_itl_ms"),
                       ("req/s", "request_throughput")):
            if r[col]:
                out.append(Scored("load_accuracy", load_accuracy.source_of(r), r["engine"], cls, q, False,
                                  pred[q] / float(r[col]) - 1, r["id"]))
    return out


def rocm_dense_rows() -> list[Scored]:
    """vLLM's ROCm build on MI300X, dense (rocm_dense_runs.csv: ``rocm-fit`` fitted, ``rocm-check`` held out), its
    requests/s as rocm_dense.py scores it with overheads.ROCM_DENSE_DECODE_SLOWDOWN."""
    out = []
    twins = rocm_dense.nvidia_rows()
    for r in rocm_dense.amd_rows():
        pred = rocm_dense.amd_rps(r, twins[r["twin"]], oh.ROCM_DENSE_DECODE_SLOWDOWN)
        out.append(Scored("rocm_dense", _id_source(r["id"]), "vllm", _cls(r["model"]), "req/s",
                          r["role"] == "rocm-fit", pred / float(r["request_throughput"]) - 1, r["id"]))
    return out


def _csv(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def sglang_rows(max_requests: int) -> list[Scored]:
    """SGLang's published runs (sglang_serving.csv), as sglang_serving.py scores them."""
    out = []
    for r in sglang_serving.load_rows():
        pred, cls = sglang_serving.run(r, max_requests), _cls(r["model"])
        for name, key in sglang_serving.scored(r):
            out.append(Scored("sglang_serving", _id_source(r["id"]), "sglang", cls, name,
                              r["role"] in ("calibration", "rocm-fit"), pred[key] / float(r[key]) - 1, r["id"]))
    return out


def trtllm_serving_rows() -> list[Scored]:
    """trtllm-serve's runs (trtllm_serving.csv) with the package's constants."""
    out = []
    for r in trtllm_serving.load_rows():
        ttft, tpot = trtllm_serving.predict(r, oh.TRTLLM_EAGER_LAUNCH_S)
        cls, fitted = _cls(r["model"]), r["role"] == "calibration"
        out += [Scored("trtllm_serving", _id_source(r["id"]), "trtllm", cls, "TTFT", fitted,
                       ttft / float(r["p50_ttft_ms"]) - 1, r["id"]),
                Scored("trtllm_serving", _id_source(r["id"]), "trtllm", cls, "TPOT", fitted,
                       tpot / float(r["p50_itl_ms"]) - 1, r["id"])]
    return out


def trtllm_rows() -> list[Scored]:
    """NVIDIA's performance overview tables (trtllm-bench offline output tokens/s), as trtllm.py scores them."""
    out = []
    for path, source in ((trtllm.DATA, "nvidia-perf-overview-1.0"), (trtllm.OLDER, "nvidia-perf-overview-0.17")):
        for r in trtllm.load_rows(path):
            if trtllm.why_not(r):
                continue
            out.append(Scored("trtllm", source, "trtllm", _cls(r["model"]), "offline tok/s",
                              trtllm.role(r) in ("fitted", "MoE fitted"), trtllm.err(trtllm.offline(r), r),
                              f"{r['gpu_label']} {r['model']} {r['isl']}/{r['osl']} tp{r['tp']}"))
    return out


def mlperf_rows() -> list[Scored]:
    """MLPerf Inference Offline rows (nothing fitted), as mlperf_inference.py scores them."""
    out = []
    for r in mlperf_inference.load_rows():
        if mlperf_inference.why_not(r):
            continue
        out.append(Scored("mlperf_inference", f"mlperf-{r['round']}", "trtllm", _cls(r["model"]), "offline tok/s",
                          False, mlperf_inference.err(mlperf_inference.predict(r), r),
                          f"{r['submitter']} {r['system']} {r['benchmark']}"))
    return out


def llama_bench_rows() -> list[Scored]:
    """llama-bench tables (llama.cpp and MLX), as llama_bench.py scores them; excluded rows left out."""
    return [Scored("llama_bench", _id_source(r["id"]), r["engine"], _cls(r["model"]),
                   f"{llama_bench.backend(r)} {llama_bench.work(r)}", r["role"] == "fitted", llama_bench.err(r),
                   r["id"])
            for r in llama_bench.load_rows() if r["role"] != "excluded"]


def decode_rows() -> list[Scored]:
    """One request's decode tokens/s (throughput_cases.yaml's inference cases), as throughput.py scores them."""
    cases = [c for c in yaml.safe_load((HERE / "throughput_cases.yaml").read_text())["cases"]
             if c["metric"] == "decode_tokens_per_s"]
    scored, _ = throughput.run(cases)
    return [Scored("throughput", c["source"], c["scenario"].get("engine", "transformers"),
                   _cls(c["scenario"]["model"]), "decode tok/s", not throughput.held_out(c), c["error_pct"] / 100,
                   c["id"]) for c in scored]


def startup_rows() -> list[Scored]:
    """vLLM's startup logs: KV tokens where a log printed them, as vllm_startup.py scores them."""
    cases = yaml.safe_load((HERE / "serving" / "vllm_startup_cases.yaml").read_text())
    return [Scored("vllm_startup", _id_source(r["case"]["id"]), "vllm", _cls(r["case"]["scenario"]["model"]),
                   "KV tokens", r["role"] == "calibration", r["errors"]["KV tokens"] / 100, r["case"]["id"])
            for r in vllm_startup.score(cases) if r["role"] != "excluded" and r["errors"]["KV tokens"] is not None]


def speculative_rows() -> list[Scored]:
    """One request's TPS per user (or 1 / TPOT) with and without speculative decoding (speculative.csv), as
    speculative.py scores them; every row held out."""
    return [Scored("speculative", _id_source(r["id"]), r["engine"], _cls(r["model"]),
                   "1/TPOT" if r["metric"] == "tpot_ms" else "TPS/user", False, r["error"], r["id"])
            for r in speculative.run()]


def every_row(max_requests: int) -> list[Scored]:
    return (serving_rows(max_requests) + load_rows() + rocm_dense_rows() + sglang_rows(max_requests)
            + trtllm_serving_rows() + trtllm_rows() + mlperf_rows() + llama_bench_rows() + decode_rows()
            + startup_rows() + speculative_rows())


Key = tuple[str, str, str, str, str]  # bench, source, engine, class, quantity


def summarize(rows: list[Scored]) -> dict[Key, dict]:
    """Per bench, source, engine, class and quantity: rows fitted and held out, the held-out rows' median |error|
    and their worst (signed; None where every row is fitted)."""
    groups: dict[Key, list[Scored]] = {}
    for r in rows:
        groups.setdefault((r.bench, r.source, r.engine, r.cls, r.quantity), []).append(r)
    out = {}
    for key, rs in sorted(groups.items()):
        held = [r.error for r in rs if not r.fitted]
        out[key] = {"fitted": len(rs) - len(held), "held_out": len(held),
                    "median": statistics.median(map(abs, held)) if held else None,
                    "worst": max(held, key=abs) if held else None}
    return out


def _pct(x: float | None, sign: str = "") -> str:
    return "-" if x is None else f"{x:{sign}.1%}"


def report(rows: list[Scored], seconds: float) -> str:
    table = summarize(rows)
    lines = ["# Every inference source: held-out median |error| per source", "",
             f"Generated by `python bench/inference_sources.py` in {seconds:.0f} s from the benches' own row scorers "
             f"(the module docstring names them): {len(rows)} scored numbers. error = (gpuplan - published) / "
             "published; the median and the worst are over the held-out rows only. **bold**: a held-out median "
             f"above {LIMIT:.0%} (the issue's limit for one source).", "",
             "| bench | source | engine | class | quantity | rows fitted / held out | held-out median abs error | "
             "worst |", "|---|---|---|---|---|---:|---:|---:|"]
    for (bench, src, engine, cls, q), s in table.items():
        med = _pct(s["median"])
        if s["median"] is not None and s["median"] > LIMIT:
            med = f"**{med}**"
        lines.append(f"| {bench} | {src} | {engine} | {cls} | {q} | {s['fitted']} / {s['held_out']} | {med} | "
                     f"{_pct(s['worst'], '+')} |")
    lines += ["", "Pooled over the held-out rows, by engine and class:", "",
              "| engine | class | held-out numbers | median abs error |", "|---|---|---:|---:|"]
    pooled: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        if not r.fitted:
            pooled.setdefault((r.engine, r.cls), []).append(abs(r.error))
    lines += [f"| {e} | {c} | {len(v)} | {statistics.median(v):.1%} |" for (e, c), v in sorted(pooled.items())]
    return "\n".join([*lines, "", *goal_lines(rows, table), "", *cause_lines(table)]) + "\n"


def goal_lines(rows: list[Scored], table: dict[Key, dict]) -> list[str]:
    """Our held-out rows read the way the issue's hidden check reads its own: every number, the MoE serving rows
    (runs through a serving engine's scheduler: not the offline tables), vLLM's KV tokens, and the sources above
    the limit."""
    held = [r for r in rows if not r.fitted]
    serving = ("serving_accuracy", "load_accuracy", "rocm_dense", "sglang_serving", "trtllm_serving")
    moe = [abs(r.error) for r in held if r.cls == "MoE" and r.bench in serving]
    moe_q = {q: [abs(r.error) for r in held if r.cls == "MoE" and r.bench in serving and r.quantity in names]
             for q, names in (("TTFT", ("TTFT",)), ("TPOT", ("TPOT", "ITL")))}
    kv = [abs(r.error) for r in held if r.bench == "vllm_startup"]
    above = [k for k, s in table.items() if s["median"] is not None and s["median"] > LIMIT]
    return ["Beside the issue's goals for its hidden sets (ours are not those rows; the same reading of our own):",
            "", "| set (held-out numbers only) | n | median abs error | goal |", "|---|---:|---:|---|",
            f"| every number above | {len(held)} | {statistics.median(abs(r.error) for r in held):.1%} | <= 15% |",
            f"| MoE serving runs (serving engines' schedulers) | {len(moe)} | {statistics.median(moe):.1%} | <= 20% |",
            f"| - their TTFT | {len(moe_q['TTFT'])} | {statistics.median(moe_q['TTFT']):.1%} | <= 20% |",
            f"| - their TPOT (and ITL) | {len(moe_q['TPOT'])} | {statistics.median(moe_q['TPOT']):.1%} | <= 10% |",
            f"| vLLM KV tokens (startup logs) | {len(kv)} | {statistics.median(kv):.1%} | <= 8% |",
            f"| lines above with a held-out median above {LIMIT:.0%} | {len(above)} | | none |"]


# The session-17 reading several CUDA generation lines share (llama_bench.md, MoE section).
NODE_COST_READ = ("the time a token leaves over gpuplan's bytes a graph node is alike across models on one card, host "
                  "and build and moves with each (llama_bench.md, MoE section, 'Read again (session 17)' and the "
                  "node-cost what-if after it: not adopted, it sends am17an's Llama-3.1-8B +14 % -> +28 %). Session "
                  "18 counted each build's kernels a layer (bench/data/llama-cpp-cuda-kernels.csv; speed/ggml.py "
                  "layer_kernels counts any model's from its structure and the build's fusions) and adopted them x "
                  "one cost a kernel fitted on the fitted rows (2.55 us, bandwidth share 0.96 -> 1.00) in place of "
                  "60 us a layer: the CUDA generation lines above 25 % 8 -> 2, its held-out median 12.7 % -> 13.2 % "
                  "(scaled by the clock, median 8.9 % but am17an's Llama-3.1-8B +14 % -> +26 %: not adopted; "
                  "llama_bench.md, MoE section, 'Counted (session 18)'); what is left is the host.")

# Session 29's reading of the benchmark clients, at the end of the eight lines it read
S29 = "Session 29 (s29-src31; bench/results/sources31_s29.md), the benchmark client, nothing changed: "
# Session 30's reading of the two worst lines' sources again
S30 = "Session 30 (s30-src31; bench/results/sources31_s30.md), the sources read again, nothing changed: "

# Why each source above the limit misses, read from the rows and the engines' code (the benches' own notes hold the
# long form and every locator); keyed by (bench, source).
CAUSES = {
    ("llama_bench", "pr13388"): (
        "ggerganov's Metal MoE prompts (added session 14, held out; the Mac not named, taken as his M2 Ultra). "
        "Qwen3-30B-A3B pp512 in Q4_0, Q8_0 and F16 were +101 % to +115 %, Mixtral-8x7B Q4_0 +10 %, until an "
        "expert's tokens filled whole 32-column threadgroups of `kernel_mul_mm_id` (ggml-metal-ops.cpp "
        "`ggml_metal_op_mul_mat_id`: `(ne21 + 31)/32` per expert; speed/ggml.py `expert_tile_rows`, over uniform "
        "routing's spread): +72 % to +75 % and +0 %; then (session 15) +21 % to +22 % and -4 % once the rows ran "
        "their build's id maps (timed as b5330): PR #13388's `kernel_mul_mm_id_map0` runs one threadgroup per "
        "expert, each walking all tokens x k ids in device memory one after another, and copies the routed rows "
        "to f16 and back (`kernel_mul_mm_id_map1`) around each of a layer's three `mul_mat_id` (speed/ggml.py "
        "`expert_maps_s`; 125 ns an id fitted on PR #15541's M2 Ultra DeepSeek-V2-Lite master column against its "
        "PR column, which dropped the walk: source pr15541). Left: ~1.4 ms a layer, alike in the three types and "
        "~15 % in today's path too (pr15616's Qwen3 against its dense twin); "
        "the map kernel's waves, the grid's empty threadgroups, the router's argsort and the unfused expert sum "
        "read and ruled out as its cause (llama_bench.md, MoE section)."),
    ("llama_bench", "pr15631"): (
        "JohannesGaessler's sweeps (added session 14, held out): Qwen3-30B-A3B Q4_0 on an RTX 4090 at -ub 1 +3 %, "
        "-ub 8 +27 % -> +10 % (session 15: MMQ for a routed expert's 2 to 8 rows before PR #18958), -ub 32/64 "
        "-14/-17 %, gpt-oss-20b at -ub 1024/2048 -9/-4 %; the miss is gpt-oss-20b at -ub 1 on an RTX 3090, +44 % "
        "(see pr16649)."),
    ("llama_bench", "pr16649"): (
        "am17an's gpt-oss-20b tg128 on an RTX 4090 (added session 14, held out): 173 t/s against gpuplan's 242; "
        "the same model reaches 391 t/s on an RTX PRO 6000 (PR #16991, gpuplan -13 %), 2.26x for 1.78x the "
        "bandwidth. Not explained: gpt-oss-20b leaves 3.1-3.7 ms a token over its bytes on an RTX A5000 (PR "
        "#15451, b6263, +44 %), 3090 (PR #15631, +44 %) and 4090 alike, in proportion to none of their SMs x "
        "clock; MXFP4's byte-gathered, table-looked-up dot product, the small kernels' cost and CUDA graphs were "
        "read and ruled out, and in session 16 the experts' MMVQ grid and the ids' path (llama_bench.md, MoE "
        "section). Session 17: on am17an's same 4090 and builds, Qwen3-30B-A3B Q4_0 tg128 misses as much (PR "
        "#16834 161.6 t/s, +29 %; PR #16884 158.8, +32 %) and Llama-3.1-8B Q4_K_M by +14 % (130.5 t/s), while "
        "ikawrakow's RTX 4080 runs gpt-oss-20b at 186.1 t/s in September 2025 (+3 %) and PR #20586's 2026 RTX "
        "3090 at +13 %: a host and build where the Qwen3-30B-A3B that lands elsewhere misses alike (0.72 of the "
        "bandwidth and 2.1 us a graph node, set by its Llama-3.1-8B and Qwen3-30B-A3B, give this model's 5.37 ms "
        "a token within 1 %; llama_bench.md, MoE section, table)."),
    ("llama_bench", "pr15451"): (
        "gpt-oss-20b tg128 on an RTX A5000 from PR #15451's llama-bench log (b6263; added s17-ggml2, held out): "
        "138.3 t/s against gpuplan's 199, the same +44 % as JohannesGaessler's RTX 3090 of that month "
        "(pr15631); " + NODE_COST_READ),
    ("llama_bench", "pr16630"): (
        "am17an's DeepSeek-V2-Lite Q4_0 tg128 on an RTX 4090, master column of October 2025 (added s17-ggml2, "
        "held out): 200.5 t/s against gpuplan's 321 (+60 %), the gap of pr15525's -ub 1 on a 3090; " + NODE_COST_READ),
    ("llama_bench", "pr16834"): (
        "am17an's RTX 4090, master of 2025-10-29 (added s17-ggml2, held out): gpt-oss-20b +30 % and "
        "Qwen3-30B-A3B Q4_0 +29 %, where JohannesGaessler's 4090 had Qwen3-30B-A3B at +3 % (pr15631): a host "
        "where every model misses (see pr16649); " + NODE_COST_READ),
    ("llama_bench", "pr16884"): (
        "am17an's RTX 4090, master of 2025-10-31 (added s17-ggml2, held out): Qwen3-30B-A3B Q4_0 +32 % (the MoE "
        "line), Llama-3.1-8B Q4_K_M +14 %: the same host as pr16834 and pr16649; " + NODE_COST_READ),
    ("llama_bench", "pr26767"): (
        "grafail's RTX 5090 of August 2026 built with CUDA 13.3 (added s17-ggml2, held out): Qwen3-4B Q4_K_M 373 "
        "t/s (-26 %) and Qwen3-30B-A3B Q4_K_M 366 t/s (-32 %), both faster than gpuplan says: 34 us a layer of "
        "fixed time on both against the 60 us fitted on 2025 builds' 3090 and 4090; at 2.55 us a kernel of their "
        "21 and 25 (session 18, PR #26767's own norm + rope fusion counted) -24 % and -38 %: 1.5 and 1.2 us a "
        "kernel on this card and build, against 2.4 on the fitted 3090; " + NODE_COST_READ + " Session 19: from "
        "PR #22522 (May 2026) ggml-cuda launches with programmatic dependent launch, which Hopper and Blackwell "
        "act on (a kernel's start overlaps the one before); at the PR's own gpt-oss-20b tg128 saving, 0.59 us a "
        "kernel, this card and build spend 1.96 us: -24 % -> -11 % and -38 % -> -24 % (llama_bench.md, MoE "
        "section, 'Read again (session 19)'; at the PR's tg256 saving, 0.53 us, the MoE row -26 %)."),
    ("load_accuracy", "dstackr1"): (
        "dstack's vLLM 0.7 runs of DeepSeek-R1 at 4-128 users (8 H200s, 8 MI300Xs; added 2026-11-30 as a test of "
        "generalisation, held out). TTFT 68.9 % -> 50.3 %: V0 never chunks an MLA model's prompts by default (vLLM PR "
        "#12642 forced it off in 0.7.1-0.7.3; after PR #12639 `_set_default_args_v0`: \"Chunked prefill not supported "
        "for Multimodal or MLA in V0\"), where gpuplan chunked the H200's at 2,048 tokens (engines/vllm.py "
        "`scheduler_limits`). Then 50.3 % -> 31.5 % (session 13): DeepSeek's block-FP8 linears and experts ran through "
        "Triton's block-scaled kernels in vLLM 0.7 and SGLang 0.4.3 alike (vLLM's CUDA linears through its CUTLASS "
        "block kernel), at 0.257 of the fast fp8 rate on SGLang PR #3893's H200 timing "
        "(overheads.BLOCK_FP8_KERNEL_SHARE), where gpuplan had timed them as bf16 GEMMs; one 3,200-token prompt 0.58 ->"
        " 0.85 s on the H200 (0.97 measured), 0.65 -> 0.87 s on the MI300X (1.29). Then 31.5 % -> 10.7 % (session 14): "
        "the MI300X rows ran the same Triton kernels compiled for gfx942 (ROCm/vllm at 21f6ca217, MI300X-tuned "
        "configs), at a share of their own, 0.143 of the fast fp8 rate (overheads.ROCM_BLOCK_FP8_KERNEL_SHARE, "
        "engines/rocm.py block_fp8_share), fitted on SGLang PR #3237's MI300X prefill (where SGLang's AMD prompt factor"
        " 1.62 had stood) and checked against AITER's first CK block-scale GEMM timed on MI300X in the same weeks "
        "(median 1.01 of its times); MI300X TTFT -33/-34/-58/-46/-29/-38 % -> -1/-2/-37/-20/+5/-8 %, TPOT -26..-4 % -> "
        "-26..+3 %, requests/s +13..+36 % -> -0..+33 %; the H200 rows do not move. Left: the H200's decodes at 16-64 "
        "users (TPOT -27..-42 %) and its requests/s (+18..+80 %), the MI300X at 16 users (TTFT -37 %). The H200's "
        "decodes, read again in session 14: the decode step itself (median ITL = median TPOT, no prompt inside a wave's"
        " decodes), +3.9/+6.5/+20.7/+17.6/+20.7 ms over gpuplan's at 4-64 users, a cost that appears between 8 and 16 "
        "sequences and then stays; not found in vLLM 0.7's code (CUDA graphs, the fused MoE's H200 table, which SGLang "
        "0.4.3 shares without the jump, FlashMLA, absorbed projections). Read again in session 16, nothing changed: the"
        " build is the nightly vllm-project/vllm@f35f8e2242db (2025-03-03), a V0 engine for MLA (vLLM PR #14921 moved "
        "MLA to V1 only on 2025-03-17; its log shows DeepSeek-R1 on V0 with no multi-step, async output processing on, "
        "graphs captured at 1-256), FlashMLA by the run's env var (vLLM's default only from PR #14451), greedy "
        "sampling, fused_moe's Triton block-FP8 kernel; of these only the MoE table's key 16 switches between 8 and 16 "
        "sequences, and no public timing of it or of that nightly's decode step was found "
        "(bench/results/load_accuracy.md). Not the decode attention's rate (s17-kvdec): gpuplan's cache term is "
        "1.05/2.11/4.22 ms at 16/32/64 users while the excess stays at 18-21 ms, and FlashMLA reads at 0.74-0.90 of the"
        " datasheet in public timings (its README's 3,000 GB/s on an H800; achatbot PR #123 on an H100), at or above "
        "gpuplan's rate. Nor that table's key 16 at a later release (s19-serve): vLLM PR #28992's 'before' run, the "
        "entry it retuned still in place (DeepSeek-V3.1 on 8 H200s, vLLM of 2025-11, Triton MoE, 16 users of 2 + 100 "
        "tokens), served 6.84 requests/s, a ~23 ms step; gpuplan (R1's architecture, vLLM 0.11.1) 7.45 (+9 %), 21.2 ms:"
        " no +18 ms at 16 sequences there (the entry's history between 0.7.3 and that run not read; "
        "bench/results/serving_s19.md). Session 22 (s22-vload): the H200's 128-user run served no more requests/s than "
        "its 64-user one (0.931 against 0.948) and over half its requests waited a whole ~53 s wave (median TTFT 82.8 "
        "s), so that engine ran about 64 sequences where gpuplan's V0 startup (weights with the absorbed MLA matrices, "
        "a profile peak of 17.2 GiB at 163,840 tokens) leaves 381,888 tokens, 95 requests; a pool of 253,648 tokens (a "
        "what-if) takes that row to TTFT -28 %, requests/s +42 % with 64 users unchanged, but the median does not move "
        "(the row was already above it), and the ~8.5 GiB a GPU is in no code read nor a public 0.7 startup log found "
        "(bench/results/vllm_load_s22.md). Session 24 (s24-ix; bench/results/inference_sources_s24.md): not the fused "
        "MoE's chunk (VLLM_FUSED_MOE_CHUNK_SIZE 32,768 in mainline since vLLM PR #7995; the MI300X rows' "
        "--max-model-len 32768 caps V0's profiling batch below ROCm's 65,536). Found: V0 0.7 takes its memory baseline "
        "in Worker.init_device before NCCL starts, so at TP 8 over NVLink the NCCL and custom all-reduce buffers count "
        "(a 0.7.1 TP 8 log on 8 A100s: 2.10 GiB, where gpuplan took the one-GPU 0.16); built on branch s24-ix-v0tp, not"
        " merged: the 128-user row goes TTFT -79 -> -78 %, requests/s +79 -> +67 %, but TPOT -14 -> -22 % (the line "
        "18.1 -> 21.5 %): that row's larger pool was hiding the decode-step gap. Session 28 (s28-srca; "
        "bench/results/inference_srca_s28.md), nothing changed: fixed lengths keep the closed loop in lockstep "
        "waves, so the median TPOT is the decode step at the wave's batch (gpuplan too); V0's Triton MLA decode "
        "fixes 4 KV splits (16/32 programs on the MI300X's 304 CUs at 4/8 users), a few percent of the attention by "
        "the one public under-split timing read (SGLang PR #27786), not the 8-13 ms a step missing. " + S29 +
        "dstack's copy of SGLang's bench_serving.py adds no time between requests: each run lasts (500 / users) x "
        "its mean E2E within 0-2.3 % (the H200's 128 users 10.7 %, its queue), so requests/s is the engine's TTFT and "
        "TPOT; ~760 chunks/s is 4 % of the client's core."),
    ("load_accuracy", "gpustack"): (
        "GPUStack's performance lab, vLLM 0.11.0 with no flags, bursts of 500 prompts of 4,000 or 2,000 tokens "
        "(added 2026-11-30, held out). The 8-GPU rows land (TTFT -19..+1 %); the misses above 25 % are Qwen3-14B on "
        "one H100 (TPOT -45/-47 %, requests/s +69/+82 %), where the same harness on one A100 now gives +7/+5 % "
        "(-17/-22 % before s18-vttft timed FlashAttention-2's decodes beside a prompt chunk as vLLM V1 runs them: "
        "one varlen call, no query heads folded unless every query is one token, so each decode's every head takes "
        "a 64-row split-KV tile over its context; flash_api.cpp mha_varlen_fwd; the A100 page's median ITL 334/369 "
        "ms, gpuplan 261/272 -> 353/394; bench/results/load_accuracy.md). The H100 rows run FA3 and did not move: that "
        "card took prompts at about 250 TFLOPS of work, half what the vLLM blog's H100 reached (TTFT +6/+7 % "
        "there), and its decode steps are slow too (median ITL 43.9/46.0 ms against gpuplan's 27.8/30.1: ~71 GB a "
        "step read at ~1.7 TB/s). Session 16 read the page's card: \"A single NVIDIA H100 SXM GPU.\" "
        "(gpustack@1f37f1b8), so the row stays SXM, though timed as an H100 PCIe (a what-if, not adopted) every "
        "number lands within -14..+13 %; the lab's Qwen3-8B latency page (TPOT 7.40 ms, gpuplan 7.45) decodes "
        "faster than a PCIe card could, so which card ran this page is left open. vLLM 0.11's defaults (8,192 "
        "tokens and 1,024 sequences a step on a card of 70 GiB or more, chunked prefill, graphs to 512) are as "
        "simulated (bench/results/load_accuracy.md). The lab's Qwen3-8B page (not a row) has vLLM's TTFT at "
        "concurrency 4 at 60.3 ms against gpuplan's 25.7, where SGLang and TensorRT-LLM on the same host and "
        "client land at +40 % and +13 %: its mean ITL above its mean TPOT (7.78 against 7.38 ms) puts ~30 ms a "
        "request in that vLLM 0.11 API server, a cost vLLM's code does not show and no run outside the held-out "
        "rows measures; these burst rows are held by the prompt rate, not by admission (30 ms of serial work moves "
        "them under 1 %). Session 17 (s17-kvdec) read the decode attention's bandwidth and the burst's steps: "
        "public FA3, FA2 and FlashMLA decode timings outside these rows put the cache read at 0.54-0.90 of the "
        "datasheet (flash-attention issue #1572, onnxruntime PR #21414, FlashMLA's README), and a read slow enough "
        "to match the median ITL (0.41) still leaves TPOT -34/-39 % while the vLLM blog's H100 row on the same FA3 "
        "path would go from -7 % to +47 %; the page's share of token gaps in prompt-chunk steps is the simulation's "
        "(0.156/0.311 against 0.145/0.296), and the compute-bound 8,192-token chunk steps, 1.77/1.82x gpuplan's, "
        "carry about two thirds of the TPOT miss (bench/results/load_accuracy.md, note (d)). Session 19 "
        "(s19-serve): vLLM V1's prefix cache keeps a preempted request's full blocks until the pool hands them out "
        "again (kv_cache_manager.py KVCacheManager.free, tail blocks first; get_computed_blocks on resuming), so a "
        "resumed request recomputes only what was evicted (serving/simulate.py _keep_preempted), where gpuplan "
        "recomputed all of it: the A100's 4,000-token row TTFT +15 -> +6 %, TPOT +17 -> +7 %, requests/s -15 -> -7 "
        "%; the H100 rows a point worse (TTFT -40/-46 -> -41/-47 %, TPOT -44/-46 -> -45/-47 %, requests/s "
        "+68/+81 -> +69/+82 %). The same page's 32,000-token run (not a row: 100 prompts) had gpuplan 1.7x slow "
        "(294 preemptions, each recomputing up to 32k tokens; median ITL 511 against 43.5 ms) where the other "
        "runs are 1.6-1.8x fast; now 277 s against 386.8, median ITL 24.9 ms: fast like the rest, so every vLLM "
        "run of that page reads as a slower card or host than an H100 SXM (bench/results/serving_s19.md). Session "
        "22 (s22-vload) replayed the lab's other runs on that card, not rows: SGLang 0.5.5.post1 with Qwen3-14B-FP8 on "
        "the same page and vLLM 0.11.0 with Qwen3-32B (qwen3-32b/h100.md), same bursts: their median ITL is "
        "1.64/1.72x and 1.62/1.67x gpuplan's, as vLLM's 14B rows are 1.58/1.53x, where the lab's A100 (Qwen3-32B, "
        "qwen3-32b/a100.md) is 1.08/1.06x; timed as an H100 PCIe all six land within +1..+8 %. Two engines, two "
        "models and two weight formats decode ~1.6x slower on that card alone, so no vLLM mechanism is sought; nor "
        "FA3's decodes beside a prompt chunk (a KV head's query heads packed into a 128-row tile, every row "
        "computed: at most 1 point here) (bench/results/vllm_load_s22.md). Session 24 (s24-ix): the page's rows read "
        "as the rows have them; its client passes no --ignore-eos (99,803 of 100,000 tokens at 4K: -0.2 %). The same "
        "page's burst of 1,000 chat requests of 128 tokens (not a row) is admitted at ~40 a second on both cards "
        "(H100 44.0, A100 37.3 requests/s; gpuplan 190 and 68): the lab's API server costs ~25 ms a chat request "
        "on either host, so the H100's 1.6x is the card; at that rate the 500-prompt bursts are admitted in ~12.5 "
        "s of their 99-407 s and admission does not bind them. " + S29 + "vllm bench serve sends the 500 prompts in "
        "0.3-0.4 s of client time (0.5-0.8 ms each, bench/serving/client_cost.py) and parses 246-1,139 chunks/s, "
        "<= 7 % of a core; the A100 rows share the client and land. " + S30 + "the page's card line read 'NVIDIA H100 "
        "GPUs' until gpustack@1f37f1b8 (2026-01-06, 'clarify GPU number') made it 'A single NVIDIA H100 SXM GPU', "
        "two months after the runs; the one default vLLM 0.11 sets apart for the two cards (8,192 tokens and 1,024 "
        "sequences a step on the H100, 2,048 and 256 on an A100: arg_utils.py's 'a100' exception) is planned. "
        "The lab's H100 is slow on every page read: its H100/A100 throughput ratio is 1.79/1.78 (4K/2K "
        "rows), 1.68 (Qwen3-14B ShareGPT), 1.36 (Qwen3-32B ShareGPT) and 1.29 (its quantization page, Qwen3-8B "
        "BF16, vLLM 0.9.2), where gpuplan's (ShareGPT as its mean lengths) is 3.25/3.26, 2.96, 1.56 and 2.90 for "
        "an H100 SXM and "
        "2.02/2.05, 1.93, 0.95 and 1.96 for a PCIe card; its Qwen3-8B latency page (TPOT 7.14-7.40 ms, 16.4 GB "
        "of weights a step: >= 2.2 TB/s) decodes faster than a PCIe card can."),
    ("load_accuracy", "k8sllm"): (
        "a Kubernetes platform's baseline (added session 16, held out): vLLM 0.23.0, Qwen2.5-0.5B-Instruct on one L4 of"
        " a 4-vCPU GKE node, `vllm bench serve --backend openai-chat` in a closed loop at 1-32 users, the client on the"
        " same node. ITL -3..-18 % and requests/s +5..+20 % land; TTFT -15/-28/-35/-32/-57/-77 %. The bench replays the"
        " client's prefix cache (one seed for every level, so each level's first half is the previous level's prompts; "
        "all 320 at 32 users); without that replay -15/-21/-20/-6/-40/-24 %. The measured TTFT grows 5x from 1 to 32 "
        "users (27 -> 135 ms) where a step grows 1.4x (ITL 5.1 -> 7.1 ms): the time is outside the GPU's work, in the "
        "API-server process and the client that stream ~3,800 chat chunks a second on the node's 4 vCPUs beside the "
        "engine core, which gpuplan's API-server queue (1 ms a request, 72.8 us a token) puts ~30 % busy. A host's CPU "
        "is not an input of gpuplan and no run of this node outside these rows sets one: left "
        "(bench/results/load_accuracy.md). The ITL misses are not the decode attention's rate (s17-kvdec): the cache is"
        " 0.58 of gpuplan's 5.84 ms step at 32 users. Nor the API-server queue's constants (s22-vload): its serial part"
        " 1-10 ms and its per-token part 1-3x leave 2-16 users at -28..-62 % while 32 users go from -78 % to +128 %: a "
        "cliff, not the measured steady growth (bench/results/vllm_load_s22.md). Session 24 (s24-ix): the replay "
        "re-read in vLLM's RandomDataset: each prompt's offset is drawn the same for any --num-prompts (checked with "
        "numpy), but a prompt that re-encodes short is padded by gen_prompt_decode_to_target_len from the generator "
        "after all offsets are drawn, so its tail differs between levels: at most the last one or two 16-token blocks, "
        "a few tokens of prefill: not the miss. Session 25 (s25-ix; bench/results/inference_sources_s25.md): the "
        "source's own Prometheus peaks (31 running, 0 waiting, at 32 users in flight; few scrapes) put the time "
        "outside the engine; client and server pods both ask 1 CPU and may take all 4 of the node; the TTFT over the "
        "1-user level grows with the streamed tokens/s from 2 users on (26-34 ms per 1,000 tokens/s at every "
        "level), and gpuplan's serial frontend at 4/7/10 ms a request leaves 32 users at -77/-73/-73 % (a closed "
        "loop of fixed lengths staggers through a FIFO queue and stops queueing): the node's shared CPUs. " + S29 +
        "the client parses ~3,800 chat chunks/s at 32 users (0.19-0.22 of a core at 50-58 us a chunk, "
        "bench/serving/client_cost.py); as one FIFO process over gpuplan's runs it adds 0.0-0.3 ms at 1-32 users."),
    ("load_accuracy", "kvcached"): (
        "TPOT now within the limit (48.3 % -> 18.5 %): vLLM 0.19's steps past its largest CUDA graph (512 tokens: a "
        "512-token prompt beside the running decodes) run the compiled model without a graph, every kernel launched "
        "from Python (`gpu_model_runner.py`, CUDAGraphMode.NONE; the source's own nsys trace, kvcached@4a8176e: 350 "
        "kernels a median 34 us apart, 19-27 ms a step); gpuplan interpolated those launches between its step grid's "
        "points and priced them at the 5 us C++ floor. A step past the cap now takes the longer of its GPU work and "
        "its launches (serving/steptime.py `StepModel._launches`), vLLM's at eager PyTorch's 18 us a kernel "
        "(overheads.VLLM_EAGER_LAUNCH_S, borrowed; KubeCon's held-out stages bound it above). What stays above, "
        "TTFT (-42 % burst, -33 % at 16 requests/s), is this host's Python at ~1.4-2x gpuplan's figures "
        "(bench/results/load_accuracy.md): at 16/s the request path outside the engine (~20 ms against 14.7) and the "
        "eager step (12.7 ms at the p99 ITL against 7.06); in the burst the API server's serial work per request (1 "
        "ms, the split of vLLM 0.7's PR #12287 run, about half this host's). vLLM 0.19's tokenizer hands a burst to "
        "the engine in batches of up to 32 (`AsyncMicrobatchTokenizer`): built, it gives the burst's ITL as measured "
        "(median 4.49 against 4.51 ms, p99 21 against 26) but serves the burst in 2.8 s against 5.4 (TTFT -64 %), so "
        "it was not kept; no public run of a 0.19 API server at its limit outside these rows sets the serial part. "
        "Read again (s12-ttft), nothing changed: the client (`vllm bench serve`: an unlimited connector, TTFT at the "
        "first SSE message), the tokenizer's 2 ms batching window (in every calibration release too, so inside "
        "VLLM_V1_REQUEST_S already), and the engine core's one thread (an eager step's launches after its host work: "
        "tried, 16/s TTFT -33 % -> -31 % but burst TPOT +2 % -> +87 %, not kept). Read again (s13-vhost), nothing "
        "changed: every calibration row, tt340's and these go through /v1/completions, and vLLM PR #54628 measures "
        "the part outside the engine through the chat endpoint within the spread of the completions one (11.0-12.2 "
        "against 8.4-12.0 ms); it does not grow with the prompt across the calibration rows (6-15 ms at ~590 tokens, "
        "21-23 at 204); and this source's mean ITL equals its mean TPOT (2.40 against 2.39 ms), so its API server "
        "held no streams back: the host. Session 24 (s24-ix): run_sweep.sh warms up with --seed 1 and times seeds "
        "42, 99 and 7 on one server, prefix cache on: no prompt of the seed-42 rows was cached; nothing changed. "
        "Session 25 (s25-ix; bench/results/inference_sources_s25.md): the API-server process made work-conserving "
        "(no more than a second of work a second; streamed tokens the process cannot keep up with reach their "
        "clients late) serves the burst in 5.16 s of process time against 5.40 measured (requests/s +29 -> +4 %, TTFT "
        "-42 -> -19 %, the line 37.3 -> 26.1 %) but sends the Nemotron recipe's TTFT to +182 %: a repeat of s9's "
        "s9-lag-paced; vLLM PR #12298 (0.7.1) coalesces a lagging stream's outputs, so the per-token figure from "
        "PR #12287's run (the day before) is partly per chunk, and no public split of it was found; not kept. " + S29 +
        "vllm bench serve's one process (0.82 ms a request sent, 50/54.5/58 us a chunk parsed, measured on a fake "
        "server) as a FIFO over gpuplan's burst: TTFT -41.6 -> -40.0/-35.8/-32.5 %, requests/s and the 16/s row "
        "unchanged, but the Nemotron recipe's TTFT -24 -> -24/-24/+141 % (15.8k chunks/s fill the process); the "
        "source's own peak, 16,751 tokens timed in one second, caps that host's client at 59.7 us a chunk."),
    ("load_accuracy", "recipes"): (
        "The Nemotron-3-Nano recipe (FP8, one H200, 1,024 users): Mamba-2 layers are no longer timed as attention "
        "and add their chunked scan from mamba_ssm's kernels; decode reads and writes each sequence's recurrent "
        "state once, not per context token (TTFT -29.5 % -> -23.3 %, TPOT +2.4 % -> +12.7 %). What is left: the "
        "FP8 path gains 1.90x over BF16 in gpuplan against 1.40x on Model-Optimizer's H100 throughput runs of this "
        "model (BF16 within 4 %). The recipe's --async-scheduling (opt-in on 0.12) is now run as recorded "
        "(scenario field async_scheduling): TTFT -23.3 % -> -31.9 %, TPOT +12.7 % -> -21.0 %; overlapped, gpuplan's "
        "decode step at ~1,000 sequences is its GPU work alone (41 ms), ~13 ms short of what the measured TPOT "
        "needs. That gap is the Mamba-2 state update: vLLM 0.12's Triton `selective_state_update` ran its "
        "dstate-128 launch heuristic (BLOCK_SIZE_M 4, 4 warps), 2,842 GB/s on the H200 in vLLM PR #44251's table, "
        "not the streaming rate (3,840) that its tuned configs of 0.23 reach: TTFT -30.8 % -> -24.4 %, TPOT "
        "-20.3 % -> -6.0 %, requests/s +26.4 % -> +7.5 % (bench/results/load_accuracy.md)."),
    ("load_accuracy", "vllmblog"): (
        "gpt-oss-20b's TTFT under load (-21 % and -18 %): the prompt steps of the MXFP4 model on Hopper; its ITL "
        "(-19 % and -27 % before, now -4 % and -5 %) takes two decode costs from the same post's single-request "
        "sweeps (engines/vllm.py `measured_kernels`: 51 us a MoE layer, fitted on the H100 and found again on the "
        "B200; FlashAttention-3's fp8 cache at 0.63 of the 16-bit rate for head_dim 64). Llama-3.1-8B's FP8 ITL -19 %: "
        "FP8 saves 2.25 ms a step at concurrency 8 where the single-request slopes give 3.4 ms."),
    ("sglang_serving", "dstack"): (
        "DeepSeek-R1 on SGLang 0.4.3.post2 with DP attention (8x H200) and 0.4.2.post4 (8x MI300X), as dstack's "
        "README states. Modelled: a scheduler per DP rank, fed round robin, the ranks stepping together "
        "(serving/simulate.py _Ranks; 0.4.3's halved chunk), the triton MLA decode streaming the latent cache once "
        "per 16 heads, the triton prompt attention (x 5.09 the absorbed figure) and the rest of the prompt path per "
        "vendor (x 1.63 on CUDA from SGLang PR #3550's runs; x 2.29 on ROCm from PR #3237's bench_one_batch prefill "
        "on 8 MI300Xs, 0.838 s for 4 x 2,048 tokens where gpuplan said 0.427 s; session 11), none fitted on these "
        "rows: TTFT 36.6 % -> 7.0 % (MI300X -35..-43 % -> -8..+5 %), TPOT 14.7 % -> 15.2 %, E2E 14.4 % -> 13.3 %. "
        "SGLang's max_prefill_tokens (16,384; PrefillAdder.add_one_req up to 0.5.12 closes a batch at a prompt as long "
        "as what is left of it; now simulated, serving/simulate.py _closes_prefill_batch, which refitted PR #3550's "
        "constants 1.12 -> 1.11 and 4.24 -> 4.22) does not bind here: each rank's chunk (4,096 under DP attention, "
        "8,192 on the MI300Xs) fills first, and the pool reserve (new_token_ratio) is far from one rank's pool (385k "
        "tokens, <= 64k used). Session 12 (issue 31): SGLang's admission reserve switched on and the host and PR #3550 "
        "constants refitted with it (PR #3550's replay had retracted and recomputed requests 35 times; the prompt path "
        "1.11 -> 1.63, triton 4.22 -> 5.09): TTFT 7.3 % -> 5.8 %, TPOT 15.2 % -> 12.9 %, E2E 13.3 % -> 11.5 %; "
        "the H200 "
        "from 32 requests -13..-17 % (was -26..-38 % from 16), at 8 requests +22 %. Session 13: those releases' "
        "block-FP8 GEMMs at their measured rate (overheads.BLOCK_FP8_KERNEL_SHARE) and PR #3550's and PR #3237's "
        "prompt factors refitted with it (CUDA 1.63 -> 1.03, ROCm 2.29 -> 1.62): TTFT 5.8 % -> 5.2 %, TPOT 12.9 % -> "
        "11.9 %, E2E 11.5 % -> 10.0 %; the H200 at 4 and 8 requests +12/+32 %, from 16 -8..+5 %. Session 14: the "
        "MI300X's Triton kernels at their gfx942 share (0.143, fitted on PR #3237's prefill, where the ROCm prompt "
        "factor 1.62 stood; the rest of the prompt path at the CUDA factor 1.03): TTFT 5.2 % unchanged, TPOT 11.9 % "
        "-> 12.1 %, E2E 10.0 % -> 10.6 % (MI300X TPOT +12/+17/+12/+11/+4/-13 % -> +12/+18/+15/+14/+7/-10 %). "
        "Shown, never fitted."),
    ("sglang_serving", "ix3173"): (
        "InferenceX DeepSeek-R1-0528 FP8 under SGLang 0.5.12 on 8 H200s (1k and 8k prompts, means). Session 14 timed "
        "the checkpoint's block-FP8 GEMMs as SGLang 0.5 runs them (engines/block_fp8.py: DeepGEMM's linears, the "
        "tuned Triton MoE at TP 8, both at DeepGEMM's share of the fp8 rate from its README's H800 table and vLLM PR "
        "#13932's Triton-against-DeepGEMM timing), where gpuplan had timed them as bf16 GEMMs: TPOT 12.7 % -> 6.3 % "
        "(the prompt steps that stall the decodes shorter), the 8k TTFT +18/+5/-1/-3/-30 % -> -9/-18/-23/-24/-47 %, "
        "the 1k TTFT -30..-15 % -> -47..-36 %. The 1k rows were already short by a near-constant ~80 ms a request at "
        "4-16 requests that no engine step holds (bench/results/moe_layout.md, PLACED_S: a diagnostic, not "
        "adopted); the faster prompts leave that gap whole and add the 8k rows' shortfall beside it. Read again "
        "(s15-ttft, moe_layout.md note 17), nothing changed: the client's request path, the text path (at most "
        "~36 ms: the 8k rows at 4 requests share it), DP attention, mixed chunks, the prefill delayer and the "
        "overlap scheduler's first token. Session 20 (s20-sgl; moe_layout.md note 20), nothing changed: issue #870 "
        "ran its three 4-request v0.5.7 jobs on three H200 runners; the 1k/1k one (h200-nv_0) decoded at 22.73 ms a "
        "token, 2.2x gpuplan's and 2.1x the 1k/8k job's on h200-cw_1, and the two whose decodes land miss TTFT by +120 "
        "ms (1k prompts) and +133 ms (8k): under 0.5.7 the offset is there at 8k too, and runners of one label differ "
        "2x on the same software. FlashInfer's fused all-reduce, which 0.5.12 turns on by itself for prompt steps of "
        "up to 2,048 tokens on SM 9.0 and 10.x, runs on B300 too (+11..+17 ms there) and is timed within a few "
        "hundredths of a ms a call of the unfused pair (vLLM PRs #37756, #22086). Session 22 (s22-ix; "
        "bench/results/sglang_ttft_s22.md): the 8k rows' pool as the same launch line logged it under v0.5.19 "
        "(509,930 tokens, InferenceX PR #3010; gpuplan's own 537,028) with SGLang's ignore_eos admission makes the "
        "64 requests' whole outputs overflow it, so later prompts wait: 8k at 64 requests -47 % -> -18 %, median "
        "37.0 % -> 30.2 %. A wait on each request that lifts the 1k rows (+126 ms, #870's two sound runners) gives "
        "11.8 %, but a like one (+115 ms) on B300's FP8 rows of the same launch line sends 1k at one request to "
        "+147 %: the offset follows the runners, not the software. Session 24 (s24-ix): the launch lines and images as "
        "the runs ran them (nvidia-master.yaml: H200 and B300 on v0.5.12-cu130 from 2026-05-17, B200 from 05-18; the "
        "H200 script's --decode-log-interval 1 logs off the GPU's path), the client's 2 x conc warm-ups of the first "
        "prompt, --ignore-eos, backend vllm: as simulated; nothing changed. Session 27 (s27-src31): the "
        "TokenizerManager's tokenizing at 4 us a prompt token (overheads.TOKENIZE_S_PER_TOKEN): the 8k rows -9/-18/-23/"
        "-24/-18 % -> +1/-9/-19/-21/-17 %, the 1k rows (~3.7 ms each) -47/-41/-37/-44/-38 % -> -47/-41/-40/-49/-38 %: "
        "30.2 % -> 29.2 %; the 1k rows' ~80 ms stays. Session 28 (s28-srca; bench/results/inference_srca_s28.md), "
        "nothing changed: the 1k rows' prompt steps are graphed here (0.5.12 on SM 9.0), so no launch factor moves "
        "them; were they eager, launches x 2/2.5 would give 14.5/9.5 % with the 8k rows unchanged, the B200 rows' "
        "signature (a slower host; h200-cw's launcher asks for no --exclusive), not adopted. " + S29 + "InferenceX's "
        "client opens a session and a TCP connection per request (1.4-1.5 ms of CPU, bench/serving/client_cost.py) "
        "and parses <= 215 chunks/s (--stream-interval 10): not the ~80 ms."),
    ("sglang_serving", "ix3318"): (
        "InferenceX DeepSeek-R1 TTFT under SGLang 0.5.19 on MI325X (8k prompts, means). Not SGLang's prefill cap: "
        "dsr1_fp8_mi325x.sh passes --max-prefill-tokens=131072 with --chunked-prefill-size=131072, the budget "
        "simulated. Where the time is: at 4 requests the simulated 445 ms is 68 ms waiting for a prompt step, 370 ms "
        "of prompt step and 7 ms outside the engine, against 1,025 ms published; the excess falls as the load "
        "grows, +580/+456/+303/+195/+142 ms at 4/8/16/32/64 requests. Read against the TPOT, not in the engine's "
        "steps: every prompt step x 2.5 (what 4 requests need) sends 16-64 to +78..+125 %; 0.58 s more a prompt "
        "step brings 4 requests to +6 % with TPOT +35..+59 % at 8-64, and 0.8 s + 0.3x fits the TTFT (-9..+8 %) "
        "with TPOT +35..+57 % at 8-64 (each such step stalls the running decodes). Nor a constant per request outside "
        "them: 0.58 s brings 4 requests to 0 % and 16-64 to +23..+28 %, the simulated queue growing faster than "
        "the published (at 64 requests the first wave, 64 "
        "prompts in 131,072-token steps, averages 12.7 s: 1.3 s of the 1.8 s mean). The client and flags as the runs "
        "ran them are as simulated (InferenceX at 843c6254). The rows read as a cheaper prompt path plus ~0.6 s on "
        "each request that neither holds the engine nor queues: the published TTFT at 8 requests equals 4's though "
        "the first wave doubles; prompt work x 0.7 with 0.6 s on each request's own path gives -10..+5 % on all five "
        "rows, the same 0.6 s on the one frontend process +67..+79 % at 32-64 (a diagnostic read off these rows, not "
        "adopted). No source read gives either (bench/results/moe_layout.md, notes 6-8, 12-15; s12-ttft read the "
        "client's tokenizer repair of InferenceX #937, whose absence read 3x on TTFT, as present for these runs, and "
        "SGLang's completions stream as sending the first token at once). Nor the linears' rate (session 14): 0.5.19 "
        "runs AITER's CK block-scale GEMM on gfx942, whose published MI300X times (ROCm/aiter PR #365) gpuplan's "
        "16-bit timing of these linears reads at a median 0.88: ~30 ms of the ~580 ms at 4 requests (moe_layout.md "
        "note 16). Nor the client's or the text path (s15-ttft, note 17): H200's 8k rows share the client, "
        "SGLang's TokenizerManager and 8k random-text prompts, and leave at most ~36 ms at 4 requests; no DP "
        "attention, mixed chunks or prefill delayer in the script, and aiter's prompt attention reads no pool. "
        "Session 20 (s20-sgl; moe_layout.md note 20), nothing changed: 0.5.19's MinFreeSlotsDelayer is off without "
        "--min-free-slots-delay or DFlash, its transformers-5 tokenizer fix-ups put the ByteLevel components back "
        "(the Rust tokenizer's speed), and the client asks for no logprobs. Session 22 (s22-ix; "
        "bench/results/sglang_ttft_s22.md), not adopted: a wait on each request fitted on the source's own fit rows "
        "(4/16/64 requests) is 309 ms and brings the held-out 8/32 to -15/+8 % (median 11.2 %), but it follows "
        "neither the fit rows' shape (-27/0/+8 %) nor a mechanism, and on the ROCm rows of another source (dstack's "
        "MI300X, SGLang 0.4.2) it moves TTFT +1/-1/-2/-4/+9/+5 % -> +20/+10/+5/0/+11/+7 %. Session 24 (s24-ix): "
        "--num-continuous-decode-steps 4 confirmed dead in 0.5.x (no loop reads it since SGLang PR #2095); the rows' "
        "measured TTFT at 4 and 8 requests is the same (1,025 and 1,027 ms) where the first wave doubles: nothing "
        "in the script or client explains it; nothing changed. Session 27 (s27-src31): the TokenizerManager's "
        "tokenizing of each 8k prompt (~30 ms at overheads.TOKENIZE_S_PER_TOKEN, 4 us a token) is ~5 % of the ~0.6 s: "
        "held-out 8/32 -45/-15 % -> -42/-17 %, 29.9 % -> 29.5 %. Session 28 (s28-srca; "
        "bench/results/inference_srca_s28.md), nothing changed: not the host's launches (the 8k step is GPU-bound, "
        "321.9 ms against a 56.3 ms floor; launch_mi325x-amds.sh asks for 256 CPUs); PR #2949 names the same "
        "script's v0.5.12 baseline (2026-05-18), unread here, which would say whether the 0.6 s came with 0.5.19. " +
        S29 + "the client streams every token here (no --stream-interval), <= 962 chunks/s, <= 6 % of its core, and "
        "spends ~1.5 ms a request: not the 0.6 s."),
    ("sglang_serving", "ix3363"): (
        "InferenceX DeepSeek-R1 TTFT under SGLang 0.5.12 on B200 (FP8, TP 8, EP 1, fp8 pool, 1k prompts, means). "
        "Session 10 priced its prompt steps of up to 2,048 tokens as piecewise CUDA graphs under which trtllm_mla "
        "casts every layer's whole fp8 pool to bf16 (~134 ms a step; held-out median 38.6 % -> 12.8 %). Session 15 "
        "(s15-ttft) took that back: until 2026-05-22 SGLang's server_args.py turned the prefill graphs off under the "
        "flashinfer_trtllm MoE runner these runs pass (sgl-project/sglang issue #26715, PRs #23351 and #27841; "
        "engines/sglang.py PREFILL_GRAPHS_MOE_GUARD_UNTIL), and InferenceX PR #3175 runs the same launch line on 8 "
        "B300s at 70.9 ms for one 1k request, where the cast would give ~275 ms (gpuplan now 60 ms). TTFT at "
        "1/2/4/8/16/32/64 requests +9/+35/+14/-2/-4/-13/-58 % -> -62/-39/-44/-49/-28/-27/-61 %, TPOT -10..-3 %. "
        "The miss is the B200's: with the same software B300 takes 70.9 ms at one request where B200 takes 160.4, "
        "and at 8k the two cards differ by 26-29 ms; no mechanism found (bench/results/moe_layout.md, notes 10 and "
        "17). PR #3175's B300 rows, held out since s15-b300, miss the 8k prompts as the B200 does (+140/+176 ms at "
        "one request, TP 8/4). s15-figemm timed the recipe's dense linears in FlashInfer's groupwise FP8 GEMM "
        "(SGL_ENABLE_JIT_DEEPGEMM=false: the fp8_gemm_backend flashinfer_trtllm the rows now set) at 0.314 of the fp8 "
        "rate (SGLang PR #13528's B200 table; DeepGEMM's 0.875 before): ix3175 TTFT 26.6 % -> 15.8 %, its 8k offsets "
        "+95/+107 ms; these rows' TTFT -62/-41/-45/-50/-29/-29/-62 % -> -62/-41/-44/-47/-24/-21/-56 %. Left: ~85-105 "
        "ms an 8k prompt that does not depend on TP, not found (moe_layout.md note 18). Session 20 (s20-sgl; note "
        "20), nothing changed: B300 runs the same fused all-reduce kernel on 1k prompts (0.5.12 turns it on for any "
        "SM 10.x), so it does not split the cards; InferenceX's b200 label spans three fleets (b200-cw, b200-nb, "
        "b200-dgxc; configs/runners.yaml), and issue #870 measured two H200 runners of one label 2x apart in TPOT "
        "on the same software: the host stays the suspect, not an input. Session 22 (s22-ix; "
        "bench/results/sglang_ttft_s22.md), not adopted: the wait on each request that PR #3363's B200 8k points "
        "outside the bench ask for (+115 ms at 1-2 requests, TP 4 and 8) brings these rows to 9.3 % and H200's to "
        "12.7 %, but sends B300's FP8 rows of the same launch line to +13..+147 % at 1k and 1-32 requests and B300's "
        "NVFP4 rows' median to 87 %. Session 24 (s24-ix): dsr1_fp8_b200.sh and dsr1_fp8_b300.sh differ only in "
        "comments at InferenceX ed5867f9e, and both configs ran v0.5.12-cu130 for the 05-22 tables: the B200's +100 ms "
        "at one request has no software side; nothing changed. Session 25 (s25-ix; "
        "bench/results/inference_sources_s25.md): against PR #3175's B300 rows of the same launch line, the B200's "
        "mean TTFT is +89/+61/+75/+103/+56/+50/+547 ms at 1-64 requests where its mean TPOT is within 2-8 % of "
        "B300's (gpuplan puts the two cards 0-15 ms apart): a near-constant extra a request that no queue grows, and "
        "one outlier level, on the same engine steps: the runners. Session 27 (s27-src31; bench/results/"
        "inference_sources_s27.md): the TokenizerManager tokenizes each prompt in its event loop before the scheduler "
        "sees it (overheads.TOKENIZE_S_PER_TOKEN, 4 us a token measured on DeepSeek's 128K tokenizer by "
        "bench/serving/tokenize_cost.py; SGLANG_REQUEST_S refitted with it, 8.48 -> 8.06 ms), ~3.7 ms a 1k prompt: "
        "these rows -62/-41/-45/-48/-24/-21/-56 % -> -61/-41/-45/-48/-24/-21/-57 %, the line unchanged; B300's 8k "
        "rows, whose +95/+107 ms offset does not follow TP, take 30 ms of it (ix3175 TTFT 15.8 % -> 13.4 %): the "
        "B200's ~100 ms at 1k is not the tokenizer. Session 28 (s28-srca; bench/results/inference_srca_s28.md), "
        "nothing changed: the gap to B300 (+89 ms at 1k, +26/+29 ms at 8k, one request) has the shape of a prompt "
        "step bound by its launches (gpuplan: 1k launch-bound at 51.8 ms against 38-41 ms of GPU work, 8k GPU-bound): "
        "launches x 2.5/3 on these rows alone give 9.7/5.1 % and leave the B200 8k points unchanged, but send B300's "
        "1k at one request to +99/+135 %; InferenceX's b200-cw launcher asks for no --exclusive and no CPUs where "
        "b300-nv's does, and which fleet ran the table is not in any source read: a host's launch speed, not an "
        "input. " + S29 + "InferenceX's client (a session and TCP connection per request: 1.4-1.5 ms of CPU, 4-8 ms "
        "on a loaded host, bench/serving/client_cost.py; <= 98 chunks/s at --stream-interval 30; TTFT at the first "
        "chunk, warm-ups finished before the timed run) is B300's too: not the ~80-100 ms. " + S30 + "the table "
        "joins two sweeps: conc 1 and 2 entered the config only on 2026-05-22 (InferenceX 6a4fe2a12, PR #1534, "
        "whose re-run its changelog truncates to them), conc 4-64 were last re-run for PR #1502 (05-19/20), and "
        "each point is its own job on any runner of the b200 "
        "label (benchmark-tmpl.yml runs-on; the result file names the runner): the +50..+103 ms over B300 "
        "holds in both sweeps and in all six jobs at 1-32 requests, and it is larger at 1k than at 8k "
        "(+26 ms), so it is no client tokenizer mismatch (InferenceX PR #1381, fixed 05-15, would scale with "
        "the prompt); the script and client match B300's at both commits."),
    ("trtllm_serving", "i5929"): "trtllm-serve's B200 prompt steps: helper s8-trtllm's this session.",
}


def cause_lines(table: dict[Key, dict]) -> list[str]:
    """The sources above the limit, each with its cause (CAUSES), largest held-out median first."""
    worst: dict[tuple[str, str], float] = {}
    for (bench, src, *_), s in table.items():
        if s["median"] is not None and s["median"] > LIMIT:
            worst[(bench, src)] = max(worst.get((bench, src), 0.0), s["median"])
    lines = [f"Sources above {LIMIT:.0%}, largest first, by cause:", ""]
    for (bench, src), med in sorted(worst.items(), key=lambda kv: -kv[1]):
        lines.append(f"- **{bench} / {src}** (up to {med:.1%}): {CAUSES.get((bench, src), 'not yet explained.')}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "inference_sources.md")
    ap.add_argument("--max-requests", type=int, default=3000, help="requests simulated per serving run "
                    "(serving_accuracy.py's and sglang_serving.py's default)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = every_row(args.max_requests)
    text = report(rows, time.perf_counter() - t0)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
