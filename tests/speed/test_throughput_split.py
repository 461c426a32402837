"""bench/throughput.py's fixed split (issue 20): held-out rows (id number a multiple of 3) are reported apart from
the fitted ones, and the speed range comes from the held-out rows' spread, not a fixed +/-."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest
import yaml

from gpuplan import overheads as oh

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))


@pytest.fixture(scope="module")
def scored():
    import throughput

    cases = yaml.safe_load((BENCH / "throughput_cases.yaml").read_text())["cases"]
    return throughput.run(cases)[0]


def test_the_split_is_fixed_and_holds_out_a_third():
    import throughput

    assert throughput.held_out({"id": "M0069"}) and not throughput.held_out({"id": "M0070"})
    cases = yaml.safe_load((BENCH / "throughput_cases.yaml").read_text())["cases"]
    share = sum(map(throughput.held_out, cases)) / len(cases)
    assert 0.2 < share < 0.45


def test_the_range_is_the_held_out_spread(scored):
    import throughput

    for kind in ("train", "decode"):
        low, high = throughput.spread(scored, kind)
        assert oh.SPEED_SPREAD[kind] == pytest.approx((low, high), abs=0.03)


def test_held_out_rows_per_source_within_the_goal(scored):
    """Issue 20's goal on rows never fitted: every fixed-shape source <= 15 % median |error|; the median over
    sources is held to 10 %, the goal (6.3 % at this commit, see the README)."""
    import throughput

    by_source: dict[str, list[float]] = {}
    for c in scored:
        if c["fixed_length"] and throughput.held_out(c):
            by_source.setdefault(c["source"], []).append(abs(c["error_pct"]))
    medians = {k: statistics.median(v) for k, v in by_source.items()}
    assert len(medians) >= 5 and max(medians.values()) <= 15, medians
    assert statistics.median(medians.values()) <= 10


def test_megatron_and_nemo_rows_run_on_their_own_stack():
    """The Megatron-LM paper's and NeMo 24.07's rows name the stack that ran them (stack megatron), so none is
    refused (the hf stack refuses tensor and pipeline parallelism): 4 and 7 rows scored."""
    import throughput

    sources = ("Megatron-LM paper (Narayanan et al., SC'21)", "NVIDIA NeMo performance summary (24.07)")
    cases = [c for c in yaml.safe_load((BENCH / "throughput_cases.yaml").read_text())["cases"]
             if c["source"] in sources]
    assert all(c["scenario"]["stack"] == "megatron" for c in cases)
    scored, rejected = throughput.run(cases)
    assert not rejected and sorted(sum(c["source"] == k for c in scored) for k in sources) == [4, 7]
