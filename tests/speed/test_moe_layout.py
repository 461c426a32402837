"""MoE served as the engines run it (issue 31 item 2): expert parallelism and attention data parallelism in the
scenario, the memory per GPU, the step's work and communication, the launch files; AMD's Infinity Fabric and the
ROCm builds' share; NVIDIA's NVFP4 checkpoints as a first fix (new-user review 3, question 6)."""

from __future__ import annotations

import math

import pytest

import gpuplan
from gpuplan import overheads as oh
from gpuplan.errors import GpuplanError
from gpuplan.hardware import Network, load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.plan.resolve import resolve
from gpuplan.scenario import scenario_from
from gpuplan.speed.comms import intra_node_link
from gpuplan.speed.experts import FP8_DISPATCH_BYTES, imbalance
from gpuplan.speed.inference import step_timer
from gpuplan.tensors.state import weight_format

R1 = dict(model="deepseek-r1", task="infer", engine="sglang", gpu="h200", num_gpus=8, batch_size=64,
          prompt_tokens=4096, output_tokens=512)
DP = dict(ep=8, attention_dp=True)


def timer(**fields):
    r = resolve(scenario_from(fields))
    return step_timer(r.scenario, r.model, r.gpu)


def test_the_imbalance_is_the_expected_maximum_of_uniform_picks():
    """Worked by hand: 64 tokens x 8 picks over 8 GPUs, mean 64 picks per GPU, sigma sqrt(64 x 7/8) = 7.48, the
    largest of 8 about 64 + 7.48 sqrt(2 ln 8) = 79.26: 1.2385 times the mean."""
    assert imbalance(64, 8, 8) == pytest.approx(1 + 7.483 * math.sqrt(2 * math.log(8)) / 64, rel=1e-3)
    assert imbalance(64, 8, 8) == pytest.approx(1.2385, abs=1e-3)
    assert imbalance(64, 8, 1) == 1.0
    assert imbalance(4096, 8, 8) < imbalance(64, 8, 8)  # evens out with more tokens


def test_the_dispatch_bytes_are_deepeps_logical_bytes():
    """DeepEP's low-latency table (docs/legacy.md): 128 tokens x top-8 x 7,168 hidden in FP8 with its scales, EP 8,
    77 us at 98 GB/s; BF16 combine 114 us at 127 GB/s. The bytes gpuplan counts reproduce both bandwidths."""
    out = 128 * 8 * 7168 * FP8_DISPATCH_BYTES
    back = 128 * 8 * 7168 * 2
    assert out / 77e-6 / 1e9 == pytest.approx(98, rel=0.01)
    assert back / 114e-6 / 1e9 == pytest.approx(127, rel=0.02)


def test_ep_and_attention_dp_are_serving_settings_now():
    """Review 3 Q6: `--ep 8` was refused as "a Megatron-Core training setting" for inference."""
    plan = gpuplan.estimate({**R1, **DP})
    assert plan.scenario["ep"] == 8 and plan.scenario["attention_dp"] is True
    assert "ep" not in gpuplan.estimate(R1).scenario  # a plan without them reads as it did
    for bad, said in (({"engine": "transformers"}, "set engine vllm, sglang or trtllm"),
                      ({"model": "llama-3.1-70b"}, "has no experts"),
                      ({"ep": 3}, "must divide tp=8"),
                      ({"engine": "vllm", "ep": 4}, "EP = TP x DP"),
                      ({"ep": 1, "attention_dp": False, "moe_dispatch": "deepep"}, "set ep and attention_dp")):
        with pytest.raises(GpuplanError, match=said):
            gpuplan.estimate({**R1, **DP, **bad})
    with pytest.raises(GpuplanError, match="Megatron-Core training setting"):
        gpuplan.estimate({"model": "deepseek-r1", "task": "train", "method": "lora", "ep": 2, "num_gpus": 2})


def test_attention_dp_replicates_attention_and_multiplies_the_pools():
    """Each GPU holds the whole attention (DeepSeek-R1: 61 layers of MLA projections, in fp8) beside its 1/8 of the
    rest, and its own pool: the copy holds 8 pools' requests. Under TP 8 each GPU already held the down-projections
    whole (tensors/layout.replicated; the checkpoint's FP8 with a 4-byte scale per 128 x 128 block: 7,168 x 2,112
    weights + (56 x 12 + 56 x 5) x 4 B = 15,142,624 B a layer, 61 x 7/8 of it 0.75 GiB), so DP adds 7/8 of the rest
    of the attention: 9.30 - 0.75 = 8.55 GiB."""
    tp, dp = gpuplan.estimate(R1), gpuplan.estimate({**R1, **DP})
    s = scenario_from(R1)
    m = load_model("deepseek-r1")
    fmt, skip = weight_format(s, m)
    attention = m.weight_bytes(fmt, skip=skip)["attention"]
    extra_gib = dp.memory.weights_gib - tp.memory.weights_gib
    assert extra_gib == pytest.approx((attention - 61 * 15_142_624) * 7 / 8 / 2**30, rel=1e-6)
    assert 8.5 < extra_gib < 8.6
    per_gpu = dp.memory.max_concurrency / 8
    assert per_gpu == int(per_gpu) and dp.memory.max_concurrency > 5 * tp.memory.max_concurrency


def test_a_dp_rank_reads_its_own_sequences_cache_with_every_head():
    """Qwen3-235B-A22B (4 KV heads): under TP 8 each GPU caches 1 of 4 heads of all 64 sequences; under attention
    data parallelism all 4 heads of its 8: half the bytes."""
    q = dict(model="Qwen/Qwen3-235B-A22B", task="infer", engine="sglang", gpu="h200", num_gpus=8)
    tp, dp = timer(**q), timer(**q, **DP)
    assert dp.decode_parts(64, 4096)["kv_cache"] == pytest.approx(tp.decode_parts(64, 4096)["kv_cache"] / 2, rel=1e-9)


