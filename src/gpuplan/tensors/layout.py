"""How one served copy of a model lays its weights over its ``tp`` GPUs.

Under tensor parallelism every weight is split over the ``tp`` GPUs but the few that the engines build whole on
each rank: multi-head latent attention's down-projections and DeepSeek sparse attention's indexer
(:func:`replicated`). With attention data parallelism (SGLang ``--enable-dp-attention``, vLLM
``--data-parallel-size``, TensorRT-LLM ``enable_attention_dp``) each GPU runs the attention of its own requests
whole: the attention projections are replicated on every GPU (SGLang's ``DeepseekV2AttentionMLA`` built with
``attn_tp_size = tp_size / dp_size``, 1 when ``dp == tp``), while the experts stay split over the GPUs by expert
parallelism (``num_experts / ep`` experts each, each expert over ``tp / ep`` GPUs) or tensor parallelism, and the
embedding and output head stay vocab-parallel over the ``tp`` GPUs. Each GPU holds the KV cache of its own
requests with every KV head (no split by heads).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..model.layers import Layer, Linear
from ..model.quant import Format
from ..model.spec import ModelSpec
from ..scenario import Scenario

# The linears of a multi-head latent attention layer that every engine builds whole on each tensor-parallel rank
# (replicated): the query and latent-KV down-projections, and DeepSeek sparse attention's indexer
MLA_REPLICATED = frozenset({"q_a_proj", "kv_a_proj_with_mqa", "wq_b", "wk", "weights_proj"})


def replicated(layer: Layer, lin: Linear) -> bool:
    """Whether each tensor-parallel rank holds and multiplies ``lin`` whole, on all of the step's tokens. MLA's
    down-projections write the latent every head reads, so the engines do not split them: vLLM fuses ``q_a_proj``
    and ``kv_a_proj_with_mqa`` into ``fused_qkv_a_proj``, a ``MergedColumnParallelLinear(..., disable_tp=True)``,
    and builds ``kv_a_proj_with_mqa`` alone as a ``ReplicatedLinear`` when there is no ``q_lora_rank``
    (``vllm/model_executor/models/deepseek_v2.py`` ``DeepSeekV2FusedQkvAProjLinear``, ``DeepseekV2MLAAttention``;
    ``DeepseekV2Attention`` builds both as ``ReplicatedLinear``; read at 002d607); SGLang builds
    ``fused_qkv_a_proj_with_mqa`` as a ``ReplicatedLinear``, and ``kv_a_proj_with_mqa`` alone likewise
    (``python/sglang/srt/models/deepseek_v2.py`` ``DeepseekV2AttentionMLA``, read at 00114ae of mid-2025 and in the
    0.5 releases); TensorRT-LLM fuses them into ``kv_a_proj_with_mqa``, a ``DeepseekV3Linear`` without a
    tensor-parallel mode (``tensorrt_llm/_torch/models/modeling_deepseekv3.py`` ``DeepseekV3Attention``; NVIDIA's
    B200 latency blog: "Fuse_A GEMM: Data Parallelism 8" beside "Attention Modules: Tensor Parallelism 8"). DeepSeek
    sparse attention's indexer (DeepSeek-V3.2, GLM-5) is replicated in all three: vLLM's ``Indexer`` ("no tensor
    parallel, just replicated": ``wq_b`` a ``ReplicatedLinear``, ``wk`` and ``weights_proj`` fused with
    ``disable_tp=True``), SGLang's (``python/sglang/srt/layers/attention/nsa/nsa_indexer.py`` ``Indexer``: three
    ``ReplicatedLinear``), TensorRT-LLM's (``tensorrt_llm/_torch/attention_backend/sparse/dsa.py`` ``Indexer``:
    ``Linear`` without ``mapping``)."""
    return layer.attention == "mla" and lin.group == "attention" and lin.name in MLA_REPLICATED


def replicated_bytes(s: Scenario, layers: Iterable[Layer], fmt: Format, skip: tuple[str, ...]) -> float:
    """Bytes one GPU holds of the :func:`replicated` linears of ``layers`` beyond its ``1/attention_tp`` share:
    each rank keeps them whole. None under attention data parallelism (the attention is whole already,
    :func:`replicated_attention_bytes`) or for llama.cpp's files (it splits layers over its GPUs, not tensors).
    DeepSeek-R1 FP8 at TP 8: 61 x 7,168 x (1,536 + 576) x 1 B x 7/8 = 808,034,304 B (0.75 GiB)."""
    split = s.attention_tp
    if split <= 1 or fmt.name.startswith("gguf-"):
        return 0.0
    total = sum(lin.weight_params * fmt.high_bytes if lin.kept(skip) else fmt.linear_weight_bytes(lin)
                for layer in layers for lin in layer.linears if replicated(layer, lin))
    return total * (1 - 1 / split)


def replicated_params(layers: Iterable[Layer]) -> float:
    """Parameters of the :func:`replicated` linears of ``layers``."""
    return float(sum(lin.weight_params for layer in layers for lin in layer.linears if replicated(layer, lin)))


def training_extra_params(s: Scenario, layers: Iterable[Layer]) -> float:
    """Parameters one tensor-parallel training rank holds of ``layers`` beyond its ``1/tp`` share: the
    :func:`replicated` linears whole on every rank, as the training stacks build them too. Megatron-Core builds
    ``linear_q_down_proj`` and ``linear_kv_down_proj`` as Transformer Engine linears with
    ``parallel_mode='duplicated'`` (``megatron/core/transformer/multi_latent_attention.py`` ``MLASelfAttention``,
    read in megatron-core 0.16.1), and DeepSeek sparse attention's ``linear_wq_b``, ``linear_wk`` and
    ``linear_weights_proj`` likewise (``transformer/experimental_attention_variant/dsa.py``); under sequence
    parallelism each rank multiplies its ``1/tp`` of the tokens by the whole weight and the gradients are summed over
    the TP group once a step (``extensions/transformer_engine.py`` ``TELinear`` marks them ``sequence_parallel``;
    ``distributed/finalize_model_grads.py`` ``_allreduce_non_tensor_model_parallel_grads``). torchtitan leaves
    ``attention.wq_a`` and ``attention.wkv_a`` out of the split (``NoParallel``, ``models/deepseek_v3/infra/
    parallelize.py`` ``apply_non_moe_tp``, read at 018740b): each rank multiplies all of the tokens, the attention's
    input gathered whole. Megatron's own local (non-Transformer-Engine) layer spec splits them column-wise; gpuplan
    models its Transformer Engine layers. R1 at TP 8: 61 x 15,138,816 x 7/8 = 808,034,304 parameters."""
    return replicated_params(layers) * (1 - 1 / s.tp) if s.tp > 1 else 0.0


def layer_params_per_rank(s: Scenario, layer: Layer) -> float:
    """Parameters of one decoder layer that one tensor-parallel training rank holds, as a sharding gathers the
    layer whole on it (an FSDP unit, a ZeRO-3 gathered layer): its linears split over ``tp``, its norms whole
    (sequence parallelism replicates them: torchtitan ``SequenceParallel``, Megatron's layer norms) and the
    :func:`replicated` linears whole (:func:`training_extra_params`). Pipeline parallelism splits the layers between
    stages, never a layer."""
    return (layer.params - layer.norm_params) / s.tp + layer.norm_params + training_extra_params(s, [layer])


def replicated_attention_bytes(s: Scenario, parts: dict[str, float], layer_share: float = 1.0) -> float:
    """Bytes one GPU holds beyond its ``1/tp`` share of the weights ``parts`` (by part, as
    :meth:`~gpuplan.model.spec.ModelSpec.weight_bytes`): the attention weights of ``layer_share`` of the layers
    whole on every GPU under attention data parallelism, none otherwise."""
    if not s.attention_dp or s.tp == 1:
        return 0.0
    return parts.get("attention", 0.0) * layer_share * (1 - 1 / s.tp)


def weights_per_gpu(s: Scenario, m: ModelSpec, fmt: Format, skip: tuple[str, ...]) -> float:
    """Weight bytes one GPU holds of ``m`` stored as ``fmt`` (``skip``: the groups left at ``fmt.high_bytes``):
    the weights over ``tp x pp`` GPUs, with the attention whole on every GPU under attention data parallelism
    (one pipeline stage) and the :func:`replicated` linears whole on every rank (its stage's share of them)."""
    parts = m.weight_bytes(fmt, skip=skip)
    return (sum(parts.values()) / (s.tp * s.pp) + replicated_attention_bytes(s, parts)
            + replicated_bytes(s, m.layers, fmt, skip) / s.pp)
