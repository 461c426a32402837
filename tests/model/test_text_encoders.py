"""Text encoders as models (issue 34, item 4): BERT, RoBERTa, DeBERTa-v3 and ModernBERT fine-tuned as classifiers,
counted by their real classes and profiled on fake tensors like ViT; the text encoders not modelled stay refused in
one sentence."""

from __future__ import annotations

import json

import pytest

import gpuplan
from conftest import require
from gpuplan.errors import GpuplanError
from gpuplan.model import encoders, kinds
from gpuplan.model.catalog import load_model
from gpuplan.model.kinds import NotADecoder

# the bundled counts (transformers 5.24's ForSequenceClassification, 2 labels, on the meta device) and the totals
# their authors publish: BERT-base 110M (Devlin et al. 2018, section 3; NVIDIA DeepLearningExamples
# PyTorch/LanguageModeling/BERT/README.md, 'Default configuration': 110M), RoBERTa-base 125M (the fairseq RoBERTa
# README's table), DeBERTa-v3-base '86M backbone parameters' and '98M parameters in the Embedding layer' (its model
# card), ModernBERT-base 149M (its model card)
COUNTS = {
    "google-bert/bert-base-uncased": (109_483_778, 110e6),
    "FacebookAI/roberta-base": (124_647_170, 125e6),
    "microsoft/deberta-v3-base": (184_423_682, 86e6 + 98e6),
    "answerdotai/ModernBERT-base": (149_606_402, 149e6),
}


@pytest.mark.parametrize("repo", COUNTS)
def test_bundled_text_encoders_are_counted_as_their_authors_publish(repo):
    spec = encoders.bundled_model(repo)
    exact, published = COUNTS[repo]
    assert spec.kind == "encoder" and spec.main.cls.endswith("ForSequenceClassification")
    assert spec.params_total == exact
    assert abs(exact - published) / published < 0.01


@pytest.mark.sim
@pytest.mark.parametrize("repo", COUNTS)
def test_bundled_text_encoder_counts_are_the_real_classes_on_the_meta_device(repo):
    require("transformers")
    assert encoders.bundled_model(repo, count=True).params_total == COUNTS[repo][0]


def test_bert_large_s_parameter_tensors_are_its_hand_count():
    """What a for-loop optimizer steps over one by one: BERT-large's BertForSequenceClassification holds 24 layers x
    16 tensors (query, key, value, attention output, intermediate and output linears, weight and bias each: 12; two
    LayerNorms, weight and bias: 4) = 384, the word, position and token-type embeddings (3) and their LayerNorm (2),
    the pooler (2) and the classifier (2): 393 (bundled)."""
    assert encoders.bundled_model("google-bert/bert-large-uncased").main.tensors == 24 * 16 + 3 + 2 + 2 + 2 == 393


@pytest.mark.sim
@pytest.mark.parametrize("repo", ["google-bert/bert-large-uncased", *COUNTS])
def test_bundled_tensor_counts_are_the_real_classes_on_the_meta_device(repo):
    require("transformers")
    from gpuplan.model.diffusers import count_tensors

    main = encoders.bundled_model(repo).main
    assert main.tensors == count_tensors("transformers", main.cls, main.config) > 0


# the attention projections LoRA adapts, as the real modules name them (peft's
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING: bert and roberta query/value, deberta-v2 query_proj/value_proj;
# ModernBERT's one fused Wqkv per layer)
LEAVES = {"google-bert/bert-base-uncased": {"query", "value"}, "FacebookAI/roberta-base": {"query", "value"},
          "microsoft/deberta-v3-base": {"query_proj", "value_proj"}, "answerdotai/ModernBERT-base": {"Wqkv"}}


