"""The settings NVIDIA's MLPerf Training configs turn on in Megatron-Core / Transformer Engine (stack megatron):
CUDA graphs (``MCORE_CUDA_GRAPH`` / ``LAYER_CUDA_GRAPH``), fp8 attention (``FP8_DPA`` with ``NVTE_FP8_DPA_BWD``)
and the fp8 store of the MLP activation's input (``FP8_ACT``: ``activation_func_fp8_input_store``), each checked
against hand arithmetic written out here and, for the step, against the step time NVIDIA's own log prints.

Counts from Llama-3.1-8B's config.json (h 4096, 32 heads, 8 KV heads of 128, FFN 14336) and Llama-2-70B's (h 8192,
64 heads, 8 KV heads of 128, FFN 28672, 80 layers).
"""

from __future__ import annotations

import pytest

from gpuplan import GpuplanError, estimate
from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.plan.refusals import scenario_refusal
from gpuplan.scenario import scenario_from
from gpuplan.stacks import megatron as mg

BASE = {"model": "llama-3.1-8b", "task": "train", "stack": "megatron"}


def scenario(**fields):
    return scenario_from({**BASE, **fields})


def test_fp8_attention_saves_q_k_v_and_output_in_fp8():
    """Llama-3.1-8B, fp8, TP 2, 8,192 tokens, no recompute: core attention keeps q, k, v ((32 + 16)·128 = 6,144
    wide) and its output (4,096) for the backward; in 16-bit that is 2·6,144 + 2·4,096 bytes per token, and the fp8
    output projection keeps its own fp8 copy of the output (1·4,096). TE's fp8 attention saves its fp8 q, k, v and
    output, which the fp8 projection takes as its input: 6,144 + 4,096. The difference per token is
    6,144 + 2·4,096 + 4,096 - 4,096 = 14,336 bytes, over TP 2."""
    m = load_model("llama-3.1-8b")
    layer = m.layers[0]
    run = dict(num_gpus=2, tp=2, seq_len=8192, precision="fp8-mixed", grad_checkpointing="none")
    plain = mg.layer_bytes(layer, m, scenario(**run))
    fp8 = mg.layer_bytes(layer, m, scenario(**run, fp8_attention=True))
    assert plain - fp8 == pytest.approx((6144 + 2 * 4096) * 8192 / 2)


def test_fp8_activation_store_halves_swiglus_input():
    """activation_func_fp8_input_store keeps SwiGLU's input (the FC1 output, gate and up: 2·14,336 wide) in 1 byte
    instead of 2: 28,672 bytes less per token, over TP 2."""
    m = load_model("llama-3.1-8b")
    layer = m.layers[0]
    run = dict(num_gpus=2, tp=2, seq_len=8192, precision="fp8-mixed")
    plain = mg.layer_bytes(layer, m, scenario(**run))
    stored = mg.layer_bytes(layer, m, scenario(**run, fp8_activation_store=True))
    assert plain - stored == pytest.approx(2 * 14336 * 8192 / 2)


def test_one_node_tp1_lora_layout_fits_b200():
    """NVIDIA's MLPerf v5.0 Llama-2-70B LoRA on one DGX B200 (nyx_n1_ngc25.04_nemo, config_DGXB200_1x8x1xtp1pp1cp1:
    TP 1, CP 1, FP8, FP8_DPA=1, FP8_ACT=1) ran: it must fit the B200's 180 GB. Without the fp8 stores the estimate
    does not (~200 GiB: SwiGLU's 16-bit input alone is 80 layers x 8,192 tokens x 2·28,672 x 2 B = 70 GiB)."""
    run = {"model": "meta-llama/Llama-2-70b-hf", "task": "train", "stack": "megatron", "gpu": "b200",
           "num_gpus": 8, "tp": 1, "seq_len": 8192, "micro_batch_size": 1, "precision": "fp8-mixed",
           "method": "lora", "lora_rank": 16, "lora_targets": ["q_proj", "k_proj", "v_proj", "o_proj"]}
    assert not estimate(run, advise=False).memory.fits
    assert estimate({**run, "fp8_attention": True, "fp8_activation_store": True}, advise=False).memory.fits


