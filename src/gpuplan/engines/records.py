"""The records an engine profile answers with: its KV pool (:class:`KvPool`), its host loop between steps
(:class:`HostLoop`) and how the speed model times its steps (:class:`Timing`). They live apart from the profile's
base class (:mod:`.base`) so that a plan no engine serves (training) does not make their classes
(bench/results/startup.md, session 10).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class KvPool:
    """KV tokens and concurrent requests of one serving scenario's pool: the one answer estimate, recommend,
    capacity, launch and the web page read, so that one scenario shows the same numbers everywhere.

    ``max_concurrency`` counts whole requests of ``prompt_tokens + output_tokens`` the pool holds at once (a
    shared prefix the engine caches held once beside them); ``kv_tokens`` the tokens of such requests the pool
    holds; ``logged_tokens`` what the engine's own log prints at its maximum length."""

    engine: str
    pool_gib: float
    request_tokens: int  # one request: prompt + output
    max_concurrency: int  # whole requests of request_tokens the pool holds at once
    kv_tokens: int  # tokens of such requests the pool holds at once
    logged_tokens: int  # what the engine logs at its max_model_len (vLLM "GPU KV cache size", SGLang #tokens)
    max_model_len: int
    sim_blocks: int  # 16-token blocks a scheduler simulation gives the pool (requests of this length fill it alike)


