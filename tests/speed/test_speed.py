"""Speed terms written out by hand: a GEMM's efficiency from its shape, the optimizer step, ZeRO-3's gathers per
micro-batch, llama.cpp's CPU layers, the TP all-reduce floor, one request's time to first token; and the
answers of issue 11's "Why" in the range people report."""

from __future__ import annotations

import pytest

from gpuplan import estimate
from gpuplan import overheads as oh
from gpuplan.hardware import Network, load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.model.quant import make_format
from gpuplan.scenario import scenario_from
from gpuplan.speed import gemm_efficiency, gemm_time_s, speed_of, step_timer
from gpuplan.speed.comms import all_gather_s, intra_node_link

A100 = load_gpu("nvidia-a100-sxm4-80gb")
H100 = load_gpu("h100-sxm")


def test_gemm_time_by_hand_and_small_batches_reach_a_fraction_of_the_peak():
    # [256 x 2048] @ [2048 x 2048] in bf16 on an A100 SXM: MAMF 85.9 % of 312 TFLOPS, slowed by the thin-shape
    # terms fitted on the H200 (68/256 + 132/2048 + 218/2048 = 0.437) scaled by the A100's per-SM rate against
    # the H200's ((312/108) / (989.4/132) = 0.385): x 1.168; 80 % of 2,039 GB/s
    scale = (312 / 108) / (989.4 / 132)
    compute = 2 * 256 * 2048 * 2048 * (1 + scale * (68 / 256 + 132 / 2048 + 218 / 2048)) / (312e12 * 0.859)
    traffic = (256 * 2048 * 2 + 2048 * 2048) * 2 / (2039e9 * 0.8)  # 6.4 us
    expected = (compute**3 + traffic**3) ** (1 / 3) + 5e-6  # smooth roofline + kernel latency = 15.3 us
    assert gemm_time_s(A100, "bf16", 256, 2048, 2048) == pytest.approx(expected, rel=1e-12)
    small = gemm_efficiency(A100, "bf16", 256, 2048, 2048)
    large = gemm_efficiency(A100, "bf16", 8192, 4096, 4096)
    assert small == pytest.approx(2 * 256 * 2048 * 2048 / 312e12 / expected)  # ~47 % of the datasheet
    assert 0.40 < small < 0.50 and 0.78 < large < 0.84 and large > 1.6 * small
    # L40S: 362 TFLOPS on 864 GB/s and a 350 W cap: its posted best-shape rate (269.15 TFLOPS bf16, zzc0721/torch-
    # performance-test-data, 74 %) and less at a given shape, below the A100 at 2,048 rows
    l40s = load_gpu("l40s")
    cap = 269.15 / 362.05
    assert 0.95 * cap < gemm_efficiency(l40s, "bf16", 8192, 4096, 4096) < cap
    assert 362.05 * gemm_efficiency(l40s, "bf16", 2048, 4096, 4096) < 312 * gemm_efficiency(A100, "bf16", 2048, 4096,
                                                                                            4096)


def test_optimizer_step_time_by_hand():
    s = scenario_from(dict(model="llama-3.2-1b", task="train", gpu="h100-sxm"))
    sp = speed_of(s, load_model("llama-3.2-1b"), H100)
    n = load_model("llama-3.2-1b").params_total
    # clip_grad_norm_ first: the fp32 grads read for the norm, then read and written by the scale (12 B); fused
    # AdamW, bf16-mixed: read fp32 master, m, v (12 B) and the fp32 grad (4 B); write master, m, v (12 B) and the
    # bf16 copy (2 B): 42 B per parameter at 80 % of 3,350 GB/s
    assert sp.parts_s["optimizer"] == pytest.approx(n * (12 + 30) / (3350e9 * 0.8), rel=1e-9)  # ~19.4 ms
    assert sum(sp.parts_s.values()) == pytest.approx(sp.step_time_s, rel=1e-12)
    # torch's foreach AdamW, pure bf16 (torch/optim/adam.py _multi_tensor_adam, one kernel per op, 2 B each):
    # mul_(p) 4, lerp_(m, g) 6, mul_(v) 4, addcmul_(v, g, g) 6, sqrt(v) 4, div_ 4, add_ 4, addcdiv_(p, m, sqrt) 8
    # = 40 B, plus clipping's 3 x 2 B of bf16 grads
    s = scenario_from(dict(model="llama-3.2-1b", task="train", gpu="h100-sxm", precision="bf16-true",
                           optimizer_impl="foreach"))
    sp = speed_of(s, load_model("llama-3.2-1b"), H100)
    assert sp.parts_s["optimizer"] == pytest.approx(n * (6 + 40) / (3350e9 * 0.8), rel=1e-9)


