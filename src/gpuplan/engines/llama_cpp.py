"""llama.cpp's buffers as its load log prints them: model (GPU), KV and compute (``llama_context``).

- **Model buffer**: the GGUF tensors of the offloaded layers and the output head; the token embedding stays in
  host memory (``src/llama-model.cpp`` ``load_tensors``: ``tok_embd`` is created on the input buffer type, the
  CPU, because ``get_rows`` runs there); a tied output is created as a duplicate of it on the GPU
  (``TENSOR_DUPLICATED``), so the tensor is both in host memory and in the GPU buffer (Llama-3.2-3B Q4_K_M:
  1,918.35 MiB on the GPU, the whole file, and 308.23 MiB mapped on the host).
- **KV buffer**: f16 K and V for ``n_ctx`` cells, each slot's share padded to 256 cells
  (:data:`gpuplan.overheads.LLAMA_CPP_CTX_PAD`) (``--cache-type-k/v``; q8_0 is 8.5 bits), sliding-window layers
  capped at their window only for architectures whose ``llama_model`` builds an SWA cache (``LLAMA_SWA_TYPE``:
  Gemma 2/3, Mistral-style sliding windows, gpt-oss).
- **Compute buffer**: the graph allocator (``ggml-alloc.c``) reuses memory across the graph's stages, so the
  buffer is the largest live set at ``n_ubatch`` tokens, not a sum: the fp32 logits ``n_ubatch x vocab`` at the
  output, and without flash attention the fp32 ``KQ`` scores ``n_ubatch x n_ctx x heads``, each with a few
  ``n_ubatch x n_embd`` activations, plus the KQ mask the whole graph reads. Flash attention is ``auto`` (on
  where the backend supports it) since ``--flash-attn auto`` became the default.
- **Weights**: GGUF files as llama-quantize writes them, a type per tensor (:mod:`gpuplan.model.gguf`).
"""

from __future__ import annotations

import bisect
import math

from .. import overheads as oh
from ..hardware import GpuSpec, short_id
from ..model import gguf
from ..model.quant import Format
from ..model.spec import ModelSpec
from ..result import MemoryReport
from ..scenario import Scenario
from ..tensors.breakdown import GIB, Estimate
from .base import Engine
from .records import HostLoop, Timing

# families whose windowed layers llama.cpp caches in a second, window-sized cache (llama_kv_cache_iswa; Llama 4's
# chunked attention is its LLAMA_SWA_TYPE_CHUNKED)
SWA_FAMILIES = frozenset({"gemma2", "gemma3", "gemma3_text", "mistral", "gpt_oss", "cohere2", "llama4",
                          "llama4_text"})


def kv_bytes(s: Scenario, m: ModelSpec, n_ctx: int, seqs: int) -> float:
    """KV cache bytes for ``seqs`` sequences of ``n_ctx`` cells (f16, or q8_0 with an 8-bit KV dtype), plus the
    recurrent states of linear-attention and Mamba layers, one per sequence in f32 (``llama_memory_recurrent``
    with ``type_r``/``type_s`` GGML_TYPE_F32)."""
    per, swa, state = LLAMA_CPP.kv_element_bytes(s), LLAMA_CPP.caps_windows(m), LLAMA_CPP.state_element_bytes(s)
    return seqs * sum(layer.kv_dims * per * (min(n_ctx, layer.window) if layer.window and swa else n_ctx)
                      + state * layer.state_elements for layer in m.layers)


def compute_buffer(s: Scenario, m: ModelSpec, n_ctx: int, seqs: int) -> float:
    """The largest live set of one ``n_ubatch`` graph over all ``n_ctx x seqs`` KV cells (see the module
    docstring): at the output, the fp32 logits ``n_ubatch x vocab`` and five ``n_ubatch x n_embd`` activations;
    without flash attention, in each layer, the fp32 scores ``n_kv x n_ubatch x heads`` and four activations; and
    the KQ mask for the whole graph (f16 with flash attention, f32 without: ``ggml_soft_max_ext`` takes f32)."""
    ub = s.ubatch_tokens or oh.LLAMA_CPP_UBATCH
    cells = n_ctx * seqs
    act = 4.0 * ub * m.embedding_dim
    pad = math.ceil(ub / oh.LLAMA_CPP_KQ_MASK_PAD) * oh.LLAMA_CPP_KQ_MASK_PAD
    flash = s.flash_attention != "off"
    mask = cells * pad * (2.0 if flash else 4.0)
    output = 4.0 * ub * m.vocab_size + oh.LLAMA_CPP_OUTPUT_STAGE_ACTIVATIONS * act
    if flash:
        return output + mask
    scores = 4.0 * cells * ub * m.num_heads + oh.LLAMA_CPP_KQ_STAGE_ACTIVATIONS * act
    return max(output, scores) + mask


