"""The Byte Latent Transformer (transformers 5.24, ``models/blt/modeling_blt.py``): what one forward runs.

``BltModel`` holds four lists of ``BltTransformerLayer``: the patcher's (an entropy model, its parameters frozen in
``BltModel.__init__``), the local encoder's, the global transformer's and the local decoder's, and two lists of
``BltCrossAttention`` (encoder: patches attend to bytes; decoder: bytes attend to patches). gpuplan reads every
``BltTransformerLayer`` as a decoder layer (``decoder_layers``: the lists of the same class) and the cross-attention
under 'other': the parameters are exact. What it cannot measure, the forward failing on the meta device (the
patcher's entropy patching and the packed-sequence check read tensor values; and ``BltModel.forward`` builds
``DynamicCache(config=BltConfig)``, which has no ``num_hidden_layers``): the real tiny model below runs the
patcher's layers with no backward (frozen, integer input), the global layers over the patches (25 here for 24 bytes
at random weights; the released models' patches average about 4 bytes, ``patch_size`` 4), and only the encoder's
and the decoder's layers keep keys and values (an ``EncoderDecoderCache`` passed in: 1 + 3 layers). gpuplan counts
each layer once per byte, with a backward and its own cache, so it says its structure is not exact and why.

Tiny config: patcher 2 layers, encoder 1, global 2 (hidden 128), decoder 3; hidden 64, 4 heads."""

from __future__ import annotations

import pytest

from conftest import require

pytestmark = pytest.mark.sim

SUB = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=4, intermediate_size=128)
TINY = dict(model_type="blt", vocab_size=260, encoder_hash_byte_group_vocab=1000,
            encoder_config=dict(SUB, num_hidden_layers=1, hidden_size_global=128),
            decoder_config=dict(SUB, num_hidden_layers=3, hidden_size_global=128),
            global_config=dict(SUB, hidden_size=128, num_hidden_layers=2, intermediate_size=256),
            patcher_config=dict(SUB, num_hidden_layers=2))


def _model():
    torch = require("torch")
    transformers = require("transformers")
    cfg = transformers.AutoConfig.for_model(**TINY)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(cfg)


def _runs(model, ids):
    """(layer path, positions it ran over, whether a backward goes through it) for every layer the forward runs."""
    torch = require("torch")
    log = []

    def hook(module, args, kwargs, out, name):
        x = args[0] if args else kwargs["hidden_states"]
        log.append((name, x.shape[1], (out[0] if isinstance(out, tuple) else out).requires_grad))

    for name, module in model.named_modules():
        if type(module).__name__ in ("BltTransformerLayer", "BltCrossAttention"):
            module.register_forward_hook(lambda m, a, k, o, name=name: hook(m, a, k, o, name), with_kwargs=True)
    with torch.enable_grad():
        model(input_ids=ids, use_cache=False)
    return log


def test_what_a_forward_runs_against_what_gpuplan_counts(tmp_path, monkeypatch):
    torch = require("torch")
    from transformers import DynamicCache, EncoderDecoderCache

    from gpuplan.model.spec import ModelSpec

    model = _model().train()
    ids = torch.randint(0, 260, (1, 24), generator=torch.Generator().manual_seed(0))
    ran = {name: (positions, backward) for name, positions, backward in _runs(model, ids)}
    stacks = {"patcher": (24, False), "local_encoder": (24, True), "global_transformer": (25, True),
              "local_decoder": (24, True)}
    for stack, n in (("patcher", 2), ("local_encoder", 1), ("global_transformer", 2), ("local_decoder", 3)):
        assert [ran[f"model.{stack}.layers.{k}"] for k in range(n)] == [stacks[stack]] * n
    assert ran["model.local_encoder.cross_attn_layers.0"] == (25 * 2, True)  # patches x cross_attn_k as queries
    cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    with torch.no_grad():
        model.eval()(input_ids=ids, use_cache=True, cache=cache)
    assert (len(cache.self_attention_cache.layers), len(cache.cross_attention_cache.layers)) == (1, 3)
    with pytest.raises(AttributeError, match="num_hidden_layers"):  # transformers 5.24 cannot generate with BLT
        model.generate(ids, max_new_tokens=1, do_sample=False)

    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path))
    spec = ModelSpec.from_config(TINY, name="tiny-blt")
    assert spec.params_total == sum(p.numel() for p in model.parameters())
    assert len(spec.layers) == 2 + 1 + 2 + 3 and all(layer.runs == layer.grad_runs == 1 for layer in spec.layers)
    assert sum(layer.kv_dims > 0 for layer in spec.layers) == 8  # real: 4 layers keep keys and values
    assert not spec.exact and "runs and caches of its layers are not measured" in spec.inexact_reason
