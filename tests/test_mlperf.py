"""gpuplan's time to train against NVIDIA's MLPerf Training submissions (bench/data/mlperf-training.csv, copied from
mlcommons/training_results_v4.0-v5.1 by bench/make_mlperf.py; bench/mlperf.py scores it). No gpuplan constant was
fitted on these rows. Tolerances (measured when written: 8.1 % on 29 rows, 1.8 % on the 405B, 4.4 % on the 8B,
18.2 % on the LoRA rows): the median |error| over the rows gpuplan can express within 10 % (issue 24 asks 15 %), on
the pre-training benchmarks within 5 %, on the LoRA rows within 25 %; every layout NVIDIA ran on Hopper fits
gpuplan's memory estimate."""

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
    assert len(rows) >= 25 and all("fp4" in r["why"] or "fabric" in r["why"] for r in skipped)
    assert statistics.median(abs(r["error_pct"]) for r in rows) <= 10
    pretraining = [r for r in rows if r["benchmark"] != "llama2_70b_lora"]
    assert statistics.median(abs(r["error_pct"]) for r in pretraining) <= 5
    lora = [r for r in rows if r["benchmark"] == "llama2_70b_lora"]
    assert statistics.median(abs(r["error_pct"]) for r in lora) <= 25


def test_hopper_layouts_fit(scored):
    """The 405B on 512-8192 H100s (TP 8, PP 8, VP 8, CP 2, fp8 weights) and the LoRA layouts on H100 ran: they fit."""
    rows, _ = scored
    hopper = [r for r in rows if r["gpu"] == "h100-sxm"]
    assert len(hopper) >= 10 and all(r["fits"] for r in hopper)
