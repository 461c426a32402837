"""llama.cpp as it allocates: GGUF files as a type per tensor (model/gguf.py) and the buffers its load log prints
(engines/llama_cpp.py), one rule per test with the arithmetic written out."""

from collections import Counter

import pytest

from gpuplan import estimate
from gpuplan.model import gguf
from gpuplan.model.catalog import load_model

MIB, GIB = 2**20, 2**30
L8 = load_model("llama-3.1-8b")  # 32 layers, hidden 4096, KV 8 x 128, MLP 14336, vocab 128256, untied
L3 = load_model("llama-3.2-3b")  # 28 layers, hidden 3072, KV 8 x 128, MLP 8192, tied embeddings


def q(kind: str, n: float) -> float:
    """Bytes of n weights in a ggml block type (ggml-common.h: bytes per block / weights per block)."""
    per, size = {"q4_k": (256, 144), "q6_k": (256, 210), "q4_0": (32, 18), "q5_0": (32, 22), "q8_0": (32, 34)}[kind]
    return n / per * size


def test_use_more_bits_picks_the_first_and_last_eighth_and_every_third_between():
    picked = [i for i in range(32) if gguf._use_more_bits(i, 32)]
    assert picked == [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]


def test_q4_k_m_llama_31_8b_tensor_types_match_the_load_log():
    """llama.cpp's log of Meta-Llama-3.1-8B-Instruct Q4_K_M: 'type q4_K: 193 tensors, type q6_K: 33 tensors'."""
    types = Counter((cat, kind) for cat, _, _, kind in gguf.tensor_types(L8, "q4_k_m"))
    assert types[("attn_v", "q6_k")] == 16 and types[("ffn_down", "q6_k")] == 16  # the 16 use_more_bits layers
    assert types[("attn_v", "q4_k")] == 16 and types[("ffn_down", "q4_k")] == 16
    q6 = sum(n for (_, kind), n in types.items() if kind == "q6_k") + 1  # + output.weight
    q4 = sum(n for (_, kind), n in types.items() if kind == "q4_k") + 1  # + token_embd.weight
    assert (q4, q6) == (193, 33)
    assert gguf.output_type("q4_k_m", 4096, "llama") == "q6_k" and gguf.token_embedding_type("q4_k_m") == "q4_k"


def test_q4_k_m_file_size_by_hand():
    h, kv, f, v, n = 4096, 1024, 14336, 128256, 32
    more, less = 16, 16
    layer_q4 = h * h * 2 + h * kv + h * f * 2  # q, o, k, gate, up
    attn_v, down = h * kv, f * h
    linears = n * q("q4_k", layer_q4) + more * q("q6_k", attn_v + down) + less * q("q4_k", attn_v + down)
    embed, output = q("q4_k", v * h), q("q6_k", v * h)
    norms = (2 * n + 1) * h * 4  # f32
    expected = linears + embed + output + norms
    assert sum(gguf.weight_bytes(L8, "q4_k_m").values()) == pytest.approx(expected)
    assert expected / GIB == pytest.approx(4.575, abs=1e-3)  # llama.cpp prints 'model size = 4.58 GiB (4.89 BPW)'


@pytest.mark.parametrize("ftype, measured_gib", [("q8_0", 7.95), ("q6_k", 6.14), ("q4_k_s", 4.36),
                                                 ("iq4_xs", 4.17), ("q3_k_l", 4.02)])
def test_llama_quantize_readme_file_sizes(ftype, measured_gib):
    """tools/quantize/README.md's Llama-3.1-8B table (measured-public.csv M0828-M0834): a check, nothing fitted;
    the table prints two decimals."""
    assert sum(gguf.weight_bytes(L8, ftype).values()) / GIB == pytest.approx(measured_gib, abs=0.006)