def test_parameter_gathers_once_per_micro_batch_forward_and_backward():
    m = load_model("llama-3.1-8b")
    net = Network(intra_node="pcie")  # slow links, so the gathers show
    runs = {}
    for accum in (1, 4):
        s = scenario_from(dict(model="llama-3.1-8b", task="train", gpu="h100-sxm", num_gpus=8, sharding="zero3",
                               micro_batch_size=1, seq_len=256, grad_accum_steps=accum))
        runs[accum] = speed_of(s, m, H100, net)
    # all-gather of the 16-bit weights: 7/8 of 16.06 GB over PCIe gen5 x16 at 80 % of 64 GB/s, + 20 us latency
    link = intra_node_link(H100, net)
    g = 7 / 8 * 2 * m.params_total / (64e9 * 0.8) + 20e-6
    assert all_gather_s(2 * m.params_total, 8, link) == pytest.approx(g)
    busy = runs[4].compute_s / 4  # one micro-step's work; forward a third, backward two thirds
    # DeepSpeed's hook-driven fetch hides 10 % of a pass (overheads.ZERO3_GATHER_OVERLAP), FSDP's prefetch 80 %
    exposed = max(0, g - 0.1 * busy / 3) + max(0, g - 0.1 * 2 * busy / 3)
    assert oh.ZERO3_GATHER_OVERLAP == 0.1 and oh.DP_OVERLAP == 0.8
    assert runs[4].parts_s["parameter_gathers"] == pytest.approx(4 * exposed, rel=1e-9)
    assert runs[4].parts_s["parameter_gathers"] == pytest.approx(4 * runs[1].parts_s["parameter_gathers"], rel=1e-9)
    s = scenario_from(dict(model="llama-3.1-8b", task="train", gpu="h100-sxm", num_gpus=8, sharding="fsdp",
                           micro_batch_size=1, seq_len=256, grad_accum_steps=4))
    fsdp = speed_of(s, m, H100, net)
    busy = fsdp.compute_s / 4
    exposed = max(0, g - 0.8 * busy / 3) + max(0, g - 0.8 * 2 * busy / 3)
    assert fsdp.parts_s["parameter_gathers"] == pytest.approx(4 * exposed, rel=1e-9)
    assert fsdp.parts_s["parameter_gathers"] < runs[4].parts_s["parameter_gathers"]


def test_fsdp_reduces_gradients_in_the_dtype_its_stack_s_policy_names():
    """accelerate's FSDP plugin (the Trainer, axolotl) sets MixedPrecision(param_dtype=bf16, reduce_dtype=bf16)
    under bf16 mixed precision: 2 B a gradient element; torchtitan's policy reduces in fp32 (4 B)."""
    from gpuplan.sharding import sharding_for

    def holder(stack):
        return scenario_from(dict(model="qwen3-8b", task="train", method="full", gpu="rtx-3090", num_gpus=4,
                                  sharding="fsdp", precision="bf16-mixed", stack=stack))
    assert sharding_for(hf := holder("hf")).reduced_grad_bytes(hf) == 2.0
    assert sharding_for(ax := holder("axolotl")).reduced_grad_bytes(ax) == 2.0
    assert sharding_for(tt := holder("torchtitan")).reduced_grad_bytes(tt) == 4.0
    # 4 RTX 3090s without peer-to-peer: the 16-bit reduce-scatter of Qwen3-8B's gradients hides behind the
    # backward, as DeepSpeed's does; reduced in fp32 it showed 7.0 s of a 25.8 s step
    s = scenario_from(dict(model="qwen3-8b", task="train", method="full", gpu="rtx-3090", num_gpus=4,
                           sharding="fsdp", grad_checkpointing="full", seq_len=2048))
    sp = speed_of(s, load_model("qwen3-8b"), load_gpu("rtx-3090"))
    assert sp.parts_s["gradient_sync"] < 0.05 * sp.step_time_s


