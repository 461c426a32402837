"""torchtune's QLoRA dequantizes with torchao's NF4Tensor (get_original_weight), counted from its code
(overheads.TORCHAO_NF4_DEQUANT_BYTES_PER_PARAM), not at AutoGPTQ's calibrated rate; checked by hand arithmetic and
against torchtune's README 'Optimization flags' rows (bench/measured-stacks.csv S0057, S0059)."""

import pytest

from gpuplan import load_model
from gpuplan.hardware import Network, load_gpu
from gpuplan.scenario import scenario_from
from gpuplan.speed import speed_of
from gpuplan.speed import training as t
from gpuplan.speed.gemm import bandwidth
from gpuplan.stacks import stack_for

TARGETS = ["q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _pass(compile_: bool) -> tuple[str, float, float]:
    s = scenario_from(dict(model="llama-3.2-3b", task="train", stack="torchtune", method="qlora", lora_rank=64,
                           lora_targets=TARGETS, micro_batch_size=2, seq_len=4096, gpu="a100-sxm4-80gb",
                           compile=compile_))
    m, gpu = load_model(s.model), load_gpu(s.gpu)
    kern = stack_for(s).kernels(s)
    return kern.dequant, t._dequant_pass_s(s, m, gpu, kern), bandwidth(gpu)


def test_torchao_dequant_pass_by_hand():
    # Llama 3.2 3B: 28 layers of q, o (3072 x 3072), k, v (3072 x 1024) and gate, up, down (3072 x 8192)
    params = 28 * (2 * 3072 * 3072 + 2 * 3072 * 1024 + 3 * 3072 * 8192)
    assert params == 2_818_572_288
    modules, latency = 28 * 7, 5e-6  # overheads.GEMM_KERNEL_LATENCY_S
    kind, compiled, bw = _pass(True)
    assert kind == "compiled"
    assert compiled == pytest.approx(params * (0.5 + 1 / 64 + 2 + 2) / bw + modules * 1 * latency, rel=1e-9)
    kind, eager, _ = _pass(False)
    assert kind == "eager"
    assert eager == pytest.approx(params * 35 / bw + modules * 14 * latency, rel=1e-9)
    assert eager / compiled == pytest.approx(8.45, abs=0.01)


def test_qlora_tracks_lora_on_torchtune_flags_rows():
    """The README's compiled QLoRA row ran 2 % slower than its LoRA twin (8,035 vs 8,210 tokens/s); the estimate's
    QLoRA / LoRA ratio lands within 1 % of that (AutoGPTQ's rate put it at 0.908)."""
    rates = {}
    for method in ("lora", "qlora"):
        s = scenario_from(dict(model="llama-3.2-3b", task="train", stack="torchtune", method=method, lora_rank=64,
                               lora_targets=TARGETS, micro_batch_size=2, seq_len=4096, gpu="a100-sxm4-80gb",
                               compile=True, loss="chunked", grad_checkpointing="full", activation_offload=True,
                               precision="bf16-true", attention="sdpa", optimizer="adamw", optimizer_impl="fused"))
        rates[method] = speed_of(s, load_model(s.model), load_gpu(s.gpu), Network()).tokens_per_s
    assert rates["qlora"] / rates["lora"] == pytest.approx(8035 / 8210, abs=0.01)
