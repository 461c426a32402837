"""Training on Apple silicon with software whose Metal support is new is said (s20 rewalk's leftover 3): QLoRA's
bitsandbytes base (its MPS backend, bitsandbytes/backends/mps/ops.py: Metal kernels from the Kernels Hub) and
Unsloth (unsloth/device_type.py accepts MPS; its Apple port, unslothai/unsloth#4259, merged in part; Triton has
no Metal backend). Before, both were planned on an M4 Max without a word."""

from __future__ import annotations

import pytest

from gpuplan import estimate

JOB = {"model": "qwen2.5-7b", "task": "train", "seq_len": 512, "micro_batch_size": 1, "gpu": "apple-m4-max"}


def _said(fields: dict) -> tuple[bool, bool]:
    warnings = estimate({**JOB, **fields}, advise=False).warnings
    return (any(w.startswith("QLoRA on Apple silicon: bitsandbytes runs the nf4 base on its MPS backend")
                for w in warnings),
            any(w.startswith("stack unsloth on Apple silicon: its device check accepts MPS") for w in warnings))


@pytest.mark.parametrize(("fields", "said"), [
    ({"method": "qlora"}, (True, False)),  # hf: bitsandbytes
    ({"method": "qlora", "stack": "unsloth"}, (True, True)),
    ({"method": "lora", "stack": "unsloth"}, (False, True)),
    ({"method": "lora"}, (False, False)),
    ({"method": "qlora", "stack": "unsloth", "gpu": "rtx-4090"}, (False, False)),  # CUDA: what they are built for
])
def test_new_metal_software_is_said_where_the_plan_uses_it(fields, said):
    assert _said(fields) == said


def test_torchtunes_nf4_is_not_bitsandbytes():
    """torchtune's QLoRA base is torchao's NF4 (no bitsandbytes): nothing said of bitsandbytes' MPS backend (the
    plan itself refuses torchtune on a card without bf16)."""
    from gpuplan.hardware import load_gpu
    from gpuplan.plan.refusals import _apple
    from gpuplan.scenario import scenario_from

    s = scenario_from({**JOB, "method": "qlora", "stack": "torchtune", "precision": "bf16-true"})
    assert _apple(s, load_gpu("apple-m4-max")) == []
    assert len(_apple(s.model_copy(update={"stack": "hf"}), load_gpu("apple-m4-max"))) == 1
