"""Inference time from the work of each step: reusable primitives, and the speed of a scenario built on them.

The primitives (:class:`StepTimer`, built once per scenario x GPU x network by :func:`step_timer`) answer in
microseconds and are what a serving scheduler calls per iteration:

- ``timer.prefill_s(tokens, context=0)``: run ``tokens`` new prompt tokens (one sequence, or several summed)
  after ``context`` cached ones: every linear at the GEMM efficiency of ``tokens`` rows, causal attention,
  element-wise traffic, two TP all-reduces per layer, the engine's per-step cost;
- ``timer.decode_s(batch, context)``: one decode iteration of ``batch`` sequences holding ``context`` tokens
  each: the linears read every weight once (GEMMs of ``batch`` rows, so a roofline between weight traffic and
  compute), routed experts only those the batch touches, the whole KV cache is read (the step grows with the
  context), per-layer latency floors (kernel latency, TP all-reduces, MoE dispatch) and the host: eager
  transformers launches every op from Python, vLLM and llama.cpp replay CUDA graphs but run an engine loop;
- ``timer.ttft_s(prompt_tokens)``: the engine's prefill of one request alone; ``timer.burst_ttft_s(prompt_tokens,
  n)``: of the last of ``n`` prompts arriving at once (vLLM prefills them in chunks of ``max_num_batched_tokens``);
  ``timer.request_s``: the engine's latency per request outside its steps, which a user's TTFT adds to them;
- :func:`serving_rates`: continuous batching in steady state (vLLM/TGI-like): requests/s, output tokens/s and
  each user's tokens/s at a concurrency.

Layers split over GPUs by pipeline stages run one after another for one request (transformers'
``device_map="auto"`` is not a pipeline): the time is the sum over stages. llama.cpp layers that do not fit
run on the CPU at system-memory bandwidth; prompt batches of 32+ tokens copy those weights to the GPU over PCIe
(ggml's op offload).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import overheads as oh
from ..engines import engine_for, speculative
from ..engines.records import Timing
from ..engines.speculative import Draft
from ..hardware import GpuSpec, Network
from ..memory import inference_memory
from ..model import gguf
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors.kv import kv_bytes_per_sequence
from ..tensors.layout import replicated
from ..tensors.state import attention_kernel, weight_format
from . import ggml, mlx
from .bands import decode_band, uncalibrated_words
from .breakdown import Speed
from .comms import DataParallel, Link, all_reduce_s, inter_node_link, intra_node_link
from .experts import expanded_rows_s, experts_s, fused_moe_s, layout_comms_s, mla_absorbed_s, rank_share
from .flops import compute_dtype
from .gemm import bandwidth, gemm_time_s, peak_flops, streaming_bandwidth
from .work import (
    attention_s,
    eager_ops_per_layer,
    elementwise_s,
    expert_loop_s,
    experts_hit,
    lm_head_s,
    recurrent_scans_s,
    smooth_max,
    ssm_state_bytes,
)


@dataclass(frozen=True, kw_only=True)
class StepTimer:
    """Step-time primitives of one serving setup (see the module docstring). Build with :func:`step_timer`."""

    s: Scenario
    m: ModelSpec
    gpu: GpuSpec
    link: Link
    dtype: str
    weight_bytes_per_param: float  # of the quantized linears as stored (dequantized in the GEMM's read)
    skip: tuple[str, ...]
    kernel: str
    cpu_layer_share: float  # llama.cpp: share of the decoder layers held in system RAM
    timing: Timing  # how the engine's steps are timed (its profile: gpuplan.engines)
    # routed experts at decode as one grouped GEMM at the GEMM model's achievable rate (TensorRT-LLM's fused MoE,
    # serving/offline.py); False: the bandwidth / datasheet-peak roofline the vLLM calibration used
    grouped_experts: bool = False
    cached_prefix: int = 0  # shared-prefix tokens later requests find cached (the engine's prefix cache)
    draft: Draft | None = None  # speculative decoding's draft (gpuplan.engines.speculative), None without
    draft_timer: StepTimer | None = None  # times one pass of the draft's own layers (None: drafted on the CPU)
    inter: Link | None = None  # a copy of the model across nodes: each GPU's share of the node's network

    @property
    def other_dtype(self) -> str:
        """The dtype of attention and the output head: fp8 under nvfp4 linears (TensorRT-LLM keeps both out of
        fp4), else the linears' own."""
        return "fp8" if self.dtype == "fp4" else self.dtype

    def linear_dtype(self, lin) -> str:
        """The dtype ``lin``'s GEMM runs in: the quantized linears' own, the 16-bit one for the linears a checkpoint
        keeps unquantized (:meth:`~gpuplan.model.layers.Linear.kept`: NVIDIA's DeepSeek-R1-FP4 runs its attention
        and router GEMMs in bf16, TensorRT-LLM tech blog 1, "Precision Strategy")."""
        if lin.kept(self.skip) and self.dtype in ("fp8", "fp4"):
            return "bf16" if self.gpu.supports_dtype("bf16") else "fp16"
        return "fp8" if self._block_fp8(lin) else self.dtype

    def _block_fp8(self, lin) -> bool:
        """Whether ``lin`` runs through the engine's block-scaled fp8 kernels (w8a8: the checkpoint's fp8 weights
        and the activations quantized per group of 128, :attr:`~gpuplan.engines.records.Timing.block_fp8_share`,
        :mod:`gpuplan.engines.block_fp8`): every linear the checkpoint stores in fp8 but the router's."""
        return (self.timing.block_fp8_share > 0 and not lin.kept(self.skip) and lin.group != "router"
                and self.gpu.supports_dtype("fp8"))

    def kernel_share(self, lin) -> float:
        """The share of the fp8 GEMM rate ``lin``'s kernel reaches: the engine's block-scaled fp8 kernels' (the
        routed experts' own, :attr:`~gpuplan.engines.records.Timing.block_fp8_expert_share`, the other linears'
        :attr:`~gpuplan.engines.records.Timing.block_fp8_share`), else 1."""
        if not self._block_fp8(lin):
            return 1.0
        return self.timing.block_fp8_expert_share if lin.group == "experts" else self.timing.block_fp8_share

    @property
    def request_s(self) -> float:
        """The engine's latency per request outside its steps (:attr:`~gpuplan.engines.records.HostLoop.request_s`:
        its API server's HTTP, tokenizing and streaming; 0 for engines timed without one): a user's TTFT and
        end-to-end latency add it once, but it overlaps other requests' steps, so no step or cycle holds it."""
        return self.timing.loop.request_s if self.timing.loop else 0.0

    @property
    def frontend(self) -> tuple[float, float, float]:
        """The part of :attr:`request_s` one process serves for one request at a time, what that process spends
        per output token streamed and per prompt token tokenized (:attr:`~gpuplan.engines.records.HostLoop.frontend_s`,
        ``frontend_token_s``, ``frontend_prompt_token_s``)."""
        loop = self.timing.loop
        return (loop.frontend_s, loop.frontend_token_s, loop.frontend_prompt_token_s) if loop else (0.0, 0.0, 0.0)

    # ---- prefill ----------------------------------------------------------------------------------------
    def prefill_parts(self, tokens: int, *, context: int = 0, seqs: int = 1) -> dict[str, float]:
        """Seconds by kind of work to prefill ``tokens`` new tokens (in ``seqs`` equal sequences)."""
        m, gpu, tp = self.m, self.gpu, self.s.tp
        if tokens <= 0:
            return {}
        if self.timing.kernels:  # llama.cpp (micro-batch by micro-batch, kernel by kernel) and MLX
            local = mlx if self.timing.kernels == "mlx" else ggml
            parts = local.prefill_parts(self, tokens, context=context, seqs=seqs)
            parts["gemm"] += lm_head_s(m, gpu, "fp16", seqs)
            parts["host"] = self.host_s(prefill=True, seqs=seqs, tokens=tokens)
            parts["layer_split_handoffs"] = self._split_handoffs_s(tokens)
            parts.update(self._offload_parts(tokens))
            return {k: v for k, v in parts.items() if v > 0}
        gemm = self._linears_s(tokens, seqs=seqs) + lm_head_s(m, gpu, self.other_dtype, seqs, tp=tp)
        attention = attention_s(m, gpu, self.other_dtype, rank_share(seqs, self.s.attention_ranks),
                                math.ceil(tokens / seqs), kernel=self.kernel, tp=self.s.attention_tp,
                                context=context, masked_windows=self.timing.eager,
                                backend=self.timing.prompt_attention or None, forward=True) \
            / self.timing.context_attention_speedup
        ranks_seqs, seq = rank_share(seqs, self.s.attention_ranks), math.ceil(tokens / seqs)
        scan = recurrent_scans_s(m, gpu, ranks_seqs, seq, tp=self.s.attention_tp)
        parts = {"gemm": gemm, "attention": attention, "ssm_scan": scan, "elementwise": self._elementwise_s(tokens),
                 "tensor_parallel": self._tp_s(tokens), "pipeline_across_nodes": self._node_hops_s(tokens),
                 "fused_moe": fused_moe_s(self, tokens, decode=False)}
        if self.s.attention_dp:  # the MoE layout's gathers and dispatches (speed.experts)
            parts.update(layout_comms_s(self, tokens, seqs, decode=False))
        if self.timing.prompt_scale != 1.0:  # an engine's prompt path beyond gpuplan's figure, all but attention
            parts["unfused_prompt"] = (self.timing.prompt_scale - 1) * (sum(parts.values()) - attention - scan)
        if tokens <= self.timing.prefill_graph_tokens:  # a prompt step replayed as graphs (engines/sglang.py)
            parts["kv_pool_cast"] = self.timing.prefill_graph_s
        parts["kernel_launches"] = self._launches_s(tokens, sum(parts.values()), prompt=True)
        host = self.host_s(prefill=True, seqs=seqs, tokens=tokens)
        parts["host"] = max(host - sum(parts.values()), 0.0) if self.async_host else host
        parts.update(self._offload_parts(tokens))
        return {k: v for k, v in parts.items() if v > 0}

    def _offload_parts(self, tokens: int) -> dict[str, float]:
        """llama.cpp's op offload: CPU-held weights cross PCIe once per micro-batch of a prompt (none on a unified
        machine: the GPU reads them where they are)."""
        if not self.cpu_layer_share or self.timing.kernels == "ggml-metal":
            return {}
        pcie = intra_node_link(self.gpu, Network(intra_node="pcie")).bytes_per_s
        ubatches = math.ceil(tokens / (self.s.ubatch_tokens or oh.LLAMA_CPP_UBATCH))
        return {"cpu_layers_over_pcie": ubatches * self._layer_weight_bytes() * self.cpu_layer_share / pcie}

    def prefill_s(self, tokens: int, *, context: int = 0, seqs: int = 1) -> float:
        """Seconds to prefill ``tokens`` new tokens after ``context`` cached ones."""
        return sum(self.prefill_parts(tokens, context=context, seqs=seqs).values())

    # ---- decode -----------------------------------------------------------------------------------------
    def decode_parts(self, batch: int, context: float, *, queries: int = 1) -> dict[str, float]:
        """Seconds by kind of work of one decode step of ``batch`` sequences of ``context`` tokens each, each with
        ``queries`` new tokens (more than one: the verify step of speculative decoding, :meth:`step_parts`): every
        linear, the logits, element-wise work and collectives run ``batch x queries`` rows; the cache is read once
        per sequence (the attention kernel runs a sequence's queries over its keys together) and the host handles
        ``batch`` sequences."""
        s, m, gpu, tp = self.s, self.m, self.gpu, self.s.tp
        rows = batch * queries
        if self.timing.kernels in ("ggml-metal", "mlx"):  # Apple silicon: the unified memory's bandwidth, per layer
            parts = mlx.decode_parts(self, batch, context) if self.timing.kernels == "mlx" else \
                ggml.metal_decode_parts(s, m, gpu, batch, context, weight_bytes=ggml.streamed_bytes(s, m, batch),
                                        bandwidth_fraction=oh.LLAMA_CPP_METAL_DECODE_BANDWIDTH_FRACTION,
                                        layer_s=oh.LLAMA_CPP_METAL_LAYER_S,
                                        matmul_flops=ggml.metal_flops(gpu, ggml.ftype(s, m)))
            parts["host"] = self.host_s(prefill=False, context=context, seqs=batch)
            return {k: v for k, v in parts.items() if v > 0}
        if self.timing.kernels == "ggml-cuda" and batch <= oh.LLAMA_CPP_MMVQ_MAX_BATCH:
            return self._ggml_cuda_decode_parts(batch, context)
        gpu_share = 1 - self.cpu_layer_share
        linears = self._linears_s(rows, dense_only=True)
        routed = self._experts_decode_s(rows) \
            + self.timing.expert_layer_s * sum(n for layer, n in m.layer_kinds() if layer.moe)
        if self.timing.shared_experts_stream:  # the shared experts' fixed time hides behind the routed ones
            linears -= min(self._shared_experts_latency_s(), routed)
        weights = (linears + routed) * gpu_share
        weights += lm_head_s(m, gpu, self.other_dtype, rows, tp=tp)
        # the cache read in whole 16-token pages, as the kernels the vLLM calibration timed read it; under
        # attention data parallelism the busiest rank's sequences; the serving engines' absorbed MLA decode
        # (FlashMLA and its kin) at its compute floor where all heads of a GPU make it compute-bound
        rank_batch = rank_share(batch, s.attention_ranks)
        kv = rank_batch * (kv_bytes_per_sequence(s, m, int(context), block=oh.VLLM_BLOCK_TOKENS)
                           + self._state_write_bytes) * gpu_share
        mla = mla_absorbed_s(self, rank_batch * queries, context) * gpu_share if self.timing.graphs else 0.0
        # Mamba-2's SSM states, read and written back, at the engine's state-update kernel's own rate where measured
        ssm = 2 * rank_batch * ssm_state_bytes(m, tp=s.attention_tp) * gpu_share \
            if self.timing.ssm_state_bps else 0.0
        kv_s = max((kv - ssm) * self.timing.kv_reads / (self._stream_bps * self.timing.fp8_kv_rate)
                   + (ssm / self.timing.ssm_state_bps if ssm else 0.0), mla)
        kernels = self._kernels_per_layer() * m.num_layers * gpu_share * self._kernel_latency_s
        elementwise = self._elementwise_s(rows) * gpu_share
        if self.timing.gpu_scale != 1.0:  # an engine's ROCm build on AMD (engines.rocm)
            weights, kv_s, kernels, elementwise = (x * self.timing.gpu_scale for x in (weights, kv_s, kernels,
                                                                                       elementwise))
        fused = fused_moe_s(self, rows, decode=True)  # TensorRT-LLM's NVFP4 MoE beside its GEMMs
        gpu_s = weights + kv_s + kernels + elementwise + fused
        parts = {"weights": weights, "kv_cache": kv_s, "kernel_latency": kernels, "elementwise": elementwise,
                 "fused_moe": fused}
        if self.cpu_layer_share:
            parts["cpu_layers"] = self._cpu_layers_s(batch, context)
        # each attention data-parallel rank runs its own scheduler (SGLang's DP workers, vLLM's engine cores)
        host = self.host_s(prefill=False, context=context, seqs=rank_batch)
        parts["tensor_parallel"] = self._tp_s(rows)
        parts["pipeline_across_nodes"] = self._node_hops_s(rows)
        parts["layer_split_handoffs"] = self._split_handoffs_s(rows)
        if s.attention_dp:
            parts.update(layout_comms_s(self, rows, rows, decode=True))
        parts["kernel_launches"] = self._launches_s(rank_batch * queries,  # each rank's graph, captured by tokens
                                                    gpu_s + parts["tensor_parallel"])
        if self.timing.eager:  # the GPU waits on Python unless its kernels are longer
            parts["host"] = smooth_max(gpu_s, host, oh.HOST_GPU_OVERLAP_SHARPNESS) - gpu_s
        elif self.async_host:  # async scheduling: only the host work the GPU step does not cover shows
            parts["host"] = max(host - gpu_s - parts["tensor_parallel"], 0.0)
        else:
            parts["host"] = host
        return {k: v for k, v in parts.items() if v > 0}

    def _cpu_layers_s(self, batch: int, context: float) -> float:
        """llama.cpp's layers held in system RAM, run by the CPU: the weights the step reads (an MoE's routed
        experts only where its tokens reach them: :func:`.ggml.layers_read_share`) and their cache at its
        bandwidth."""
        cpu_bw = oh.CPU_MEMORY_GBS * 1e9 * oh.CPU_BANDWIDTH_FRACTION
        cpu_kv = batch * kv_bytes_per_sequence(self.s, self.m, int(context)) * self.cpu_layer_share
        read = self._layer_weight_bytes() * self.cpu_layer_share * ggml.layers_read_share(self.s, self.m, batch)
        return (read + cpu_kv) / cpu_bw

    def _ggml_cuda_decode_parts(self, batch: int, context: float) -> dict[str, float]:
        """llama.cpp's CUDA decode of at most ``MMVQ_MAX_BATCH_SIZE`` sequences (:func:`.ggml.cuda_decode_parts`:
        the weights streamed by MMVQ and a time per layer under CUDA graphs, no host loop on top), the GPU's share
        of the layers, and the CPU's layers after them."""
        s, m, share = self.s, self.m, 1 - self.cpu_layer_share
        kv = batch * kv_bytes_per_sequence(s, m, int(context))
        parts = {k: v * share for k, v in ggml.cuda_decode_parts(s, m, self.gpu, batch, kv).items()}
        parts["layer_split_handoffs"] = self._split_handoffs_s(batch)
        if self.cpu_layer_share:
            parts["cpu_layers"] = self._cpu_layers_s(batch, context)
        return {k: v for k, v in parts.items() if v > 0}

    @property
    def _state_write_bytes(self) -> float:
        """Bytes of one sequence's recurrent states (Mamba-2, linear attention) a decode step writes back after
        reading them: the update is in place (mamba_ssm ops/triton/selective_state_update.py
        ``_selective_scan_update_kernel`` loads the state and stores the new one; so do vLLM's copy in
        layers/mamba/ops/mamba_ssm.py, its ``causal_conv1d_update`` and the gated delta rule's recurrent kernel,
        fla's ``fused_recurrent_gated_delta_rule_fwd_kernel``, which stores its final state ``ht``), so the state
        moves twice a step where keys and values are only read; 0 for attention-only models."""
        return kv_bytes_per_sequence(self.s, self.m, 0)

    def decode_s(self, batch: int, context: float) -> float:
        """Seconds of one decode step of ``batch`` sequences holding ``context`` tokens each."""
        return sum(self.decode_parts(batch, context).values())

    # ---- the engine's step: plain, or speculative ------------------------------------------------------
    def step_parts(self, batch: int, context: float) -> dict[str, float]:
        """Seconds by kind of work of the decode step the engine runs for ``batch`` sequences of ``context`` tokens:
        the plain step (:meth:`decode_parts`, one token a sequence), or with speculative decoding
        (:mod:`gpuplan.engines.speculative`) the verify step of ``k + 1`` queries a sequence and, as ``draft``, the
        draft's ``k`` passes (:meth:`draft_s`); it yields :attr:`tokens_per_step` tokens a sequence."""
        if self.draft is None:
            return self.decode_parts(batch, context)
        parts = self.decode_parts(batch, context, queries=self.draft.queries)
        parts["draft"] = self.draft_s(batch, context)
        return {k: v for k, v in parts.items() if v > 0}

    @property
    def tokens_per_step(self) -> float:
        """Tokens a decode step yields per sequence: 1, or the draft's mean acceptance length."""
        return self.draft.acceptance if self.draft else 1.0

    def draft_s(self, batch: int, context: float) -> float:
        """The draft's seconds in one step (vLLM ``EagleProposer.propose``, SGLang's draft steps, TensorRT-LLM's
        ``MTPWorker``): a first pass over the ``k + 1`` tokens a sequence the verify step ran, then ``k - 1`` passes of
        one token a sequence, each a decode step of the draft's own layers (:attr:`draft_timer`: an EAGLE head's one
        layer and the logits of its vocabulary, the MTP layers, a draft model) over its cache of ``context``
        tokens; the engine's host loop runs once a step (the target's). Where the engine runs the passes eagerly
        (:attr:`~gpuplan.engines.speculative.Draft.eager`) each takes the longer of its GPU work and its host's
        launches (the layers' kernels and the proposer's ops a pass), and the proposer's ops between syncs a step
        add in full (:data:`~gpuplan.engines.speculative.PROPOSER_FORMS`). 0 for a draft drafted on the CPU (n-gram)."""
        if self.draft_timer is None:
            return 0.0
        d, timer = self.draft, self.draft_timer
        pass_host, step_host = self.draft_host_s()
        passes = ((timer.decode_parts(batch, context, queries=d.queries), 1),
                  (timer.decode_parts(batch, context), d.tokens - 1))
        return sum(n * max(draft_gpu_s(p), pass_host) for p, n in passes) + step_host

    def draft_host_s(self) -> tuple[float, float]:
        """The host's seconds of the draft, a pass and a step: a pass launches the proposer's ops a pass and, where the
        engine runs it eagerly (:attr:`~gpuplan.engines.speculative.Draft.eager`), the draft's layers' kernels
        (:meth:`launch_host_s`); a step runs the proposer's ops between its syncs
        (:attr:`~gpuplan.engines.speculative.Draft.proposer_ops`), each at the engine's host time per launch; (0, 0)
        where the engine's drafting runs no host ops (its passes inside CUDA graphs)."""
        d, timer = self.draft, self.draft_timer
        if timer is None:
            return 0.0, 0.0
        per_op = timer.timing.launch_s or oh.GEMM_KERNEL_LATENCY_S
        step_ops, pass_ops = d.proposer_ops
        layers = timer.launch_host_s() if d.eager else 0.0
        return (layers + pass_ops * per_op if layers or pass_ops else 0.0), step_ops * per_op

    # ---- time to first token -----------------------------------------------------------------------------
    def ttft_s(self, prompt_tokens: int) -> float:
        """Time to first token of one request alone: its prefill (which yields the first token), in the engine's
        chunks where it chunks prompts (:meth:`_chunked_s`); with a shared prefix the engine caches, on a warm
        engine: the tokens after the cached prefix, attending to it."""
        new = prompt_tokens - max(min(self.cached_prefix, prompt_tokens - 1), 0)
        return self._chunked_s(new, new, context=prompt_tokens - new)

    def burst_ttft_s(self, prompt_tokens: int, requests: int) -> float:
        """Time to first token of the last of ``requests`` prompts arriving together: transformers prefills
        them as one batch; vLLM in chunks of ``max_num_batched_tokens`` per iteration, one after another. With a
        cached shared prefix of ``c`` tokens the first prompt is prefilled whole and every later one only its
        ``prompt - c`` tokens after the prefix (vLLM's prefix cache, SGLang's radix cache): ``prompt + (n - 1)
        (prompt - c)`` new tokens, in sequences of ``prompt - c`` attending to ``c`` cached ones."""
        cached = min(self.cached_prefix, prompt_tokens - 1) if requests > 1 else 0
        if cached > 0:
            return self._chunked_s(prompt_tokens + (requests - 1) * (prompt_tokens - cached),
                                   prompt_tokens - cached, context=cached)
        total = prompt_tokens * requests
        if self._chunk is None:
            return self.prefill_s(total, seqs=requests)
        return self._chunked_s(total, prompt_tokens)

    @property
    def _chunk(self) -> int | None:
        """Prompt tokens one step of the engine prefills (None: a burst at once); each attention data-parallel
        rank schedules its own chunk."""
        chunk = self.timing.loop.chunk_tokens if self.timing.loop else None
        return chunk * self.s.attention_ranks if chunk else chunk

    def _chunked_s(self, total: int, per_seq: int, *, context: int = 0) -> float:
        """``total`` prompt tokens in sequences of ``per_seq``, each after ``context`` cached ones, prefilled in
        chunks of the engine's step budget (a burst at once for an engine without chunked prefill). A sequence cut
        by a chunk's end goes on in the next step, attending to its tokens prefilled before (vLLM's
        ``vllm/v1/core/sched/scheduler.py`` ``schedule``: ``num_tokens_with_spec - num_computed_tokens`` cut to the
        token budget; SGLang's ``PrefillAdder`` its ``extend_input_len`` after the chunked prefix): each chunk is
        timed with the mean of those earlier tokens a query of it attends to (:func:`earlier_tokens`; the attention's
        work is linear in it)."""
        chunk = self._chunk or total
        full, rest = divmod(total, chunk)
        seqs_per_chunk = max(chunk / max(per_seq, 1), 1)
        earlier_full, earlier_rest = earlier_tokens(total, per_seq, chunk)
        t = full * self.prefill_s(chunk, seqs=max(int(seqs_per_chunk), 1), context=context + round(earlier_full)) \
            if full else 0.0
        return t + (self.prefill_s(rest, seqs=max(int(rest / per_seq), 1), context=context + round(earlier_rest))
                    if rest else 0.0)

    # ---- pieces -------------------------------------------------------------------------------------------
    def _linears_s(self, tokens: float, *, dense_only: bool = False, seqs: float | None = None) -> float:
        """Every decoder linear for ``tokens`` rows (experts spread over the batch unless ``dense_only``). vLLM
        runs the projections it packs (q, k, v; gate, up; w1, w3) as one GEMM: one kernel latency per pack. Under
        attention data parallelism the attention projections run whole on the busiest rank's share of the
        ``seqs`` sequences (default: one per token, decode); under expert parallelism the experts are
        :func:`~.experts.experts_s`. The attention projections every engine replicates
        (:func:`gpuplan.tensors.layout.replicated`: MLA's down-projections) run whole on every tensor-parallel
        rank."""
        m, gpu, tp = self.m, self.gpu, self.s.tp
        seqs = tokens if seqs is None else seqs
        attention_rows = tokens * rank_share(seqs, self.s.attention_ranks) / seqs if seqs else tokens
        total = experts_s(self, tokens) if self.s.ep > 1 and not dense_only else 0.0
        if not dense_only:  # TensorRT-LLM's fused MoE: the expanded rows around its grouped GEMMs
            total += expanded_rows_s(self, tokens)
        bps = self._stream_bps
        for layer, count in m.layer_kinds():
            packed = self._packed_followers(layer)
            for lin in layer.linears:
                w = 2.0 if lin.kept(self.skip) else self.weight_bytes_per_param
                latency = 0.0 if lin.name in packed else self._kernel_latency_s
                if lin.group == "experts" and lin.count > 1:
                    if dense_only or self.s.ep > 1:
                        continue
                    # the grouped GEMM runs the experts the tokens reach, E (1 - (1 - k/E)^T) of them (uniform
                    # routing; vLLM's fused_moe moe_align_block_size gives an expert no block without tokens):
                    # a short prompt does not read every expert
                    k, e = layer.experts_per_token, lin.count
                    touched = e * (1 - (1 - k / e) ** tokens)
                    total += count * gemm_time_s(gpu, self.linear_dtype(lin), tokens * k / touched, lin.in_features,
                                                 lin.out_features / tp, count=touched, weight_bytes=w, kernels=1,
                                                 latency_s=latency, bandwidth_bps=bps,
                                                 kernel_share=self.kernel_share(lin))
                elif lin.group == "attention":
                    split = 1 if replicated(layer, lin) else self.s.attention_tp
                    total += count * gemm_time_s(gpu, self.linear_dtype(lin), attention_rows, lin.in_features,
                                                 lin.out_features / split, weight_bytes=w,
                                                 latency_s=latency, bandwidth_bps=bps,
                                                 kernel_share=self.kernel_share(lin))
                else:
                    n = lin.out_features / tp if lin.group != "router" else lin.out_features
                    total += count * gemm_time_s(gpu, self.linear_dtype(lin), tokens, lin.in_features, n,
                                                 weight_bytes=w, latency_s=latency, bandwidth_bps=bps,
                                                 kernel_share=self.kernel_share(lin))
        return total

    def _shared_experts_latency_s(self) -> float:
        """The fixed GPU time of the shared experts' GEMMs in one step (their kernel latencies, packed ones once), what
        an engine that runs them on a second stream beside the routed experts hides
        (:attr:`~gpuplan.engines.records.Timing.shared_experts_stream`): the two streams share the card's memory and
        SMs, so the GEMMs' bytes and FLOPs still add, while the short kernels' ramp and tail overlap the other
        stream's."""
        total = 0.0
        for layer, count in self.m.layer_kinds():
            packed = self._packed_followers(layer)
            total += count * sum(self._kernel_latency_s for lin in layer.linears
                                 if lin.group == "shared_experts" and lin.name not in packed)
        return total

    def _packed_followers(self, layer) -> frozenset[str]:
        """Names of the linears vLLM runs inside an earlier one's GEMM (all of a pack but its first present
        member; :data:`~gpuplan.overheads.VLLM_PACKED_LINEARS`); none for engines that do not pack them."""
        if not self.timing.packed_linears:
            return frozenset()
        names = [lin.name for lin in layer.linears]
        follow = []
        for pack in oh.VLLM_PACKED_LINEARS:
            present = [n for n in pack if n in names]
            follow += present[1:]
        return frozenset(follow)

    def _experts_decode_s(self, batch: int) -> float:
        """Routed experts at decode: the batch touches ``E·(1-(1-k/E)^B)`` experts per layer (uniform routing),
        each read once through one grouped kernel that reaches a fraction of the bandwidth when it streams few
        bytes (a handful of small experts), all of it once it streams enough; with ``grouped_experts``, a grouped
        GEMM of ``B·k / touched`` rows per expert timed by :func:`~.gemm.gemm_time_s` (achievable rate, shape);
        under expert parallelism the busiest GPU's local experts (:func:`~.experts.experts_s`); TensorRT-LLM's fused
        MoE adds its expanded rows' traffic (:func:`~.experts.expanded_rows_s`)."""
        if self.s.ep > 1:
            return experts_s(self, batch) + expanded_rows_s(self, batch)
        total = expanded_rows_s(self, batch)
        for layer, count in self.m.layer_kinds():
            for lin in layer.linears:
                if lin.group == "experts" and lin.count > 1:
                    k, e = layer.experts_per_token, lin.count
                    touched = e * (1 - (1 - k / e) ** batch)
                    if self.grouped_experts:  # each touched expert multiplies its share of the batch's k picks
                        total += count * gemm_time_s(self.gpu, self.dtype, batch * k / touched, lin.in_features,
                                                     lin.out_features / self.s.tp, count=touched, kernels=1,
                                                     weight_bytes=self.weight_bytes_per_param,
                                                     latency_s=self._kernel_latency_s, bandwidth_bps=self._stream_bps)
                        continue
                    nbytes = touched * lin.in_features * lin.out_features / self.s.tp * self.weight_bytes_per_param
                    small = oh.MOE_SMALL_BATCH_BANDWIDTH_FRACTION
                    frac = small + (1 - small) * min(1.0, nbytes / oh.MOE_FULL_BANDWIDTH_BYTES)
                    flops = 2 * batch * k * lin.in_features * lin.out_features / self.s.tp
                    total += count * max(nbytes / (self._stream_bps * frac),
                                         flops / peak_flops(self.gpu, self.dtype))
        return total

    def _layer_weight_bytes(self) -> float:
        """Bytes of all decoder layers' weights on one GPU as stored."""
        return sum(count * sum(lin.weight_params * (2.0 if lin.kept(self.skip) else self.weight_bytes_per_param)
                               for lin in layer.linears) for layer, count in self.m.layer_kinds()) / self.s.tp

    @property
    def async_host(self) -> bool:
        """vLLM with async scheduling (0.14+, or the scenario's ``async_scheduling``), SGLang's overlap scheduler
        (0.4+): the engine's host work per step overlaps the GPU's."""
        return self.timing.loop is not None and self.timing.loop.overlapped

    @property
    def _stream_bps(self) -> float:
        """Bandwidth of the weight and KV streaming: the card's measured kernel figure for the engines timed as
        vLLM (whose kernels Vidur's per-operation profiles time), the speed layer's achievable bandwidth for
        others."""
        return streaming_bandwidth(self.gpu) if self.timing.streaming_bandwidth else bandwidth(self.gpu)

    @property
    def _kernel_latency_s(self) -> float:
        """Fixed GPU time per kernel: CUDA-graph replay (vLLM V1: kernels back to back, no launch gap), else the
        speed layer's calibrated figure."""
        return oh.GRAPH_KERNEL_LATENCY_S if self.timing.graphs else oh.GEMM_KERNEL_LATENCY_S

    def _launches_s(self, tokens: float, gpu_s: float, *, prompt: bool = False) -> float:
        """A step that runs without its CUDA graph: one of ``tokens`` past the engine's largest captured batch
        (:attr:`~gpuplan.engines.records.Timing.graph_max_batch`), one holding a ``prompt`` where the engine
        captures decode-only steps (:attr:`~gpuplan.engines.records.Timing.eager_prompts`), or any step where it
        captures none (:attr:`~gpuplan.engines.records.Timing.eager_steps`: vLLM ``--enforce-eager``). The host
        launches each of the layers' kernels while the GPU runs the ones already launched, so only the launching
        longer than the GPU's ``gpu_s`` shows (:meth:`launch_host_s`). A prompt step the engine replays as prefill
        graphs (:attr:`~gpuplan.engines.records.Timing.prefill_graph_tokens`) launches none."""
        cap, t = self.timing.graph_max_batch, self.timing
        if prompt and tokens <= t.prefill_graph_tokens:  # replayed as prefill graphs (Timing.prefill_graph_tokens)
            return 0.0
        if not (t.graphs and (t.eager_steps or (prompt and t.eager_prompts) or (cap and tokens > cap))):
            return 0.0
        return max(self.launch_host_s() - gpu_s, 0.0)

    def launch_host_s(self) -> float:
        """Host seconds to launch one eager step's kernels: ``(kernels per layer + 7) x layers`` (the layer's
        non-GEMM kernels, :meth:`_kernels_per_layer`, and its 7 linears), each at the engine's host time per launch
        (:attr:`~gpuplan.engines.records.Timing.launch_s`: SGLang's and TensorRT-LLM's eager Python modules, vLLM
        V1's compiled model run without its graph, :data:`~gpuplan.overheads.VLLM_EAGER_LAUNCH_S`) or else the
        calibrated launched-kernel figure (:data:`~gpuplan.overheads.GEMM_KERNEL_LATENCY_S`, 5 us), a floor."""
        kernels = (self._kernels_per_layer() + 7) * self.m.num_layers * (1 - self.cpu_layer_share)
        return kernels * (self.timing.launch_s or oh.GEMM_KERNEL_LATENCY_S)

    def _elementwise_s(self, tokens: float) -> float:
        """Element-wise traffic: vLLM's fused kernels (residual add + RMSNorm, SiLU-and-mul, rotary with the cache
        write) move a fraction of what unfused modules do; transformers' Python RMSNorm more
        (:func:`~.work.eager_elementwise_bytes`)."""
        plain = (oh.ELEMENTWISE_BYTES_PER_HIDDEN, oh.ELEMENTWISE_BYTES_PER_MLP)
        if self.timing.graphs:
            return elementwise_s(self.m, self.gpu, tokens, tp=self.s.tp, per_element=plain) \
                * oh.FUSED_ELEMENTWISE_FACTOR
        return elementwise_s(self.m, self.gpu, tokens, tp=self.s.tp, per_element=None if self.timing.eager else
                             plain)

    def _kernels_per_layer(self) -> float:
        """Non-GEMM kernels of one decoder layer on average (norms, rotary, cache write, attention, activation...):
        the MoE kernels only on the layers that hold experts (DeepSeek's first 3 of 61 are dense; Nemotron-H's
        23 expert layers of 52, Llama 4 Maverick's every other layer)."""
        per = oh.DECODE_KERNELS_PER_LAYER - 7  # the 7 linears pay their own latency in gemm_time_s
        moe_layers = [layer for layer in self.m.layers if layer.moe] if self.m.is_moe else []
        moe = 0.0
        if moe_layers:
            shared = any(lin.group == "shared_experts" for layer in moe_layers for lin in layer.linears)
            moe = (oh.MOE_KERNELS_PER_LAYER if shared else oh.MOE_ROUTED_ONLY_KERNELS_PER_LAYER) \
                * len(moe_layers) / len(self.m.layers)
        mla = any(layer.attention == "mla" for layer in self.m.layers)
        if mla and moe_layers and self.timing.layer_kernels:  # the engine's own count (SGLang's DeepSeek layer)
            return self.timing.layer_kernels
        return per + moe + (oh.MLA_KERNELS_PER_LAYER if mla else 0)

    def _tp_s(self, tokens: float) -> float:
        """Two all-reduces of ``tokens x hidden`` 16-bit activations per layer (Megatron row-parallel outputs),
        each paying the link's latency (and an engine's own cost per all-reduce,
        :attr:`gpuplan.engines.records.HostLoop.all_reduce_s`): the per-layer floor of tensor parallelism at small
        batch. A group wider than a node (SGLang's ``--tp 16 --nnodes 2``; two DGX Sparks at
        ``--tensor-parallel-size 2``) all-reduces hierarchically, inside each node and then across the nodes over each
        GPU's share of the network (:class:`~gpuplan.speed.comms.DataParallel`, NCCL's tree/ring over the rails)."""
        if self.s.tp <= 1 or self.s.attention_dp:  # attention data parallel: :func:`~.experts.layout_comms_s`
            return 0.0
        extra = self.timing.loop.all_reduce_s if self.timing.loop else 0.0
        nbytes = tokens * self.m.hidden_size * 2
        if self.timing.fused_all_reduce:  # one fused kernel per all-reduce: its own latency, the link's bandwidth
            return 2 * self.m.num_layers * (all_reduce_s(nbytes, self.s.tp, self.link) - self.link.latency_s
                                            + oh.FUSED_ALL_REDUCE_S)
        if self.s.tp > self.s.num_gpus and self.inter is not None:
            group = DataParallel(per_node=self.s.num_gpus, nodes=self.s.tp // self.s.num_gpus, intra=self.link,
                                 inter=self.inter)
            return 2 * self.m.num_layers * (group.all_reduce_s(nbytes) + extra)
        return 2 * self.m.num_layers * (all_reduce_s(nbytes, self.s.tp, self.link) + extra)
    def _node_hops_s(self, tokens: float) -> float:
        """A copy of the model split into pipeline stages across nodes: at each stage boundary between nodes
        (``min(pp, nodes) - 1`` of them: none when one tensor-parallel group spans the nodes) every step sends the
        ``tokens`` rows' hidden states and residual (16-bit) to the next node (vLLM's IntermediateTensors,
        ``hidden_states`` and ``residual``: vllm/model_executor/models/llama.py), over each GPU's share of the
        node's network, paying its latency. Stage boundaries inside a node are not counted (they move the same
        bytes over NVLink or PCIe)."""
        hops = min(self.s.pp, self.s.num_nodes) - 1
        if self.inter is None or hops <= 0:
            return 0.0
        nbytes = 2 * tokens * self.m.hidden_size * 2
        return hops * (self.inter.latency_s + nbytes / self.inter.bytes_per_s)

    def _split_handoffs_s(self, tokens: float) -> float:
        """llama.cpp's layer split over the ``pp`` CUDA devices of one machine (``--split-mode layer``): ggml's
        scheduler runs one graph split per device in turn, and before each of the ``pp - 1`` later ones copies the
        split's input, the residual stream of the micro-batch's rows in fp32 (ggml keeps activations in f32), from
        the device before (ggml-backend.cpp ``ggml_backend_sched_compute_splits``; ggml-cuda.cu
        ``ggml_backend_cuda_cpy_tensor_async``: ``cudaMemcpyPeerAsync`` on the source device's stream, then an event
        the destination's stream waits on, so the host never blocks). Each copy is the machine's link: its bytes
        at the link's rate plus its latency, once per micro-batch (``-ub``) of ``tokens``. Micro-batches are timed
        one after another: the overlap of stages when ``n_batch > n_ubatch`` (``GGML_SCHED_MAX_COPIES`` input
        copies, events per copy) is not counted. A check, not a fit: llama.cpp PR #6017 (A100 80GB PCIe, Llama 7B
        F16, pp512, one micro-batch) measured 8,668 tokens/s on one card and 8,381 on eight, 0.29 ms a boundary;
        here 8 MiB at PCIe gen4's 25.6 GB/s and 20 us, 0.35 ms."""
        if self.timing.kernels != "ggml-cuda" or self.s.pp <= 1 or self.s.num_nodes > 1:
            return 0.0
        ub = self.s.ubatch_tokens or oh.LLAMA_CPP_UBATCH
        copies = math.ceil(tokens / ub)
        nbytes = tokens * self.m.hidden_size * 4
        return (self.s.pp - 1) * (copies * self.link.latency_s + nbytes / self.link.bytes_per_s)

    def host_s(self, *, prefill: bool, context: float = 0, seqs: float = 1, tokens: float | None = None) -> float:
        """Host time of one step of ``seqs`` sequences: eager transformers launches every op from Python; vLLM
        and llama.cpp replay CUDA graphs and run their engine loop between steps (transformers' MoE layers add their
        Python loop over the experts the step's ``tokens`` hit: :func:`~.work.expert_loop_s`). vLLM's loop costs per
        step and
        per scheduled sequence (scheduling, input preparation, sampling, output processing): the V1 engine
        (0.8+) far less per step than V0, whose Python scheduler and sampler ran between steps."""
        m, loop = self.m, self.timing.loop
        if loop is None:
            ops = eager_ops_per_layer() * m.num_layers * oh.EAGER_OP_OVERHEAD_S
            return (ops + expert_loop_s(m, seqs if tokens is None else tokens) + oh.GENERATE_STEP_OVERHEAD_S
                    + oh.EAGER_DECODE_S_PER_CONTEXT_TOKEN * context)
        return loop.step_s + loop.seq_s * seqs


