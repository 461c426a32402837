"""A checkpoint saves what the optimizer holds: its states are the memory model's
(:func:`gpuplan.tensors.state.optimizer_state_bytes`), not a second table of bytes per optimizer (session 18's
architecture walk, "Found and left": 8-bit AdamW was 2 B, Adafactor unfactored, every LoRA adapter 4 + 8 B).

The model is ``model_size 1B``, TinyLlama-1.1B's shape: 22 layers of hidden 2,048, 4 KV heads of 64 (k and v
2,048 -> 256), MLP 5,632, vocabulary 32,000, untied embeddings; 1,100,048,384 parameters (tests/market/test_job.py).
"""

from __future__ import annotations

import pytest

from gpuplan import estimate

P = 1_100_048_384
LAYERS, H, KV, MLP, VOCAB = 22, 2048, 256, 5632, 32_000
# LoRA rank 16 on every linear: r x (in + out) summed over q, k, v, o, gate, up, down
IN_PLUS_OUT = (H + H) + 2 * (H + KV) + (H + H) + 3 * (H + MLP)  # 35,840 a layer
LORA = LAYERS * 16 * IN_PLUS_OUT  # 12,615,680


def checkpoint(**fields) -> float:
    return estimate({"model_size": "1B", "task": "train", "train_tokens": 1e9, **fields}, advise=False).checkpoint_bytes


def test_8bit_adamw_saves_its_bytes_and_their_absmax_blocks():
    """bitsandbytes' 8-bit AdamW state dict holds, per parameter, ``state1`` and ``state2`` in uint8 and an fp32
    ``absmax1`` and ``absmax2`` per 256-value block (``Optimizer8bit.init_state``, blockwise): 2 + 2 x 4/256 =
    2.03125 B, beside the Trainer's fp32 weights under bf16-mixed: 4 + 2.03125 = 6.03125 B x 1,100,048,384 =
    6,634,666,816 B (the second table said 6 B: 6,600,290,304)."""
    assert P * (4 + 2 + 2 * 4 / 256) == 6_634_666_816
    assert checkpoint(stack="hf", optimizer="adamw-8bit") == 6_634_666_816
    assert checkpoint(stack="hf", optimizer="paged-adamw-8bit") == 6_634_666_816


def test_adafactor_saves_a_row_and_a_column_per_matrix():
    """transformers' Adafactor (beta1 None) keeps ``exp_avg_sq_row`` and ``exp_avg_sq_col`` for every matrix and
    ``exp_avg_sq`` whole for vectors, in fp32. Rows + columns: the decoder's linears 22 x 35,840 = 788,480, the norms
    whole 22 x 2 x 2,048 + 2,048 = 92,160, the embedding and the head (32,000 + 2,048) x 2 = 68,096: 948,736 fp32
    elements. With the fp32 weights: 4 x 1,100,048,384 + 4 x 948,736 = 4,403,988,480 B (the second table said 8 B a
    parameter, 8,800,387,072 B)."""
    factors = LAYERS * IN_PLUS_OUT + (LAYERS * 2 * H + H) + 2 * (VOCAB + H)
    assert factors == 948_736
    assert checkpoint(stack="hf", optimizer="adafactor") == 4 * P + 4 * factors == 4_403_988_480


@pytest.mark.parametrize("stack, per_param", [
    ("hf", 4 + 2 * 4),  # peft's fp32 adapters, fp32 AdamW moments
    ("megatron", 2 + 4 + 2 * 4),  # NeMo PEFT: bf16 adapters, the distributed optimizer's fp32 main params + moments
])
def test_a_lora_checkpoint_saves_its_adapters_as_the_memory_holds_them(stack, per_param):
    """Rank 16 on all seven linears of 22 layers: 16 x 35,840 x 22 = 12,615,680 adapter parameters. The second
    table said 4 + 8 = 12 B for every stack."""
    assert LORA == 12_615_680
    assert checkpoint(stack=stack, method="lora") == LORA * per_param


def test_adafactor_states_are_fp32_under_bf16_true():
    """transformers' Adafactor upcasts a bf16 gradient (``grad = grad.float()``) and makes every state from it
    (``torch.zeros(grad_shape[:-1]).to(grad)``): fp32 under ``bf16-true`` too (session 19; the memory model held
    them in the weights' bf16, 2 B). The 948,736 factor elements above, 4 B each, beside the bf16 weights:
    2 x 1,100,048,384 + 4 x 948,736 = 2,203,891,712 B (2,201,994,240 at 2 B)."""
    factors = 948_736
    assert checkpoint(stack="hf", optimizer="adafactor", precision="bf16-true") == 2 * P + 4 * factors \
        == 2_203_891_712


def test_adafactor_factors_each_lora_matrix():
    """A LoRA pair is two matrices, ``A (16 x in)`` and ``B (out x 16)``, each factored (``_get_options``: two
    dimensions): rows + columns ``in + out + 2 x 16`` a linear, 35,840 + 7 x 32 = 36,064 a layer, 793,408 fp32
    elements for 22 layers (the memory model took 5 % of the adapters, 630,784). peft's fp32 adapters beside them:
    4 x 12,615,680 + 4 x 793,408 = 53,636,352 B."""
    elements = LAYERS * (IN_PLUS_OUT + 7 * 2 * 16)
    assert elements == LORA // 16 + 2 * 16 * 7 * LAYERS == 793_408
    assert checkpoint(stack="hf", optimizer="adafactor", method="lora") == 4 * LORA + 4 * elements == 53_636_352


def test_torchtune_saves_the_merged_model_beside_its_adapters():
    """torchtune's LoRA recipes (save_adapter_weights_only False) write at every save the merged model in bf16
    (FullModelHFCheckpointer.save_checkpoint: the model's safetensors, get_merged_lora_ckpt), the adapters twice
    (adapter_model.pt, adapter_model.safetensors) and the optimizer (recipe_state.pt): 2 x 1,100,048,384 +
    12,615,680 x (2 + 2 + 2 x 2) = 2,301,022,208 B (75,694,080 before session 19: adapters and moments only). bf16
    adapters (the model's dtype) and torch AdamW's moments zeros_like them."""
    assert checkpoint(stack="torchtune", method="lora") == 2 * P + LORA * (2 + 2 + 2 * 2) == 2_301_022_208
