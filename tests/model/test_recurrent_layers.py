"""Layers a forward runs more than once: HRM-Text (transformers 5.24, ``models/hrm_text/modeling_hrm_text.py``).

``HrmTextModel`` holds two stacks of ``num_layers_per_stack`` decoder layers, ``L_module`` and ``H_module``; its
forward runs, for each of ``H_cycles`` high-level cycles, the low-level stack ``L_cycles`` times and the high-level
stack once. Only the last ``L_bp_cycles_padded[h]`` low-level runs of cycle ``h`` run with autograd on (the others
under ``torch.no_grad()``); ``L_bp_cycles`` ``[2]`` is padded to ``H_cycles`` with ones in front: ``[1, 2]``. Each
run caches its own keys and values (``cache slot = (h * (L_cycles + 1) + l) * num_layers_per_stack + layer``:
``num_hidden_layers = num_layers_per_stack * H_cycles * (L_cycles + 1)`` slots).

The tiny config below: 2 layers per stack, ``H_cycles`` 2, ``L_cycles`` 3: each low-level layer runs 6 times, 3 of
them with autograd (1 + 2), each high-level layer 2 times, both with autograd."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import fresh_structures, require

pytestmark = pytest.mark.sim

TINY = dict(model_type="hrm_text", vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, head_dim=16, H_cycles=2, L_cycles=3, L_bp_cycles=[2], max_position_embeddings=64)
# one decoder layer: q, k, v, o and the attention's sigmoid gate (64 x 64 each), the MLP's gate, up (64 x 128) and
# down (128 x 64); RMSNorms without weights
LAYER = 5 * 64 * 64 + 3 * 64 * 128  # 45,056
HEAD = 256 * 64  # lm_head, untied (tie_word_embeddings False); the input embedding is a lookup
Z_L_INIT = 64  # the frozen low-level initial state, counted under 'other' (and as multiplied, as 'other' is)


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    require("transformers")
    from gpuplan.model.spec import ModelSpec

    with fresh_structures(tmp_path_factory.mktemp("structures")):
        yield ModelSpec.from_config(TINY, name="tiny-hrm")


def _model(**kwargs):
    torch = require("torch")
    transformers = require("transformers")
    cfg = transformers.AutoConfig.for_model(**TINY)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    with torch.device(kwargs.pop("device", "cpu")):
        return transformers.AutoModelForCausalLM.from_config(cfg)


def test_both_stacks_are_decoder_layers_each_with_its_runs(spec):
    assert [(layer.runs, layer.grad_runs) for layer in spec.layers] == [(6, 3)] * 2 + [(2, 2)] * 2
    assert [layer.params for layer in spec.layers] == [LAYER] * 4
    assert spec.params_total == sum(p.numel() for p in _model(device="meta").parameters()) == \
        4 * LAYER + 256 * 64 + HEAD + Z_L_INIT
    assert spec.other_params == Z_L_INIT and spec.exact
    assert "the forward runs 2 layers 6 times (3 with autograd), 2 layers 2 times (2 with autograd)" in \
        " ".join(spec.notes)


def test_lora_adapts_both_stacks_as_peft_does(spec, tmp_path):
    """peft's all-linear on the meta model (the estimate's default targets and rank) against the estimate; by hand:
    4 layers x (5 x 16 x (64 + 64) + 2 x 16 x (64 + 128) + 16 x (128 + 64)) = 77,824 (before: 38,912, one stack)."""
    peft = require("peft")
    from gpuplan import estimate

    model = peft.get_peft_model(_model(device="meta"), peft.LoraConfig(r=16, target_modules="all-linear"))
    adapted = sum(p.numel() for p in model.parameters() if p.requires_grad)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    e = estimate({"model": str(path), "task": "train", "method": "lora", "lora_rank": 16, "seq_len": 8}, advise=False)
    assert e.model.params_trainable == adapted == 4 * (5 * 16 * 128 + 3 * 16 * 192) == 77_824


def test_cache_holds_a_slot_per_run(spec):
    """transformers' own cache after a real 5-token prefill: 16 slots of 2 x 4 heads x 16 per token."""
    torch = require("torch")
    from transformers import DynamicCache

    model = _model().eval()
    cache = DynamicCache(config=model.config)
    with torch.no_grad():
        model(input_ids=torch.zeros((1, 5), dtype=torch.long), past_key_values=cache, use_cache=True)
    per_token = sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers) / 5
    assert per_token == 2 * (6 + 2) * 2 * 4 * 16 == 2048
    assert spec.kv_bytes_per_token(dtype_bytes=2) == {"full": 2 * per_token}


def test_flops_count_every_run_and_the_backward_of_those_with_autograd(spec):
    """torch's FlopCounterMode on the real tiny model (8 tokens, eager attention): the forward's matmuls and the
    backward's. By hand: 16 layer runs forward (2 x 6 + 2 x 2), 10 with a backward (2 x 3 + 2 x 2), the head each
    time; attention 4 x 4 heads x 16 x 8 keys per run forward, twice that per backward run. gpuplan's counts
    exceed the counter's by the 2 x 64 (forward) and 6 x 64 FLOPs of z_L_init, which 'other' counts as multiplied."""
    torch = require("torch")
    from torch.utils.flop_counter import FlopCounterMode

    from gpuplan.scenario import scenario_from
    from gpuplan.speed.flops import attention_forward_flops, run_params, training_flops_per_token

    assert run_params(spec) == 16 * LAYER + HEAD + Z_L_INIT == 737_344
    assert run_params(spec, grad=True) == 10 * LAYER + HEAD + Z_L_INIT == 467_008
    assert attention_forward_flops(spec, 8) == 16 * 4 * 4 * 16 * 8
    model, ids = _model().train(), torch.zeros((1, 8), dtype=torch.long)
    with FlopCounterMode(display=False) as forward:
        model(input_ids=ids, use_cache=False)
    with FlopCounterMode(display=False) as step:
        model(input_ids=ids, use_cache=False).logits.float().sum().backward()
    assert forward.get_total_flops() / 8 == 2 * run_params(spec) + attention_forward_flops(spec, 8) - 2 * Z_L_INIT
    s = scenario_from({"model": "llama-3.2-1b", "task": "train", "method": "full", "seq_len": 8})
    assert step.get_total_flops() / 8 == training_flops_per_token(s, spec, recompute=False) - 6 * Z_L_INIT