def test_llama_cpp_layers_in_system_ram_run_at_its_bandwidth():
    s = scenario_from(dict(model="llama-3.1-70b", task="infer", engine="llama.cpp", quant="gguf-q4_k_m",
                           gpu="rtx-4090", prompt_tokens=1024, output_tokens=256))
    m = load_model("llama-3.1-70b")
    timer = step_timer(s, m, load_gpu("rtx-4090"))
    r = estimate(s, advise=False).memory
    share = r.offloaded_layers / 80
    assert 0.4 < share < 0.5  # 35-40 of 80 layers do not fit in 24 GB
    w = m.weight_bytes(make_format("gguf-q4_k_m", high_bytes=2))
    layers = w["attention"] + w["mlp"]  # 4.5-bit K-quant decoder weights, ~37 GiB
    kv = 1152 * 80 * 8 * 128 * 2 * 2  # f16 K and V of 1,152 tokens (prompt + half the output)
    expected = share * (layers + kv) / (80e9 * 0.6)  # dual-channel DDR5 at 60 % of 80 GB/s
    assert timer.decode_parts(1, 1152)["cpu_layers"] == pytest.approx(expected, rel=1e-9)
    speed = speed_of(s, m, load_gpu("rtx-4090"))
    assert 2 <= speed.tokens_per_s_per_sequence <= 4  # what people report for 70B with ~35 layers on the CPU


def test_tensor_parallel_all_reduce_floor_at_batch_one():
    s = scenario_from(dict(model="llama-3.1-70b", task="infer", engine="vllm", gpu="h100-sxm", num_gpus=8, tp=8,
                           batch_size=1))
    parts = step_timer(s, load_model("llama-3.1-70b"), H100).decode_parts(1, 1152)
    # 2 all-reduces per layer of one token's 8192 bf16 activations over NVLink (450 GB/s per direction at 80 %),
    # each paying NCCL's ~12 us latency: the latency, not the bytes, sets the floor
    per_call = 2 * 7 / 8 * 8192 * 2 / (450e9 * 0.8) + 12e-6
    assert parts["tensor_parallel"] == pytest.approx(2 * 80 * per_call, rel=1e-9)  # ~1.9 ms per token
    assert 80 * 2 * 12e-6 / parts["tensor_parallel"] > 0.95


def test_single_request_time_to_first_token_by_hand():
    s = scenario_from(dict(model="llama-3.1-8b", task="infer", engine="vllm", gpu="h100-sxm", prompt_tokens=8192,
                           batch_size=2))
    m = load_model("llama-3.1-8b")
    timer = step_timer(s, m, H100)
    peak, bw, stream = 989.4e12 * 0.801, 3350e9 * 0.8, 3350e9 * 0.86  # vLLM's kernels stream at the H100's 86 %

    def gemm(rows, k, n, latency=3e-6, bps=stream):  # vLLM V1 replays CUDA graphs: 3 us per kernel, no launch
        shape = 1 + 68 / max(rows, 16) + 132 / k + 218 / n  # thin operands' share of a tile's fixed cost
        c, t = 2 * rows * k * n * shape / peak, (rows * k + rows * n + k * n) * 2 / bps
        return (c**3 + t**3) ** (1 / 3) + latency

    # vLLM packs q/k/v and gate/up into one GEMM each: one kernel latency per pack
    shapes = [(4096, 4096, 3e-6), (4096, 1024, 0), (4096, 1024, 0), (4096, 4096, 3e-6), (4096, 14336, 3e-6),
              (4096, 14336, 0), (14336, 4096, 3e-6)]
    linears = 32 * sum(gemm(8192, k, n, lat) for k, n, lat in shapes) + gemm(1, 4096, 128256, 5e-6, bw)  # lm_head
    attention = 32 * 4 * 32 * 128 * 8192 * (8192 + 1) / 2 / (989.4e12 * 0.35)  # causal FlashAttention
    elementwise = 0.37 * 8192 * 32 * (60 * 4096 + 15 * 14336) / bw  # fused kernels move 37 % of unfused traffic
    expected = linears + attention + elementwise  # the engine's step (~0.8 ms) hides behind it: async scheduling
    assert timer.ttft_s(8192) == pytest.approx(expected, rel=1e-9)  # ~0.4 s
    # the burst: two 8k prompts arrive together; vLLM prefills 8192 tokens per iteration, one after the other
    assert timer.burst_ttft_s(8192, 2) == pytest.approx(2 * expected, rel=1e-9)
    # a user's TTFT adds vLLM's API-server path, 14.7 ms per request outside the steps (fitted on vLLM's own runs)
    sp = speed_of(s, m, H100)
    assert sp.request_overhead_s == 14.7e-3
    assert sp.ttft_s == pytest.approx(expected + 14.7e-3) and sp.ttft_burst_s == pytest.approx(2 * expected + 14.7e-3)