def earlier_tokens(total: int, per_seq: int, chunk: int) -> tuple[float, float]:
    """``total`` prompt tokens in sequences of ``per_seq`` (the last one shorter where they do not divide), cut into
    steps of ``chunk``: the mean number of their own sequence's tokens, prefilled in earlier steps, that a query
    attends to, over the full steps and in the last, shorter one (0 where no sequence spans two steps). One pass
    over the sequences (:func:`_own_pairs`), so a burst of long prompts costs no loop over its steps."""
    per_seq, full = max(per_seq, 1), total // chunk
    rest_from, rest = full * chunk, total - full * chunk
    pairs = in_rest = 0
    for start in range(0, total, per_seq):
        end = min(start + per_seq, total)
        pairs += _own_pairs(start, end, chunk)
        if end > rest_from:  # its piece in the last, shorter step
            cut = max(start, rest_from)
            in_rest += (end - cut) * (cut - start)
    return (pairs - in_rest) / rest_from if full else 0.0, in_rest / rest if rest else 0.0


def _own_pairs(start: int, end: int, chunk: int) -> int:
    """Sum over a sequence's pieces (tokens ``start``-``end`` of the stream, cut every ``chunk``) of the piece's
    length times the sequence's tokens before it: a first piece up to the next cut, ``m`` whole steps, a last ``r``."""
    first = min(end, (start // chunk + 1) * chunk) - start
    m, r = divmod(end - start - first, chunk)
    return m * chunk * first + chunk * chunk * m * (m - 1) // 2 + r * (first + m * chunk)


def step_timer(s: Scenario, m: ModelSpec, gpu: GpuSpec, network: Network | None = None) -> StepTimer:
    """The step-time primitives of ``s`` (engine, quantization, TP) on ``gpu`` over ``network``, the engine timed as
    its profile says (:meth:`gpuplan.engines.Engine.timing`: SGLang's GPU work as vLLM's current engine's with its
    own host loop, TensorRT-LLM as vLLM's current engine)."""
    network = network or Network()
    engine = engine_for(s)
    dtype = compute_dtype(s) if s.precision == "fp32" else "fp16" if not gpu.supports_dtype("bf16") else (
        "fp8" if s.quant == "fp8" and gpu.supports_dtype("fp8") else
        "fp4" if s.quant == "nvfp4" and gpu.supports_dtype("fp4") else "bf16")
    fmt, skip = weight_format(s, m)
    sample = next((lin for layer in m.layers for lin in layer.linears if not lin.kept(skip)), None)
    per_param = fmt.linear_weight_bytes(sample) / sample.weight_params if sample else 2.0
    if fmt.name.startswith("gguf-"):  # a GGUF mixes types by tensor: the average over the decoder's linears
        per_param = gguf.linear_bytes_per_param(m, fmt.name[5:])
    cpu_share = 0.0
    if engine.offloads_layers:  # the layers it leaves in system RAM run on the CPU
        e = inference_memory(s, m, gpu.usable_gib)
        cpu_share = e.extra.get("offloaded_layers", 0) / m.num_layers
    inter = inter_node_link(gpu, network, s.num_gpus) if s.num_nodes > 1 else None
    timing = engine.timing(s, m, gpu)
    draft = speculative.draft_of(s, m, engine) if s.task == "infer" else None
    plain = s.with_resolved({"speculative_method": "none", "speculative_tokens": None, "acceptance_length": None,
                             "draft_model": None}) if draft else s
    draft_timer = step_timer(draft_scenario(plain, draft), draft.model, gpu, network) if draft and draft.model \
        else None
    return StepTimer(s=s, m=m, gpu=gpu, link=intra_node_link(gpu, network), dtype=dtype,
                     weight_bytes_per_param=per_param, skip=skip, kernel=engine_attention(s, m, timing),
                     cpu_layer_share=cpu_share, timing=timing, grouped_experts=timing.grouped_experts,
                     cached_prefix=engine.cached_prefix_tokens(s, m), inter=inter, draft=draft,
                     draft_timer=draft_timer)


def draft_gpu_s(parts: dict[str, float]) -> float:
    """The GPU's seconds of one draft pass from its :meth:`StepTimer.decode_parts`: all but the host loop (the
    target's, once a step) and the launches (the draft's host time, :meth:`StepTimer.draft_host_s`)."""
    return sum(v for k, v in parts.items() if k not in ("host", "kernel_launches"))


def draft_scenario(plain: Scenario, draft: Draft) -> Scenario:
    """The scenario one pass of ``draft`` is timed under: the plain one, with the draft's own served format
    (:attr:`~gpuplan.engines.speculative.Draft.quant`) and, where the engine runs it without CUDA graphs
    (:attr:`~gpuplan.engines.speculative.Draft.eager`), as vLLM's ``--enforce-eager`` step."""
    changes = {"quant": draft.quant} if draft.quant else {}
    if draft.eager:
        changes["enforce_eager"] = True
    return plain.with_resolved(changes) if changes else plain


def engine_attention(s: Scenario, m: ModelSpec, timing: Timing) -> str:
    """The attention kernel the engine runs: transformers' (eager PyTorch) and llama.cpp's ggml follow the model's
    modeling code and ``s.attention`` (:func:`gpuplan.tensors.state.attention_kernel`: gpt-oss, Gemma-2 and BLOOM
    fall back to eager attention in transformers); vLLM, SGLang and TensorRT-LLM run every model through their own
    fused attention backends (vLLM: ``vllm/v1/attention/backends/`` FlashAttention, FlashInfer, Triton; gpt-oss's
    sinks and sliding windows in FlashAttention-3 and FlashInfer, ``vllm/model_executor/models/gpt_oss.py``
    ``OAIAttention`` builds ``Attention(..., sinks=...)``), which never materialize the scores."""
    return attention_kernel(s, m) if timing.eager or timing.kernels else "flash"


@dataclass(frozen=True, kw_only=True)
class ServingRates:
    """Continuous batching in steady state at ``concurrency`` requests in flight."""

    concurrency: int
    requests_per_s: float
    output_tokens_per_s: float
    tokens_per_s_per_user: float
    request_latency_s: float
    decode_step_s: float


def serving_rates(timer: StepTimer, *, concurrency: int, prompt_tokens: int, output_tokens: int) -> ServingRates:
    """vLLM/TGI-like continuous batching: while ``concurrency`` requests decode together, each one finishing is
    replaced by a new one whose prompt is prefilled between decode iterations. Per cycle of
    ``output_tokens`` iterations the engine decodes the batch at the mean context (``prompt + output/2``) and
    prefills ``concurrency`` new prompts: requests/s = ``concurrency / cycle``, each user's tokens/s =
    ``output / cycle``. With speculative decoding a step yields ``a`` tokens a sequence (the acceptance length), so
    the cycle holds ``output / a`` of them (:meth:`StepTimer.step_parts`). Transformers' static batching is the same
    cycle with every prompt prefilled at once.
    """
    decode = sum(timer.step_parts(concurrency, prompt_tokens + output_tokens / 2).values())
    prefill = timer.burst_ttft_s(prompt_tokens, concurrency) if concurrency > 1 else timer.ttft_s(prompt_tokens)
    cycle = output_tokens / timer.tokens_per_step * decode + prefill
    return ServingRates(concurrency=concurrency, requests_per_s=concurrency / cycle,
                        output_tokens_per_s=concurrency * output_tokens / cycle,
                        tokens_per_s_per_user=output_tokens / cycle, request_latency_s=cycle, decode_step_s=decode)


def _weights_read(m: ModelSpec, batch: int) -> str:
    """What a decode step of ``batch`` sequences reads of the weights: all of a dense model's; of an MoE's, the
    shared weights and the routed experts its tokens reach (:func:`gpuplan.speed.work.experts_hit`)."""
    moe = next((layer for layer in m.layers if layer.moe and layer.experts_per_token), None)
    if moe is None:
        return "every weight"
    hit = experts_hit(moe, batch)
    return (f"the shared weights, the routed experts {batch} token(s) reach (about {hit:,.0f} of "
            f"{m.num_experts} per layer)")


def inference_speed(s: Scenario, m: ModelSpec, gpu: GpuSpec, network: Network | None = None) -> Speed:
    """Decode step, aggregate and per-user output tokens/s, and time to first token (alone and in a burst)
    of ``batch_size`` concurrent requests of ``prompt_tokens`` + ``output_tokens``."""
    timer = step_timer(s, m, gpu, network)
    b, p, o = s.batch_size, s.prompt_tokens, s.output_tokens
    context = p + o / 2
    parts = timer.step_parts(b, context)
    step = sum(parts.values())
    per_step = timer.tokens_per_step
    rates = serving_rates(timer, concurrency=b, prompt_tokens=p, output_tokens=max(o, 1))
    prefill = timer.burst_ttft_s(p, b)
    # a user's TTFT: the engine's prefill, then its API server's path and its prompt's tokenizing (not in the cycle;
    # a burst's serial tokenizing is the serving simulation's, gpuplan.serving.simulate._Frontend)
    overhead = timer.request_s + p * timer.frontend[2]
    single, burst = timer.ttft_s(p) + overhead, prefill + overhead
    gpu_side = parts.get("weights", 0) + parts.get("kv_cache", 0) + parts.get("elementwise", 0)
    comms = parts.get("tensor_parallel", 0) + parts.get("expert_dispatch", 0)
    latency = parts.get("kernel_latency", 0) + comms
    launched = timer.timing.eager or parts.get("kernel_launches", 0) > parts.get("host", 0)
    bound = max(("memory", gpu_side), ("host (kernel launches)" if launched else "host (engine loop)",
                                       parts.get("host", 0) + parts.get("kernel_launches", 0)),
                ("latency (per-layer kernels and all-reduces)" if comms else "latency (per-layer kernels)", latency),
                ("system memory (CPU layers)", parts.get("cpu_layers", 0)), key=lambda kv: kv[1])[0]
    speed = Speed(tokens_per_s=rates.output_tokens_per_s, step_time_s=step, bound=bound, parts_s=parts,
                  compute_s=prefill, communication_s=comms, ttft_s=single, ttft_burst_s=burst,
                  request_overhead_s=overhead, tokens_per_s_per_sequence=rates.tokens_per_s_per_user,
                  streaming_tokens_per_s_per_user=per_step / step if step > 0 else None,
                  request_latency_s=rates.request_latency_s, requests_per_s=rates.requests_per_s)
    shares = ", ".join(f"{k.replace('_', ' ')} {1e3 * v:.2f} ms" for k, v in
                       sorted(parts.items(), key=lambda kv: -kv[1])[:4])
    if o == 0:  # "41 output tokens/s" were printed for requests that produce none, unsaid (session 7's walk); vLLM
        # refuses max_tokens below 1 (vllm/sampling_params.py SamplingParams._verify_args)
        speed.assumptions.append("output_tokens 0 timed as 1: a request generates at least one token, the one its "
                                 "prefill samples (vLLM's SamplingParams takes max_tokens of at least 1), so the "
                                 "output tokens/s are the requests/s")
    speed.assumptions.append(f"decode step of {b} sequence(s) at {context:,.0f} tokens of context: {shares}; "
                             f"{_weights_read(m, b * (timer.draft.queries if timer.draft else 1))} and the whole KV "
                             "cache read once per step")
    if timer.draft:
        speed.assumptions.append(speculation_words(timer, b, context))
    speed.assumptions.append(f"time to first token {single:.2f} s for one {p:,}-token prompt alone"
                             + (", the shared prefix cached" if timer.cached_prefix else "")
                             + (f", {burst:.2f} s for the last of {b} arriving together" if b > 1 else "")
                             + (f", each with {1e3 * overhead:.1f} ms per request outside the engine's steps "
                                "(HTTP, tokenizing, streaming)" if overhead else ""))
    engine = engine_for(s)
    if timer.cached_prefix:
        speed.assumptions.append(f"{timer.cached_prefix:,} of the {s.shared_prefix_tokens:,} shared prefix tokens "
                                 f"found in the {engine.cache_words}: the first request prefills them, later ones "
                                 "start after them")
    elif s.shared_prefix_tokens:
        speed.assumptions.append(f"the shared prefix is prefilled by every request "
                                 f"({engine.uncached_prefix_why(s)})")
    if timer.timing.note:
        speed.assumptions.append(timer.timing.note)
    if timer.timing.graphs and timer.timing.loop is not None:
        speed.assumptions.append(decode_words(timer, engine.label, b, parts))
    if timer.cpu_layer_share and timer.timing.kernels == "ggml-metal":  # decode_parts times every layer on Metal
        speed.assumptions.append(f"llama.cpp: {timer.cpu_layer_share:.0%} of the layers run on the CPU, timed as "
                                 "the GPU's: both read the one unified memory, and the CPU's own rate is not "
                                 "modelled (slower: raise macOS's GPU limit to keep them on the GPU)")
    elif timer.cpu_layer_share:
        speed.assumptions.append(f"llama.cpp: {timer.cpu_layer_share:.0%} of the layers run on the CPU from system "
                                 f"RAM at ~{oh.CPU_MEMORY_GBS * oh.CPU_BANDWIDTH_FRACTION:.0f} GB/s (assumed "
                                 "dual-channel DDR5)")
    widen = ["cpu layers"] if timer.cpu_layer_share else []
    if gpu.vendor != "NVIDIA":
        widen.append("other vendor")
    return banded(speed, engine.name, m, widen, maker=gpu.vendor, rocm=timer.timing.gpu_scale != 1.0)


def speculation_words(timer: StepTimer, batch: int, context: float) -> str:
    """A speculative step of ``batch`` sequences in words: its verify and draft times against the plain step's, the
    tokens it yields, and the speed-up that comes out (a result, not an input)."""
    d = timer.draft
    plain = timer.decode_s(batch, context)
    parts = timer.step_parts(batch, context)
    step, draft = sum(parts.values()), parts.get("draft", 0.0)
    return (f"speculative decoding ({d.method}, {d.tokens} draft tokens): each step verifies {d.queries} tokens a "
            f"sequence ({1e3 * (step - draft):.2f} ms) after the draft's {d.tokens} pass(es) ({1e3 * draft:.2f} ms) "
            f"and yields {d.acceptance:g} tokens a sequence on average ({d.acceptance_source}); the plain step takes "
            f"{1e3 * plain:.2f} ms, so {d.acceptance * plain / step:.2f}x the tokens per second at {batch:,} "
            "sequence(s) (the gain shrinks as the batch makes the verify step compute-bound)")


def decode_words(timer: StepTimer, label: str, batch: int, parts: dict[str, float]) -> str:
    """How a CUDA-graph engine runs the plan's decode step of ``batch`` sequences (``parts``: its seconds by kind of
    work at the plan's context, :meth:`StepTimer.step_parts`), in words: whether the batch replays a captured graph
    (:attr:`~gpuplan.engines.records.Timing.graph_max_batch`), by how much launching its kernels outlasts the GPU's
    work past it, whether its host loop hides behind the GPU's step (vLLM's async scheduling from 0.14, SGLang's
    overlap scheduler from 0.4, TensorRT-LLM's overlap scheduler) and whose expert kernels it runs; and why two
    engines that do the same come out at the same speed."""
    t = timer.timing
    host_shown = parts.get("host", 0.0)
    cap = t.graph_max_batch
    if t.eager_steps:
        graph = "launches its kernels one by one (--enforce-eager: no CUDA graph)"
    elif not cap or batch <= cap:
        graph = "replays a CUDA graph" + (f" (its largest captured batch is {cap:,})" if cap else "")
    else:
        shown = parts.get("kernel_launches", 0.0)
        graph = (f"launches its kernels one by one ({batch:,} is past its largest captured batch, {cap:,}): "
                 + (f"the launching outlasts the GPU's work by {shown * 1e3:.2f} ms" if shown else
                    "the GPU's work outlasts the launching"))
    if not t.loop.overlapped:
        host = f"its host loop adds {host_shown * 1e3:.2f} ms to each step"
    elif host_shown > 0:
        host = f"its host loop, beside the GPU's step, is the longer by {host_shown * 1e3:.2f} ms"
    else:
        host = "its host loop runs beside the GPU's step and is hidden"
    experts = "; routed experts as one grouped GEMM (TensorRT-LLM's fused MoE)" if t.grouped_experts and \
        timer.m.is_moe else ""
    seqs = f"{batch:,} sequence" + ("s" if batch != 1 else "")
    return (f"{label} at {seqs} {graph}; {host}{experts}. Engines that replay a graph and hide their "
            "host loop at a batch read the same weights and KV cache, so their decode steps take the same time; "
            "they differ in how prompts share the steps (time to first token, the offline line)")


def banded(speed: Speed, engine: str, m: ModelSpec, widen: list[str], *, maker: str = "NVIDIA",
           rocm: bool = False) -> Speed:
    """``speed`` with its range: the band the benches measure for ``engine`` on ``m``'s class of model on
    ``maker``'s cards (:func:`.bands.decode_band`); on a maker with no band of its own the NVIDIA band, widened
    for the other vendor, and for an engine's ROCm build the held-out error of its measured share
    (:data:`~gpuplan.overheads.ROCM_BAND`) on each side; else twice the held-out decode rows' spread
    (:data:`~gpuplan.overheads.SPEED_SPREAD`), said "uncalibrated"."""
    found = decode_band(engine, m, maker)
    if found is None:
        speed.band = (f"{uncalibrated_words(engine, m)}, so the range is twice the spread of the held-out decode "
                      "rows of bench/throughput.py")
        return speed.with_range("decode", *widen, "uncalibrated")
    low, high, where = found.low, found.high, found.where
    if found.own_maker:
        widen = [w for w in widen if w != "other vendor"]
    elif rocm:
        low, high = low - oh.ROCM_BAND, high + oh.ROCM_BAND
        where += (f", +-{oh.ROCM_BAND:.0%} for the ROCm build's measured share (bench/results/"
                  f"{'rocm_share' if m.is_moe else 'rocm_dense'}.md)")
    speed.band = where + (" (widened: " + ", ".join(widen) + ")" if widen else "")
    return speed.with_range("decode", *widen, band=(low, high))