@pytest.mark.sim
@pytest.mark.parametrize("repo", COUNTS)
def test_lora_adapts_the_attention_projections_the_real_modules_name(repo):
    require("transformers")
    import torch

    from gpuplan.model.diffusers import build

    spec = encoders.bundled_model(repo)
    module = build("transformers", spec.main.cls, spec.main.config)
    names = [n for n, m in module.named_modules() if isinstance(m, torch.nn.Linear)]
    attention = {n.rsplit(".", 1)[-1] for n in names if encoders.linear_role(n) == "attention"}
    assert attention == LEAVES[repo]
    layers = int(spec.main.config["num_hidden_layers"])
    assert sum(encoders.linear_role(n) == "attention" for n in names) == layers * len(LEAVES[repo])


@pytest.mark.parametrize("named, built", [
    (["BertForMaskedLM"], "BertForSequenceClassification"),  # a pretraining head: fine-tuned as a classifier
    (None, "BertForSequenceClassification"),
    (["BertForTokenClassification"], "BertForTokenClassification"),  # NER keeps its head
    (["BertForQuestionAnswering"], "BertForQuestionAnswering"),
    (["BertModel"], "BertModel"),  # an embedding model
    (["BertLMHeadModel"], "BertForSequenceClassification"),
])
def test_a_text_encoder_runs_the_head_fine_tuning_builds(named, built):
    config = {"model_type": "bert", "hidden_size": 768}
    if named:
        config["architectures"] = named
    assert encoders.class_of(config) == built


def test_positions_are_the_tokens_each_family_takes():
    """RoBERTa's 514 positions hold 512 tokens (its position ids start after pad_token_id 1); ModernBERT 8,192."""
    assert kinds.named("roberta-base").defaults == {"encoder_tokens_max": 512}
    assert kinds.named("bert-base-uncased").defaults == {"encoder_tokens_max": 512}
    assert kinds.named("modernbert-base").defaults == {"encoder_tokens_max": 8192}
    assert kinds.named("deberta-v3-base").defaults == {"encoder_tokens_max": 512}


def plan(**fields):
    return gpuplan.estimate({"gpu": "a100-80gb", **fields}, advise=False)


@pytest.mark.parametrize("model", ["bert-base-uncased", "roberta-base", "deberta-v3-base", "modernbert-base"])
def test_text_encoders_are_planned_for_fine_tuning_and_inference(model):
    full = plan(model=model, task="train", method="full", seq_len=256, micro_batch_size=32)
    lora = plan(model=model, task="train", method="lora", seq_len=256, micro_batch_size=32)
    infer = plan(model=model, task="infer", prompt_tokens=256, batch_size=32)
    for p in (full, lora, infer):
        assert p.work.sizes == {"encoder_tokens": [256]}
        assert p.memory.device_peak_gib > 0 and p.work.samples_per_s > 0
    # full fine-tuning holds fp32 master weights, gradients and two Adam moments that LoRA does not
    assert full.memory.device_peak_gib > lora.memory.device_peak_gib + 1.0
    assert infer.work.samples_per_s > full.work.samples_per_s
    if model == "bert-base-uncased":  # rank 16 on 12 layers' query and value: 12 x 2 x 16 x (768 + 768)
        assert lora.model.params_trainable == 589_824
    # a step's work is about 6 x tokens x the parameters that multiply (the word embeddings only look up: 98M of
    # DeBERTa-v3's 184M), plus the attention's tokens² products (DeBERTa's relative-position ones too)
    spec = kinds.named(model)
    config = spec.main.config
    multiplying = spec.params_total - config["vocab_size"] * config["hidden_size"]
    assert 0.9 < full.work.flops_per_step / (6 * multiplying * 32 * 256) < 1.35


def test_bert_base_flops_are_its_hand_count():
    """One BERT-base forward of 32 x 128 tokens: 12 layers of 4 projections (768 x 768), two FFN GEMMs (768 x 3,072),
    and attention's two 128 x 128 x 64 products per head, 2 FLOPs per multiply-add; the pooler and the classifier on
    the first token (768 x 768 and 768 x 2). Written out: per token and layer 2 x (4 x 768² + 2 x 768 x 3,072) =
    14,155,776, plus attention 2 x 2 x 128 x 768 = 393,216, so 12 x 14,548,992 x 4,096 tokens = 715,112,054,784; plus
    32 x 2 x (768² + 768 x 2) = 37,847,040: 715,149,901,824."""
    p = plan(model="bert-base-uncased", task="infer", prompt_tokens=128, batch_size=32)
    assert p.work.flops_per_step == 715_149_901_824


