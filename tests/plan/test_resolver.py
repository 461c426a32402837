"""The one resolver (gpuplan/plan/resolve.py) and the one place that refuses (gpuplan/plan/refusals.py): every
default filled once, with its reason; every "cannot run" raised from the resolved scenario, not while parsing."""

from __future__ import annotations

import pytest

from counting import VALIDATIONS, counting
from gpuplan import GpuplanError
from gpuplan.model.catalog import load_model
from gpuplan.plan.resolve import resolve
from gpuplan.scenario import scenario_from


def test_the_card_precision_is_a_default_filled_once():
    """A V100 has no bf16: the HF QLoRA recipe runs fp16-mixed there. The precision is filled when the scenario is
    validated (with the recipe's other defaults), and the resolver only says why: one validation in all."""
    m = load_model("llama-3.1-8b")
    with counting(VALIDATIONS) as calls:
        s = scenario_from({"model": "llama-3.1-8b", "task": "train", "method": "qlora", "gpu": "v100"})
        r = resolve(s, m)
    assert calls[VALIDATIONS] == 1
    assert s.precision == "fp16-mixed" and "precision" not in s.model_fields_set
    assert r.scenario.gpu == "nvidia-v100-sxm2-32gb" and r.scenario.precision == "fp16-mixed"
    assert r.defaults[0].startswith("v100 taken as Tesla V100 SXM2 32GB")
    assert r.defaults[-1] == ("precision fp16-mixed: Tesla V100 SXM2 32GB has no bf16 (Volta), so fp16 is what runs "
                              "there (set precision to choose)")
    # the stack's sentence leaves the card's choice to the card's line
    assert r.assumptions and "precision" not in r.assumptions[0] and "grad_checkpointing full" in r.assumptions[0]
    # a precision given is kept, and judged on the card
    with pytest.raises(GpuplanError, match="has no bf16 tensor cores"):
        resolve(scenario_from({"model": "llama-3.1-8b", "task": "train", "gpu": "v100", "precision": "bf16-mixed"}))


def test_the_serving_split_is_set_without_a_second_validation():
    """Two L40S serving Qwen2.5-14B with vLLM split it by tensor parallelism; the split changes no default, so
    the resolved scenario is a copy with tp set (a given field), not a second validation."""
    m = load_model("qwen2.5-14b")
    with counting(VALIDATIONS) as calls:
        s = scenario_from({"model": "qwen2.5-14b", "task": "infer", "engine": "vllm", "gpu": "l40s", "num_gpus": 2})
        r = resolve(s, m)
    assert calls[VALIDATIONS] == 1 and r.scenario.tp == 2 and "tp" in r.scenario.model_fields_set
    assert r.defaults[-1].startswith("2 GPUs serve one copy of the model with tensor parallelism (vLLM "
                                     "--tensor-parallel-size 2)")


@pytest.mark.parametrize("fields, message", [
    ({"stack": "torchtitan", "method": "lora"}, "torchtitan pre-trains and fully fine-tunes"),
    ({"task": "infer", "stack": "unsloth"}, "is a training stack"),
    ({"task": "infer", "sharding": "zero3", "num_gpus": 2}, "does not apply to serving"),
])
def test_what_cannot_run_is_refused_when_resolved_not_when_parsed(fields, message):
    s = scenario_from({"model": "llama-3.1-8b", "task": "train", **fields})  # a valid input
    with pytest.raises(GpuplanError, match=message):
        resolve(s)


MAMBA = {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 768, "state_size": 16,
         "num_hidden_layers": 4, "vocab_size": 50280, "expand": 2, "conv_kernel": 4, "tie_word_embeddings": True}


@pytest.mark.parametrize("engine, label", [("vllm", "vLLM"), ("sglang", "SGLang"), ("trtllm", "TensorRT-LLM")])
def test_a_model_with_no_attention_layer_is_refused_by_the_pooled_engines(tmp_path, engine, label):
    """A pure state-space model (review 2's Mamba config) served by vLLM, SGLang or TensorRT-LLM ended in a
    traceback (ZeroDivisionError, an empty min()): their pools are sized in KV-cache tokens, and it has none. One
    sentence now, in estimate, recommend and capacity alike (recommend said "nothing in the catalog fits, even on
    1 x Instinct MI300X" and capacity "no setup meets the SLOs"); transformers and llama.cpp still plan it."""
    import json

    import gpuplan

    path = tmp_path / "config.json"
    path.write_text(json.dumps(MAMBA))
    said = (f"{load_model(str(path)).name} has no attention layer, so no KV cache: {label} sizes its pool in KV-cache "
            "tokens, and gpuplan does not model its per-request state cache; plan it with engine transformers or "
            "llama.cpp")
    scenario = {"model": str(path), "task": "infer", "engine": engine}
    for ask in (lambda: gpuplan.estimate({**scenario, "gpu": "h100-sxm"}),
                lambda: gpuplan.recommend(scenario, max_gpus=1),
                lambda: gpuplan.capacity(str(path), engine=engine, users=2, prompt_tokens=128, output_tokens=32,
                                         gpus=["l4"], top=1)):
        with pytest.raises(GpuplanError) as err:
            ask()
        assert str(err.value) == said
    for other in ("transformers", "llama.cpp"):
        assert gpuplan.estimate({**scenario, "engine": other, "gpu": "h100-sxm"}).memory.fits