def test_70b_llamas_bump_attn_v_to_q5_k_and_8_expert_models_to_q8_0():
    l70 = load_model("llama-2-70b")  # 80 layers, 8 KV heads: LLM_TYPE_70B
    v70 = {kind for cat, _, _, kind in gguf.tensor_types(l70, "q3_k_m") if cat == "attn_v"}
    assert v70 == {"q5_k"}  # Q3_K_M gives Q5_K to the first two, Q4_K after, and 70B lifts Q4_K to Q5_K
    mix = load_model("mixtral-8x7b")
    types = {(cat, kind) for cat, _, _, kind in gguf.tensor_types(mix, "q4_k_m") if cat.startswith("attn")}
    assert types == {("attn_q", "q4_k"), ("attn_k", "q8_0"), ("attn_v", "q8_0"), ("attn_output", "q5_k")}


def test_q2_k_and_q4_0_rules():
    t = {(cat, kind) for cat, _, _, kind in gguf.tensor_types(L8, "q2_k")}
    assert ("attn_v", "q4_k") in t  # 4 query heads per KV head: Q4_K
    assert ("ffn_down", "q3_k") in t and ("attn_output", "q3_k") in t and ("attn_q", "q2_k") in t
    assert gguf.output_type("q4_0", 4096, "llama") == "q6_k"  # everything else Q4_0 (log: 'q4_0: 225, q6_K: 1')
    assert gguf.output_type("q8_0", 4096, "llama") == "q8_0"
    assert sum(1 for *_, kind in gguf.tensor_types(L8, "q4_0") if kind == "q4_0") + 1 == 225


def test_rows_not_a_multiple_of_the_block_fall_back():
    assert gguf.fallback("q4_k", 896) == "q5_0"  # Qwen2.5-0.5B's 896-wide rows: 3.5 blocks of 256
    assert gguf.fallback("q6_k", 896) == "q8_0" and gguf.fallback("q4_k", 4096) == "q4_k"
    assert gguf.fallback("q4_k", 100) == "f16"  # not even a multiple of 32
    small = load_model("qwen2.5-0.5b")
    kinds = {kind for cat, _, lin, kind in gguf.tensor_types(small, "q4_k_m") if lin.in_features == 896}
    assert kinds <= {"q5_0", "q8_0"}


def test_model_buffer_is_the_file_less_the_token_embedding_kept_in_host_memory():
    """'CUDA0 model buffer size = 4403.49 MiB', 'CPU model buffer size = 281.81 MiB' (Llama-3.1-8B Q4_K_M)."""
    e = estimate(dict(model="llama-3.1-8b", task="infer", engine="llama.cpp", quant="gguf-q4_k_m"),
                 advise=False).memory.engine
    embed = q("q4_k", 128256 * 4096)
    file = sum(gguf.weight_bytes(L8, "q4_k_m").values())
    assert e["host_model_buffer_gib"] * GIB == pytest.approx(embed) and embed / MIB == pytest.approx(281.81, abs=5e-3)
    assert e["model_buffer_gib"] * GIB == pytest.approx(file - embed)
    assert (file - embed) / MIB == pytest.approx(4403.49, abs=5e-3)


def test_a_tied_output_is_duplicated_on_the_gpu():
    """Llama-3.2-3B Q4_K_M: 'Metal model buffer size = 1918.35 MiB' (the whole file) and 'CPU_Mapped model buffer
    size = 308.23 MiB' (the Q6_K token embedding the output shares)."""
    e = estimate(dict(model="llama-3.2-3b", task="infer", engine="llama.cpp", quant="gguf-q4_k_m"),
                 advise=False).memory.engine
    assert e["model_buffer_gib"] * 1024 == pytest.approx(1918.35, abs=5e-3)
    assert e["host_model_buffer_gib"] * GIB == pytest.approx(q("q6_k", 128256 * 3072))
    assert e["host_model_buffer_gib"] * 1024 == pytest.approx(308.23, abs=5e-3)
    assert sum(gguf.weight_bytes(L3, "q4_k_m").values()) / MIB == pytest.approx(1918.35, abs=5e-3)


