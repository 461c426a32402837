"""transformers' own ``generate`` as an engine: a cache that grows per step, the working set of the prefill and of
one decode step, every op launched from Python.

The cache is ``batch_size`` sequences of the prompt and output (:func:`gpuplan.tensors.kv.kv_bytes_per_sequence`);
the peak is the larger of the prefill (the prompt's keys and values, one layer's temporaries for all prompt tokens
and the last positions' logits: ``generate``'s ``logits_to_keep=1``) and the last decode step (the whole cache,
one token's temporaries and the layer whose cache ``torch.cat`` is growing).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .. import overheads as oh
from ..hardware import GpuSpec
from ..model.layers import attends
from ..model.quant import Format
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors import activations as act
from ..tensors.breakdown import GIB, Estimate
from ..tensors.kv import kv_bytes_per_sequence
from ..tensors.state import attention_kernel
from .base import Engine

if TYPE_CHECKING:
    from .records import Timing

# transformers runs every token through every expert in these families (Llama4TextMoe.forward repeats the hidden
# states for all experts and batch-multiplies them: transformers models/llama4/modeling_llama4.py), so its MoE
# working set is that of top-E routing; vLLM and llama.cpp route sparsely.
DENSE_DISPATCH_MOE = frozenset({"llama4", "llama4_text"})


def prefill_working_set(s: Scenario, m: ModelSpec, tokens: int, seqs: int) -> float:
    """Largest set of temporaries of one layer's forward without autograd, for ``tokens`` tokens at once:
    the MLP holds act(gate), up and their product (``3·i``) plus the residual and its norm (``2·h``); an expert
    layer the same for each of the ``k`` experts a token visits (the families of :data:`DENSE_DISPATCH_MOE` hold,
    for every expert, a copy of the tokens, gate_up, act(gate) and their product: ``E·(4·i + h)``); Gated
    DeltaNet's reference implementation its fp32 copies (overheads.py); eager attention holds the fp32 softmax of
    ``seqs·heads·s²`` scores (none in a model without an attending layer: xLSTM, Mamba), SDPA over a model with
    sliding windows the boolean window mask (``s²`` bytes) and its additive copy per sequence."""
    c = s.compute_bytes
    t = s.tp
    i = max((lin.in_features for layer in m.layers for lin in layer.linears
             if act.INPUT_OF.get(lin.name) == "mlp_mid" and lin.group != "experts"), default=0) / t
    mlp = c * tokens * (3 * i + 2 * m.hidden_size)
    if m.is_moe:
        i_e = max((lin.in_features for layer, _ in m.layer_kinds() for lin in layer.linears
                   if lin.group == "experts" and act.INPUT_OF.get(lin.name) == "mlp_mid"), default=0)
        h, E = m.hidden_size, m.num_experts
        if m.family in DENSE_DISPATCH_MOE:
            # E copies of the tokens (routed_in) live with gate_up (2i), act(gate) and up*act(gate) per expert
            mlp = max(mlp, c * tokens * (E * (4 * i_e + h) + 2 * h) + 8 * tokens * E)
        else:
            mlp = max(mlp, c * tokens * m.experts_per_token * (3 * i_e + 2 * h) + 8 * tokens * E)
    heads = max(m.num_heads // t, 1)
    attn = c * tokens * (heads * m.head_dim * 3 + 2 * m.hidden_size) + 4 * tokens * m.hidden_size
    values = max((lin.in_features for layer, _ in m.layer_kinds() if layer.attention == "linear"
                  for lin in layer.linears if lin.name == "out_proj"), default=0) / t
    attn = max(attn, 4 * tokens * oh.REFERENCE_DELTANET_FP32_COPIES * values)
    if attention_kernel(s, m) == "eager" and any(attends(layer) for layer in m.layers):  # no scores without attention
        seq = tokens // max(seqs, 1)
        attn += (4 + 2 * c) * seqs * heads * seq * seq
    elif any(layer.window for layer in m.layers):
        # sliding-window layers under SDPA: transformers passes the pattern as an explicit boolean mask (1 x 1 x s x
        # s, built once per forward) and SDPA turns it into an additive mask in the compute dtype for every sequence
        # (torch.where) for the call: the simulation of Gemma-3-1B at 2 x 30,000 tokens holds both (0.84 + 3.35 GiB
        # at 8 layers), as the H200 probe measured (bench/gpu_probes.py record l)
        seq = tokens // max(seqs, 1)
        attn += seq * seq * (1 + c * seqs)
    return max(mlp, attn)


def _mask_segment(s: Scenario, m: ModelSpec) -> float:
    """Reserved bytes beyond the prefill's peak that the additive sliding-window mask leaves (SDPA): SDPA makes it
    for each sliding layer's call (``seqs x s²`` in the compute dtype, the largest block of the prefill) and frees
    it; the next layers' MLP temporaries are carved out of that cached block, so the next sliding layer's mask
    takes a new segment and the allocator holds two. The H200 probe of Gemma-3-1B at 2 x 30,000 tokens
    (bench/data/gpu-measurements, record l) reserves 3.43 GiB above its allocated peak: one mask of 3.35 GiB."""
    if attention_kernel(s, m) == "eager" or not any(layer.window for layer in m.layers):
        return 0.0
    return s.compute_bytes * s.batch_size * s.prompt_tokens ** 2


class Transformers(Engine):
    """transformers' ``generate`` (see the module docstring)."""

    name = label = "transformers"
    no_chunked_prefill = "generate() prefills each prompt whole in one forward"
    layer_split_words = 'transformers device_map="auto"'
    grows_cache = True
    runs_model_modules = True
    metal = True

    def refusal(self, s: Scenario, m: ModelSpec) -> str | None:
        """A served weight format transformers does not keep: a GGUF file it dequantizes on load
        (``transformers/modeling_gguf_pytorch_utils.py``), an MLX checkpoint it has no quantizer for (its
        ``quantizers/auto.py`` lists none)."""
        if s.task != "infer":
            return None
        if (s.quant or "").startswith("gguf-"):
            return (f"transformers dequantizes a GGUF file when it loads it, so {s.quant} saves no GPU memory there: "
                    "serve it with engine llama.cpp, or drop quant")
        if (s.quant or "").startswith("mlx-"):
            return (f"{s.quant} is MLX's own checkpoint format, which transformers does not load: serve it with "
                    "engine mlx (Apple silicon), or choose another quant")
        return None

    def card_refusal(self, s: Scenario, gpu: GpuSpec) -> str | None:
        flash = flash_refusal(s, gpu)
        if flash:
            return flash
        if s.quant == "fp8" and not gpu.supports_dtype("fp8"):
            return (f"{gpu.name} ({gpu.architecture}) has no fp8 tensor cores: choose int8, a 4-bit quant, or engine "
                    "vllm (weight-only fp8)")
        return None

    def attention_notes(self, s: Scenario, m: ModelSpec) -> list[str]:
        """A family without SDPA support runs eager attention, whatever ``attention`` asks (said where a layer
        attends)."""
        if attention_kernel(s, m) == s.attention or not any(attends(layer) for layer in m.layers):
            return []
        return [f"{m.family} runs eager attention in transformers (no SDPA support): the s x s scores are "
                "materialized; attention flash (FlashAttention-2) avoids them"]

    def memory(self, s: Scenario, m: ModelSpec, e: Estimate, fmt: Format, gpu: GpuSpec | None,
               capacity_gib: float | None) -> Estimate:
        layers = m.layers[: math.ceil(m.num_layers / s.pp)]
        tokens = s.prompt_tokens + s.output_tokens
        c, t = s.compute_bytes, s.tp
        e.kv_cache = s.batch_size * kv_bytes_per_sequence(s, m, tokens, layers)
        work = prefill_working_set(s, m, s.batch_size * s.prompt_tokens, s.batch_size)
        logits = s.batch_size * m.vocab_size * (c + 4) / t  # last position only (generate's logits_to_keep=1)
        # the prefill's keys and values of sliding / chunked layers stay whole until the first decode step:
        # transformers' DynamicSlidingWindowLayer keeps a view of the last ``window - 1`` tokens of the full tensor
        # (cache_utils.py)
        prompt_kv = s.batch_size * kv_bytes_per_sequence(s, m, s.prompt_tokens, layers, windowed=False)
        prefill = prompt_kv + work + logits
        decode_work = prefill_working_set(s, m, s.batch_size, s.batch_size)
        decode = e.kv_cache + decode_work + logits + kv_bytes_per_sequence(s, m, tokens, layers[:1]) * s.batch_size
        e.phases = {"prefill": (e.weights + prefill) / GIB, "decode": (e.weights + decode) / GIB}
        # transformers grows each layer's cache with torch.cat every step: the freed, one-token-smaller blocks
        # cannot serve the next, larger request, so the caching allocator holds extra segments (reserved only)
        # (counted when the decode phase with those segments exceeds the allocated peak)
        fragmented = e.weights + decode + oh.KV_GROWTH_FRAGMENTATION * e.kv_cache
        e.fragmentation = max(0.0, fragmented - e.weights - max(prefill, decode))
        if prefill > decode:
            e.fragmentation = max(e.fragmentation, _mask_segment(s, m))
            e.peak_phase, e.kv_cache, e.activations = "prefill", prompt_kv, work + logits
        else:
            e.peak_phase, e.activations = "decode", decode - e.kv_cache
        return e

    def timing(self, s: Scenario, m: ModelSpec, gpu: GpuSpec) -> Timing:
        from .records import Timing  # loaded for a serving plan: a training plan (transformers' default) never asks

        return Timing(eager=True)


TRANSFORMERS = Transformers()


def flash_refusal(s: Scenario, gpu: GpuSpec) -> str | None:
    """FlashAttention 2 (the flash-attn package, which transformers' and diffusers' ``flash`` attention load) builds
    for Ampere or newer NVIDIA GPUs and ROCm only (Dao-AILab/flash-attention README, "Requirements")."""
    if s.attention == "flash" and (gpu.vendor == "Apple" or (gpu.vendor == "NVIDIA"
                                                              and (gpu.capability or 80) < 80)):
        return (f"FlashAttention 2 runs on Ampere or newer NVIDIA GPUs (and ROCm), and {gpu.name} is "
                f"{gpu.architecture}: use attention sdpa")
    return None