def test_cuda_graphs_remove_the_host_launches():
    """A step replayed from a CUDA graph launches no kernel from Python: the host part of the step and the
    trainer loop's per-step Python (captured with the iteration) are gone, the GPU's work is the same."""
    run = {**BASE, "gpu": "h100-sxm", "num_gpus": 8, "tp": 8, "seq_len": 4096, "micro_batch_size": 1}  # one layout
    eager = estimate(run, advise=False).speed
    graphs = estimate({**run, "cuda_graphs": True}, advise=False).speed
    assert eager.parts_s["host_overhead"] > 0 and "host_overhead" not in graphs.parts_s
    assert eager.step_time_s - graphs.step_time_s == pytest.approx(
        eager.parts_s["host_overhead"] + oh.TRAINER_STEP_OVERHEAD_S, rel=1e-6)
    assert graphs.parts_s["gemm"] == pytest.approx(eager.parts_s["gemm"])


def test_fp8_attention_runs_at_the_fp8_rate():
    """Attention's matmuls at the card's dense fp8 rate instead of bf16: the attention part scales by their ratio
    (H100 SXM: 989 / 1,979 TFLOPS)."""
    run = {**BASE, "gpu": "h100-sxm", "num_gpus": 8, "tp": 8, "seq_len": 8192, "precision": "fp8-mixed"}
    plain = estimate(run, advise=False).speed.parts_s["attention"]
    fp8 = estimate({**run, "fp8_attention": True}, advise=False).speed.parts_s["attention"]
    gpu = load_gpu("h100-sxm")
    assert fp8 / plain == pytest.approx(gpu.peak_tflops("bf16") / gpu.peak_tflops("fp8"), rel=1e-6)


def test_mlperf_gb300_lora_step_against_the_log():
    """MLPerf v5.1 Llama-2-70B LoRA on 72 GB300 (theia_ngpu72_ngc25.09_nemo, config_GB300_18x4x1xtp1pp1cp8.sh:
    TP 1, CP 8, global batch 9, FP8, FP8_DPA=1, MCORE_CUDA_GRAPH=1): its log prints train_step_time 0.172 s
    (mlcommons/training_results_v5.1 NVIDIA/results/theia_ngpu72_ngc25.09_nemo/llama2_70b_lora/result_0.txt, first
    block). Eager (no graphs, bf16 attention) gpuplan said 0.29 s (+69 %); with the config's settings within 25 %."""
    run = {"model": "meta-llama/Llama-2-70b-hf", "task": "train", "stack": "megatron", "gpu": "gb300",
           "num_gpus": 4, "num_nodes": 18, "cp": 8, "seq_len": 8192, "micro_batch_size": 1, "grad_accum_steps": 1,
           "precision": "fp8-mixed", "method": "lora", "lora_rank": 16,
           "lora_targets": ["q_proj", "k_proj", "v_proj", "o_proj"], "cuda_graphs": True, "fp8_attention": True}
    step = estimate(run, advise=False).speed.step_time_s
    assert step == pytest.approx(0.172, rel=0.25)


@pytest.mark.parametrize("fields, message", [
    (dict(fp8_attention=True), "fp8_attention keeps fp8 tensors: set precision fp8-mixed"),
    (dict(fp8_activation_store=True), "fp8_activation_store keeps fp8 tensors: set precision fp8-mixed"),
    (dict(stack="hf", cuda_graphs=True), "cuda_graphs=true is a Megatron-Core training setting"),
])
def test_settings_refused_outside_their_stack(fields, message):
    with pytest.raises(GpuplanError, match=message) as info:
        scenario_refusal(scenario(**fields))
    assert "\n" not in str(info.value)


def test_nvfp4_saves_linear_inputs_in_nvfp4():
    """fp4-mixed (Transformer Engine NVFP4BlockScaling) saves each trained linear's input as NVFP4: 4 bits and one
    8-bit scale per 16 values, 0.5625 bytes. Llama-3.1-8B, TP 2, selective recompute: the five linear inputs are
    QKV's, the projection's and FC1's at h = 4,096 and FC2's at 14,336 wide; against fp8 (1 byte) each keeps
    1 - 0.5625 = 0.4375 bytes less per element."""
    m = load_model("llama-3.1-8b")
    layer = m.layers[0]
    run = dict(num_gpus=2, tp=2, seq_len=8192, gpu="b200")
    fp8 = mg.layer_bytes(layer, m, scenario(**run, precision="fp8-mixed"))
    fp4 = mg.layer_bytes(layer, m, scenario(**run, precision="fp4-mixed"))
    assert fp8 - fp4 == pytest.approx(0.4375 * (3 * 4096 + 14336) * 8192 / 2)