def test_gemma_per_layer_token_tables_are_q6_k_in_host_memory_and_only_looked_up():
    """Gemma-4-E2B's per_layer_token_embd (35 x 256 x 262,144 = 2,348,810,240 weights) is llama-quant.cpp's
    TOKEN_EMBD category (``tensor_name_match_token_embd``): tied, it takes the output's Q6_K, as token_embd does;
    llama-arch.cpp makes it an input tensor read by GET_ROWS, so it stays in host memory and a decode step reads a
    row of it, not the table. Before: F32 (8.75 GiB) counted in host memory and on the GPU, and read every step."""
    m = load_model("gemma-4-e2b")
    tables, token = 35 * 256 * 262144, 262144 * 1536
    assert gguf.per_token_table_params(m) == tables
    parts = gguf.weight_bytes(m, "q4_k_m")
    assert parts["embeddings"] == pytest.approx(q("q6_k", tables + token))  # 1,926.8 MB + 330.3 MB
    plan = estimate(dict(model="gemma-4-e2b", task="infer", engine="llama.cpp", quant="gguf-q4_k_m",
                         gpu="rtx-4090"), advise=False)
    e = plan.memory.engine
    assert e["host_model_buffer_gib"] * GIB == pytest.approx(q("q6_k", tables + token))
    # the GPU: the whole file less both tables, plus the output's duplicate of token_embd
    assert e["model_buffer_gib"] * GIB == pytest.approx(sum(parts.values()) - q("q6_k", tables))
    from gpuplan.scenario import Scenario
    from gpuplan.speed import ggml
    s = Scenario(model="gemma-4-e2b", task="infer", engine="llama.cpp", quant="gguf-q4_k_m", gpu="rtx-4090")
    assert ggml.streamed_bytes(s, m) == pytest.approx(
        sum(v for k, v in parts.items() if k not in ("embeddings", "lm_head", "vision")) + q("q6_k", token))


@pytest.mark.parametrize("model", ["gemma-4-e2b", "llama-3.2-3b", "llama-3.1-8b", "gpt2"])
def test_the_weights_formula_holds_what_the_gpu_holds(model):
    """The page's formula for the weights gave 4.03 GiB for Gemma-4-E2B Q4_K_M where the plan holds 2.23 on the GPU:
    it kept every embedding of a tied model on the GPU. It now takes the tied output's token_embd alone, as
    engines/llama_cpp.py does (gpu_embedding_bytes); tied (Llama-3.2-3B, GPT-2) and untied (Llama-3.1-8B) alike."""
    from gpuplan.api.page import explain

    s = dict(model=model, task="infer", engine="llama.cpp", quant="gguf-q4_k_m", gpu="rtx-4090")
    w = explain(s).numbers["memory.weights_gib"]
    assert w.computed == pytest.approx(w.value, rel=1e-9)


def test_kv_buffer_is_f16_k_and_v_for_every_cell():
    """n_ctx 8192 over 4 sequences: 8,192 cells x 32 layers x (1024 + 1024) x 2 bytes = 1024 MiB."""
    e = estimate(dict(model="llama-3.1-8b", task="infer", engine="llama.cpp", quant="gguf-q4_k_m", batch_size=4,
                      prompt_tokens=2048, output_tokens=0), advise=False).memory.engine
    assert e["kv_buffer_gib"] * GIB == 8192 * 32 * 2048 * 2 == 1024 * MIB


