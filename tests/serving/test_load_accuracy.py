"""bench/serving/load_accuracy.py's runs: every row names its source, becomes a scenario estimate accepts, and the
SGLang rows (held out: nothing fitted on them) stay within the issue's 20 % on median TTFT."""

import csv
import sys
from pathlib import Path

import pytest

pytest.importorskip("numpy")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "serving"
sys.path.insert(0, str(BENCH))


def test_rows_name_their_source_and_run_through_estimate():
    import load_accuracy

    with load_accuracy.DATA.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 15 and all(len(r["source"]) > 40 for r in rows)
    sglang = [r for r in rows if r["engine"] == "sglang"]
    assert len(sglang) == 3
    for r in sglang:
        got = load_accuracy.predict(r)["TTFT"]
        assert got == pytest.approx(float(r["median_ttft_ms"]), rel=0.2), r["id"]
    offline = next(r for r in rows if r["mode"] == "offline")
    assert load_accuracy.scenario(offline)["batch_size"] == 500