def test_a_length_past_the_positions_is_refused_and_a_default_held_to_them():
    p = plan(model="bert-base-uncased", task="train", method="full")
    assert p.work.sizes == {"encoder_tokens": [512]}
    assert any("seq_len 512: the default 2,048" in d for d in p.defaults)
    with pytest.raises(GpuplanError, match="learns 512 positions: set seq_len to at most 512 tokens"):
        plan(model="bert-base-uncased", task="train", method="full", seq_len=1024)
    with pytest.raises(GpuplanError, match="learns 512 positions: set prompt_tokens to at most 512"):
        plan(model="roberta-base", task="infer", prompt_tokens=600)
    long = plan(model="modernbert-base", task="train", method="full", seq_len=8192, micro_batch_size=1)
    assert long.work.sizes == {"encoder_tokens": [8192]}


def test_decoder_tokens_and_decoder_fields_are_refused_in_one_sentence():
    with pytest.raises(GpuplanError, match="is an encoder: it has no decoder"):
        plan(model="bert-base-uncased", task="train", method="full", decoder_tokens=32)
    with pytest.raises(GpuplanError) as err:
        plan(model="bert-base-uncased", task="infer", engine="vllm")
    assert "per batch_size sequences of prompt_tokens" in str(err.value) and "\n" not in str(err.value)


def test_lora_on_another_projection_is_refused_and_on_the_model_s_own_taken():
    plan(model="deberta-v3-base", task="train", method="lora", seq_len=128, lora_targets=["query_proj", "value_proj"])
    plan(model="modernbert-base", task="train", method="lora", seq_len=128, lora_targets=["Wqkv"])
    with pytest.raises(GpuplanError, match="ModernBERT's Wqkv"):
        plan(model="bert-base-uncased", task="train", method="lora", seq_len=128, lora_targets=["dense"])


def test_a_local_bert_config_is_planned_and_a_distilbert_still_refused(tmp_path):
    bert = dict(json.loads(encoders.bundled_models()["google-bert/bert-base-uncased"].read_text())["config"])
    path = tmp_path / "bert" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(bert))
    with pytest.raises(NotADecoder) as found:
        load_model(str(path.parent))
    assert found.value.spec.params_total == COUNTS["google-bert/bert-base-uncased"][0]
    distil = tmp_path / "distil" / "config.json"
    distil.parent.mkdir()
    distil.write_text(json.dumps({"model_type": "distilbert", "architectures": ["DistilBertForMaskedLM"], "dim": 768,
                                  "n_layers": 6, "n_heads": 12, "hidden_dim": 3072, "vocab_size": 30522}))
    with pytest.raises(GpuplanError) as err:
        load_model(str(distil.parent))
    message = str(err.value)
    assert "model_type 'distilbert' is not a decoder LLM" in message and "modernbert" in message
    assert "\n" not in message


def test_only_a_text_encoder_s_own_classes_name_its_family():
    """BertGeneration's and RoBERTa-PreLayerNorm's classes start with bert and roberta but are other families."""
    from gpuplan.model.families import family_named

    assert family_named({"architectures": ["BertForSequenceClassification"]}) == "bert"
    assert family_named({"architectures": ["DebertaV2ForTokenClassification"], "model_type": ""}) == "deberta-v2"
    assert family_named({"architectures": ["XLMRobertaModel"]}) == "xlm-roberta"
    assert family_named({"model_type": "bert-generation", "architectures": ["BertGenerationEncoder"]}) is None
    assert family_named({"model_type": "roberta-prelayernorm",
                         "architectures": ["RobertaPreLayerNormForMaskedLM"]}) is None
    assert family_named({"architectures": ["SiglipVisionModel"]}) == "siglip_vision_model"
    assert family_named({"architectures": ["T5EncoderModel"]}) == "t5"
    for other in ("Siglip2Model", "ViTMAEModel", "CLIPSegModel", "T5GemmaForConditionalGeneration"):  # s30-beyond
        assert family_named({"model_type": other.lower(), "architectures": [other]}) is None, other


