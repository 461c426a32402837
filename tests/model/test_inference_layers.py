"""Caches beyond keys and values, against the fake-tensor simulation at 32k tokens: a hybrid model (Qwen3.5's Gated
DeltaNet layers keep a fixed state, 1 layer in 4 a KV cache), a chunked-attention model (Llama 4: 3 layers in 4
cache at most 8,192 tokens) and one whose every layer holds attention and a Mamba-2 mixer side by side (Falcon-H1).

The 5 % is the issue's tolerance for inference memory at 32k tokens; the cache left after the last token is compared
exactly (1e-3: block rounding). Qwen3.5 and Llama 4 run one period of their layer pattern at full width (a cut of the
real config: each layer checked against the full model's by the simulator); bench/hybrid_32k.py runs them whole.
The Gated DeltaNet reference-kernel constant was fitted on Qwen3-Next (overheads.py), not on Qwen3.5."""

from __future__ import annotations

import json

import pytest

from conftest import require
from sampling import part_of

pytestmark = [pytest.mark.sim, pytest.mark.slow]
TOKENS = 32_768


def cut(model: str, layers: int, folder) -> str:
    from gpuplan.model.catalog import bundled, bundled_repo
    from gpuplan.sim.depth import cut_config

    config = json.loads(bundled()[bundled_repo(model)].read_text())
    path = folder / f"{model}-{layers}.json"
    path.write_text(json.dumps(cut_config(config, layers)))
    return str(path)


def compare(model: str, layers: int | None, folder):
    require("transformers")
    from gpuplan import estimate
    from gpuplan.model.catalog import load_model
    from gpuplan.scenario import Scenario
    from gpuplan.sim.simulate import simulate
    from gpuplan.tensors.kv import kv_bytes_per_sequence

    path = cut(model, layers, folder) if layers else model
    scenario = {"model": path, "task": "infer", "batch_size": 1, "prompt_tokens": TOKENS - 8, "output_tokens": 8}
    sim = simulate(scenario, layers=layers)
    mem = estimate(scenario, advise=False).memory
    cache = kv_bytes_per_sequence(Scenario.model_validate(scenario), load_model(path), TOKENS) / 2**30
    return sim, mem, cache


# Qwen3.5's Gated DeltaNet runs transformers' reference chunk loop at 32k tokens (about a minute on fake tensors):
# every other day or seed (tests/sampling.py), Llama 4 Scout every run
@pytest.mark.parametrize("model, layers", part_of([("qwen3.5-27b", 4), ("llama-4-scout", 4)], 2,
                                                  always=[("llama-4-scout", 4)]))
def test_inference_at_32k_within_5_percent_of_the_simulation(tmp_path, model, layers):
    sim, mem, cache = compare(model, layers, tmp_path)
    allocated = mem.allocated_peak_gib - mem.other.get("cuBLAS workspace", 0.0)  # CUDA only: not simulated
    assert allocated == pytest.approx(sim.allocated_peak_gib, rel=0.05)
    assert mem.phases_gib["decode"] - mem.other.get("cuBLAS workspace", 0.0) == pytest.approx(
        sim.phases_gib["decode"], rel=0.02)
    assert cache == pytest.approx(sim.cache_gib, rel=1e-3)


def test_hybrid_attention_and_mamba_cache_at_32k(tmp_path):
    """Falcon-H1-0.5B whole (36 layers, extrapolated from 2 and 3): the cache (KV of every layer and the Mamba-2
    states) and the decode phase. Its prefill is not compared: transformers' PyTorch reference scan of Mamba-2 (no
    mamba_ssm on the CPU) holds chunk x chunk intermediates that the CUDA kernels do not."""
    sim, mem, cache = compare("falcon-h1-0.5b", None, tmp_path)
    assert cache == pytest.approx(sim.cache_gib, rel=1e-3)
    assert mem.phases_gib["decode"] - mem.other.get("cuBLAS workspace", 0.0) == pytest.approx(
        sim.phases_gib["decode"], rel=0.02)


def test_longest_context_follows_the_layer_kinds(tmp_path):
    """vLLM's pool on one H200 holds 4 x more tokens of Llama 4 Scout than of the same weights with every layer
    global: only its 12 NoPE layers in 48 grow with the context; the chunked ones stop at 8,192 tokens."""
    from gpuplan import estimate
    from gpuplan.model.catalog import bundled, bundled_repo

    config = json.loads(bundled()[bundled_repo("llama-4-scout")].read_text())
    config["text_config"] = {**config["text_config"], "layer_types": ["full_attention"] * 48}
    dense = tmp_path / "scout-all-global.json"
    dense.write_text(json.dumps(config))
    fields = {"task": "infer", "engine": "vllm", "gpu": "h200", "quant": "fp8", "prompt_tokens": 1024,
              "output_tokens": 16}
    fields["max_model_len"] = 10_000_000  # the field's bound; Scout's own context is 10,485,760
    chunked = estimate({"model": "llama-4-scout", **fields}, advise=False).memory
    every = estimate({"model": str(dense), **fields}, advise=False).memory
    assert chunked.weights_gib == pytest.approx(every.weights_gib)
    # at the model's context, set (else vLLM's default is cut to what the pool holds): vLLM's logged "GPU KV cache
    # size"; requests of 1,040 tokens fit alike in both
    assert chunked.engine["kv_cache_tokens"] == pytest.approx(4 * every.engine["kv_cache_tokens"], rel=0.01)
    assert chunked.max_context_tokens == pytest.approx(every.max_context_tokens, rel=0.01)