def test_recommend_says_a_model_wide_engine_refusal_instead_of_searching_past_it():
    """vLLM does not load GGUF weights on any card: recommend answered "nothing in the catalog fits, even on 1 x
    Instinct MI300X: a smaller model or more GPUs" (no setup evaluated, with --any-quant too: a quant given is
    kept); it now says the engine's sentence, as estimate does."""
    import gpuplan

    scenario = {"model": "qwen3-0.6b", "task": "infer", "engine": "vllm", "quant": "q4_k_m"}
    with pytest.raises(GpuplanError) as err:
        gpuplan.recommend(scenario, max_gpus=1)
    with pytest.raises(GpuplanError) as said:
        gpuplan.estimate({**scenario, "gpu": "h100-sxm"})
    assert str(err.value) == str(said.value) and "cannot load gguf-q4_k_m weights" in str(err.value)
    with pytest.raises(GpuplanError) as anyway:
        gpuplan.recommend(scenario, max_gpus=1, any_quant=True)
    assert str(anyway.value) == str(said.value)
    assert gpuplan.recommend({**scenario, "quant": "awq-int4"}, max_gpus=1).setups


@pytest.mark.parametrize("split, asked", [({"tp": 2}, "tensor parallelism (tp 2 asked)"),
                                          ({"pp": 2}, "pipeline parallelism (pp 2 asked)"),
                                          ({"tp": 2, "pp": 2}, "tensor or pipeline parallelism (tp 2, pp 2 asked)")])
def test_the_hf_stack_splits_no_model(split, asked, capsys):
    """The HF stack (the transformers Trainer with accelerate) runs neither tensor nor pipeline parallelism (its
    profile's ``model_parallel`` is empty, and its launch files set none): estimate refuses tp or pp there in one
    sentence, exit 2, naming the stacks whose profiles split a model. Before, it planned a split the Trainer does not
    run. Megatron-Core keeps its tp."""
    from gpuplan.cli import run
    from gpuplan.stacks import STACKS

    fields = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100-sxm", "num_gpus": 4}
    argv = ["estimate", *[x for k, v in {**fields, **split}.items() for x in (f"--{k.replace('_', '-')}", str(v))]]
    assert run(argv) == 2
    said = " ".join(capsys.readouterr().err.split())
    splitting = [n for n in STACKS if all(k in STACKS[n].model_parallel for k in split)]
    assert splitting == ["torchtitan", "megatron"]
    assert said == (f"error: stack hf (the transformers Trainer with accelerate) runs no {asked}: stacks torchtitan "
                    "and megatron split a model so; or spread it over the GPUs with sharding zero3 or fsdp")
    assert resolve(scenario_from({**fields, **split, "stack": "megatron"})).scenario.tp == split.get("tp", 1)


@pytest.mark.parametrize("stack", ["axolotl", "torchtune", "pytorch"])
def test_stacks_whose_files_split_no_model_refuse_tp(stack, capsys):
    """Axolotl, torchtune and a plain PyTorch loop list no tensor or pipeline split in their profiles, and their
    launch files set none (no ``tensor_parallel_size`` in the Axolotl YAML, no ``tensor_parallel_dim`` in the
    torchtune config): a plan at tp 2 would be run by those files as 2-way data parallel. Refused at the plan in one
    sentence, as for the HF stack (before, torchtune's files were written for a tp 2 plan, and Axolotl's launch
    refused only after estimate had planned it)."""
    from gpuplan.cli import run

    argv = ["estimate", "--model", "llama-3.1-8b", "--task", "train", "--stack", stack, "--tp", "2", "--num-gpus",
            "2", "--gpu", "h100-sxm"]
    assert run(argv) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert said == (f"error: gpuplan's plans and launch files for stack {stack} set no tensor parallelism (tp 2 "
                    "asked): stacks torchtitan and megatron split a model so; or spread it over the GPUs with sharding "
                    "zero3 or fsdp")