@pytest.mark.sim
def test_an_encoder_transformers_builds_but_gpuplan_does_not_model_is_refused(tmp_path, monkeypatch):
    """nomic-ai/nomic-embed-text-v1's sizes: transformers 5.24 builds its NomicBertModel, a bidirectional encoder,
    on the meta device, and its layers fill no cache. Until session 30 it was planned as a decoder LLM (a causal
    LM's head, loss and trainer; 137M parameters as its card says, but no cache to generate with)."""
    require("transformers")
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path / "cache"))
    config = {"model_type": "nomic_bert", "architectures": ["NomicBertModel"], "n_embd": 768, "n_head": 12,
              "n_layer": 12, "n_inner": 3072, "vocab_size": 30528, "n_positions": 8192,
              "activation_function": "swiglu"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(GpuplanError) as err:
        load_model(str(path))
    message = str(err.value)
    # its attention modules say is_causal False (s31-beyond), which the trace reads before transformers' tables
    assert "NomicBertModel (its attention is not causal: every token attends to every other, so it generates no " \
        "text)" in message and "is not a decoder LLM" in message
    assert "simulate --module" in message and "\n" not in message


@pytest.mark.sim
@pytest.mark.parametrize("family, built, refused", [
    ("eurobert", "EuroBertModel", True),  # filed under masked LM alone: an encoder, though its layers fill a cache
    ("convbert", "ConvBertModel", True),  # (its forward fails on the meta device: no cache measured)
    ("openai-gpt", "OpenAIGPTLMHeadModel", False),  # GPT-1 and RWKV keep nothing in transformers' cache: decoders
    ("rwkv", "RwkvForCausalLM", False),
])
def test_transformers_tables_tell_an_encoder_from_a_decoder_that_keeps_no_cache(family, built, refused, tmp_path,
                                                                                 monkeypatch):
    """transformers' default config of each family, read as a user's config.json: a family filed under no class that
    generates text is refused where its layers keep no cache or it is filed under an encoder's task; GPT-1 and RWKV,
    causal LMs whose layers keep no cache in transformers' cache, are still planned."""
    transformers = require("transformers")
    from gpuplan.model.spec import ModelSpec

    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path / "cache"))
    config = {**transformers.CONFIG_MAPPING[family]().to_dict(), "architectures": [built]}
    if not refused:
        assert ModelSpec.from_config(config, family).architecture == built
        return
    # EuroBERT's attention says is_causal False (read first since s31-beyond); ConvBERT's forward fails on the meta
    # device and has no such flag, so the tables refuse it
    reason = r" \(its attention is not causal" if family == "eurobert" else ": filed by transformers under no class"
    with pytest.raises(GpuplanError, match=f"{built}{reason}"):
        ModelSpec.from_config(config, family)


@pytest.mark.sim
def test_a_family_transformers_does_not_know_is_pointed_at_simulate_module(tmp_path, monkeypatch):
    """A config of the user's own model (its own model_type, its own sizes' names): the refusal named upgrading
    transformers and known families only, not the way gpuplan measures a model it cannot read (s30-beyond's walk)."""
    require("transformers")
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "my_weird_net", "architectures": ["WeirdNetModel"], "hidden": 64}))
    with pytest.raises(GpuplanError) as err:
        load_model(str(path))
    message = str(err.value)
    assert "does not know model_type 'my_weird_net'" in message and "simulate --module" in message
    assert "\n" not in message


