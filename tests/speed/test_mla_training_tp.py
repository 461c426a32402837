"""MLA models trained under tensor parallelism: the down-projections (q_a_proj, kv_a_proj_with_mqa) are whole on every
TP rank in Megatron-Core and torchtitan (tensors/layout.training_extra_params), in the state, the communication and
the GEMMs; hand counts written out for DeepSeek-V3 (7,168 x 1,536 and 7,168 x 576 a layer, 61 layers)."""

from __future__ import annotations

import pytest

from gpuplan import estimate
from gpuplan.hardware import Network, load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.speed import training as tr
from gpuplan.speed.comms import all_reduce_s
from gpuplan.speed.work import linears_s
from gpuplan.tensors import layout

GIB = 2**30
PER_LAYER = 7168 * (1536 + 576)  # 15,138,816 parameters a layer
MEGATRON = {"model": "deepseek-v3", "task": "train", "stack": "megatron", "gpu": "h100-sxm", "num_gpus": 8,
            "num_nodes": 32, "tp": 8, "pp": 8, "ep": 8, "seq_len": 2048, "micro_batch_size": 1,
            "grad_accum_steps": 8}
TITAN = {"model": "deepseek-v3", "task": "train", "stack": "torchtitan", "gpu": "h100-sxm", "num_gpus": 8,
         "num_nodes": 32, "tp": 8, "seq_len": 2048, "micro_batch_size": 1, "grad_accum_steps": 1}


def test_the_rule_by_hand():
    """61 layers x 15,138,816 parameters, 7/8 of them beyond each rank's share at TP 8; none at TP 1."""
    m = load_model("deepseek-v3")
    assert layout.replicated_params(m.layers) == 61 * PER_LAYER == 923_467_776
    assert layout.training_extra_params(scenario_from(TITAN), m.layers) == 923_467_776 * 7 / 8 == 808_034_304
    assert layout.training_extra_params(scenario_from({**TITAN, "tp": 1}), m.layers) == 0.0


def test_megatron_sums_their_gradients_over_tp_once_a_step(monkeypatch):
    """The first stage's 8 layers: 8 x 15,138,816 fp32 gradients = 484,442,112 B, one all-reduce over the 8 TP ranks
    (NVLink) a step, in the step's tensor-parallel part; torchtitan computes them whole: no such all-reduce."""
    s, m, gpu = scenario_from(MEGATRON), load_model("deepseek-v3"), load_gpu("h100-sxm")
    comm = tr._Comms(s, m, gpu, Network(), [])
    assert comm.replicated_grads_s() == all_reduce_s(484_442_112, 8, comm.intra) > 0
    assert tr._Comms(scenario_from(TITAN), m, gpu, Network(), []).replicated_grads_s() == 0.0
    plan = estimate(MEGATRON, advise=False).speed
    monkeypatch.setattr(tr._Comms, "replicated_grads_s", lambda self: 0.0)
    without = estimate(MEGATRON, advise=False).speed
    assert plan.parts_s["tensor_parallel"] - without.parts_s["tensor_parallel"] == pytest.approx(
        all_reduce_s(484_442_112, 8, comm.intra))
    assert plan.step_time_s > without.step_time_s


def test_torchtitan_state_holds_them_whole():
    """FSDP2 over 32 DP ranks x TP 8: each rank holds 1/(8 x 32) of the model and 808,034,304 / 32 = 25,251,072
    parameters more, fp32 under bf16-mixed: +101,004,288 B of weights."""
    m = load_model("deepseek-v3")
    plan = estimate(TITAN, advise=False)
    s = scenario_from(TITAN)
    assert s.dp == 32
    assert plan.memory.weights_gib * GIB == pytest.approx(4 * (m.params_total / 8 + 808_034_304) / 32)


def test_torchtitan_runs_them_on_every_token():
    """torchtitan's NoParallel wq_a / wkv_a multiply all 2,048 tokens by the whole weight on each TP rank: the
    forward's linears take 61 x (the GEMMs [2048 x 7168] @ [7168 x 1536] and @ [7168 x 576], whole less 1/8 of
    them) longer than with every linear split."""
    m, gpu = load_model("deepseek-v3"), load_gpu("h100-sxm")
    from gpuplan.speed.gemm import gemm_time_s

    split = linears_s(m, gpu, "bf16", 2048, tp=8)
    whole = linears_s(m, gpu, "bf16", 2048, tp=8, whole=True)
    by_hand = 61 * sum(gemm_time_s(gpu, "bf16", 2048, 7168, n, kernels=1) - gemm_time_s(gpu, "bf16", 2048, 7168,
                                                                                       n / 8, kernels=1)
                       for n in (1536, 576))
    assert whole - split == pytest.approx(by_hand)
    assert by_hand > 0
