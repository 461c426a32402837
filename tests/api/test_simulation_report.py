"""``simulate --compare``'s numbers are the answer's (:meth:`gpuplan.api.checks.SimulationReport.compared`): the
command line prints them and computes none (issue 30: faces render only)."""

from __future__ import annotations

from gpuplan.api.checks import SimulationReport
from gpuplan.result import MemoryReport


def test_each_part_beside_the_estimate_less_its_cublas_workspace():
    est = MemoryReport.model_construct(weights_gib=2.0, gradients_gib=0.5, optimizer_gib=1.0, activations_gib=3.0,
                                       kv_cache_gib=0.0, other_gib=0.25, other={"cuBLAS workspace": 0.0625},
                                       allocated_peak_gib=6.75)
    sim = SimulationReport.model_construct(parts_gib={"parameters": 2.0, "activations": 2.5, "temporaries": 0.5,
                                                      "optimizer": 1.0}, allocated_peak_gib=6.5, estimate=est)
    assert sim.cuda_only_gib == 0.0625
    # activations + temporaries: 3.0 + 0.25 - 0.0625 estimated; the peak 6.75 - 0.0625
    assert sim.compared() == [("parameters", 2.0, 2.0), ("gradients", 0.0, 0.5), ("optimizer", 1.0, 1.0),
                              ("activations + temporaries", 3.0, 3.1875), ("kv_cache", 0.0, 0.0),
                              ("allocated peak", 6.5, 6.6875)]
    alone = sim.model_copy(update={"estimate": None})  # without --compare: the simulation's side only
    assert alone.cuda_only_gib == 0.0
    assert [row[2] for row in alone.compared()] == [None] * 6
    assert [row[1] for row in alone.compared()] == [row[1] for row in sim.compared()]


def test_the_estimate_beside_a_simulation_is_at_the_micro_batch_simulated(monkeypatch):
    """s27 walk: ``simulate --model qwen2.5-0.5b --task train --method lora --seq-len 1024 --gpu rtx-4090
    --compare`` set the simulated step at micro-batch 1 (the scenario's) beside the estimate at the recipe's
    layout, micro-batch 4 on the card (estimate - simulated: +226 %). The estimate compared is the plan of the
    step simulated; without the card, and for an estimate alone, nothing changes."""
    from types import SimpleNamespace

    import gpuplan.sim.simulate
    from gpuplan import estimate
    from gpuplan.api.checks import simulate

    scenario = dict(model="qwen2.5-0.5b", task="train", method="lora", seq_len=1024, gpu="rtx-4090")
    stub = SimpleNamespace(model="Qwen/Qwen2.5-0.5B", scenario=scenario, allocated_peak_gib=4.0, peak_phase="backward",
                           peak_op="", parts_gib={}, phase_parts_gib={}, phases_gib={}, runs=[])
    monkeypatch.setattr(gpuplan.sim.simulate, "simulate", lambda s, timeline, layers: stub)
    laid_out = estimate(scenario, advise=False)
    assert laid_out.scenario["micro_batch_size"] == 4  # the recipe's layout on the card
    one = estimate({**scenario, "micro_batch_size": 1, "grad_accum_steps": 1}, advise=False).memory
    got = simulate(scenario, compare=True).estimate
    assert got.allocated_peak_gib == one.allocated_peak_gib < laid_out.memory.allocated_peak_gib / 2
