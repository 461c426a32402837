"""The CUDA context a PyTorch process makes, by release: before torch 1.13 (pytorch/pytorch pull request 86509:
CUDA_MODULE_LOADING=LAZY unless the user set it) every kernel of its libraries was loaded with the context, 1,343 MiB
on a V100 as transformers' docs measured it (model_memory_anatomy.md, 'GPU memory occupied: 1343 MB' after a 1 x 1
tensor); from 1.13 the generation's lazily loaded context (overheads.CUDA_CONTEXT_GIB)."""

from __future__ import annotations

import pytest

from gpuplan import estimate
from gpuplan import overheads as oh
from gpuplan.scenario import Scenario
from gpuplan.tensors.breakdown import cuda_context_gib, device_overheads


@pytest.mark.parametrize(("torch_version", "gib"), [("1.10", 1343 / 1024), ("1.12.1", 1343 / 1024), ("1.13", 0.30),
                                                    ("2.5.1+cu124", 0.30), (None, 0.30)])
def test_the_context_is_eager_loading_s_before_torch_1_13(torch_version, gib):
    """1,343 MiB = 1.3115 GiB before 1.13, Volta's 0.30 GiB from it and where no release is given."""
    assert pytest.approx(1.3115234375) == oh.CUDA_CONTEXT_EAGER_LOADING_GIB
    assert oh.CUDA_CONTEXT_GIB["Volta"] == 0.30
    s = Scenario(model="bert-large-uncased", task="train", torch_version=torch_version)
    assert cuda_context_gib(s, "Volta") == pytest.approx(gib)
    assert device_overheads(s, "Volta")["CUDA context"] == pytest.approx(gib * 2**30)


def test_a_bert_plan_of_torch_1_10_counts_the_context_its_device_figure_held():
    """transformers' docs' BERT-large fp16 run on a V100 (January 2022, torch 1.10; pynvml's used memory, the context
    included): the same plan's device peak is 1.3115 - 0.30 = 1.0115 GiB higher with torch_version 1.10, its
    allocator's share unchanged."""
    run = {"model": "bert-large-uncased", "task": "train", "method": "full", "micro_batch_size": 4, "seq_len": 512,
           "precision": "fp16-mixed", "attention": "eager", "gpu": "v100-sxm2-16gb"}
    now, then = estimate(run, advise=False).memory, estimate({**run, "torch_version": "1.10"}, advise=False).memory
    assert then.reserved_peak_gib == pytest.approx(now.reserved_peak_gib)
    assert then.device_peak_gib - now.device_peak_gib == pytest.approx(1343 / 1024 - 0.30)
    assert then.device_overheads["CUDA context"] == pytest.approx(1.3115234375)
