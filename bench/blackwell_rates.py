"""What the B200, B300 and GB200 would answer at their posted matmul rates (issue 31, session 15): a what-if.

    python bench/blackwell_rates.py [--out bench/results/blackwell_rates.md]

The three Blackwell data-center cards take the default matmul share less the per-watt lowering
(speed/gemm.matmul_fraction: 0.80 x (0.8 / TFLOPS per watt) ** 0.5, B200 0.477, B300 0.500, GB200 0.496), where
stas00/ml-engineering's Maximum Achievable Matmul FLOPS table (compute/accelerator/README.md @744d01e, BF16, best
shape) posts B200 1,745.0 of 2,250 (0.776), B300 1,769.0 of 2,250 (0.786) and GB200 1,822.0 of 2,500 (0.729).
TensorRT-LLM's NVFP4 GEMM share (overheads.TRTLLM_GEMM_PEAK_SHARE, TRTLLM_GEMM_HALF_ROWS) was fitted on the
B200 rows of NVIDIA's performance overview with the default in place, so the posted rates are tried twice: as they
are, and with the NVFP4 share and its half-rows refitted on the same fitted rows alone (the B200 NVFP4 dense rows
of bench/trtllm.py; :func:`refit`, a grid). Every other constant stays. Then every source those cards appear in is
read again with its own scorer (bench/inference_sources.py's rows, bench/mlperf.py's MLPerf Training rows):
held-out medians before and after, and the GB200 against the B200 where both ran the same job, which the rates
set apart (published against gpuplan's ratio). Nothing here changes the package: the report says what taking the
rates would do.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import itertools
import statistics
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "serving"))

import inference_sources as sources  # noqa: E402
import mlperf  # noqa: E402
import mlperf_inference  # noqa: E402
import trtllm  # noqa: E402
from gpuplan import overheads as oh  # noqa: E402
from gpuplan.model.catalog import load_model  # noqa: E402
from gpuplan.speed import gemm  # noqa: E402

# stas00/ml-engineering compute/accelerator/README.md @744d01e, "Maximum Achievable Matmul FLOPS comparison table",
# BF16, over the catalog's dense datasheet rate (the s14-rates lead in overheads.MATMUL_PEAK_FRACTION's comment).
POSTED = {"nvidia-b200": 1745.0 / 2250.0, "nvidia-b300": 1769.0 / 2250.0, "nvidia-gb200": 1822.0 / 2500.0}
SHARES = (0.5, 0.55, 0.575, 0.6, 0.625, 0.65, 0.675, 0.7, 0.75, 0.8, 0.9, 1.0)
HALVES = (0.0, 16.0, 32.0, 64.0, 96.0, 128.0, 256.0)
# The posted rates' ratios at the level the rule gives the B200 (0.477 / 0.776 of each): B300 0.484, GB200 0.448.
ANCHORED = {card: share * 0.80 * (0.8 / 2.25) ** 0.5 / POSTED["nvidia-b200"] for card, share in POSTED.items()}
BLACKWELL = ("nvidia-b200", "nvidia-b300", "nvidia-gb200", "nvidia-gb300")
VERDICT = ("Not taken. With the share refitted, the inference sources read as before within a point or three (the "
           "share absorbs the rate: TensorRT-LLM's NVFP4 GEMMs at 0.625 x 0.776 = 0.485 of the FP4 peak, where the "
           "rule gave 1.0 x 0.477); MLPerf Training's B200 and GB200 rows, which share the card's rate and no "
           "TensorRT-LLM share, run 20-30 % faster than measured. The posted rates order the GB200 and the B200 as "
           "MLPerf measured them better than the rule does; the level NeMo sustains against mamf-finder's short "
           "loop is what no public source read gives (overheads.MATMUL_PEAK_FRACTION's comment). Keeping the rule's "
           "level and taking only the posted ratios (last column: the GB200 10 % and the B300 3 % slower) moves no "
           "median by more than a point either way. The GB300 has no posted rate and does not move.")


@contextlib.contextmanager
def rates(posted: bool | dict[str, float], fp4: tuple[float, float] | None = None) -> Iterator[None]:
    """The package's constants for the duration: the posted rates in MATMUL_PEAK_FRACTION when ``posted`` (or the
    shares it maps), and the Blackwell NVFP4 share and half-rows ``fp4`` when given; restored after (the GEMM rate
    cache cleared each way)."""
    saved = (dict(oh.MATMUL_PEAK_FRACTION), {k: dict(v) for k, v in oh.TRTLLM_GEMM_PEAK_SHARE.items()},
             dict(oh.TRTLLM_GEMM_HALF_ROWS))
    try:
        if posted:
            oh.MATMUL_PEAK_FRACTION.update(POSTED if posted is True else posted)
        if fp4:
            oh.TRTLLM_GEMM_PEAK_SHARE["Blackwell"]["fp4"], oh.TRTLLM_GEMM_HALF_ROWS["fp4"] = fp4
        gemm._RATES.clear()
        yield
    finally:
        oh.MATMUL_PEAK_FRACTION.clear()
        oh.MATMUL_PEAK_FRACTION.update(saved[0])
        oh.TRTLLM_GEMM_PEAK_SHARE.clear()
        oh.TRTLLM_GEMM_PEAK_SHARE.update(saved[1])
        oh.TRTLLM_GEMM_HALF_ROWS.clear()
        oh.TRTLLM_GEMM_HALF_ROWS.update(saved[2])
        gemm._RATES.clear()


def median_abs(errors: list[float]) -> float:
    return statistics.median(abs(e) for e in errors) if errors else float("nan")


def nvfp4_rows(role: str) -> list[dict]:
    """The dense NVFP4 rows of NVIDIA's performance overview in ``role`` (fitted: B200; held-out: GB200)."""
    return [r for r in trtllm.load_rows() if not trtllm.why_not(r) and trtllm.role(r) == role
            and r["precision"] == "nvfp4"]