def slot_cells(s: Scenario) -> int:
    """The KV cells llama-server gives each of the ``batch_size`` slots: the request's tokens padded up to
    :data:`~gpuplan.overheads.LLAMA_CPP_CTX_PAD` (a 100-token request holds 256 cells)."""
    pad = oh.LLAMA_CPP_CTX_PAD
    return math.ceil((s.prompt_tokens + s.output_tokens) / pad) * pad


def gpu_embedding_bytes(m: ModelSpec, fmt: Format) -> float:
    """What the GPU holds of the embeddings (all of which are mapped in host memory): a tied output's duplicate of
    ``token_embd`` alone (``vocab x n_embd`` in a file of ``fmt``), nothing when the output is a tensor of its own."""
    if not m.tie_word_embeddings:
        return 0.0
    if fmt.name.startswith("gguf-"):
        return gguf.token_embedding_bytes(m, fmt.name[5:])
    return fmt.embedding_bytes(m.vocab_size * m.embedding_dim)


def llama_cpp_memory(s: Scenario, m: ModelSpec, e: Estimate, fmt: Format, capacity_gib: float | None) -> Estimate:
    tokens = slot_cells(s)
    parts = m.weight_bytes(fmt)
    # token_embd, learned positions (pos_embd) and Gemma 3n/4's per_layer_token_embd are LLM_TENSOR_LAYER_INPUT
    # tensors read by GET_ROWS (llama-arch.cpp LLM_TENSOR_INFOS): mapped in host memory whether or not the output
    # is tied
    host_embedding = parts["embeddings"]
    n = s.tp * s.pp  # GPUs the layers are split over; ``e.weights`` arrives as the whole model's share of one
    whole = e.weights * n
    whole -= host_embedding - gpu_embedding_bytes(m, fmt)  # tied: the output's duplicate of token_embd stays
    e.weights = whole / n
    e.cpu += host_embedding
    kv_whole = kv_bytes(s, m, tokens, s.batch_size)
    e.kv_cache = kv_whole / n
    e.activations = compute_buffer(s, m, tokens, s.batch_size)
    e.peak_phase = "prefill"
    e.assumptions.append(f"llama.cpp: token embedding in host memory ({host_embedding / GIB:.2f} GiB), compute "
                         f"buffer at n_ubatch {s.ubatch_tokens or oh.LLAMA_CPP_UBATCH}, flash attention "
                         f"{s.flash_attention}")
    e.extra["engine"] = {"engine": "llama.cpp", "model_buffer_gib": e.weights / GIB, "kv_buffer_gib":
                         e.kv_cache / GIB, "compute_buffer_gib": e.activations / GIB,
                         "host_model_buffer_gib": host_embedding / GIB}
    if s.tensor_split or s.extra_gpus:
        return _split_device(s, m, e, parts["lm_head"] + parts["norms"], whole, kv_whole)
    if capacity_gib is not None:
        # what the device peak will count: context and cuBLAS outside, the allocator's slack on top of the tensors
        budget = (capacity_gib - oh.CUDA_CONTEXT_DEFAULT_GIB - oh.CUBLAS_WORKSPACE_GIB) * GIB / (1 + e.slack) \
            - e.activations
        head = parts["lm_head"] + parts["norms"]
        per_layer_w = (whole - head) / m.num_layers
        per_layer = per_layer_w + kv_whole / m.num_layers
        # each of the n GPUs takes its share of layers; the head, on one of them, is counted on each (the fullest)
        fit = n * int(max(budget - head, 0) // per_layer) if per_layer else m.num_layers
        e.extra["gpu_layers"] = min(fit, m.num_layers)
        e.extra["offloaded_layers"] = offloaded = m.num_layers - e.extra["gpu_layers"]
        if offloaded:  # those layers' weights and KV live in system RAM and run on the CPU (slow, but it runs)
            held = offloaded * per_layer
            e.cpu += held
            e.weights -= offloaded * per_layer_w / n
            e.kv_cache -= offloaded * kv_whole / m.num_layers / n
            e.assumptions.append(f"llama.cpp keeps {offloaded} of {m.num_layers} layers ({held / GIB:.1f} GiB) in "
                                 "system RAM and runs them on the CPU: it runs, at the RAM's speed")
    return e


def split_layers(split: list[float], n_layer: int) -> tuple[list[int], int]:
    """The layers each device of a ``--tensor-split`` holds, in llama.cpp's device order, and the device of the
    output head, every layer offloaded (ggml-org/llama.cpp src/llama-model.cpp ``llama_model::load_tensors``):
    ``splits`` are the cumulative fractions of ``tensor_split``; with ``n_gpu_layers`` at all (-1, or more than
    ``n_layer + 1``) ``i_gpu_start`` is 0 and ``act_gpu_layers = n_layer + 1``; repeating layer ``il`` goes to
    ``upper_bound(splits, il / act_gpu_layers)`` and the output to ``get_layer_buft_list(n_layer)``'s device (the
    last one, unless its share is under ``1 / (n_layer + 1)``); the input layer (``token_embd``) stays on the CPU.
    Qwen3-14B's 40 layers at 23.88,23.88,15.92: layers 0-15 (il / 41 < 0.375), 16-30, 31-39, the head on the
    third: 16/15/9."""
    total, running, cumulative = sum(split), 0.0, []
    for share in split:
        running += share
        cumulative.append(running / total)

    def device(il: int) -> int:
        return min(bisect.bisect_right(cumulative, il / (n_layer + 1)), len(split) - 1)

    layers = [0] * len(split)
    for il in range(n_layer):
        layers[device(il)] += 1
    return layers, device(n_layer)


def device_layers(s: Scenario, n_layer: int) -> tuple[int, bool]:
    """The layers the scenario's ``gpu`` holds in a split and whether it holds the output head: its place
    ``_split_device`` in llama.cpp's order, whose shares are ``tensor_split`` with ``gpu``'s first share put back at
    that place (equal shares when none is given): :func:`split_layers`."""
    split = s.tensor_split or [1.0] * (1 + len(s.extra_gpus or ()) if s.extra_gpus else s.num_gpus)
    i = min(s._split_device, len(split) - 1)
    order = [*split[1:i + 1], split[0], *split[i + 1:]]
    layers, head = split_layers(order, n_layer)
    return layers[i], head == i


def _split_device(s: Scenario, m: ModelSpec, e: Estimate, head: float, whole: float, kv_whole: float) -> Estimate:
    """One device of a ``--tensor-split`` run, the scenario's ``gpu``: the layers llama.cpp places on it
    (:func:`device_layers`) with their KV cells, the output head where llama.cpp puts it (the last device), and a
    compute buffer of its own on every device. Every layer is on a GPU: CPU layers are not modelled with a split."""
    layers, holds_head = device_layers(s, m.num_layers)
    share = layers / m.num_layers
    e.weights = (whole - head) * share + (head if holds_head else 0.0)
    e.kv_cache = kv_whole * share
    e.extra["gpu_layers"], e.extra["offloaded_layers"] = m.num_layers, 0
    e.extra["engine"] = {**e.extra["engine"], "model_buffer_gib": e.weights / GIB, "kv_buffer_gib": e.kv_cache / GIB,
                         "device_layers": layers, "device_share": share}
    e.assumptions.append(f"llama.cpp --tensor-split: {short_id(s.gpu)} holds {layers} of {m.num_layers} layers "
                         f"({share:.0%}) and their KV cache, a compute buffer of its own"
                         + (" and the output head" if holds_head else ", without the output head")
                         + " (src/llama-model.cpp load_tensors)")
    return e


class LlamaCpp(Engine):
    """llama.cpp (``llama-server``): GGUF files, the layers that fit on the GPU and the rest run from system RAM on
    the CPU (module docstring); a C++ loop per token."""

    name = label = "llama.cpp"
    no_chunked_prefill = "it always splits a prompt into --ubatch-size micro-batches"
    layer_split_words = "llama.cpp --split-mode layer"
    launch_target = "llama.cpp"
    kv_dtypes = ("auto", "fp16", "bf16", "int8")
    loads_quants = False
    tensor_parallel = False
    offloads_layers = True
    splits_by_share = True
    host_embedding = True
    metal = True

    def kv_element_bytes(self, s: Scenario) -> float:
        """f16 cells, or q8_0 (8.5 bits: a 16-bit scale per 32 values) with an 8-bit KV dtype."""
        return 2 if s.kv_cache_dtype in ("auto", "fp16", "bf16") else 8.5 / 8

    def kv_heads_share(self, s: Scenario, m: ModelSpec) -> float:
        """Every KV head: it splits layers over the cards, not heads."""
        return 1.0

    def caps_windows(self, m: ModelSpec) -> bool:
        """Only the architectures whose ``llama_model`` builds an SWA cache (:data:`SWA_FAMILIES`)."""
        return m.family in SWA_FAMILIES

    def state_element_bytes(self, s: Scenario) -> float:
        """f32 recurrent states (``llama_memory_recurrent``, ``type_r``/``type_s`` GGML_TYPE_F32)."""
        return 4

    def refusal(self, s: Scenario, m: ModelSpec) -> str | None:
        if s.task == "infer" and s.kv_cache_dtype not in self.kv_dtypes:
            return ("llama.cpp caches keys and values in f16, bf16 or integer blocks (q8_0, q4_0), not fp8: set "
                    "kv_cache_dtype int8 (--cache-type-k/v q8_0)")
        if s.quant and not s.quant.startswith("gguf-") and s.quant != "none":
            return (f"llama.cpp runs GGUF files: set quant to a gguf type (gguf-q4_k_m, gguf-q8_0...), not "
                    f"{s.quant!r}")
        return None

    def card_refusal(self, s: Scenario, gpu: GpuSpec) -> str | None:
        """ggml has no backend for Intel's Gaudi (README.md "Supported backends": Metal, CUDA, HIP, SYCL for Intel's
        and NVIDIA's GPUs, Vulkan, MUSA, CANN, OpenCL for Adreno, zDNN; no HPU), so neither its kernels nor their
        timing (:mod:`gpuplan.speed.ggml`, from SM counts Gaudi has none of) apply."""
        if gpu.generation == "Gaudi":
            return (f"llama.cpp has no backend for Intel Gaudi (its backends: CUDA, HIP, Metal, SYCL for Intel's GPUs, "
                    f"Vulkan...), so it does not run on {gpu.name}: serve it with engine vllm (vllm-gaudi)")
        return super().card_refusal(s, gpu)

    def memory(self, s: Scenario, m: ModelSpec, e: Estimate, fmt: Format, gpu: GpuSpec | None,
               capacity_gib: float | None) -> Estimate:
        return llama_cpp_memory(s, m, e, fmt, capacity_gib)

    def fits(self, s: Scenario, report: MemoryReport, capacity_gib: float) -> bool:
        """It places what fits and runs the rest on the CPU: that fits only when asked (``cpu_layers``)."""
        return report.device_peak_gib <= capacity_gib and (s.cpu_layers or not report.offloaded_layers)

    def timing(self, s: Scenario, m: ModelSpec, gpu: GpuSpec) -> Timing:
        """Its C++ loop: sampling, graph build and launch per token; a burst of prompts prefilled at once; ggml's
        kernels, Metal's on Apple silicon and CUDA's elsewhere (:mod:`gpuplan.speed.ggml`)."""
        return Timing(loop=HostLoop(step_s=oh.LLAMA_CPP_STEP_OVERHEAD_S),
                      kernels="ggml-metal" if gpu.vendor == "Apple" else "ggml-cuda")


LLAMA_CPP = LlamaCpp()
