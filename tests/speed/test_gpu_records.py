"""The real-GPU probe records (bench/data/gpu-measurements/, `gpuplan probe` on one NVIDIA H200, 2026-11-27, from
the project's shared reference set) held as tests (issue 20): memory within 5 % of the measured allocated peak on
every record; training tokens/s within 15 % on every training record, median within 10 %. Three records fitted a
constant and are held to 5 % as regression checks only: the MoE record (overheads.TRANSFORMERS_EXPERT_LOOP_S) and
the two Gemma-3-1B records (overheads.MASKED_ATTENTION_FACTOR)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import gpu_probes

ROWS = {r["id"]: gpu_probes.score(r) for r in gpu_probes.records()}


@pytest.mark.parametrize("rid", sorted(ROWS))
def test_allocated_peak_within_5_percent(rid):
    assert abs(ROWS[rid]["memory_error_pct"]) <= 5, ROWS[rid]


def test_training_tokens_per_s():
    train = {k: r for k, r in ROWS.items() if " train " in r["what"]}
    assert len(train) == 6
    for r in train.values():
        assert abs(r["speed_error_pct"]) <= 15, r
    assert statistics.median(abs(r["speed_error_pct"]) for r in train.values()) <= 10


@pytest.mark.parametrize("rid", ["j", "i", "l"])
def test_fitted_records_stay_fitted(rid):
    assert abs(ROWS[rid]["speed_error_pct"]) <= 5


def test_gemma3_long_prompt_mask_by_hand():
    """Gemma-3-1B, 2 x 30,000-token prompt under SDPA in transformers: the boolean sliding-window mask (30,000^2 B)
    and SDPA's bf16 additive copy for both sequences (2 x 2 x 30,000^2 B) make the prefill's attention working set
    4.19 GiB beside the projections' 0.86; measured allocated 8.30 GiB against 8.4 estimated (was 5.9)."""
    from gpuplan.engines.transformers import prefill_working_set
    from gpuplan.model.catalog import load_model
    from gpuplan.scenario import scenario_from

    m = load_model("gemma-3-1b")
    s = scenario_from(dict(model="gemma-3-1b", task="infer", batch_size=2, prompt_tokens=30000))
    projections = 2 * 60000 * (4 * 256 * 3 + 2 * 1152) + 4 * 60000 * 1152
    assert prefill_working_set(s, m, 60000, 2) == pytest.approx(projections + 30000**2 * (1 + 2 * 2))


def test_gemma3_long_prompt_reserved_holds_two_masks():
    """The same record's reserved peak: 11.73 GiB measured, 3.43 above its allocated peak (torch.cuda
    max_memory_reserved): one more additive mask (2 x 30,000^2 x 2 B = 3.35 GiB), whose cached block the MLP
    temporaries split, so the next sliding layer's mask takes a new segment. Within 5 % (it was 8.74 GiB, -25 %);
    nvidia-smi's level (total - free, 12.41 GiB) within 5 % too. The records without sliding windows keep their
    reserved level."""
    from gpuplan.hardware import load_gpu
    from gpuplan.memory import memory_report
    from gpuplan.model.catalog import load_model

    by_id = {r["id"]: r for r in gpu_probes.records()}
    s = gpu_probes.scenario_of(by_id["l"])
    _, report = memory_report(s, load_model(s.model), load_gpu(s.gpu))
    assert report.reserved_peak_gib == pytest.approx(11.73, rel=0.05)
    assert report.device_peak_gib == pytest.approx(12.41, rel=0.05)
    assert report.reserved_peak_gib - report.allocated_peak_gib == pytest.approx(30000**2 * 2 * 2 / 2**30 + 0.04 *
                                                                                 report.allocated_peak_gib)