@functools.cache
def refit() -> tuple[float, float, float]:
    """(share, half rows, median |error|) of the grid point that fits the fitted B200 NVFP4 rows best with the
    posted rates in place (bench/trtllm.py ``fit``'s measure: the median |error| of ``offline``)."""
    fitted = nvfp4_rows("fitted")
    scores = []
    for share, half in itertools.product(SHARES, HALVES):
        with rates(True, (share, half)):
            scores.append((median_abs([trtllm.err(trtllm.offline(r), r) for r in fitted]), share, half))
    score, share, half = min(scores)
    return share, half, score


def training_rows() -> list[dict]:
    """MLPerf Training's scored rows on the Blackwell cards (bench/mlperf.py ``run``; every row held out)."""
    with open(mlperf.DATA) as f:
        scored, _ = mlperf.run(list(csv.DictReader(f)))
    return [r for r in scored if f"nvidia-{r['gpu']}" in BLACKWELL]


def readings() -> dict[str, tuple[int, float]]:
    """Held-out median |error| and count per source the Blackwell cards appear in, with the constants in force."""
    groups: dict[str, list[float]] = {}
    for r in (sources.trtllm_rows() + sources.mlperf_rows() + sources.trtllm_serving_rows()
              + sources.speculative_rows()):
        if not r.fitted:
            groups.setdefault(f"{r.bench} / {r.source} / {r.cls} {r.quantity}", []).append(r.error)
        if not r.fitted and r.engine == "trtllm":  # inference_sources.md's pooled rows
            groups.setdefault(f"pooled: every held-out trtllm {r.cls} number", []).append(r.error)
    groups["trtllm / nvidia-perf-overview-1.0 / fitted rows (H100 FP8, B200 NVFP4; dense and MoE)"] = [
        r.error for r in sources.trtllm_rows() if r.fitted and r.source.endswith("1.0")]
    train = training_rows()
    for gpu in ("b200", "gb200", "gb300"):
        groups[f"mlperf (Training) / {gpu} / time to train"] = [r["error_pct"] / 100 for r in train if r["gpu"] == gpu]
    return {key: (len(errs), median_abs(errs)) for key, errs in groups.items()}


def ratio(pick_b: Callable[[dict], bool], pick_gb: Callable[[dict], bool], rows: list[dict],
          value: Callable[[dict], float], published: Callable[[dict], float]) -> tuple[float, float]:
    """Median published and gpuplan GB200 / B200 ratios over the rows each pair shares (``pick_*`` choose them)."""
    b = {r["_key"]: r for r in rows if pick_b(r)}
    gb = {r["_key"]: r for r in rows if pick_gb(r)}
    both = sorted(set(b) & set(gb))
    pub = statistics.median(published(gb[k]) / published(b[k]) for k in both)
    est = statistics.median(value(gb[k]) / value(b[k]) for k in both)
    return pub, est


