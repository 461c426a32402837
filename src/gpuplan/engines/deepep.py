"""DeepEP's communication buffers: the GPU memory an engine that dispatches an MoE model's tokens with DeepEP
(``moe_dispatch: deepep`` with expert parallelism: SGLang ``--moe-a2a-backend deepep``, vLLM ``--all2all-backend
deepep_low_latency``) allocates on every GPU beside its weights and KV cache.

A ``deep_ep.Buffer(group, num_nvl_bytes, num_rdma_bytes, low_latency_mode)`` holds ``num_nvl_bytes`` for the
high-throughput ("normal") kernels over NVLink and ``num_rdma_bytes`` in NVSHMEM's symmetric heap for the
low-latency kernels (and for normal kernels across nodes). The sizes are DeepEP's own hints
(deepseek-ai/DeepEP@030cdf0ad453 ``csrc/config.hpp``; the configs of ``deep_ep/buffer.py``
``Buffer.get_dispatch_config`` / ``get_combine_config`` at 04b06f7a299c, ``Buffer.num_sms`` 20)::

    normal, NVLink  = channels x nvl_ranks x (recv_tokens x (hidden_bytes + 8 + 128 x (8 + 4 + 4))
                                              + (2 x rdma_ranks + 3) x 4)
                      (channels = num_sms / 2 = 10; nvl_ranks = min(ep, 8); rdma_ranks = max(ep / 8, 1); recv_tokens:
                      num_max_nvl_chunked_recv_tokens, 256 up to 8 ranks, 288 to 64, 560 at 128; the larger of the
                      dispatch and combine configs; rounded up to 128 B)
    normal, RDMA    = 0 within a node; across nodes channels x rdma_ranks x 2 x (rdma_recv x (hidden_bytes + 8 +
                      2,048 + 16) + (2 x 8 + 2) x 4) + 1 MiB, rdma_recv = 128 rounded up to the send chunk (132-140)
    low latency     = 2 x (send + recv + signal), send = max(T x dispatch_msg, E x T x combine_msg),
                      recv = E x T x max(dispatch_msg, combine_msg), signal = E x 8 + E / ep x 4 (to 128 B);
                      dispatch_msg = 16 + max(2h, h + 4h/128), combine_msg = 4h/128 + 2h  (h: hidden, E: experts,
                      T: num_max_dispatch_tokens_per_rank)

What each engine asks for:

- **SGLang** (``python/sglang/srt/layers/moe/token_dispatcher/deepep.py`` ``DeepEPBuffer.get_deepep_buffer``):
  ``--deepep-mode auto`` (the default) enables both kinds, so ``num_nvl_bytes`` is the normal hint with
  ``hidden_bytes = hidden x params_bytes`` (1 with FP8 dispatch, SGLang's for quantized experts; 2 in BF16) and
  ``num_rdma_bytes`` the larger of the normal and the low-latency hints, at ``T`` =
  ``SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK`` (128, ``sglang/srt/environ.py``); ``num_sms`` is DeepEP's 20
  unless ``--deepep-config`` says otherwise. SGLang allocates the buffer at the first dispatch, after its KV pool:
  it comes out of the reserve that ``mem_fraction_static`` leaves.
- **vLLM** (``vllm/distributed/device_communicators/all2all.py`` ``DeepEPLLAll2AllManager._make_all2all_kwargs``):
  ``num_nvl_bytes = VLLM_DEEPEP_BUFFER_SIZE_MB`` (1,024 MiB, ``vllm/envs.py``) and the low-latency hint at ``T`` =
  ``VLLM_MOE_DP_CHUNK_SIZE`` (256 tokens a DP rank dispatches at once). The buffer is allocated when the model is
  set up, outside torch's allocator: the profiling counts it as non-torch memory, so the KV pool shrinks by it.

Not counted: NVSHMEM's own bookkeeping and its heap's rounding, and TensorRT-LLM's all-to-all workspace (its own
kernels, not DeepEP's).
"""

from __future__ import annotations

import math

from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors.state import weight_format