@pytest.mark.sim
def test_an_xlm_roberta_config_not_bundled_is_counted_by_its_class(tmp_path):
    """FacebookAI/xlm-roberta-base's sizes (its config.json): XLMRobertaForSequenceClassification on the meta device,
    278,045,186 parameters (the XLM-R paper, Conneau et al. 2019, table 7: 'XLM-R Base ... 270M', its 250K-token
    embedding 192M of them), and 512 tokens a sequence as RoBERTa's."""
    require("transformers")
    config = {"architectures": ["XLMRobertaForMaskedLM"], "model_type": "xlm-roberta", "hidden_size": 768,
              "intermediate_size": 3072, "num_attention_heads": 12, "num_hidden_layers": 12,
              "max_position_embeddings": 514, "pad_token_id": 1, "type_vocab_size": 1, "vocab_size": 250002}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(NotADecoder) as found:
        load_model(str(path))
    spec = found.value.spec
    assert spec.main.cls == "XLMRobertaForSequenceClassification" and spec.params_total == 278_045_186
    assert spec.defaults == {"encoder_tokens_max": 512}


@pytest.mark.parametrize("precision, per_score, softmax", [("fp32", 4 + 1 + 4, 4), ("fp16-mixed", 2 + 2 + 1 + 2, 2)])
def test_eager_attention_keeps_bert_s_scores_softmax_and_dropout(precision, per_score, softmax):
    """BERT-large at batch 4 x 512 tokens: 24 layers x 4 x 16 heads x 512² = 402,653,184 scores. Eager attention
    keeps, for the backward, the softmax (fp32 under autocast: 2 + 2 bytes over the 16-bit count), the dropout's mask
    (1) and its output as the product with the values reads it (4 in fp32, 2 after autocast's cast), and one layer's
    scores and softmax at a time beside them; SDPA on CUDA keeps none (the recording runs it without dropout)."""
    scenario = {"model": "bert-large-uncased", "task": "train", "method": "full", "seq_len": 512,
                "micro_batch_size": 4, "precision": precision, "gpu": "v100-sxm2-16gb"}
    sdpa = gpuplan.estimate({**scenario, "attention": "sdpa"}, advise=False).memory
    eager = gpuplan.estimate({**scenario, "attention": "eager"}, advise=False).memory
    scores = 24 * 4 * 16 * 512 * 512
    added = per_score * scores + 2 * (scores // 24) * softmax
    assert (eager.activations_gib - sdpa.activations_gib) * 2**30 == pytest.approx(added, rel=1e-9)


def test_bert_s_recorded_training_activations_hold_no_score_matrix():
    """Recorded with its attention dropout at 0 (encoders.recorded_config), BERT-base's train-full activations grow
    with the tokens as its hidden states do (173, 344 and 696 MiB at batch 4 and 128, 256, 512 tokens), not with
    their square as SDPA's CPU math path kept them with dropout on (306, 824, 2,517 MiB: 12 bytes a score)."""
    from gpuplan.model.profile import lookup

    spec = kinds.named("bert-base-uncased")
    found, bundled = lookup(spec.main.config, "model")
    assert bundled
    at = {n: found.activation_bytes("train-full", 4, (n,)) / 2**20 for n in (128, 256, 512)}
    assert at[512] / at[256] < 2.1 and at[256] / at[128] < 2.1
    assert 600 < at[512] < 800
    assert encoders.recorded_config("bert", spec.main.config)["attention_probs_dropout_prob"] == 0.0
    assert encoders.recorded_config("deberta-v2", {"a": 1}) == {"a": 1}


# google/embeddinggemma-300m's config.json (its published sizes): Gemma 3's text model with attention both ways
EMBEDDING_GEMMA = {"architectures": ["Gemma3TextModel"], "model_type": "gemma3_text", "hidden_size": 768,
                   "intermediate_size": 1152, "num_hidden_layers": 24, "num_attention_heads": 3,
                   "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 262144, "max_position_embeddings": 2048,
                   "sliding_window": 512, "use_bidirectional_attention": True, "torch_dtype": "float32",
                   "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256,
                   "layer_types": ["sliding_attention"] * 5 * 4 + ["full_attention"] * 4}


def test_embeddinggemma_is_refused_as_the_encoder_it_is_not_planned_as_a_decoder(tmp_path):
    """s31-beyond's walk: google/embeddinggemma-300m (a sentence-transformers folder: modules.json beside its
    config.json) was planned as a text-generating Gemma 3 decoder (a causal LM's head, loss and KV cache). Its config
    says use_bidirectional_attention: one sentence now, read off the config alone (no transformers needed)."""
    folder = tmp_path / "embeddinggemma-300m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(EMBEDDING_GEMMA))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    with pytest.raises(GpuplanError) as err:
        load_model(str(folder))
    message = str(err.value)
    assert "(Gemma3TextModel: use_bidirectional_attention true: every token attends to every other, so it " \
        "generates no text)" in message and "simulate --module" in message and "\n" not in message
    without = {k: v for k, v in EMBEDDING_GEMMA.items() if k != "use_bidirectional_attention"}
    assert kinds.of_config(without, "gemma") is None  # the same sizes, causal: a decoder's config


@pytest.mark.parametrize("part, refused", [
    ({"use_bidirectional_attention": "all"}, True),  # Gemma 4 / DiffusionGemma: every token both ways
    ({"use_bidirectional_attention": "vision"}, False),  # Gemma 4's default for images: text stays causal
    ({"use_bidirectional_attention": False}, False),
    ({"is_causal": False}, True),
    ({"text_config": {"use_bidirectional_attention": True}}, True),
])
def test_a_config_that_says_its_attention_runs_both_ways_is_no_decoder(part, refused):
    config = {"model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"], **part}
    if not refused:
        assert kinds.of_config(config, "gemma") is None
        return
    with pytest.raises(GpuplanError, match="every token attends to every other, so it generates no text"):
        kinds.of_config(config, "gemma")


