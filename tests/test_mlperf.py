"""gpuplan's time to train against NVIDIA's MLPerf Training submissions (bench/data/mlperf-training.csv, copied from
mlcommons/training_results_v4.0-v5.1 by bench/make_mlperf.py; bench/mlperf.py scores it). No gpuplan constant was
fitted on these rows. Tolerances (measured when written: 7.3 % on 37 rows, 2.0 % on the 405B, 12.8 % on the 8B,
9.4 % on the LoRA rows, 9.4 % on the 8 NVFP4 rows; since the pipeline runs at its slowest stage's pace, s12-megatron:
7.9 %, 4.7 % on the 405B, whose last stage holds 15 layers, the bf16 output layer and the loss, 9.8 % on NVFP4;
with the fp8 backward's split accumulator and the submissions' userbuffers TP overlap, s13-fp8: 8.3 %, 3.9 % on the
405B, 13.1 % on the 8B, 10.3 % on the LoRA rows): the
median |error| over the rows gpuplan can express within
10 % (issue 24 asks 15 %), on the 405B within 5 %, on the 8B and on the NVFP4 rows within 15 %, on the LoRA rows
within 12 %; only the L40S rows (no fabric transcribed) are left out; every layout NVIDIA ran on Hopper, and the
one-node TP1 LoRA layouts on Blackwell (fp8 attention and the fp8 activation store), fit gpuplan's memory
estimate."""

from __future__ import annotations