def test_activations_are_kept_once_per_run_with_autograd(spec):
    """The estimate keeps a layer's saved tensors once per run with autograd on: 2 x 3 + 2 x 2 = 10 sets where
    reading each layer as run once kept 4; the runs under no_grad keep none."""
    from gpuplan.memory.training import training_memory
    from gpuplan.scenario import scenario_from
    from gpuplan.tensors import activations as act

    s = scenario_from({"model": "llama-3.2-1b", "task": "train", "method": "lora", "seq_len": 512,
                       "micro_batch_size": 4})
    once = dataclasses.replace(spec, layers=tuple(dataclasses.replace(layer, runs=1, grad_runs=1)
                                                  for layer in spec.layers))
    from gpuplan.stacks import stack_for

    stack = stack_for(s)
    per_set = stack.saved(spec.layers[0], spec, stack.setup(s, spec, False))
    assert per_set == act.saved_bytes(spec.layers[0], spec, stack.setup(s, spec, False)) > 0
    assert training_memory(s, spec).activations - training_memory(s, once).activations == pytest.approx(6 * per_set)


@pytest.mark.parametrize("mode", ["per_loop", "last_loop"])
def test_a_looped_model_caches_per_loop_as_its_mode_says(mode, tmp_path, monkeypatch):
    """Dory (transformers 5.24, ``modeling_dory.py`` ``DoryModel.forward``, default config): 8 input layers, 20
    recurrent layers run ``n_recurrent_loops`` = 2 times, 8 output layers. ``per_loop``: loop 1 writes to copies of
    the recurrent cache layers appended after the model's 36 (36 + 20 = 56 cache layers, whatever their order);
    ``last_loop``: the first loop reads the cache and only the last writes (36)."""
    transformers = require("transformers")
    from gpuplan.model.spec import ModelSpec

    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path))
    config = transformers.AutoConfig.for_model("dory", recurrent_kv_cache_mode=mode).to_dict()
    m = ModelSpec.from_config(config | {"model_type": "dory"}, name="dory")
    assert [layer.runs for layer in m.layers] == [1] * 8 + [2] * 20 + [1] * 8
    assert [layer.grad_runs for layer in m.layers] == [layer.runs for layer in m.layers] and m.exact
    one = m.layers[0].kv_dims  # one cache layer: 2 x key-value heads x head_dim
    assert one == 2 * config["num_key_value_heads"] * config["head_dim"]
    assert [layer.kv_dims for layer in m.layers] == [one] * 8 + [one * (2 if mode == "per_loop" else 1)] * 20 + \
        [one] * 8
    assert sum(layer.kv_dims for layer in m.layers) == (56 if mode == "per_loop" else 36) * one


def test_the_backward_is_timed_over_the_runs_with_autograd(spec):
    """transformers' HRM-Text is not a one-step gradient: ``HrmTextModel.forward`` runs the last
    ``L_bp_cycles_padded[h]`` low-level runs of cycle ``h`` and every high-level run with autograd on (z_H is not
    detached between cycles). Counted on the real tiny model: a full backward hook on each decoder layer fires
    3, 3, 2, 2 times, the spec's ``grad_runs``. The training step times the linears' forward over every run (16
    layer runs) and their backward over those 10 (before: 16, an upper bound): full fine-tuning's GEMMs are
    ``F + 2 x (10/16) F + 3 x head``, the four layers being alike."""
    torch = require("torch")
    from gpuplan.hardware import load_gpu
    from gpuplan.scenario import scenario_from
    from gpuplan.speed.training import Stage, _micro_work
    from gpuplan.speed.work import linears_s, lm_head_s
    from gpuplan.stacks import stack_for

    model = _model().train()
    fired: dict[int, int] = {}
    blocks = [*model.model.L_module.layers, *model.model.H_module.layers]
    for k, block in enumerate(blocks):
        block.register_full_backward_hook(lambda *_, k=k: fired.__setitem__(k, fired.get(k, 0) + 1))
    model(input_ids=torch.zeros((1, 8), dtype=torch.long), use_cache=False).logits.float().sum().backward()
    assert [fired[k] for k in range(4)] == [layer.grad_runs for layer in spec.layers] == [3, 3, 2, 2]
    s = scenario_from({"model": "llama-3.2-1b", "task": "train", "method": "full", "seq_len": 8,
                       "micro_batch_size": 1, "grad_checkpointing": "none"})
    gpu = load_gpu("H100")
    forward = linears_s(spec, gpu, "bf16", 8)
    assert linears_s(spec, gpu, "bf16", 8, grad=True) == pytest.approx(10 / 16 * forward)
    work = _micro_work(s, spec, gpu, "bf16", 8, stack_for(s).kernels(s), [], Stage(1.0, 1.0))  # no pipeline
    assert work.gemm == pytest.approx(forward + 2 * 10 / 16 * forward + 3 * lm_head_s(spec, gpu, "bf16", 8))