def test_each_slot_holds_its_tokens_padded_to_256_cells():
    """llama_context pads each slot's n_ctx_seq to 256 (src/llama-context.cpp; the smoke server logged n_ctx_slot
    256 for 80 tokens): 2 slots of 100 tokens hold 2 x 256 cells x 32 layers x 2,048 x 2 bytes = 64 MiB, and a
    300-token request 512 cells (4 slots: 256 MiB)."""
    def kv(batch, tokens):
        return estimate(dict(model="llama-3.1-8b", task="infer", engine="llama.cpp", quant="gguf-q4_k_m",
                             batch_size=batch, prompt_tokens=tokens - 10, output_tokens=10),
                        advise=False).memory.engine["kv_buffer_gib"] * GIB
    assert kv(2, 100) == 2 * 256 * 32 * 2048 * 2 == 64 * MIB
    assert kv(4, 300) == 4 * 512 * 32 * 2048 * 2 == 256 * MIB
    assert kv(1, 256) == 256 * 32 * 2048 * 2


def test_compute_buffer_without_flash_attention_is_the_scores_stage():
    """n_ubatch 512 over 8,192 cells, 32 heads: fp32 scores 8192 x 512 x 32 x 4 = 512 MiB, four 512 x 4096 fp32
    activations (32 MiB), the f32 mask 8192 x 512 x 4 (16 MiB): 560 MiB, as the log prints; the output stage
    (logits 512 x 128256 x 4 = 250.5 MiB + five activations) is smaller."""
    e = estimate(dict(model="llama-3.1-8b", task="infer", engine="llama.cpp", quant="gguf-q4_k_m", batch_size=4,
                      prompt_tokens=2048, output_tokens=0, flash_attention="off"), advise=False).memory.engine
    scores, act, mask = 8192 * 512 * 32 * 4, 512 * 4096 * 4, 8192 * 512 * 4
    assert e["compute_buffer_gib"] * GIB == pytest.approx(scores + 4 * act + mask) == 560 * MIB


def test_compute_buffer_with_flash_attention_is_the_logits_stage():
    """n_ubatch 1024 over 16,384 cells: logits 1024 x 128256 x 4 (501 MiB), five 1024 x 4096 fp32 activations
    (80 MiB), the f16 mask 16384 x 1024 x 2 (32 MiB): 613 MiB (the log: 613.01 MiB)."""
    e = estimate(dict(model="llama-3.1-8b", task="infer", engine="llama.cpp", quant="gguf-q4_0", prompt_tokens=16384,
                      output_tokens=0, flash_attention="on", ubatch_tokens=1024), advise=False).memory.engine
    expected = 1024 * 128256 * 4 + 5 * 1024 * 4096 * 4 + 16384 * 1024 * 2
    assert e["compute_buffer_gib"] * GIB == pytest.approx(expected)
    assert expected / MIB == pytest.approx(613.01, abs=0.02)


def test_fits_means_every_layer_on_the_gpu_unless_cpu_layers_are_allowed():
    """Llama-3.3-70B at Q4_K_M (~40 GiB) on one RTX 3090: llama.cpp would start with about half the layers in
    system RAM. That is not "fits" unless the user says so (cpu_layers); the largest batch and prompt are then
    those with every layer on the GPU (none here), and no fix proposes tensor parallelism (llama.cpp splits by
    layer or row)."""
    fields = {"model": "llama-3.3-70b", "task": "infer", "engine": "llama.cpp", "quant": "gguf-q4_k_m",
              "gpu": "rtx-3090", "batch_size": 1}
    r = estimate(fields)
    assert r.memory.offloaded_layers > 30 and r.memory.device_peak_gib <= r.memory.capacity_gib
    assert r.memory.fits is False and r.memory.max_batch_size is None
    assert not any("tensor parallel" in s.change for s in r.suggestions)
    assert any("split the layers over 2 GPUs" in s.change or "--cpu-layers" in s.change for s in r.suggestions)
    allowed = estimate({**fields, "cpu_layers": True}, advise=False)
    assert allowed.memory.fits is True and allowed.speed.streaming_tokens_per_s_per_user < 10


