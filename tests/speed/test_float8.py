"""torchtitan's float8 (torchao Float8Linear, dynamic tensorwise scaling, compiled) in the speed model: the casts'
bytes by hand, torchao's own Float8Linear microbenchmark, and torchtitan's published float8 rows against the bf16
rows beside them.

Tolerances: exact for the byte count (arithmetic); on the Float8Linear microbenchmark's time 15 % per shape and 5 %
on the median (the card it ran on is inferred from its bf16 rate); 10 % on the float8 speed-up over the bf16 row of
the same table (same card, same software, same layout: what float8 changes); 15 % on the rows themselves, as
tests/speed/test_power_and_clocks.py holds torchtitan's bf16 rows.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest
import yaml

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.speed import speed_of
from gpuplan.speed.float8 import torchao_cast_bytes
from gpuplan.speed.gemm import bandwidth, gemm_time_s
from gpuplan.stacks import stack_for

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
TITAN_CARD = load_gpu("nvidia-h100-sxm5-96gb")


def test_cast_bytes_of_llama_3_1_8b_by_hand():
    """Llama-3.1-8B, 2 x 8,192 tokens on one rank, per-op SAC (wk, wo and w3 re-run), weights gathered in fp8.
    Per layer the linears' inputs are wq, wk, wv, w1, w3 4,096 wide, wo 4,096, w2 14,336: 38,912 elements per
    token, read from four tensors (attn_in, wo's input, mlp_in, w2's input: 26,624 elements); their outputs 4,096 +
    1,024 + 1,024 + 4,096 + 14,336 + 14,336 + 4,096 = 43,008; their weights 218,103,808. Inputs, compiled: each
    pass (forward, backward) reads every distinct input once (2 B) and writes one fp8 copy per linear (1 B:
    row-major forward, column-major backward): 2 x (26,624 x 2 + 38,912) = 184,320 B a token; the re-run GEMMs'
    row-major copies beside the column-major ones, 1 B written and 1 B re-read (wk, wo, w3: 3 x 4,096 x 2 =
    24,576): 208,896 B a token; grad_output 5 B; each weight copied to the other layout (2 B). Without FSDP each
    forward (and each re-run GEMM) casts the weight from bf16 instead: 7 B."""
    m, tokens = load_model("llama-3.1-8b"), 16_384
    inputs = 2 * (2 * 26_624 + 38_912) + 2 * 3 * 4_096
    assert inputs == 208_896
    per_layer = inputs * tokens + 5 * tokens * 43_008 + 2 * 218_103_808
    assert per_layer == 7_381_975_040
    layer = m.layers[0]
    rerun = {kind: frozenset({"k_proj", "o_proj", "up_proj"}) for kind, _ in m.layer_kinds()}
    rerun_weights = 4_096 * 1_024 + 4_096 * 4_096 + 4_096 * 14_336
    assert sum(lin.weight_params for lin in layer.linears if lin.name in rerun[layer]) == rerun_weights
    assert torchao_cast_bytes(m, tokens, rerun=rerun) == pytest.approx(32 * per_layer, rel=1e-12)
    alone = inputs * tokens + 7 * (218_103_808 + rerun_weights) + 5 * tokens * 43_008
    assert torchao_cast_bytes(m, tokens, rerun=rerun, fp8_weights=False) == pytest.approx(32 * alone, rel=1e-12)
    # tensor parallelism: each rank casts its shard; pipeline stages: their share of the layers
    assert torchao_cast_bytes(m, tokens, tp=8, layers=0.25, rerun=rerun) == pytest.approx(32 * per_layer / 32)
    # full checkpointing re-runs every GEMM: 1 + 1 B more per input element
    full = (inputs - 2 * 3 * 4_096 + 2 * 38_912) * tokens + 5 * tokens * 43_008 + 2 * 218_103_808
    assert torchao_cast_bytes(m, tokens, again=1.0) == pytest.approx(32 * full, rel=1e-12)


def test_torchtitan_selective_policy_re_runs_wk_wo_w3():
    """torchtitan's per-op SAC re-runs every second ``mm`` (stacks/native.py op_sac_recomputed: wk, wo, w3, named
    k_proj, o_proj, up_proj in the catalog); the plan's cast count takes that set (speed/training.py)."""
    m = load_model("llama-3.1-8b")
    s = scenario_from(dict(model="llama-3.1-8b", task="train", stack="torchtitan", grad_checkpointing="selective",
                           precision="fp8-mixed", seq_len=8192, micro_batch_size=2, num_gpus=8, sharding="fsdp"))
    rc = stack_for(s).recompute(s, m)
    assert set(rc.linears.values()) == {frozenset({"k_proj", "o_proj", "up_proj"})}