@pytest.mark.sim
def test_an_encoder_whose_config_says_nothing_is_told_by_its_attention_modules(tmp_path, monkeypatch):
    """transformers' EmbeddingGemma2TextModel (its default config): no flag in the config, but its attention sets
    is_causal False; it was planned as a decoder (s30-beyond's 'what is left'). A Gemma 3 decoder of the same shape
    of config, causal, is still read."""
    transformers = require("transformers")
    from gpuplan.model.spec import ModelSpec

    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path / "cache"))
    config = {**transformers.CONFIG_MAPPING["embedding_gemma2_text"]().to_dict(),
              "architectures": ["EmbeddingGemma2TextModel"]}
    with pytest.raises(GpuplanError, match=r"EmbeddingGemma2TextModel \(its attention is not causal"):
        ModelSpec.from_config(config, "eg2")
    small = {**transformers.CONFIG_MAPPING["gemma3_text"](num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                                                          head_dim=16, num_attention_heads=4, num_key_value_heads=1,
                                                          vocab_size=256).to_dict(),
             "architectures": ["Gemma3ForCausalLM"]}
    assert ModelSpec.from_config(small, "g3").num_layers == 2
    # BertGenerationDecoder is bidirectional unless its config says is_decoder (transformers warns so): refused as
    # given by default, read as the decoder it is with is_decoder true
    plain = {**transformers.CONFIG_MAPPING["bert-generation"](num_hidden_layers=2).to_dict(),
             "architectures": ["BertGenerationDecoder"]}
    with pytest.raises(GpuplanError, match=r"BertGenerationDecoder \(its attention is not causal"):
        ModelSpec.from_config(plain, "bg")
    assert ModelSpec.from_config({**plain, "is_decoder": True}, "bg").num_layers == 2


@pytest.mark.parametrize("family, alone", [("t5", "T5EncoderModel"), ("umt5", "UMT5EncoderModel")])
def test_an_encoder_decoder_s_encoder_alone_is_refused_not_planned_with_a_decoder(family, alone):
    """A T5EncoderModel config (FLUX's and SD3's text_encoder_2/3 as a folder, sentence-t5) was planned as
    T5ForConditionalGeneration: a decoder and an LM head it has not (s31-beyond)."""
    config = {"model_type": family, "architectures": [alone], "d_model": 512, "d_ff": 2048, "num_layers": 6,
              "num_heads": 8, "d_kv": 64, "vocab_size": 32128}
    with pytest.raises(GpuplanError) as err:
        kinds.of_config(config, "enc")
    message = str(err.value)
    assert f"{alone} is {family}'s encoder alone" in message and "simulate --module" in message
