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
