"""ZeRO-Offload's model states against DeepSpeed's own estimators (deepspeedai/DeepSpeed@02aa38c3
``deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs`` and ``stage3.py
estimate_zero3_model_states_mem_needs``): with the optimizer offloaded, the GPU keeps the 16-bit weights (their
partition under ZeRO-3) and no gradient partition; the CPU keeps fp32 weights, fp32 gradients and both Adam moments,
16 B per parameter, 18 B with the 16-bit weights too when ZeRO-3 offloads the parameters. The estimators multiply the
CPU figure by a 1.5 buffer factor; the states themselves are compared here, exactly."""

from __future__ import annotations

import pytest

from gpuplan import estimate

P = 8_030_261_248  # Llama-3.1-8B, counted by transformers on the meta device (tests/model)
GIB = 2**30
BASE = {"model": "llama-3.1-8b", "task": "train", "method": "full", "precision": "bf16-mixed",
        "grad_checkpointing": "full", "gpu": "a100-80gb"}  # zero2/zero3 under the HF Trainer: DeepSpeed


def _states(**fields):
    m = estimate({**BASE, **fields}, advise=False).memory
    return m.weights_gib + m.gradients_gib + m.optimizer_gib, m.cpu_gib


def test_zero2_offload_keeps_the_16_bit_weights_only():
    gpu, cpu = _states(num_gpus=2, sharding="zero2", offload="optimizer")
    assert gpu == pytest.approx(2 * P / GIB, rel=1e-9)  # estimator: gpu_mem = 2 * total_params
    assert cpu * 2 == pytest.approx(16 * P / GIB, rel=1e-9)  # two ranks' partitions: 16 B per parameter


def test_zero3_offload_keeps_the_16_bit_partition():
    gpu, cpu = _states(num_gpus=2, sharding="zero3", offload="optimizer")
    assert gpu == pytest.approx(2 * P / 2 / GIB, rel=1e-9)  # estimator: largest layer + 2 * total_params / gpus
    assert cpu * 2 == pytest.approx(16 * P / GIB, rel=1e-9)


def test_zero3_parameter_offload_on_one_gpu_keeps_no_model_state():
    gpu, cpu = _states(num_gpus=1, sharding="zero3", offload="optimizer+params", gpu="rtx-4090")
    assert gpu == 0.0  # estimator: the largest layer alone (gpuplan's "ZeRO-3 gathered layers")
    assert cpu == pytest.approx(18 * P / GIB, rel=1e-9)  # estimator: total_params * 18 (zero_init)