# ---- the "Why", asked again --------------------------------------------------------------------------
def _speed(net=None, **fields):
    s = scenario_from(fields)
    return speed_of(s, load_model(s.model), load_gpu(s.gpu), net)


def test_a100_is_ahead_of_l40s_for_lora():
    a100 = _speed(model="llama-3.1-8b", task="train", method="lora", gpu="nvidia-a100-sxm4-80gb")
    l40s = _speed(model="llama-3.1-8b", task="train", method="lora", gpu="l40s")
    assert a100.tokens_per_s > 1.2 * l40s.tokens_per_s


def test_deepseek_r1_batch_one_on_8_h200_is_latency_bound():
    # the 30-60 tokens/s people reported came from the V0-era releases of early 2025 (R1 shipped in January)
    sp = _speed(model="deepseek-r1", task="infer", engine="vllm", engine_version="0.7.3", gpu="h200-sxm",
                num_gpus=8, tp=8, batch_size=1)
    assert 30 <= 1 / sp.step_time_s <= 60 and sp.bound.startswith("latency")


def test_cpu_parameter_offload_is_slower():
    base = dict(model="llama-3.1-8b", task="train", gpu="rtx-4090", num_gpus=2, sharding="zero3", seq_len=512)
    plain, offload = _speed(**base), _speed(**base, offload="optimizer+params")
    assert offload.tokens_per_s < plain.tokens_per_s / 2 and offload.parts_s["offload"] > 0


def test_parameter_offload_copies_hide_behind_a_long_pass():
    """FSDP1's CPU offload copies each pass's shard on the pre-unshard side stream, ahead of the compute: on Llama-2-
    70B QLoRA over two RTX 4090s at 2 x 2,048 tokens (Answer.AI's case study) a pass runs ~5 s of GPU work against
    a 17.5 GB NF4 shard's 8.7 GB per GPU: 8.7e9 / (32 GB/s x 0.8) = 0.34 s per pass, hidden."""
    sp = _speed(model="llama-2-70b", task="train", method="qlora", gpu="rtx-4090", num_gpus=2, sharding="fsdp1",
                stack="pytorch", micro_batch_size=2, seq_len=2048, offload="optimizer+params")
    assert sp.parts_s.get("offload", 0.0) == 0.0
    assert any(a.endswith("side stream: 0 ms of it not hidden") for a in sp.assumptions)


def test_parameter_offload_copies_show_beyond_a_short_pass():
    """With almost no compute to hide behind (Llama-3.2-1B full, 1 x 64 tokens), each of the forward, the
    recomputation and the backward waits for its copy: 3 x 2 B x 1,235,814,400 parameters / 2 ranks over PCIe 4.0
    x16 at 80 % (25.6 GB/s), less the sliver of the short passes that hides it (within 3 %)."""
    sp = _speed(model="llama-3.2-1b", task="train", gpu="rtx-4090", num_gpus=2, sharding="fsdp1", seq_len=64,
                micro_batch_size=1, offload="optimizer+params", grad_checkpointing="full")
    copy = 2 * 1_235_814_400 / 2 / (32e9 * 0.8)
    assert sp.parts_s["offload"] == pytest.approx(3 * copy, rel=0.03)


