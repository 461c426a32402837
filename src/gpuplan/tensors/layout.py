"""How one served copy of an MoE model lays its weights over its ``tp`` GPUs under attention data parallelism.

Under tensor parallelism every weight is split over the ``tp`` GPUs. With attention data parallelism (SGLang
``--enable-dp-attention``, vLLM ``--data-parallel-size``, TensorRT-LLM ``enable_attention_dp``) each GPU runs the
attention of its own requests whole: the attention projections are replicated on every GPU (SGLang's
``DeepseekV2AttentionMLA`` built with ``attn_tp_size = tp_size / dp_size``, 1 when ``dp == tp``), while the
experts stay split over the GPUs by expert parallelism (``num_experts / ep`` experts each, each expert over
``tp / ep`` GPUs) or tensor parallelism, and the embedding and output head stay vocab-parallel over the ``tp``
GPUs. Each GPU holds the KV cache of its own requests with every KV head (no split by heads).
"""

from __future__ import annotations

from ..scenario import Scenario


def replicated_attention_bytes(s: Scenario, parts: dict[str, float], layer_share: float = 1.0) -> float:
    """Bytes one GPU holds beyond its ``1/tp`` share of the weights ``parts`` (by part, as
    :meth:`~gpuplan.model.spec.ModelSpec.weight_bytes`): the attention weights of ``layer_share`` of the layers
    whole on every GPU under attention data parallelism, none otherwise."""
    if not s.attention_dp or s.tp == 1:
        return 0.0
    return parts.get("attention", 0.0) * layer_share * (1 - 1 / s.tp)


def weights_per_gpu(s: Scenario, parts: dict[str, float]) -> float:
    """Weight bytes one GPU holds: the model's ``parts`` over ``tp x pp`` GPUs, with the attention whole on every
    GPU under attention data parallelism (one pipeline stage)."""
    return sum(parts.values()) / (s.tp * s.pp) + replicated_attention_bytes(s, parts)
