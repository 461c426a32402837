"""LoRA ``all-linear`` on a vision-language model adapts the vision tower's linears too, as peft does (the s18
walk's finding 7: Gemma-3-12B counted 65,470,464 trainable parameters, the decoder's; peft counts 74,165,760)."""

from __future__ import annotations

import json

import pytest

from conftest import require
from gpuplan import estimate
from gpuplan.model.catalog import bundled, bundled_repo

JOB = {"model": "gemma-3-12b", "task": "train", "method": "lora", "lora_rank": 16, "seq_len": 512}


def test_gemma_3_lora_counts_the_siglip_tower_by_hand():
    """By hand, rank 16: the 48 text layers give 16 x (q 3840+4096, k 3840+2048, v 3840+2048, o 4096+3840, gate and
    up 2 x (3840+15360), down 15360+3840) = 1,363,968 a layer, 65,470,464 in all; SigLIP's 27 layers give 16 x
    (q, k, v, out_proj 4 x (1152+1152), fc1 1152+4304, fc2 4304+1152) = 322,048 a layer, 8,695,296 in all;
    74,165,760 together over 10 module kinds."""
    e = estimate(JOB, advise=False)
    assert e.model.params_trainable == 48 * 1_363_968 + 27 * 322_048 == 74_165_760
    assert any("LoRA rank 16 on 10 module kinds: 74,165,760 trainable" in a for a in e.assumptions)


def test_gemma_3_lora_matches_peft_on_the_meta_device():
    """peft's own count: ``get_peft_model(LoraConfig(r=16, target_modules="all-linear"))`` on the
    ``AutoModelForCausalLM`` of the bundled config (``Gemma3ForConditionalGeneration``), built on the meta device."""
    peft, torch = require("peft"), require("torch")
    transformers = require("transformers")

    config = transformers.AutoConfig.for_model(**json.loads(bundled()[bundled_repo("gemma-3-12b")].read_text()))
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    adapted = peft.get_peft_model(model, peft.LoraConfig(r=16, target_modules="all-linear"))
    counted = sum(p.numel() for p in adapted.parameters() if p.requires_grad)
    assert counted == estimate(JOB, advise=False).model.params_trainable == 74_165_760


@pytest.mark.parametrize("targets", [["q_proj", "v_proj"], ["fc1"]])
def test_named_targets_match_in_the_tower_as_peft_matches_them(targets):
    """peft matches a named target by the module name's end, in the tower too: q_proj and v_proj are 16 x (3840 +
    4096 + 3840 + 2048) x 48 text layers + 16 x 2 x 2304 x 27 SigLIP layers; fc1 is SigLIP's alone."""
    e = estimate({**JOB, "lora_targets": targets}, advise=False)
    want = {"q_proj": 16 * ((3840 + 4096 + 3840 + 2048) * 48 + 2 * 2304 * 27), "fc1": 16 * (1152 + 4304) * 27}
    assert e.model.params_trainable == want[targets[0]]


# session 19: the towers of traced families (model.meta_layers reads each tower nn.Linear off the real class); rank 16.
# Qwen3-VL-8B's vision blocks 27 x 16 x (qkv 1152+3456, proj 1152+1152, linear_fc1 1152+4304, linear_fc2 4304+1152),
# its merger and three deepstack mergers 4 x 16 x (4608+4608 + 4608+4096): 8,846,848 beside the decoder's 43,646,976.
# Mistral-Small-3.1: Pixtral's 24 layers 24 x 16 x (4 x 2048 + 3 x 5120) and the projector's linear_1, linear_2 and
# patch merger 16 x (1024+5120 + 5120+5120 + 4096+1024): 9,388,032 beside 92,405,760. Llama-4-Scout: 34 layers
# 34 x 16 x (4 x 2816 + 2 x 7040), the patch embedding (588+1408), vision adapter (5632+4096, 4096+4096) and projector
# (4096+5120): 14,253,248 beside 55,836,672 (peft's count wraps Llama 4's routers too, 48 x 16 x (5120+16) =
# 3,944,448 more: left out, as model.layers.Linear.adaptable says).
TOWERS = {"qwen3-vl-8b": (43_646_976, 8_846_848), "mistral-small-3.1-24b": (92_405_760, 9_388_032),
          "llama-4-scout": (55_836_672, 14_253_248)}


@pytest.mark.parametrize("model", TOWERS)
def test_traced_towers_are_counted_by_hand(model):
    decoder, tower = TOWERS[model]
    by_hand = {"qwen3-vl-8b": 27 * 16 * (4608 + 2304 + 5456 + 5456) + 4 * 16 * (9216 + 8704),
               "mistral-small-3.1-24b": 24 * 16 * (4 * 2048 + 3 * 5120) + 16 * (6144 + 10240 + 5120),
               "llama-4-scout": 34 * 16 * (4 * 2816 + 2 * 7040) + 16 * (1996 + 9728 + 8192 + 9216)}
    assert by_hand[model] == tower
    e = estimate({**JOB, "model": model}, advise=False)
    assert e.model.params_trainable == decoder + tower


@pytest.mark.parametrize("model", ["qwen3-vl-8b", "mistral-small-3.1-24b"])
def test_traced_towers_match_peft_on_the_meta_device(model):
    """peft's count on the real class of the bundled config (``AutoModelForImageTextToText`` on the meta device)."""
    peft, torch = require("peft"), require("torch")
    transformers = require("transformers")

    config = transformers.AutoConfig.for_model(**json.loads(bundled()[bundled_repo(model)].read_text()))
    with torch.device("meta"):
        built = transformers.AutoModelForImageTextToText.from_config(config)
    adapted = peft.get_peft_model(built, peft.LoraConfig(r=16, target_modules="all-linear"))
    counted = sum(p.numel() for p in adapted.parameters() if p.requires_grad)
    assert counted == estimate({**JOB, "model": model}, advise=False).model.params_trainable == sum(TOWERS[model])
