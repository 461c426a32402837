"""A pipeline runs at the pace of its slowest stage, and Megatron's tensor-parallel collectives are hidden as the run
sets them (gpuplan.speed.training: pipeline_stages, _Comms.tensor_parallel_s), checked by hand arithmetic on the
speed model's own parts."""

from __future__ import annotations

import pytest

from gpuplan import estimate, load_model
from gpuplan.hardware import Network, load_gpu
from gpuplan.scenario import scenario_from
from gpuplan.speed.comms import all_reduce_s, intra_node_link
from gpuplan.speed.training import Stage, pipeline_stages
from gpuplan.speed.work import lm_head_s

RUN = {"model": "llama-2-13b", "task": "train", "stack": "megatron", "gpu": "h100-sxm", "num_gpus": 8,
       "precision": "bf16-mixed", "seq_len": 4096, "grad_checkpointing": "none", "grad_accum_steps": 8}


def test_the_stages_that_may_pace_a_pipeline():
    """Llama-2-13B's 40 layers over 4 stages: 10 each, the last with the output layer and the loss; Llama-3.1-405B's
    126 over 16 stages of 2 virtual chunks count the embedding and the loss as layers (128 / 16 = 8): the first and
    last stages hold 7, a middle one 8."""
    s = scenario_from({**RUN, "pp": 4})
    assert pipeline_stages(s, load_model("llama-2-13b")) == [Stage(0.25, 0.0), Stage(0.25, 0.0), Stage(0.25, 1.0)]
    big = scenario_from({**RUN, "model": "llama-3.1-405b", "num_nodes": 32, "tp": 8, "pp": 16, "vpp": 2})
    stages = pipeline_stages(big, load_model("llama-3.1-405b"))
    assert [round(st.layers * 126) for st in stages] == [7, 8, 7] and [st.head for st in stages] == [0, 0, 1]
    assert pipeline_stages(scenario_from(RUN), load_model("llama-2-13b")) == [Stage(1.0, 1.0)]


def test_the_last_stage_runs_the_whole_output_layer():
    """Over 4 stages the last one's micro-step holds a quarter of the layers' GEMMs and all of the output layer's
    (forward, input and weight gradients: 3 GEMMs), not a quarter of it: its GEMMs exceed a quarter of the whole
    model's by 3/4 of the output layer's three GEMMs."""
    whole = estimate(RUN, advise=False).speed.parts_s["gemm"]
    staged = estimate({**RUN, "pp": 4}, advise=False).speed.parts_s["gemm"]
    m, gpu = load_model("llama-2-13b"), load_gpu("h100-sxm")
    head = 3 * lm_head_s(m, gpu, "bf16", 4096, tp=1)  # 4,096 x 5,120 x 32,000 each
    assert staged / 8 - whole / 8 / 4 == pytest.approx(0.75 * head, rel=1e-6)


@pytest.mark.parametrize("overlap", ["none", "backward", "userbuffers"])
def test_megatron_tp_collectives_by_tp_overlap(overlap):
    """Llama-2-13B at TP 8 on one H100 node, 4,096 tokens a micro-step, no recompute: each layer moves 2 all-reduces
    of 4,096 x 5,120 x 2 bytes in the forward and 2 in the backward (sequence parallelism's all-gather and
    reduce-scatter move the same). none shows all 4 x 40 layers; backward the forward's 2 x 40 (the backward's run
    behind its gradient GEMMs, longer than them here); userbuffers none (all behind the GEMMs)."""
    one = all_reduce_s(4096 * 5120 * 2, 8, intra_node_link(load_gpu("h100-sxm"), Network()))
    per_micro = estimate({**RUN, "tp": 8, "tp_overlap": overlap}, advise=False).speed.parts_s.get("tensor_parallel",
                                                                                                 0.0) / 8
    assert per_micro == pytest.approx({"none": 160, "backward": 80, "userbuffers": 0}[overlap] * one, rel=1e-6)