def test_layers_split_over_gpus_share_the_model_buffer():
    """llama.cpp splits the layers over the cards (--split-mode layer): each holds its share of the model buffer
    (the whole GGUF less the token embedding mapped on the host) and of the KV cache. The split took the embedding
    off each card's share whole and kept the whole KV on each: Qwen3-8B over 8 H100s came out at -55 GiB of KV,
    -74 GiB of CPU memory and -11,369 layers on the GPU."""
    job = {"model": "qwen3-8b", "task": "infer", "engine": "llama.cpp", "quant": "gguf-q4_k_m", "gpu": "h100-sxm"}
    one = estimate({**job, "num_gpus": 1}, advise=False).memory
    for n in (2, 8):
        split = estimate({**job, "num_gpus": n}, advise=False).memory
        assert split.weights_gib * n == pytest.approx(one.weights_gib, rel=1e-9)
        assert split.kv_cache_gib * n == pytest.approx(one.kv_cache_gib, rel=1e-9)
        assert split.cpu_gib == pytest.approx(one.cpu_gib) and split.gpu_layers == 36 and not split.offloaded_layers


def test_an_moes_layers_on_the_cpu_read_only_the_experts_a_token_reaches():
    """s13 walk: gpt-oss-120b over 2 RTX 4090s keeps 12 of its 36 layers in system RAM, and the CPU's share of a
    decode step was every expert of those layers read (436.8 ms: 2.2 tokens/s), where ggml-cpu's mul_mat_id reads
    only the 4 of 128 experts a token picks, as the GPU's layers already did. By hand from the layers' stored bytes
    (:func:`gguf.weight_bytes`, the f16 file whose experts stay in MXFP4 as shipped, as the memory counts them): one
    token reads all but 124/128 of the experts' matrices, 36 x 128 x (2880 x 5760 + 2880 x 2880) x 17/32 B; 12/36
    of that at the CPU's 80 GB/s x 0.6, plus the cache; the 12 layers' bytes are those the memory holds in RAM (the
    speed read f16 experts before: 17.8 ms against those bytes, a share of 0.040)."""
    from gpuplan import overheads as oh
    from gpuplan.speed import ggml

    fields = {"model": "gpt-oss-120b", "task": "infer", "engine": "llama.cpp", "gpu": "rtx-4090", "num_gpus": 2,
              "cpu_layers": True, "prompt_tokens": 1000, "output_tokens": 256}
    plan = estimate(fields, advise=False)
    s, m = plan.setup.scenario, plan.setup.model
    assert (plan.memory.offloaded_layers, m.num_layers) == (12, 36)
    parts = gguf.weight_bytes(m, ggml.ftype(s, m))
    layers = sum(v for k, v in parts.items() if k not in ("embeddings", "lm_head", "vision"))
    experts = 36 * 128 * (2880 * 5760 + 2880 * 2880) * 17 / 32  # gate_up and down of each expert, MXFP4
    read = layers - experts * (1 - 4 / 128)
    assert ggml.layers_read_share(s, m, 1) == pytest.approx(read / layers, rel=1e-3)  # 0.064
    cpu_s = plan.speed.parts_s["cpu_layers"]
    held = (plan.memory.cpu_gib - plan.memory.engine["host_model_buffer_gib"]) * GIB  # the 12 layers, 19.6 GiB
    by_hand = held * read / layers / (oh.CPU_MEMORY_GBS * 1e9 * oh.CPU_BANDWIDTH_FRACTION)  # 28 ms, was 436.8
    assert by_hand < cpu_s < 1.05 * by_hand  # the rest: the 12 layers' KV cache at 1,128 tokens
    assert 0.5 < 1 / plan.speed.step_time_s / plan.speed.streaming_tokens_per_s_per_user < 2
    dense = estimate({**fields, "model": "llama-3.3-70b", "quant": "gguf-q4_k_m", "num_gpus": 1}, advise=False)
    ds, dm = dense.setup.scenario, dense.setup.model
    assert ggml.layers_read_share(ds, dm, 1) == pytest.approx(1.0)