def pair_lines() -> list[str]:
    """The GB200 against the B200 on the same job: NVIDIA's overview (same model, TP, ISL/OSL), MLPerf Inference
    v5.1 Llama-2-70B (per GPU, NVIDIA's own systems), MLPerf Training v5.0's one-node Llama-2-70B LoRA (the step)."""
    over = [dict(r, _key=(r["model"], r["tp"], r["isl"], r["osl"])) for r in trtllm.load_rows()
            if not trtllm.why_not(r) and r["precision"] == "nvfp4" and not load_model(r["model"]).is_moe]
    mlpi = [dict(r, _key=r["benchmark"]) for r in mlperf_inference.load_rows()
            if r["round"] == "v5.1" and r["submitter"] == "NVIDIA" and r["benchmark"] == "llama2-70b-99"]
    with open(mlperf.DATA) as f:
        train = [dict(r, _key=r["benchmark"]) for r in csv.DictReader(f) if r["id"] in ("T012", "T016")]
    cases = (("NVIDIA's overview 1.0, dense NVFP4 (Llama 3.3 70B TP 1, Llama 3.1 405B TP 4), output tokens/s",
              over, trtllm.offline, lambda r: float(r["output_tokens_per_s"])),
             ("MLPerf Inference v5.1 Llama-2-70B Offline, NVIDIA's systems, tokens/s per GPU", mlpi,
              lambda r: mlperf_inference.predict(r) / mlperf_inference.gpus(r),
              lambda r: float(r["output_tokens_per_s"]) / mlperf_inference.gpus(r)),
             ("MLPerf Training v5.0 Llama-2-70B LoRA on one node (T016 / T012), steps per second", train,
              lambda r: 1 / mlperf_step_s(r), lambda r: 1 / float(r["logged_step_s"])))
    lines = ["| GB200 / B200 | published | gpuplan (rule) | gpuplan (posted, refitted) |", "|---|---:|---:|---:|"]
    share, half, _ = refit()
    for name, rows, value, published in cases:
        pub, rule = ratio(is_gpu("b200"), is_gpu("gb200"), rows, value, published)
        with rates(True, (share, half)):
            _, posted = ratio(is_gpu("b200"), is_gpu("gb200"), rows, value, published)
        lines.append(f"| {name} | {pub:.3f} | {rule:.3f} | {posted:.3f} |")
    return lines


def is_gpu(label: str) -> Callable[[dict], bool]:
    """Whether a row (an overview or MLPerf Inference row's ``gpu_label``, a training row's ``gpu``) is ``label``'s."""
    return lambda r: r.get("gpu_label", r.get("gpu", "")).lower() == label


def mlperf_step_s(row: dict) -> float:
    """gpuplan's step time of one MLPerf Training row (bench/mlperf.py ``run``'s ``step_s``)."""
    scored, _ = mlperf.run([{k: v for k, v in row.items() if k != "_key"}])
    return scored[0]["step_s"]


def report() -> str:
    before = readings()
    with rates(True):
        posted = readings()
    share, half, score = refit()
    with rates(True, (share, half)):
        after = readings()
    with rates(ANCHORED):
        anchored = readings()
    lines = ["# The Blackwell cards at their posted matmul rates: a what-if", "",
             "Generated by `python bench/blackwell_rates.py` (its docstring: the posted rates, the refit, the rows). "
             "Held-out median |error| per source the B200, B300 or GB200 appear in (every row of the source, "
             "not only theirs); *rule*: the package as it is (the per-watt lowering of the default, B200 0.477, "
             "B300 0.500, GB200 0.496); *posted*: stas00's MAMF rates (0.776, 0.786, 0.729), NVFP4 share as "
             f"fitted; *posted + refit*: the NVFP4 share refitted on the fitted B200 rows alone: share {share} "
             f"(was {oh.TRTLLM_GEMM_PEAK_SHARE['Blackwell']['fp4']}), half at {half:.0f} rows (was "
             f"{oh.TRTLLM_GEMM_HALF_ROWS['fp4']:.0f}), those rows' median |error| {score:.1%}; *posted ratios at the "
             "B200's rule*: each card at its posted rate times the B200's rule over its posted one (B200 0.477, B300 "
             "0.484, GB200 0.448), NVFP4 share as fitted.", "",
             "| source / class quantity | n | rule | posted | posted + refit | posted ratios at the B200's rule |",
             "|---|---:|---:|---:|---:|---:|"]
    for key, (n, med) in sorted(before.items(), key=lambda kv: (kv[0].startswith("pooled"), "fitted" in kv[0],
                                                                 kv[0].startswith("mlperf (Training)"))):
        lines.append(f"| {key} | {n} | {med:.1%} | {posted[key][1]:.1%} | {after[key][1]:.1%} | "
                     f"{anchored[key][1]:.1%} |")
    lines += ["", "The GB200 against the B200 where both ran the same job (medians of the per-job ratios):", "",
              *pair_lines(), "", *textwrap.wrap(VERDICT, 118), ""]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "blackwell_rates.md")
    args = ap.parse_args()
    text = report()
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