import csv
import importlib.util
import statistics
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def scored():
    spec = importlib.util.spec_from_file_location("mlperf_bench", BENCH / "mlperf.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    with (BENCH / "data" / "mlperf-training.csv").open() as f:
        rows = list(csv.DictReader(f))
    return bench.run(rows)


def test_rows_carry_their_source():
    with (BENCH / "data" / "mlperf-training.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 30
    for row in rows:
        assert row["source_locator"].startswith(f"mlcommons/training_results_v{row['round']}@")
        assert float(row["time_to_train_min"]) > 0 and int(row["samples_to_converge"]) > 0


def test_time_to_train_median_error(scored):
    rows, skipped = scored
    assert len(rows) >= 35 and all("fabric" in r["why"] for r in skipped)
    assert statistics.median(abs(r["error_pct"]) for r in rows) <= 10
    big = [r for r in rows if r["benchmark"] == "llama31_405b"]
    assert statistics.median(abs(r["error_pct"]) for r in big) <= 5
    small = [r for r in rows if r["benchmark"] == "llama31_8b"]
    assert statistics.median(abs(r["error_pct"]) for r in small) <= 15
    lora = [r for r in rows if r["benchmark"] == "llama2_70b_lora"]
    assert statistics.median(abs(r["error_pct"]) for r in lora) <= 12
    fp4 = [r for r in rows if r["precision"] == "fp4"]
    assert len(fp4) >= 8 and statistics.median(abs(r["error_pct"]) for r in fp4) <= 15


def test_hopper_layouts_fit(scored):
    """The 405B on 512-8192 H100s (TP 8, PP 8, VP 8, CP 2, fp8 weights) and the LoRA layouts on H100 and H200 ran:
    they fit. The H200's TP 1 / CP 2 LoRA (v4.1) keeps no fp8 weight transposes (its NeMo config's
    ``disable_parameter_transpose_cache: True``): 115 GiB of 141, 178.5 with the 64 GiB of transposes."""
    rows, _ = scored
    hopper = [r for r in rows if r["gpu"] in ("h100-sxm", "h200-sxm")]
    assert len(hopper) >= 12 and all(r["fits"] for r in hopper)
    t011 = next(r for r in rows if r["system"] == "h200_ngc24.09_nemo")
    assert t011["fp8_transpose_cache"] == "0" and 110 < t011["device_gib"] < 120


def test_blackwell_tp1_lora_layouts_fit(scored):
    """The one-node LoRA runs at TP 1 on B200 and GB200 (v5.0: FP8_DPA=1, FP8_ACT=1) and the NVFP4 ones on GB200 and
    GB300 (v5.1, the base pre-quantized to NVFP4) ran: they fit."""
    rows, _ = scored
    tp1 = [r for r in rows if r["benchmark"] == "llama2_70b_lora" and r["gpu"] in ("b200", "gb200", "gb300")
           and r["tp"] == "1" and r["nodes"] in ("1", "2")]
    assert len(tp1) >= 4 and all(r["fits"] for r in tp1)


def _make_mlperf():
    spec = importlib.util.spec_from_file_location("make_mlperf_bench", BENCH / "make_mlperf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mllog(ms: int, key: str, value, **metadata) -> str:
    import json

    return ":::MLLOG " + json.dumps({"time_ms": ms, "key": key, "value": value, "metadata": metadata})


def test_log_facts_reads_the_pace_and_the_evaluations():
    """Lines of mlcommons/training_results_v4.1 NVIDIA/results/eos_n128_ngc24.09_nemo/llama2_70b_lora/result_0.txt
    (times and values as logged; other keys left out). By hand: the timed throughputs 234.0287 and 232.4928
    samples/s have the median 233.2608, a step of GBS 128 samples takes 128 / 233.2608 = 0.54874 s; the two passes
    took 1726839568652 - 1726839566745 = 1,907 ms and 1726839571571 - 1726839570311 = 1,260 ms: 3.167 s. v5.x logs
    state the step time itself (``train_step_time``, v5.1 tyche_ngpu512 LoRA: 0.21514 s), preferred to a rate."""
    lines = [_mllog(1726839386976, "global_batch_size", 128),
             _mllog(1726839527056, "run_start", None),
             _mllog(1726839566744, "tracked_stats", {"throughput": 234.02874494250676}, step=7296),
             _mllog(1726839566745, "eval_start", None, samples_count=7296),
             _mllog(1726839568652, "eval_stop", None, samples_count=7296),
             _mllog(1726839570311, "tracked_stats", {"throughput": 232.49283819169176}, step=7680),
             _mllog(1726839570311, "eval_start", None, samples_count=7680),
             _mllog(1726839571571, "eval_stop", None, samples_count=7680),
             _mllog(1726839571572, "run_stop", 0.92, samples_count=7680, status="success")]
    facts = _make_mlperf().log_facts(lines)
    assert facts["evals"] == 2 and facts["eval_s"] == pytest.approx(3.167)
    assert facts["step_s"] == pytest.approx(0.54874, abs=1e-5)
    assert facts["samples"] == 7680 and facts["stop"] - facts["start"] == 44516
    v5 = _make_mlperf().log_facts([_mllog(1, "global_batch_size", 64),
                                   _mllog(2, "tracked_stats", {"throughput": 250.5, "train_step_time": 0.21514})])
    assert v5["step_s"] == pytest.approx(0.21514)


def test_128_node_lora_steps_against_the_logged_pace(scored):
    """The 1,024-H100 LoRA runs (T001 v4.0, T008 v4.1: TP 4, CP 2, one micro-batch a step): with CUDA graphs (v4.1)
    gpuplan's step is within 10 % of the pace the log states (0.501 s against 0.545: -8.0 %) while the time to train
    is 31 % short, because the log's evaluations (11 passes, 0.24 min) and the rest (0.14 min, the ~8.5 s before the
    first evaluation) are 33 % of the 1.17 measured minutes; v4.0 ran its step eagerly (no CUDA graphs) at 0.675 s."""
    rows, _ = scored
    t008 = next(r for r in rows if r["id"] == "T008")
    assert abs(t008["step_error_pct"]) <= 10 and t008["error_pct"] < -25
    assert float(t008["logged_eval_min"]) + t008["logged_rest_min"] > 0.3 * float(t008["time_to_train_min"])
    t001 = next(r for r in rows if r["id"] == "T001")
    assert float(t001["logged_step_s"]) > 1.2 * float(t008["logged_step_s"])


# AMD's, its partners' (AMD's recipe on their machines) and Intel's submissions (bench/data/mlperf-training-other.csv,
# bench/make_mlperf_other.py): held out, as NVIDIA's. Measured when written
# (bench/results/training_other_vendors_s20.md):
# step error MI355X -6 to +5 % (8 rows), MI325X -10 to -5 % (9), MI300X -33 to -29 % (6: gpuplan too fast; MI300X and
# MI325X share one matmul rate, overheads.MATMUL_PEAK_FRACTION, yet the MI325X steps 1.35x faster), Gaudi 2 time
# +17.5 % (+94.8 % while its ZeRO-3 gathers ran over PCIe gen4 in place of the cards' on-chip RoCE scale-up ports).

def _other_rows() -> list[dict]:
    with (BENCH / "data" / "mlperf-training-other.csv").open() as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def scored_other():
    spec = importlib.util.spec_from_file_location("mlperf_bench_other", BENCH / "mlperf.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench.run(_other_rows())


def test_other_vendor_rows_carry_their_source_and_layout():
    rows = _other_rows()
    assert len(rows) == 30 and {"AMD", "Intel-HabanaLabs", "Dell", "Oracle", "Supermicro"} <= {r["submitter"]
                                                                                               for r in rows}
    for row in rows:
        assert row["source_locator"].startswith(f"mlcommons/training_results_v{row['round']}@")
        assert row["commit"].startswith(row["source_locator"].split("@")[1][:8])
        assert row["source_locator"].split("; ")[1].startswith(f"{row['submitter']}/benchmarks/")
    gaudi = next(r for r in rows if r["gpu"] == "intel-gaudi2")  # run_llama_70B_fp8_submission.sh's flags
    assert (gaudi["stack"], gaudi["sharding"], gaudi["recompute"], gaudi["precision"]) == ("hf", "zero3", "full", "fp8")
    assert gaudi["evals"] == "5" and gaudi["samples_to_converge"] == "3072" and gaudi["time_to_train_min"] == "75.356"
    mi355 = next(r for r in rows if r["system"] == "MI355X_EPYC_9575F_pytorch" and r["benchmark"] == "llama31_8b")
    assert (mi355["micro_batch"], mi355["global_batch"], mi355["precision"], mi355["logged_step_s"]) == \
        ("2", "32", "fp8", "1.0428")


def test_other_vendor_rows_scored_against_the_uncalibrated_range(scored_other):
    """Every one-node row on a catalog card is expressed (left out: MI350X, not in the catalog, and MangoBoost's
    2- and 4-node rows, their fabric not transcribed); the MI355X steps within 8 % of their logged pace, the MI325X
    within 6 %, both inside the range gpuplan prints off NVIDIA (-28 % / +24 % of its tokens/s); the MI300X's, with
    the 21 of 80 layers its configs recompute (``ACG=full ACM=block ACL=21``), its fp8 GEMMs at the 1,273 TFLOPS AMD
    measures it sustains at 750 W (overheads.SUSTAINED_MATMUL_TFLOPS) and Transformer Engine's attention at AITER's
    forward rate times what Hopper keeps of its kernel's (overheads.ATTENTION_FORWARD_KERNEL_TFLOPS) at the clock the
    750 W card holds under dense matrix work (speed/gemm.py sustained_clock_share, 0.901), 6-12 % short of it, inside
    too (8-15 % at the short loop's clock, 12-18 % at the default attention share, 20-26 % at the short-loop GEMM
    rate, 29-34 % without the recompute); the Gaudi 2 run (no pace logged) within 25 % of its time to train. Every
    AMD row fits its card: 192 GB MI300X too, without the fp8 weight transposes AMD's configs do not keep
    (``ENABLE_TRANSPOSE_CACHE=0``)."""
    rows, skipped = scored_other
    assert len(rows) == 24 and all("MI350X" in r["why"] or "fabric" in r["why"] for r in skipped)
    by_gpu = {}
    for r in rows:
        by_gpu.setdefault(r["gpu"], []).append(r)
    assert len(by_gpu["amd-instinct-mi355x"]) == 8 and all(abs(r["step_error_pct"]) <= 8
                                                           for r in by_gpu["amd-instinct-mi355x"])
    assert len(by_gpu["amd-instinct-mi325x"]) == 9 and all(abs(r["step_error_pct"]) <= 6
                                                           for r in by_gpu["amd-instinct-mi325x"])
    assert len(by_gpu["amd-instinct-mi300x"]) == 6 and all(-12 <= r["step_error_pct"] <= -6
                                                           for r in by_gpu["amd-instinct-mi300x"])
    assert all(r["recompute_layers"] == "21" for r in by_gpu["amd-instinct-mi300x"])
    amd = [r for r in rows if r["gpu"].startswith("amd-")]
    # inside the uncalibrated range: the logged step within 1/1.24 to 1/0.72 of gpuplan's
    assert all(r["fits"] for r in amd) and all(1 / 1.24 <= float(r["logged_step_s"]) / r["step_s"] <= 1 / 0.72
                                               for r in amd)
    assert max(r["device_gib"] for r in by_gpu["amd-instinct-mi300x"]) < 150
    assert 0 < by_gpu["intel-gaudi2"][0]["error_pct"] <= 25