NUM_SMS = 20  # deep_ep/buffer.py Buffer.num_sms
NVL_PEERS = 8  # NUM_MAX_NVL_PEERS: GPUs a node's NVLink domain holds
MAX_TOPK = MAX_SCALES = 128  # csrc/config.hpp kNumMaxTopK, kNumMaxScales
SOURCE_META_BYTES = 8  # internode::get_source_meta_bytes(): SourceMeta's two ints
SGLANG_DISPATCH_TOKENS = 128  # SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK
VLLM_DISPATCH_TOKENS = 256  # VLLM_MOE_DP_CHUNK_SIZE
VLLM_NVL_BYTES = 1024 * 2**20  # VLLM_DEEPEP_BUFFER_SIZE_MB
# ranks: (NVLink receive tokens, RDMA receive tokens) of Buffer.get_dispatch_config / get_combine_config, the larger
# of the two: the NVLink chunk is the same in both; the RDMA one is 128 rounded up to each config's send chunk (Config's
# constructor), e.g. 140 at 16 ranks (send chunks 20 and 28); no RDMA within a node
CONFIGS = {2: (256, 0), 4: (256, 0), 8: (256, 0), 16: (288, 140), 24: (288, 140), 32: (288, 140), 64: (288, 140),
           128: (560, 132), 144: (720, 132), 160: (720, 132)}


def _round(n: float, to: int = 128) -> int:
    return int(math.ceil(n / to) * to)


def normal_bytes(hidden_bytes: int, ranks: int) -> tuple[int, int]:
    """(num_nvl_bytes, num_rdma_bytes) of DeepEP's normal kernels at ``ranks`` (module docstring); an EP size its
    tables lack takes the next one up."""
    recv, rdma_recv = CONFIGS[min((r for r in CONFIGS if r >= ranks), default=max(CONFIGS))]
    channels, nvl = NUM_SMS // 2, min(ranks, NVL_PEERS)
    rdma_ranks = max(ranks // NVL_PEERS, 1)
    per_token = hidden_bytes + SOURCE_META_BYTES + MAX_TOPK * (8 + 4) + MAX_SCALES * 4
    nvl_bytes = _round(channels * nvl * (recv * per_token + (2 * rdma_ranks + 3) * 4))
    if ranks <= NVL_PEERS:
        return nvl_bytes, 0
    rdma = channels * rdma_ranks * 2 * (rdma_recv * (per_token + 16) + (2 * NVL_PEERS + 2) * 4)
    return nvl_bytes, _round(rdma + 2**20)


def low_latency_bytes(tokens: int, hidden: int, ranks: int, experts: int) -> int:
    """``Buffer.get_low_latency_rdma_size_hint(tokens, hidden, ranks, experts)`` (``LowLatencyLayout``: two
    symmetric odd/even send, receive and signalling buffers, BF16 messages with FP8 scales)."""
    scales = hidden // 128
    dispatch = 16 + max(2 * hidden, hidden + 4 * scales)
    combine = 4 * scales + 2 * hidden
    send = max(tokens * dispatch, experts * tokens * combine)
    recv = experts * tokens * max(dispatch, combine)
    signal = _round(experts * 8 + experts // ranks * 4)
    return _round(2 * (send + recv + signal))


def buffer_bytes(s: Scenario, m: ModelSpec) -> int:
    """Bytes of DeepEP buffers on each GPU of ``s`` (0: the engine does not run DeepEP for it)."""
    if s.ep <= 1 or s.moe_dispatch != "deepep" or not m.num_experts or s.engine not in ("sglang", "vllm"):
        return 0
    if s.engine == "vllm":
        return VLLM_NVL_BYTES + low_latency_bytes(VLLM_DISPATCH_TOKENS, m.hidden_size, s.ep, m.num_experts)
    fmt, _ = weight_format(s, m)
    nvl, rdma = normal_bytes(m.hidden_size * (1 if fmt.name != "none" else 2), s.ep)
    return nvl + max(rdma, low_latency_bytes(SGLANG_DISPATCH_TOKENS, m.hidden_size, s.ep, m.num_experts))


def label(s: Scenario) -> str:
    """The memory line's name."""
    mode = "low latency" if s.engine == "vllm" else "--deepep-mode auto"
    return f"DeepEP buffers (EP {s.ep}, {mode})"
