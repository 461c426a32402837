"""Say what was assumed: the resolved line, the defaults that follow the card and the GPU count, -Instruct ids."""

from __future__ import annotations

import os
from unittest import mock

import pytest

from conftest import cli_in_process
from gpuplan import GpuplanError, estimate, load_model

GIB = 2**30


def test_the_resolved_line_names_every_default():
    r = estimate({"model": "llama-3.1-8b", "task": "train", "method": "qlora", "gpu": "rtx-4090"}, advise=False)
    assert r.resolved == ("meta-llama/Llama-3.1-8B: train QLoRA r16 (nf4 base), seq 2,048 x micro-batch 2 x 8 "
                          "accumulation, full checkpointing, bf16-mixed, adamw, sdpa, hf; 1 x rtx-4090, single GPU")
    r = estimate({"model": "llama-3.1-70b", "task": "infer", "engine": "vllm", "batch_size": 32,
                  "prompt_tokens": 3584, "output_tokens": 512, "gpu": "h100-sxm", "num_gpus": 2}, advise=False)
    assert r.resolved == ("meta-llama/Llama-3.1-70B: serve with vllm, 32 x (3,584 prompt + 512 output tokens), bf16 "
                          "weights, KV cache bf16; 2 x h100-sxm, tensor parallel 2")
    r = estimate({"model": "deepseek-r1", "task": "infer"}, advise=False)
    assert "fp8 (as shipped) weights" in r.resolved
    # session 22's walk: llama.cpp's cache is f16 by default (-ctk f16 in the launch file) under any weights; the
    # line said "KV cache bf16"
    r = estimate({"model": "llama-3.1-8b", "task": "infer", "engine": "llama.cpp", "quant": "q4_k_m",
                  "gpu": "rtx-3090"}, advise=False)
    assert r.resolved == ("meta-llama/Llama-3.1-8B: serve with llama.cpp, 1 x (1,024 prompt + 256 output tokens), "
                          "gguf-q4_k_m weights, KV cache fp16; 1 x rtx-3090, single GPU")


def test_every_answer_opens_with_it():
    # estimate without a card lays out 1 x 1; cost and recommend leave it to each row (scenario/describe.py laid_out)
    for args, batches in ((["estimate", "--model", "qwen2.5-0.5b", "--task", "train"], "micro-batch 1 x 1"),
                          (["cost", "--model", "qwen2.5-0.5b", "--task", "train"], "each offer's micro-batch x"),
                          (["recommend", "--model", "qwen2.5-0.5b", "--task", "train", "--top", "1"],
                           "each setup's micro-batch x")):
        with mock.patch.dict(os.environ, {"COLUMNS": "200"}):
            done = cli_in_process(*args)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"Qwen/Qwen2.5-0.5B: train full fine-tuning, seq 2,048 x {batches}"), args


def test_several_gpus_serving_one_model_split_it():
    """Two cards serving one model hold half of its weights each when it is split (vLLM: tensor parallel;
    transformers: layers placed on each card), not a copy each. Llama-3.1-70B's bf16 weights are
    70,553,706,496 x 2 B = 131.4 GiB: 65.7 GiB on each of two H100s with transformers; Qwen2.5-14B's
    29.5 GB are split the same way by vLLM over two L40S."""
    weights = 70_553_706_496 * 2 / GIB
    r = estimate({"model": "llama-3.1-70b", "task": "infer", "gpu": "h100-sxm", "num_gpus": 2})
    assert r.scenario["pp"] == 2 and r.memory.weights_gib == pytest.approx(weights / 2, rel=0.01)
    assert r.memory.fits and any("2 GPUs" in d and 'device_map="auto"' in d for d in r.defaults)
    one = estimate({"model": "qwen2.5-14b", "task": "infer", "engine": "vllm", "gpu": "l40s"}, advise=False)
    two = estimate({"model": "qwen2.5-14b", "task": "infer", "engine": "vllm", "gpu": "l40s", "num_gpus": 2})
    assert two.scenario["tp"] == 2 and two.memory.weights_gib == pytest.approx(one.memory.weights_gib / 2, rel=0.01)
    assert any("--tensor-parallel-size 2" in d for d in two.defaults)
    replicas = estimate({"model": "llama-3.1-70b", "task": "infer", "gpu": "h100-sxm", "num_gpus": 2,
                         "sharding": "ddp"}, advise=False)
    assert replicas.memory.weights_gib == pytest.approx(weights, rel=0.01) and not replicas.memory.fits