def test_multi_node_over_ethernet_is_several_times_slower():
    """Hierarchical collectives: each GPU sends only its 1/8 over the fabric, so 100 Gb/s Ethernet per node costs
    ~2.6x against InfiniBand here, where the cards' own PCIe without peer-to-peer bounds both."""
    job = dict(model="llama-3.1-70b", task="train", gpu="rtx-4090", num_gpus=8, num_nodes=8, sharding="zero3",
               grad_checkpointing="full")
    ib = _speed(Network(intra_node="pcie-no-p2p", inter_node="infiniband", inter_node_gbps=3200), **job)
    eth = _speed(Network(intra_node="pcie-no-p2p", inter_node="ethernet", inter_node_gbps=100), **job)
    assert eth.tokens_per_s < ib.tokens_per_s / 2 and eth.bound == "communication"


def test_burst_time_to_first_token_is_reported_apart_from_one_request():
    r = estimate(dict(model="qwen2.5-72b", task="infer", engine="vllm", batch_size=50, prompt_tokens=7168,
                      output_tokens=1024, gpu="a100-pcie-80gb", num_gpus=4, tp=4), advise=False)
    assert r.speed.ttft_s < 4 and r.speed.ttft_burst_s > 20 * r.speed.ttft_s
    assert r.speed.requests_per_s == pytest.approx(r.speed.tokens_per_s / 1024)


def test_speed_parts_add_up_and_carry_a_range():
    for fields in (dict(model="mixtral-8x7b", task="train", method="qlora", gpu="h100-sxm", grad_checkpointing="full"),
                   dict(model="qwen3-30b-a3b", task="infer", engine="vllm", gpu="h100-sxm", batch_size=16)):
        sp = _speed(**fields)
        assert sum(sp.parts_s.values()) == pytest.approx(sp.step_time_s, rel=1e-12)
        # serving: the band of vLLM x MoE's held-out rows (speed/bands.py); training: the training spread
        low, high = oh.SPEED_SPREAD["train"] if fields["task"] == "train" else \
            oh.DECODE_BANDS["vllm", "MoE", "NVIDIA"][:2]
        assert sp.tokens_per_s_low == pytest.approx(sp.tokens_per_s * (1 + low))
        assert sp.tokens_per_s_high == pytest.approx(sp.tokens_per_s * (1 + high))


def test_gemm_rates_against_the_measured_h200():
    """Achieved bf16 TFLOP/s of torch.matmul on one H200 (bench/data/gpu-measurements/gemm-h200-2026-11-27.json):
    the products long enough to leave the timing loop's ~39 us per-call floor (over 100 us) within 25 % each and
    8 % at the median; the lm_head of a 128k vocabulary at 8k tokens within 5 % (666 TFLOP/s measured)."""
    import json
    import statistics
    from pathlib import Path

    h200 = load_gpu("h200")
    data = json.loads((Path(__file__).parents[2] / "bench/data/gpu-measurements/gemm-h200-2026-11-27.json").read_text())
    errors = []
    for g in data["gemm"]:
        if g["s"] > 100e-6:
            est = gemm_time_s(h200, "bf16", g["M"], g["K"], g["N"])
            errors.append(abs(est / g["s"] - 1))
    assert len(errors) >= 30 and max(errors) < 0.25 and statistics.median(errors) < 0.08
    head = 2 * 8192 * 4096 * 128256 / gemm_time_s(h200, "bf16", 8192, 4096, 128256) / 1e12
    assert head == pytest.approx(666.4, rel=0.05)