# pytorch/ao PR #2185 (2025-05-08, "Microbenchmarking float8 linear", tensorwise, compiled, use_fast_accum True):
# benchmarks/float8/bench_linear_float8.py forward + backward of one linear of Llama-2-70B's shapes, M = 16,384:
# (M, K, N): (bf16 seconds, float8 seconds). Its bf16 times are 585 TFLOPS on ffn.w13, FBGEMM PR #2546's "H100 500W"
# rate (585 at 8192^3), so the card is taken as Grand Teton's 500 W H100.
FLOAT8_LINEAR = {(16384, 8192, 1280): (0.001954, 0.001757), (16384, 1024, 8192): (0.001701, 0.001193),
                 (16384, 8192, 7168): (0.009871, 0.005707), (16384, 3584, 8192): (0.005192, 0.003034)}


def test_float8_linear_time_against_torchao_microbenchmark():
    """One compiled Float8Linear alone: three torch._scaled_mm GEMMs, and its input, weight and grad_output each
    cast with their own max(abs) (graph inputs: nothing to fuse it into). Its time is within 15 % of the published
    one on every shape, 5 % on the median (0.88, 1.11, 1.00, 1.03 of it). The speed-up over bf16 comes out lower
    than published (0.89 of it on the median) because the bf16 GEMMs, not the float8 ones, are 5-14 % fast on
    this card in the model: its (500 / 700) ** 0.5 power factor is above what these bf16 times show."""
    own = oh.TORCHAO_FLOAT8_CAST_BYTES["own amax"]
    times, speed_ups = [], []
    for (m, k, n), (bf16_s, fp8_s) in FLOAT8_LINEAR.items():
        bf16 = 3 * gemm_time_s(TITAN_CARD, "bf16", m, k, n)
        fp8 = 3 * gemm_time_s(TITAN_CARD, "fp8", m, k, n, act_bytes=1, weight_bytes=1) \
            + own * (m * k + k * n + m * n) / bandwidth(TITAN_CARD)
        times.append(fp8 / fp8_s)
        speed_ups.append((bf16 / fp8) / (bf16_s / fp8_s))
    assert all(abs(r - 1) <= 0.15 for r in times), times
    assert statistics.median(times) == pytest.approx(1, abs=0.05), times
    assert all(abs(r - 1) <= 0.25 for r in speed_ups) and 0.85 <= statistics.median(speed_ups) <= 1.0, speed_ups


@pytest.fixture(scope="module")
def titan_rows():
    import throughput

    cases = [c for c in yaml.safe_load((BENCH / "throughput_cases.yaml").read_text())["cases"]
             if c["source"] == "torchtitan benchmarks (Dec 2024)"]
    return {c["id"]: c for c in throughput.run(cases)[0]}


# (float8 row, the bf16 row of the same table): Tables 1 and 3 of benchmarks/llama3_h100_202412_torchtitan.md
# (8B, FSDP on 8 and 128 GPUs, compiled), the vanilla-TP rows of asyncTP_llama3_h100_2025-06_torchtitan.md (8B
# FSDP 8 x TP 8; 70B FSDP 32 x TP 8).
PAIRS = [("M2203", "M2202"), ("M2204", "M0087"), ("M2209", "M2208"), ("M2207", "M0107")]


@pytest.mark.parametrize(("fp8", "bf16"), PAIRS)
def test_float8_speed_up_over_the_bf16_row_beside_it(titan_rows, fp8, bf16):
    """Published: 8,532 / 6,667 = 1.28, 8,380 / 6,514 = 1.29, 5,078 / 4,378 = 1.16, 810 / 597 = 1.36. Before the
    casts were torchao's and Transformer Engine's fused norms were taken off torchtitan's float8, the 1D rows came
    out at 1.67 and 1.69 (30 % over)."""
    a, b = titan_rows[fp8], titan_rows[bf16]
    modelled, published = a["estimated"] / b["estimated"], a["value"] / b["value"]
    assert modelled / published == pytest.approx(1, abs=0.10)