@dataclass(frozen=True, kw_only=True)
class HostLoop:
    """An engine's host loop between GPU steps: its cost per step and per scheduled sequence, whether it runs
    beside the GPU's step (vLLM's async scheduling, SGLang's overlap scheduler), the prompt tokens one step
    prefills (chunked prefill; None: a burst of prompts is prefilled at once), each request's latency outside the
    steps (HTTP, tokenizing, detokenizing), and what each tensor-parallel all-reduce costs it beyond the link's
    latency. Of ``request_s``, ``frontend_s`` is work one process does for one request at a time (the API server's
    event loop: requests wait for it in turn, :mod:`gpuplan.serving.simulate`), and that process also spends
    ``frontend_token_s`` on each output token it streams and ``frontend_prompt_token_s`` on each prompt token it
    tokenizes (beside ``request_s``: a long prompt's tokenizing is not in the per-request figures)."""

    step_s: float
    seq_s: float = 0.0
    request_s: float = 0.0
    frontend_s: float = 0.0
    frontend_token_s: float = 0.0
    frontend_prompt_token_s: float = 0.0
    overlapped: bool = False
    chunk_tokens: int | None = None
    all_reduce_s: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Timing:
    """How the speed model times an engine's steps (:mod:`gpuplan.speed.inference`).

    ``eager``: every op launched from Python (transformers' ``generate``: the host's launch time, unfused
    element-wise traffic, explicit sliding-window masks); ``graphs``: CUDA-graph replay with fused element-wise
    kernels (vLLM's V1 engine); ``packed_linears``: the projections vLLM packs run as one GEMM;
    ``streaming_bandwidth``: weights and KV read at the card's measured kernel bandwidth (the kernels vLLM's
    per-operation profiles time); ``loop``: the host loop (None: the eager Python host); ``kernels``: a local
    engine's kernels, ``ggml-cuda`` or ``ggml-metal`` (llama.cpp, :mod:`gpuplan.speed.ggml`: prompts by
    micro-batch and kernel, generation on Metal from the unified memory's bandwidth) or ``mlx``
    (:mod:`gpuplan.speed.mlx`); ``note``: what the timing borrows, said in the plan's assumptions; ``gpu_scale``:
    the decode step's GPU work over the CUDA-calibrated time (the ROCm builds on AMD: :mod:`.rocm`).

    ``graph_max_batch``: the largest decode batch the engine replays as a CUDA graph by default (vLLM's largest
    capture size, SGLang's ``cuda_graph_max_bs``; 0: no cap known); a larger batch runs its kernels launched one by
    one from the host. ``grouped_experts``: routed experts as one grouped GEMM at the GEMM model's achievable rate
    (TensorRT-LLM's fused MoE). ``context_attention_speedup``: the engine's prompt attention against gpuplan's
    FlashAttention figure (TensorRT-LLM's context FMHA). ``layer_kernels``: the non-GEMM kernels of one MLA + MoE
    decoder layer as the engine launches them (0: the generic count, :meth:`gpuplan.speed.inference.StepTimer.
    _kernels_per_layer`); ``fused_all_reduce``: each tensor-parallel all-reduce runs as one kernel with the residual
    add and RMSNorm after it (FlashInfer's one-shot all-reduce fusion, :data:`gpuplan.overheads.FUSED_ALL_REDUCE_S`),
    not a ring call plus the engine's own cost. ``shared_experts_stream``: a decode graph runs an MoE layer's shared
    experts on a second stream beside its routed ones, which hides their kernels' fixed time
    (:func:`gpuplan.engines.sglang.shared_experts_stream`, :func:`gpuplan.engines.trtllm.shared_experts_stream`).
    ``launch_s``, ``eager_prompts`` and ``eager_steps``: how a step
    without its CUDA graph pays its launches (:meth:`gpuplan.speed.inference.StepTimer.launch_host_s`);
    ``prefill_graph_tokens`` and ``prefill_graph_s``: prompt steps replayed as graphs instead, and what each adds
    (:func:`gpuplan.engines.sglang.prefill_graphs`). ``fp8_kv_rate``, ``expert_layer_s`` and ``ssm_state_bps``: decode
    costs that are not the bytes' rate (vLLM on Hopper and datacenter Blackwell:
    :func:`gpuplan.engines.vllm.measured_kernels`)."""

    eager: bool = False
    graphs: bool = False
    graph_max_batch: int = 0
    grouped_experts: bool = False
    context_attention_speedup: float = 1.0
    # the fused kernel class (gpuplan.stacks.attention) of the engine's prompt attention where its forward is timed
    # at its own measured rate on the card (speed/work.py attention_fraction, forward); "": the generation's fraction
    prompt_attention: str = ""
    # in a step that holds a prompt, the query rows the attention kernel runs for each decoding sequence, every query
    # head apart, over its whole context, at the prompt attention's rate per (query, key) pair (vLLM V1's
    # FlashAttention-2: engines/vllm.py mixed_decode_rows); 0: a decode's attention is its cache's bytes
    mixed_decode_rows: int = 0
    layer_kernels: int = 0
    fused_all_reduce: bool = False
    shared_experts_stream: bool = False
    packed_linears: bool = False
    streaming_bandwidth: bool = False
    loop: HostLoop | None = None
    kernels: str = ""
    note: str = ""
    gpu_scale: float = 1.0  # the decode step's GPU work over the CUDA-calibrated time (ROCm builds: .rocm)
    # host seconds per kernel a step launches outside a CUDA graph (0: the launched-kernel floor,
    # overheads.GEMM_KERNEL_LATENCY_S); SGLang and TensorRT-LLM launch them from their eager Python modules, vLLM V1
    # from its compiled model's Python wrapper (overheads.VLLM_EAGER_LAUNCH_S)
    launch_s: float = 0.0
    # a step that holds a prompt runs without a CUDA graph whatever its size, decode-only steps replay one
    # (TensorRT-LLM's PyTorch backend: ScheduledRequests.can_run_cuda_graph)
    eager_prompts: bool = False
    # every step runs without a CUDA graph, a decode of one sequence too (vLLM --enforce-eager: vllm/config/vllm.py
    # sets cudagraph_mode NONE): each launches its kernels at launch_s
    eager_steps: bool = False
    # an fp8 KV cache read at this share of the 16-bit cache's rate at decode (vLLM: FlashAttention-3, FlashInfer)
    fp8_kv_rate: float = 1.0
    # GPU seconds per routed-expert layer and decode step beyond the experts' bytes (vLLM's MXFP4 MoE layers)
    expert_layer_s: float = 0.0
    # a prompt's GPU work other than attention over gpuplan's figure (SGLang's first DeepSeek releases: their
    # unfused prompt path, engines/sglang.py early_deepseek); the step model scales the prompt tokens' share by it
    prompt_scale: float = 1.0
    # share of gpuplan's fast-accumulating fp8 GEMM rate the engine's block-scaled fp8 kernels reach for a
    # block-scaled checkpoint's linears and for its routed experts (engines/block_fp8.py: Triton, DeepGEMM); 0: the
    # weights are not served through such kernels (the scenario's dtype)
    block_fp8_share: float = 0.0
    block_fp8_expert_share: float = 0.0
    # times a decode step streams each cached token (SGLang's triton MLA decode: once per block of 16 query heads,
    # engines/sglang.py triton_mla_decode)
    kv_reads: int = 1
    # bytes/s at which a decode step moves Mamba-2's SSM states (0: the streaming bandwidth; vLLM's Triton
    # selective_state_update under its launch heuristic)
    ssm_state_bps: float = 0.0
    # the largest prompt step the engine replays as prefill CUDA graphs, which launches none of its kernels from the
    # host (SGLang's piecewise graphs from 0.5.10); 0: none
    prefill_graph_tokens: int = 0
    # GPU seconds each such step adds whatever its size (SGLang 0.5.10-0.5.12's whole-pool cast: engines/sglang.py
    # prefill_graphs)
    prefill_graph_s: float = 0.0
