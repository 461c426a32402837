"""A cache class of a model's own: xLSTM (transformers 5.24, ``models/xlstm/modeling_xlstm.py``).

``xLSTMModel.forward`` takes ``cache: xLSTMCache | None`` and reads ``cache.rnn_state[layer_idx]``; ``xLSTMCache``
allocates, in its ``__init__``, one ``(C, n, m)`` per layer: the matrix memory ``heads x qk_head_dim x
v_head_dim``, the normalizer ``heads x qk_head_dim`` and the max state ``heads x 1``, whatever the context. gpuplan
read the model's layers as full attention before (a ``DynamicCache`` passed to its forward failed, and the k and v
projections were taken for a KV cache: 8,192 elements per token and layer, 64 GiB at 131,072 tokens for the
default 7B config); they are now its mLSTM layers with a fixed state, measured off the real cache.

The tiny config: 2 blocks of hidden 128, 2 heads; qk_dim = 64 (128 x 0.5), v_dim = 128: per head 32 x 64."""

from __future__ import annotations

import pytest

from conftest import fresh_structures, require

pytestmark = pytest.mark.sim

TINY = dict(model_type="xlstm", vocab_size=256, hidden_size=128, num_hidden_layers=2, num_heads=2)
STATE = 2 * (32 * 64 + 32 + 1)  # C, n and m of one layer: 4,162 elements


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    require("transformers")
    from gpuplan.model.spec import ModelSpec

    with fresh_structures(tmp_path_factory.mktemp("structures")):
        yield ModelSpec.from_config(TINY, name="tiny-xlstm")


def _state_elements(cache) -> list[int]:
    return [sum(t.numel() for t in cache.rnn_state[k]) for k in sorted(cache.rnn_state)]


def test_the_state_is_the_real_caches_and_does_not_grow(spec):
    """transformers' own xLSTMCache after a real 5-token prefill and after 3 decode steps: the same 4,162
    elements per layer; gpuplan: linear-attention layers with that fixed state and no keys or values per token."""
    torch = require("torch")
    transformers = require("transformers")

    cfg = transformers.AutoConfig.for_model(**TINY)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    with torch.no_grad():
        out = model(input_ids=torch.zeros((1, 5), dtype=torch.long), use_cache=True)
        cache = out.cache
        assert type(cache).__name__ == "xLSTMCache"
        prefill = _state_elements(cache)
        for _ in range(3):
            model(input_ids=torch.zeros((1, 1), dtype=torch.long), use_cache=True, cache=cache)
    assert prefill == _state_elements(cache) == [STATE] * 2
    assert [(layer.attention, layer.kv_dims, layer.state_elements) for layer in spec.layers] == \
        [("linear", 0, STATE)] * 2
    assert spec.exact and spec.kv_bytes_per_token(dtype_bytes=2) == {}
    assert spec.state_bytes(dtype_bytes=2) == 2 * 2 * STATE


def test_inference_memory_keeps_the_state_and_no_score_matrix(spec, tmp_path):
    """The estimate's cache is the fixed state at 1,024 and at 8,192 tokens (2 x 2 x 4,162 bytes per sequence);
    the prefill's working set grows with the prompt, not with its square: xLSTM runs eager attention in
    transformers (no SDPA support) but has no attention layer, so no s x s scores (before: 8 bytes per score,
    0.5 GiB at 8,192 tokens of this tiny model; the note said they were materialized)."""
    import json

    from gpuplan import estimate

    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    runs = {n: estimate({"model": str(path), "task": "infer", "engine": "transformers", "prompt_tokens": n,
                         "output_tokens": 4}, advise=False) for n in (1024, 8192)}
    for e in runs.values():
        assert e.memory.kv_cache_gib * 2**30 == pytest.approx(2 * 2 * STATE)
        assert not any("eager attention" in note for note in e.assumptions)
    logits = 256 * (2 + 4) / 2**30  # the last position's, in bf16 and fp32 (both lengths)
    grown = (runs[8192].memory.activations_gib - logits) / (runs[1024].memory.activations_gib - logits)
    assert grown == pytest.approx(8.0, rel=1e-6)


def test_simulate_runs_generate_with_the_models_own_cache(tmp_path):
    """The fake-tensor ``generate`` prefills without a ``DynamicCache`` (the forward makes its xLSTMCache) and holds
    that state as the cache: 2 layers x 4,162 elements in bf16, each tensor in 512-byte allocator blocks (C 8,192
    bytes, n 128 and m 4 bytes a block each) and the cache's int64 position counter a block; before it stopped
    ('CountingCache' object has no attribute 'rnn_state')."""
    import json

    require("transformers")
    from gpuplan.sim.simulate import simulate

    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    sim = simulate({"model": str(path), "task": "infer", "prompt_tokens": 64, "output_tokens": 8})
    assert sim.cache_gib * 2**30 == 2 * (2 * 32 * 64 * 2 + 512 + 512) + 512
