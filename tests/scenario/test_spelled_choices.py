"""Named choices written as people write them (the session-31 walk): ``--engine vLLM``, ``--method LoRA``,
``--sharding ZeRO-3`` and ``--engine llamacpp`` were refused with the list of choices, while ``--gpu RTX4090`` and
``--model Llama 3 70B`` are read; a word close to a choice (``bf16``, ``adam``, ``trian``) got the list without
the choice meant."""

import pytest

import gpuplan
from conftest import cli_in_process
from gpuplan.errors import GpuplanError, spelled_choice
from gpuplan.scenario import scenario_from


@pytest.mark.parametrize("field, typed, held", [
    ("engine", "vLLM", "vllm"), ("engine", "SGLang", "sglang"), ("engine", "llamacpp", "llama.cpp"),
    ("engine", "Llama.cpp", "llama.cpp"), ("engine", "TRT-LLM", "trtllm"), ("method", "LoRA", "lora"),
    ("method", "QLoRA", "qlora"), ("task", "Train", "train"), ("sharding", "ZeRO-3", "zero3"),
    ("sharding", "FSDP2", "fsdp2"), ("precision", "BF16-Mixed", "bf16-mixed"), ("stack", "Unsloth", "unsloth"),
    ("kv_cache_dtype", "FP8", "fp8"), ("grad_checkpointing", "Full", "full"), ("pricing", "On-Demand", "on_demand"),
    ("offload", "Optimizer+Params", "optimizer+params"),
])
def test_a_choice_in_other_case_or_punctuation_is_that_choice(field, typed, held):
    base = {"model": "qwen3-8b", "task": "train", "method": "lora", "gpu": "l40s"}
    if field in ("engine", "kv_cache_dtype"):
        base = {"model": "qwen3-8b", "task": "infer", "gpu": "l40s"}
    if field == "sharding":
        base["num_gpus"] = 2
    s = scenario_from({**base, field: typed})
    assert getattr(s, field) == held
    assert s == scenario_from({**base, field: held})


def test_only_one_choice_is_taken_and_a_choice_is_never_changed():
    assert spelled_choice("fsdp1", ("fsdp", "fsdp1", "fsdp2")) == "fsdp1"
    assert spelled_choice("FSDP-2", ("fsdp", "fsdp1", "fsdp2")) == "fsdp2"
    assert spelled_choice("a-b", ("ab", "a.b")) == "a-b"  # two choices fold alike: neither is guessed
    assert spelled_choice("adam", ("adamw", "adamw-8bit")) == "adam"  # close is not the same: refused below
    assert spelled_choice(3, ("3",)) == 3


@pytest.mark.parametrize("field, typed, meant", [
    ("precision", "bf16", "'bf16-true' or 'bf16-mixed'"), ("task", "trian", "'train'"),
    ("method", "qlroa", "'qlora' or 'lora'"), ("optimizer", "adam", "'adamw'"),
])
def test_a_word_near_a_choice_is_refused_naming_it(field, typed, meant):
    with pytest.raises(GpuplanError) as e:
        scenario_from({"model": "qwen3-8b", "task": "train", "method": "lora", "gpu": "l40s", field: typed})
    assert f"(got '{typed}'); did you mean {meant}" in str(e.value)


def test_the_command_line_and_capacity_read_the_engine_as_written():
    r = cli_in_process("estimate", "--model", "qwen3-8b", "--task", "infer", "--engine", "vLLM", "--gpu", "l40s")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Qwen/Qwen3-8B: serve with vllm,")
    plans = gpuplan.capacity("qwen3-0.6b", engine="SGLang", users=2, preset="chat", gpus=["l4"], max_gpus=1, top=1)
    assert (plans.deployments[0].engine, plans.deployments[0].setup) == ("sglang", "1x l4 tp1")
    with pytest.raises(GpuplanError, match="engine takes vllm, sglang or trtllm, not 'vlm'"):
        gpuplan.capacity("qwen3-0.6b", engine="vlm", users=2, preset="chat", gpus=["l4"])