def test_multi_node_data_parallel_is_hierarchical_and_hidden_behind_the_backward():
    """256 H100s (32 nodes of 8, 8 x 200 Gb/s NICs per node by default): DDP's gradient all-reduce runs as a
    reduce-scatter over NVLink, an all-reduce of each GPU's 1/8 share over its own NIC, an all-gather over NVLink
    (NCCL on rail-optimized nodes), bucketed behind the backward. By hand for Llama-3.2-1B's fp32 gradients: the
    inter-node part moves 2 x 31/32 x (4 B x N / 8) per GPU at 90 % of 25 GB/s, ~0.05 s, which the ~0.13 s backward
    hides: per-GPU throughput stays within 10 % of one node's (a flat ring over the NICs made it 3x slower)."""
    from gpuplan.speed.comms import data_parallel

    m = load_model("llama-3.2-1b")
    n = m.params_total
    dp = data_parallel(H100, Network(), 32, 8, 8)
    nvlink = dp.intra
    expected = 2 * (7 / 8 * 4 * n / nvlink.bytes_per_s + nvlink.latency_s) + (
        2 * 31 / 32 * 4 * n / 8 / (1600e9 / 8 / 8 * 0.9) + 30e-6)
    assert dp.all_reduce_s(4 * n) == pytest.approx(expected, rel=1e-9)
    one, many = (_speed(model="llama-3.2-1b", task="train", gpu="h100-sxm", num_gpus=8, num_nodes=nodes,
                        sharding="ddp", micro_batch_size=4, seq_len=2048) for nodes in (1, 32))
    assert many.tokens_per_s / 256 > 0.9 * one.tokens_per_s / 8


def test_owned_geforce_cards_get_no_peer_to_peer_in_recommend_either():
    """New-user review, problem 4: `recommend --have 4x5090` gave owned GeForce cards peer-to-peer PCIe (10,632
    tokens/s) where `estimate` on the same cards did not (7,309). Both now take the card's own links."""
    from gpuplan.plan.recommend import Constraints, recommend

    base = dict(model="qwen3-8b", task="train", method="lora", train_tokens=1e8)
    s = scenario_from(base)
    owned = recommend(s, load_model("qwen3-8b"), Constraints(have=(("nvidia-geforce-rtx-5090", 4),))).owned
    four = next(r for r in owned if r.num_gpus == 4)
    alone = estimate(four.scenario.model_copy(update={"gpu": four.gpu_id}), advise=False)
    assert "without peer-to-peer" in " ".join(alone.assumptions)
    assert four.tokens_per_s == pytest.approx(alone.speed.tokens_per_s, rel=0.01)


def test_the_decode_assumption_says_which_weights_an_moe_step_reads():
    """Qwen3-30B-A3B routes each token to 8 of 128 experts per layer: one sequence reads 8 of them; 16 sequences
    reach 128 x (1 - (120/128)^16) = 82.4 of them (uniform routing); a dense model reads every weight."""
    def line(model, batch):
        plan = estimate(dict(model=model, task="infer", engine="vllm", gpu="h100", batch_size=batch),
                                advise=False)
        return next(a for a in plan.assumptions if a.startswith("decode step"))
    assert "the routed experts 1 token(s) reach (about 8 of 128 per layer)" in line("qwen3-30b-a3b", 1)
    assert "(about 82 of 128 per layer)" in line("qwen3-30b-a3b", 16)
    assert "every weight and the whole KV cache" in line("llama-3.1-8b", 16)


def test_no_output_tokens_is_timed_as_one_and_said():
    """A serving plan with output_tokens 0 printed "41 output tokens/s" for requests that produce none: every engine
    generates at least one token (vLLM's SamplingParams refuses max_tokens below 1), and the plan times one. It now
    says so, and its output tokens/s are its requests/s; a plan with output tokens says nothing of it."""
    plan = estimate({"model": "qwen3-0.6b", "task": "infer", "engine": "vllm", "gpu": "l4", "output_tokens": 0,
                     "batch_size": 8})
    said = [a for a in plan.assumptions if a.startswith("output_tokens 0 timed as 1")]
    assert len(said) == 1
    assert plan.speed.tokens_per_s == pytest.approx(plan.speed.requests_per_s, rel=1e-9)
    one = estimate({"model": "qwen3-0.6b", "task": "infer", "engine": "vllm", "gpu": "l4", "output_tokens": 1,
                    "batch_size": 8})
    assert plan.speed.tokens_per_s == pytest.approx(one.speed.tokens_per_s, rel=0.02)
    assert not [a for a in one.assumptions if a.startswith("output_tokens 0")]