def test_nvfp4_lora_base_by_hand():
    """NVIDIA's MLPerf NVFP4 LoRA recipe holds the frozen base's linear weights as NVFP4 with row- and column-wise
    data (2 x 0.5625 bytes) instead of bf16 (2 bytes): Llama-2-70B's 80 layers of linears, (8192·(8192 + 1024 + 1024 +
    8192) + 3·8192·28672) = 855,638,016 per layer, 68,451,041,280 in all, keep 0.875 bytes less per weight at TP 1."""
    m = load_model("meta-llama/Llama-2-70b-hf")
    run = dict(model="meta-llama/Llama-2-70b-hf", num_gpus=8, tp=1, seq_len=8192, gpu="gb200", method="lora",
               lora_rank=16, lora_targets=["q_proj", "k_proj", "v_proj", "o_proj"])
    bf16 = mg.rank_state(scenario(**run), m, None, first=True, last=True)
    fp4 = mg.rank_state(scenario(**run, precision="fp4-mixed"), m, None, first=True, last=True)
    linear = 80 * (8192 * (8192 + 1024 + 1024 + 8192) + 3 * 8192 * 28672)
    assert linear == 68_451_041_280
    assert bf16.weights - fp4.weights == pytest.approx(0.875 * linear)


def test_nvfp4_gemms_run_at_the_fp4_rate():
    """The linears' GEMMs at GB300's dense NVFP4 rate (15 PFLOPS against 5 for fp8): faster, the attention and the
    loss the same (they stay out of fp4)."""
    run = {**BASE, "gpu": "gb300", "num_gpus": 4, "seq_len": 8192, "grad_checkpointing": "none"}
    fp8 = estimate({**run, "precision": "fp8-mixed"}, advise=False).speed.parts_s
    fp4 = estimate({**run, "precision": "fp4-mixed"}, advise=False).speed.parts_s
    assert fp4["gemm"] < 0.75 * fp8["gemm"]
    assert fp4["attention"] == pytest.approx(fp8["attention"])


@pytest.mark.parametrize("fields, message", [
    (dict(precision="fp4-mixed", gpu="h100-sxm"), "h100-sxm has none: use precision fp8-mixed"),
    (dict(stack="hf", precision="fp4-mixed"), "precision=fp4-mixed is a Megatron-Core training setting"),
])
def test_nvfp4_refused_where_it_cannot_run(fields, message):
    with pytest.raises(GpuplanError, match=message) as info:
        scenario_refusal(scenario(**fields))
    assert "\n" not in str(info.value)


def test_cuda_graphs_hold_a_validation_pool():
    """Megatron's full-iteration CUDA graphs capture validation in a pool of its own (full_cuda_graph.py): one
    validation micro-batch's forward. Llama-3.1-8B, bf16, TP 1, 8,192 tokens: a layer's tensors 139,400 bytes per
    token (tests/stacks/test_megatron.py's count without recompute, 2 x 69,700 at TP 1); the logits, 128,256 wide,
    in 16-bit and their fp32 softmax, 6 bytes per logit, with the final norm's and output layer's 16-bit inputs and
    fp32 rstd (2·(2·4,096 + 4) = 16,392 bytes per token)."""
    run = {**BASE, "gpu": "h100-sxm", "num_gpus": 8, "seq_len": 8192, "grad_checkpointing": "none"}
    pool = estimate({**run, "cuda_graphs": True}, advise=False).memory.other["CUDA graph pool (validation capture)"]
    assert "CUDA graph pool (validation capture)" not in estimate(run, advise=False).memory.other
    per_token = 139_400 + 6 * 128_256 + 16_392
    assert pool == pytest.approx(per_token * 8192 / 2**30, rel=1e-6)
