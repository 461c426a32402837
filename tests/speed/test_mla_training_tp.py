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


def test_deepspeed_mixed_precision_reads_the_same_rule():
    """DeepSpeed ZeRO-3 in bf16-mixed at TP 8 (Megatron-DeepSpeed's layout; no stack gpuplan plans runs DeepSpeed
    with tp > 1, so the sharding is asked directly) over 2 data-parallel ranks: the rank holds 808,034,304
    parameters of the down-projections beyond its 1/8 (test_the_rule_by_hand). ZeRO's 16 B a parameter over the 2
    ranks is 8 B each more: weights 2 B / 2 + 4 B / 2 = 3 B (2,424,102,912 B), gradients 2 B / 2 = 1 B (808,034,304
    B), AdamW's fp32 moments 8 B / 2 = 4 B (3,232,137,216 B), 6,464,274,432 B in all. With ZeRO-Offload the fp32
    master partition, 4 B / 2 of them too, goes to the CPU. The gathered layer is one layer's TP share, norms and
    down-projections whole, never split by pp."""
    from gpuplan.sharding import DeepSpeed
    from gpuplan.stacks import stack_for

    m = load_model("deepseek-v3")
    s = scenario_from({"model": "deepseek-v3", "task": "train", "stack": "hf", "sharding": "zero3", "gpu": "h100-sxm",
                       "num_gpus": 16, "tp": 8, "precision": "bf16-mixed", "method": "full"})
    assert (s.dp, s.sharded_by) == (2, "deepspeed")
    ds, stack, X = DeepSpeed(), stack_for(s), 808_034_304
    st = ds.state(s, m, stack)
    share = m.params_total / 8
    assert st.weights == pytest.approx(2 * (share + X) / 2 + 4 * (share + X) / 2)
    assert st.weights - (2 * share / 2 + 4 * share / 2) == pytest.approx(2_424_102_912)
    assert st.gradients - 2 * share / 2 == pytest.approx(808_034_304)
    assert st.optimizer - 8 * share / 2 == pytest.approx(3_232_137_216)
    off = scenario_from({**s.model_dump(exclude_defaults=True), "offload": "optimizer"})
    st_off = ds.state(off, m, stack)
    ds.offload(off, st_off)
    assert st_off.weights == pytest.approx(2 * (share + X) / 2)
    layer = max((lay for lay, _ in m.layer_kinds()), key=lambda lay: lay.params)
    gathered = ds.buffers(s, m, stack, st)["ZeRO-3 gathered layers"]
    assert gathered == pytest.approx(6 * layout.layer_params_per_rank(s, layer))
    assert layout.layer_params_per_rank(s, layer) > (layer.params - layer.norm_params) / 8