@pytest.mark.parametrize("row", ["M2203", "M2204", "M2206", "M2207", "M2209", "M0095"])
def test_torchtitan_float8_rows_within_15_percent(titan_rows, row):
    """Every float8 row of torchtitan's benchmarks but those at 32k tokens (8B 1D, 70B 2D, 8B 2D, 405B 3D at 8k),
    estimated on Grand Teton's 500 W H100 as bench/throughput.py scores them (they were 26-30 % fast for the 8B 1D
    rows)."""
    assert abs(titan_rows[row]["error_pct"]) <= 15, titan_rows[row]["error_pct"]


def test_torchtitan_405b_row_at_32k_tokens_is_paced_by_its_last_stage(titan_rows):
    """The 405B 3D row at 32,768 tokens (held out; TP 8, PP 8): its last stage (15 of 126 layers, the output layer
    and the loss over 128,256 logits a token) paces the pipeline, as torchtitan's generate_split_points gives the first
    and last stages one layer fewer; -17.0 % (-15.2 % before the backward's fp8 GEMMs ran at the split accumulator's
    share, -14.1 % with the head spread over the stages before). The rest of the gap is the 32k-token attention the
    8B row below shows."""
    assert -20 <= titan_rows["M0099"]["error_pct"] <= -12, titan_rows["M0099"]["error_pct"]


def test_torchtitan_float8_row_at_32k_tokens_is_the_open_gap(titan_rows):
    """The 8B row at 32,768 tokens (held out; attention 70 % of its step) comes out 20 % slow with attention at
    FlashAttention-2's Hopper rate fitted at 2k-65k tokens on llm-foundry's Triton kernel and at 8k on torchtitan's
    SDPA: it needs about 0.25 of the peak there (+8 % at cuDNN's 0.35 before, with the blocks' compile left out).
    Kept as a measured gap: a change that moves it should say why."""
    assert -25 <= titan_rows["M2205"]["error_pct"] <= -12, titan_rows["M2205"]["error_pct"]


def test_torchao_float8_fuses_nothing_beyond_the_linears():
    """torchao swaps the nn.Linear modules only: torchtitan's norms stay as its bf16 run has them (fused only when
    compiled), while Megatron's fp8 runs Transformer Engine's fused kernels."""
    base = dict(model="llama-3.1-8b", task="train", gpu="h100-sxm", precision="fp8-mixed", num_gpus=8)
    titan = scenario_from({**base, "stack": "torchtitan", "sharding": "fsdp"})
    assert not stack_for(titan).kernels(titan).fused_elementwise
    compiled = titan.model_copy(update={"compile": True})
    assert stack_for(compiled).kernels(compiled).fused_elementwise
    megatron = scenario_from({**base, "stack": "megatron"})
    assert stack_for(megatron).kernels(megatron).fused_elementwise


def test_fsdp2_gathers_the_float8_weights_in_one_byte():
    """enable_fsdp_float8_all_gather: the speed model's gathers move 1 B per decoder-linear weight (the embeddings,
    norms and output layer stay 2 B); the assumption line names the casts."""
    s = scenario_from(dict(model="llama-3.1-8b", task="train", stack="torchtitan", gpu="h100-sxm",
                           precision="fp8-mixed", num_gpus=8, sharding="fsdp", micro_batch_size=2, seq_len=8192,
                           grad_checkpointing="selective"))
    from gpuplan.speed.training import _sharded_weight_bytes

    m = load_model("llama-3.1-8b")
    linears = 32 * 218_103_808
    assert _sharded_weight_bytes(s, m) == pytest.approx(2 * m.params_total - linears, rel=1e-12)
    bf16 = s.model_copy(update={"precision": "bf16-mixed"})
    assert _sharded_weight_bytes(bf16, m) == pytest.approx(2 * m.params_total, rel=1e-12)
    assert any("torchao float8" in a for a in speed_of(s, m, load_gpu(s.gpu)).assumptions)