def test_the_layout_changes_the_step_where_it_should():
    tp, dp, deepep = timer(**R1), timer(**R1, **DP), timer(**R1, **DP, moe_dispatch="deepep")
    a, b, c = tp.decode_parts(64, 4352), dp.decode_parts(64, 4352), deepep.decode_parts(64, 4352)
    assert "expert_dispatch" not in a and b["expert_dispatch"] > 0 and c["expert_dispatch"] > 0
    assert b["tensor_parallel"] < 0.1 * a["tensor_parallel"]  # only the 3 dense layers gather and scatter
    assert b["weights"] > a["weights"]  # the attention weights read whole on every GPU
    assert b["kv_cache"] < a["kv_cache"] / 4  # 8 sequences' latent per GPU, not 64
    # one request alone: its attention runs on one GPU, so its prefill is slower than split over 8
    assert dp.ttft_s(4096) > tp.ttft_s(4096)


def test_dispatch_across_nodes_takes_deepeps_rdma_rates():
    one = timer(**{**R1, "num_gpus": 8}, ep=8, attention_dp=True, moe_dispatch="deepep")
    two = timer(**{**R1, "num_gpus": 8, "num_nodes": 2, "tp": 16}, ep=16, attention_dp=True, moe_dispatch="deepep")
    # 4 sequences per GPU either way (64 over 16, or 32 over 8): the InfiniBand hop is slower than NVLink
    assert two.decode_parts(64, 4352)["expert_dispatch"] > one.decode_parts(32, 4352)["expert_dispatch"]


def test_mi300x_talks_over_infinity_fabric():
    """AMD ROCm blog (MI300X RCCL and xGMI, 2025-03-02): 7 links of 64 GB/s per direction, ~48 usable each."""
    link = intra_node_link(load_gpu("mi300x"), Network())
    assert link.kind == "infinity-fabric" and link.bytes_per_s == pytest.approx(7 * 48e9)
    assert intra_node_link(load_gpu("mi355x"), Network()).bytes_per_s > link.bytes_per_s


def test_the_rocm_builds_decode_at_the_measured_share():
    amd = timer(**{**R1, "gpu": "mi300x"})
    assert amd.timing.gpu_scale == oh.ROCM_DECODE_SLOWDOWN
    assert "ROCm" in amd.timing.note and timer(**R1).timing.gpu_scale == 1.0
    nvidia, rocm = gpuplan.estimate({**R1, "gpu": "h200", "engine": "vllm"}), gpuplan.estimate(
        {**R1, "gpu": "mi300x", "engine": "vllm"})
    # the band each card's vendor measured: dstack's DeepSeek-R1 rows on 8 MI300X (vLLM 0.7.3's ROCm build) give AMD
    # its own held-out band (-26% to +3%, bench/results/bands.md), not NVIDIA's widened
    assert "on AMD cards (ROCm): 6 held-out rows" in rocm.speed.band and "NVIDIA" in nvidia.speed.band
    assert rocm.speed.spread_pct != nvidia.speed.spread_pct


def test_the_first_fix_for_4_b200_is_nvidias_nvfp4_checkpoint():
    """Review 3 Q6: the first fix was re-quantizing the fp8 checkpoint to AWQ."""
    s = dict(model="deepseek-r1", task="infer", engine="vllm", gpu="b200", num_gpus=4, batch_size=32,
             prompt_tokens=2048, output_tokens=512)
    plan = gpuplan.estimate(s)
    first = plan.suggestions[0]
    assert not plan.verdict.fits and "nvidia/DeepSeek-R1-FP4" in first.change and first.fits
    assert first.fields == {"quant": "nvfp4"}


def test_capacity_lays_out_an_moe_model_on_each_setup():
    """`capacity --expert-parallel --attention-dp`: every setup of 2 GPUs or more runs ep = tp with attention data
    parallel (1 GPU has nothing to spread); a dense model is refused in one sentence."""
    from gpuplan import api

    fields = dict(users=16, prompt_tokens=2000, output_tokens=300, ttft_s=2, tpot_s=0.05)
    report = api.capacity("qwen3-30b-a3b", engine="sglang", gpus=["h100"], max_gpus=2, expert_parallel=True,
                          attention_dp=True, top=1, **fields)
    assert report.deployments
    for p in report.deployments:
        assert p.setup.endswith("tp2 ep2 dp-attention") and p.tp == 2
    with pytest.raises(GpuplanError, match="has no experts"):
        api.capacity("llama-3.1-8b", engine="sglang", gpus=["h100"], attention_dp=True, **fields)


def test_the_simulated_copy_schedules_every_rank():
    """`estimate --users` under attention data parallelism simulates the copy's 8 schedulers side by side: 8 pools,
    8 running-request caps and 8 prefill chunks per step, each rank's as the plan's engine settings state it."""
    tp, dp = gpuplan.estimate(R1, advise=False), gpuplan.estimate({**R1, **DP}, advise=False)
    one = dp.memory.engine
    assert dp.startup.max_running_requests == 8 * one["max_running_requests"]
    assert dp.startup.chunked_prefill_size == 8 * one["chunked_prefill_size"]
    assert dp.startup.kv_tokens == 8 * one["max_total_num_tokens"]
    assert tp.startup.kv_tokens == tp.memory.engine["max_total_num_tokens"]