def test_serving_rejects_training_sharding():
    with pytest.raises(GpuplanError, match="does not apply to serving"):
        estimate({"model": "llama-3.2-1b", "task": "infer", "sharding": "fsdp", "num_gpus": 2})


@pytest.mark.parametrize("name, base", [
    ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B"),
    ("qwen2.5-72b-instruct", "Qwen/Qwen2.5-72B"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistralai/Mistral-7B-v0.3"),
    ("meta-llama/Llama-2-7b-chat-hf", "meta-llama/Llama-2-7b-hf"),
    ("google/gemma-2-9b-it", "google/gemma-2-9b"),
])
def test_instruct_and_chat_ids_use_the_base_config_offline(name, base, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    m = load_model(name)
    assert m.name == name and m.params_total == load_model(base).params_total
    assert f"its base model {base}" in m.notes[-1]
    r = estimate({"model": name, "task": "infer"}, advise=False)
    assert any(f"its base model {base}" in d for d in r.defaults)


def test_a_quantized_variant_is_not_taken_for_its_base(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # -AWQ checkpoints ship other bytes: only its own config will do
    with pytest.raises(GpuplanError, match=r"cannot fetch config\.json"):
        load_model("Qwen/Qwen2.5-7B-Instruct-AWQ")


def test_gguf_types_by_their_llama_cpp_names():
    r = estimate({"model": "llama-3.1-8b", "task": "infer", "engine": "llama.cpp", "quant": "q4_k_m",
                  "gpu": "apple-m4-max"}, advise=False)
    assert r.scenario["quant"] == "gguf-q4_k_m" and r.scenario["precision"] == "fp16-true"
    assert r.memory.device_overheads == {} and r.memory.capacity_gib == pytest.approx(96.0)


def test_an_ambiguous_gpu_is_said_first():
    r = estimate({"model": "qwen2.5-0.5b", "task": "infer", "gpu": "a100-80gb"}, advise=False)
    assert r.gpu.id == "nvidia-a100-sxm4-80gb" and r.defaults[0].startswith("a100-80gb taken as A100 SXM4 80GB")


@pytest.mark.parametrize("task, said", [
    ("infer", "prompt_tokens 768: the default 1,024 plus 256 output tokens would run past openai-community/gpt2's "
              "1,024 positions (set prompt_tokens to choose)"),
    ("train", "seq_len 1,024: the default 2,048 would run past openai-community/gpt2's 1,024 positions (set seq_len "
              "to choose)"),
])
def test_defaults_fit_the_model_s_context_and_say_so(task, said):
    """fuzz-report-3: `gpuplan estimate --model gpt2 --task infer`, as a new user types it, failed: gpt2 learns
    1,024 positions and the default request is 1,024 + 256 tokens."""
    plan = estimate({"model": "gpt2", "task": task, "gpu": "rtx-4090"})
    assert said in plan.defaults
    s = plan.scenario  # as resolved, a dict of its fields
    assert (s["prompt_tokens"] + s["output_tokens"] if task == "infer" else s["seq_len"]) == 1024


def test_lengths_the_user_set_are_judged_as_set():
    with pytest.raises(GpuplanError, match="1,280 tokens index past it"):
        estimate({"model": "gpt2", "task": "infer", "prompt_tokens": 1024, "gpu": "rtx-4090"})


def test_cost_and_recommend_take_the_same_default():
    import gpuplan

    table = gpuplan.cost({"model": "gpt2", "task": "infer"}, top=1)
    assert "1 x (768 prompt + 256 output tokens)" in table.resolved and table.rows
    rec = gpuplan.recommend({"model": "gpt2", "task": "infer"}, gpus=["rtx-4090"], top=1)
    assert rec.setups and any("prompt_tokens 768" in d for d in rec.defaults)
