"""recommend's explanations read the plan's own breakdown (issue 31 item 7; new-user review 3, question 6: "memory-
bound, so PCIe is enough" for TP4 DeepSeek-R1 whose breakdown put the all-reduces at 16 % of the step; MI300X uses
Infinity Fabric, not PCIe)."""

import re

import pytest

from gpuplan import recommend
from gpuplan.plan.recommend import LINKS_MINOR_SHARE


def test_the_links_sentence_is_the_breakdowns_share():
    rec = recommend({"model": "deepseek-r1", "task": "infer", "batch_size": 32, "prompt_tokens": 2048,
                     "output_tokens": 512}, gpus=["h200-sxm", "mi300x"], max_gpus=8)
    multi = [x for x in rec.setups if x.num_gpus > 1]
    assert len(multi) >= 2
    for x in multi:
        speed = x.plan.speed
        share = speed.communication_s / speed.step_time_s
        said = re.search(r"collectives take (\d+)% of the decode step over ([^:;,]+)", x.rationale)
        assert said and int(said.group(1)) == round(100 * share), x.rationale
        fabric = said.group(2).startswith(("NVLink", "Infinity Fabric"))
        assert ("PCIe is enough" in x.rationale) == (share < LINKS_MINOR_SHARE and not fabric)
        assert "helps little" not in x.rationale
    # MI300X talks over Infinity Fabric (AMD's xGMI mesh), not PCIe; its ROCm build is said, not "check your stack"
    mi300x = next(x for x in multi if x.gpu_id == "amd-instinct-mi300x")
    assert "over Infinity Fabric" in mi300x.rationale and "PCIe" not in mi300x.rationale
    assert "ROCm build" in mi300x.rationale and "check your stack" not in mi300x.rationale


def test_one_gpu_needs_no_links():
    rec = recommend({"model": "llama-3.1-8b", "task": "infer"}, gpus=["h100-sxm"], max_gpus=1)
    assert all("one GPU: no interconnect needed" in x.rationale for x in rec.setups)


@pytest.mark.parametrize("engine, said", [
    ("sglang", "AMD: the engine's ROCm build, its decode timed"),
    ("vllm", "AMD: the engine's ROCm build, its decode timed"),
    ("transformers", "AMD (ROCm): transformers timed from the datasheet as its CUDA build, no run on this vendor "
                     "measured (uncalibrated)"),
])
def test_an_amd_row_says_how_its_engine_is_timed_there(engine, said):
    """The engines with a ROCm build (their profile's rocm_build: vLLM, SGLang) are timed by the measured share on
    AMD cards and say so; another engine's row says it is timed as its CUDA build, uncalibrated."""
    rec = recommend({"model": "qwen2.5-0.5b", "task": "infer", "engine": engine}, gpus=["mi300x"],
                            max_gpus=1, top=1)
    assert rec.setups and said in rec.setups[0].rationale


@pytest.mark.parametrize("stack, said", [
    ("hf", "AMD (ROCm): stack hf runs there;"),
    ("torchtune", "AMD (ROCm): stack torchtune runs there;"),
])
def test_an_amd_training_row_says_its_stack_runs_there(stack, said):
    """A training row on an AMD card names its stack as running there (stack_cards: the stacks that do not were
    refused before ranking), where it once asked the reader to check."""
    rec = recommend({"model": "qwen2.5-0.5b", "task": "train", "method": "lora", "stack": stack}, gpus=["mi300x"],
                    max_gpus=1, top=1)
    assert rec.setups and said in rec.setups[0].rationale


def test_a_training_rows_links_sentence_says_the_share_is_what_overlap_leaves():
    """Training's communication_s is the collectives' time not hidden behind compute (DDP buckets, ZeRO prefetch):
    the sentence says so, since 8 L40S running ZeRO-2 over PCIe show 0 % while their all-reduces are not free."""
    rec = recommend({"model": "llama-3.1-8b", "task": "train", "train_tokens": 1e8}, gpus=["l40s"], max_gpus=8)
    multi = [x for x in rec.setups if x.num_gpus > 1]
    assert multi
    for x in multi:
        speed = x.plan.speed
        said = re.search(r"collectives not hidden behind compute take (\d+)% of the step over ", x.rationale)
        assert said and int(said.group(1)) == round(100 * speed.communication_s / speed.step_time_s), x.rationale
