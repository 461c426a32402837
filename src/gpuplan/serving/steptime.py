"""The time of one continuous-batching step, as vLLM V1 schedules it: decodes and prefill chunks in one batch.

The speed layer's :class:`~gpuplan.speed.inference.StepTimer` prices a step from the work it does (every linear
at its GEMM shape's efficiency, attention, element-wise traffic, TP all-reduces, the per-layer kernel floor and
the engine's host loop); it takes tens of microseconds per call. The scheduler simulation prices hundreds of
thousands of steps per capacity search, so :func:`step_model` samples the timer once per setup and keeps a
closed form of it::

    step = dense(T) + lm_head(R) + attention(pairs) + scan(T_prompt) + kv_read(context) + host_step + host_seq x S

- ``dense(T)``: the token-proportional work of ``T`` = prefill tokens + decoding sequences (linears, routed
  experts, element-wise, TP all-reduces, kernel floor), sampled from ``StepTimer.decode_parts(T, 0)`` and
  ``prefill_parts(T)`` on a geometric grid of ``T`` and interpolated linearly between grid points (exact at
  them); a step that holds a prompt takes the larger of the decode path (the experts ``T`` tokens touch, read
  once) and the prefill path (grouped GEMMs of ``T·k/E`` rows each, its GEMMs at the prompt's rates, its layers on
  one stream), a step of decodes alone the decode path's own work (``decode_dense_s``: what the engine's decode
  graph replays, e.g. shared experts on a second stream); TensorRT-LLM's FP8 and NVFP4 GEMMs of ``T`` rows at the
  share of the peak its kernels reach (:func:`step_model`), and its NVFP4 fused MoE's dispatch
  (``StepTimer``'s ``fused_moe`` part) added after, at the prompt's rate per token in a step that holds a prompt and
  the decode's in a step of decodes alone;
- ``lm_head(R)``: logits only for the ``R`` sequences sampled this step (decodes and prompts that finish);
- ``attention``: prompt attention per (query, key) pair, the slope of ``prefill_parts``' attention term;
- ``scan(T_prompt)``: Mamba-2's chunked scan and Gated DeltaNet's chunked delta rule per prompt token
  (``prefill_parts``' ``ssm_scan`` of a 4,096-token prompt over its tokens: the work is per chunk, linear in the
  prompt);
- ``kv_read``: every cached K and V of the decoding sequences read once (``decode_parts``' KV term per token;
  exact for full attention, an upper bound for sliding-window layers), and each decoding sequence's recurrent
  states (Mamba, linear attention) read and written back, per sequence: ``decode_parts``' KV term at context 0
  (taken per token at 1,024 tokens, a Mamba state of 2 MiB a layer grew 32-fold by 32k tokens); in a step that
  holds a prompt, at least ``mixed_decode_rows`` (query, key) pairs a context token at ``attention``'s rate, where
  the engine's kernel runs each decode's query heads apart beside a prompt (vLLM V1's FlashAttention-2: a 64-row
  tile a head, :func:`gpuplan.engines.vllm.mixed_decode_rows`);
- the host: vLLM's engine loop per step and per scheduled sequence ``S`` (``StepTimer``'s host term), added to the
  GPU's time in the synchronous loop; with async scheduling (vLLM 0.14+, or async_scheduling) it runs beside the
  GPU's step, so the step takes the longer of the two (``max(gpu, host)``). SGLang: its own loop (its engine
  profile's host loop, fitted on its published runs), beside the GPU's step from v0.4 (its overlap scheduler).

A step that runs without a CUDA graph takes at least the host's time to launch its kernels one by one
(``StepTimer.launch_host_s``), the GPU running each as it comes: ``step = max(gpu, launches)``. Two kinds of step do:
one of more tokens than the engine's largest captured batch (``graph_max_tokens``; vLLM V1's dispatch,
``vllm/v1/worker/gpu_model_runner.py``: a batch past ``max_cudagraph_capture_size`` runs with ``CUDAGraphMode.NONE``,
the compiled model without a graph), a cliff at that size, not a slope between the grid's points; and, in an engine
that runs every step holding a prompt without a graph (TensorRT-LLM: :attr:`~gpuplan.engines.records.Timing.
eager_prompts`), each such step (``prompt_launch_s``); decode-only steps up to the cap replay graphs. A prompt step the
engine replays as prefill graphs (SGLang from 0.5.10: ``Timing.prefill_graph_tokens``) launches none and adds
``Timing.prefill_graph_s`` (:func:`gpuplan.engines.sglang.prefill_graphs`).

Outside the steps, each request pays ``request_s`` once before its first token (the API server: HTTP, tokenizing,
handing the request to the engine core and streaming the token back): it adds to TTFT and end-to-end latency,
not to the time per output token.

With speculative decoding (:func:`with_draft`) each decoding sequence counts ``k + 1`` rows in the token-proportional
work and the logits, and the draft's passes add their GPU time (:meth:`StepModel._draft`); a step yields the
acceptance length's tokens a sequence (``tokens_per_step``: :func:`gpuplan.serving.simulate.output_steps`).

So a pure decode step equals ``StepTimer.decode_s`` (with speculation ``StepTimer.step_parts``) and a lone prompt
``StepTimer.prefill_s`` plus the kernel floor (tests/serving/test_serving.py checks both). ``Calibration`` scales
the model per deployment (:mod:`.calibrate`): ``compute`` the GPU time of prompt tokens, ``memory`` that of decodes
(a mixed step blends them by its token shares), ``overhead`` the host terms.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from ..engines import engine_for
from ..hardware import GpuSpec, Network
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..speed.gemm import trtllm_gpu
from ..speed.inference import StepTimer, draft_gpu_s, step_timer
from ..speed.work import lm_head_s

# Tokens per step at which the timer is sampled (doubling; beyond the last point the time grows linearly).
GRID_TOKENS = tuple(2**i for i in range(17))  # 1 .. 65,536
_PAIRS_AT = (2048, 4096)  # prompt lengths whose attention times give the per-pair slope


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """Per-deployment multipliers fitted on measured runs (1.0: the model as published)."""

    compute: float = 1.0
    memory: float = 1.0
    overhead: float = 1.0
    source: str = "none"


@dataclass(frozen=True, kw_only=True)
class StepModel:
    """A sampled :class:`StepTimer` of one deployment (tp GPUs, one replica); :meth:`time` prices a step."""

    grid_tokens: tuple[float, ...]
    dense_s: tuple[float, ...]  # token-proportional GPU work at grid_tokens
    # the same for a step of decodes alone (StepTimer.decode_parts: the work a decode graph replays); empty: dense_s
    decode_dense_s: tuple[float, ...] = ()
    lm_head_s: tuple[float, ...]  # logits for grid_tokens sampled rows
    attention_s_per_pair: float
    kv_s_per_token: float
    scan_s_per_token: float = 0.0  # Mamba-2's and Gated DeltaNet's chunked work per prompt token (ssm_scan)
    state_s_per_seq: float = 0.0  # a decoding sequence's recurrent states, read and written back, whatever its length
    step_host_s: float
    seq_host_s: float
    request_s: float = 0.0  # per request outside the engine loop (HTTP, tokenizing, streaming): TTFT and E2E
    # of request_s, the serial part (one frontend process, one request at a time), and that process's seconds
    # per output token streamed (HostLoop.frontend_s, frontend_token_s: simulate's frontend queue)
    frontend_s: float = 0.0
    frontend_token_s: float = 0.0
    frontend_prompt_token_s: float = 0.0  # and per prompt token it tokenizes (HostLoop.frontend_prompt_token_s)
    # host seconds to launch a step that holds a prompt, where the engine runs such steps without a CUDA graph
    # (Timing.eager_prompts: TensorRT-LLM); the step takes the longer of it and the GPU's work
    prompt_launch_s: float = 0.0
    # a step of more tokens than graph_max_tokens (the largest captured batch, on each attention rank; 0: no cap)
    # runs without its graph: the longer of its GPU work and eager_launch_s (StepTimer.launch_host_s)
    graph_max_tokens: float = 0.0
    eager_launch_s: float = 0.0
    eager_steps: bool = False  # no graph captured (Timing.eager_steps: vLLM --enforce-eager): every step launches
    # a prompt step of up to prefill_graph_tokens replays prefill graphs (SGLang from 0.5.10): no launches, and
    # prefill_graph_s more GPU time
    prefill_graph_tokens: float = 0.0
    prefill_graph_s: float = 0.0
    async_host: bool = False  # vLLM async scheduling: the host work overlaps the GPU's, the longer one shows
    # speculative decoding (gpuplan.engines.speculative): each decoding sequence runs spec_queries query rows in the
    # verify; the draft's first pass runs over the step's rows, its other draft_passes - 1 over one row a decoding
    # sequence (draft_pass_s: one pass over grid_tokens rows), each reading its own cache (draft_kv_s_per_token a
    # context token); a step yields tokens_per_step tokens a decoding sequence (the acceptance length)
    spec_queries: float = 1.0
    tokens_per_step: float = 1.0
    draft_passes: int = 0
    draft_pass_s: tuple[float, ...] = ()
    draft_kv_s_per_token: float = 0.0
    draft_pass_host_s: float = 0.0  # an eager draft pass's host launches, the floor of its time (draft_host_s)
    draft_step_host_s: float = 0.0  # the proposer's host ops between syncs, once a step
    # the engine's prompt work other than attention over gpuplan's (Timing.prompt_scale): the prompt tokens' share of
    # the token-proportional work and the logits scaled by it
    prompt_scale: float = 1.0
    # in a step that holds a prompt, each decoding sequence's attention runs this many query rows a head over its
    # context at the prompt's rate per pair, when that is longer than reading its cache (Timing.mixed_decode_rows)
    mixed_decode_rows: float = 0.0
    calibration: Calibration = Calibration()

    def time(self, prefill_tokens: float, decode_seqs: float, decode_context: float, prefill_pairs: float = 0.0,
             prefill_seqs: float | None = None, sampled: float | None = None,
             host_seqs: float | None = None) -> float:
        """Seconds for one step with ``prefill_tokens`` prompt tokens in ``prefill_seqs`` sequences (default:
        one if any), ``decode_seqs`` decoding sequences whose contexts total ``decode_context`` tokens,
        ``prefill_pairs`` (query, key) pairs of prompt attention, and ``sampled`` sequences producing a token
        (default: every decode and every prompt chunk); ``host_seqs``: the sequences one scheduler handles, where
        several run side by side (SGLang's DP attention ranks: the busiest one's), default all of them."""
        verify = decode_seqs * self.spec_queries  # the decodes' query rows (more than one each: speculation)
        tokens = prefill_tokens + verify
        if tokens <= 0:
            return 0.0
        pseqs = (1.0 if prefill_tokens > 0 else 0.0) if prefill_seqs is None else prefill_seqs
        rows = (decode_seqs + pseqs if sampled is None else sampled) + verify - decode_seqs
        share = prefill_tokens / tokens
        grid = self.decode_dense_s if prefill_tokens <= 0 and self.decode_dense_s else self.dense_s
        dense = _interp(self.grid_tokens, grid, tokens) + _interp(self.grid_tokens, self.lm_head_s, rows)
        kv = decode_context * self.kv_s_per_token
        if prefill_tokens > 0 and self.mixed_decode_rows:  # FA2's decodes beside a prompt: a tile per query head
            kv = max(kv, decode_context * self.mixed_decode_rows * self.attention_s_per_pair)
        gpu = dense * (1 + (self.prompt_scale - 1) * share) + prefill_pairs * self.attention_s_per_pair + kv \
            + prefill_tokens * self.scan_s_per_token + decode_seqs * self.state_s_per_seq
        if self.draft_passes:
            gpu += self._draft(tokens, decode_seqs, decode_context)
        graphed = prefill_tokens > 0 and tokens <= self.prefill_graph_tokens  # replayed as prefill graphs
        if graphed:
            gpu += self.prefill_graph_s
        c = self.calibration
        gpu *= c.memory + (c.compute - c.memory) * share
        gpu = max(gpu, self._launches(prefill_tokens, tokens, graphed) * c.overhead)
        seqs = decode_seqs + pseqs if host_seqs is None else host_seqs
        host = (self.step_host_s + self.seq_host_s * seqs) * c.overhead
        return max(gpu, host) if self.async_host else gpu + host

    def _draft(self, rows: float, decode_seqs: float, decode_context: float) -> float:
        """The draft's GPU seconds in a step of ``rows`` rows (:meth:`gpuplan.speed.inference.StepTimer.draft_s`):
        its first pass over them, its other passes over one row a decoding sequence, each reading its cache."""
        kv = decode_context * self.draft_kv_s_per_token
        first = max(_interp(self.grid_tokens, self.draft_pass_s, rows) + kv, self.draft_pass_host_s)
        rest = max(_interp(self.grid_tokens, self.draft_pass_s, decode_seqs) + kv, self.draft_pass_host_s)
        return first + (self.draft_passes - 1) * rest + self.draft_step_host_s

    def _launches(self, prefill_tokens: float, tokens: float, graphed: bool) -> float:
        """Host seconds to launch the step's kernels one by one where it runs without a CUDA graph (0: it replays
        one): past the largest captured batch, holding a prompt in an engine that runs those eagerly, or any step in
        an engine that captured none (``eager_steps``); an eager step's GPU waits on them unless its own work is
        longer."""
        prompt = self.prompt_launch_s if prefill_tokens > 0 and not graphed else 0.0
        past = self.eager_steps or (self.graph_max_tokens and tokens > self.graph_max_tokens and not graphed)
        return max(prompt, self.eager_launch_s) if past else prompt

    def prefill_time(self, prompt_tokens: float) -> float:
        """One prompt alone (its time to first token on an idle engine, chunking aside)."""
        return self.time(prompt_tokens, 0, 0, prompt_tokens * prompt_tokens / 2)

    @property
    def overhead_s(self) -> float:
        """Host time of a step of one sequence."""
        return (self.step_host_s + self.seq_host_s) * self.calibration.overhead


def _interp(xs: tuple[float, ...], ys: tuple[float, ...], x: float) -> float:
    """Piecewise-linear interpolation, linear extrapolation past the last point, 0 at 0."""
    if x <= 0:
        return 0.0
    i = bisect.bisect_left(xs, x)
    if i < len(xs) and xs[i] == x:
        return ys[i]
    if i == 0:
        return ys[0] * x / xs[0]
    if i == len(xs):
        i -= 1
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def sample(timer: StepTimer, calibration: Calibration | None = None,
           timer_at: Callable[[int], StepTimer] | None = None) -> StepModel:
    """The closed form of ``timer`` (see the module docstring); ``timer_at(T)``, when given, times the dense work of
    ``T`` tokens (an engine whose GEMMs reach a share of the peak that depends on their rows)."""
    m, tp = timer.m, timer.s.tp
    dense, decode, heads = [], [], []
    for t in GRID_TOKENS:
        at = timer_at(t) if timer_at else timer
        head = lm_head_s(m, at.gpu, at.dtype, t, tp=tp)
        dec = at.decode_parts(t, 0)
        pre = at.prefill_parts(t)
        dec_linears = dec.get("weights", 0.0) - head
        pre_linears = pre.get("gemm", 0.0) - lm_head_s(m, at.gpu, at.dtype, 1, tp=tp)
        rest = dec.get("kernel_latency", 0.0) + dec.get("elementwise", 0.0) + dec.get("tensor_parallel", 0.0) \
            + dec.get("cpu_layers", 0.0)
        # TensorRT-LLM's NVFP4 fused MoE beside its GEMMs, at the prompt's rate in a step holding one, else the
        # decode's (speed/experts.fused_moe_s): kept out of the larger-of-two-paths
        dense.append(max(dec_linears, pre_linears) + rest + pre.get("fused_moe", 0.0))
        decode.append(dec_linears + rest + dec.get("fused_moe", 0.0))
        heads.append(head)
    a, b = _PAIRS_AT
    attn = (timer.prefill_parts(b).get("attention", 0.0) - timer.prefill_parts(a).get("attention", 0.0)) \
        / ((b * b - a * a) / 2)
    scan = timer.prefill_parts(b).get("ssm_scan", 0.0) / b
    context = 1024
    state = timer.decode_parts(1, 0).get("kv_cache", 0.0)
    kv = (timer.decode_parts(1, context).get("kv_cache", 0.0) - state) / context
    one, two = timer.host_s(prefill=False, seqs=1), timer.host_s(prefill=False, seqs=2)
    timing = timer.timing
    launch = timer.launch_host_s() if timing.graphs else 0.0
    cap = timing.graph_max_batch * max(timer.s.attention_ranks, 1) if timing.graphs else 0
    model = StepModel(grid_tokens=tuple(float(t) for t in GRID_TOKENS), dense_s=tuple(dense),
                      decode_dense_s=tuple(decode), lm_head_s=tuple(heads),
                     attention_s_per_pair=attn, kv_s_per_token=kv, scan_s_per_token=scan, state_s_per_seq=state,
                     step_host_s=2 * one - two, seq_host_s=two - one,
                     request_s=timer.request_s, frontend_s=timer.frontend[0], frontend_token_s=timer.frontend[1],
                     frontend_prompt_token_s=timer.frontend[2],
                     prompt_launch_s=launch if timing.eager_prompts else 0.0, graph_max_tokens=float(cap),
                     eager_launch_s=launch, eager_steps=timing.eager_steps, async_host=timer.async_host,
                     prefill_graph_tokens=float(timing.prefill_graph_tokens),
                     prefill_graph_s=timing.prefill_graph_s, prompt_scale=timing.prompt_scale,
                     mixed_decode_rows=float(timing.mixed_decode_rows), calibration=calibration or Calibration())
    return with_draft(model, timer) if timer.draft else model


def with_draft(model: StepModel, timer: StepTimer) -> StepModel:
    """``model`` with the timer's speculative decoding (:meth:`StepTimer.step_parts`): the verify's query rows, the
    draft's passes sampled on the grid (GPU work only: the host loop runs once a step), the tokens a step yields."""
    d, dt = timer.draft, timer.draft_timer
    if dt is None:  # drafted on the CPU (n-gram): the verify alone
        return dataclasses.replace(model, spec_queries=float(d.queries), tokens_per_step=d.acceptance)

    passes = tuple(draft_gpu_s(dt.decode_parts(t, 0)) for t in GRID_TOKENS)
    kv = (dt.decode_parts(1, 1024).get("kv_cache", 0.0) - dt.decode_parts(1, 0).get("kv_cache", 0.0)) / 1024
    pass_host, step_host = timer.draft_host_s()
    return dataclasses.replace(model, spec_queries=float(d.queries), tokens_per_step=d.acceptance,
                               draft_passes=d.tokens, draft_pass_s=passes, draft_kv_s_per_token=kv,
                               draft_pass_host_s=pass_host, draft_step_host_s=step_host)


def step_model(s: Scenario, m: ModelSpec, gpu: GpuSpec, network: Network | None = None,
               calibration: Calibration | None = None) -> StepModel:
    """The step model of ``s`` (its engine, tp, quantization and KV dtype) on ``gpu`` over ``network``.

    An engine whose profile says so (``Engine.gemm_share_by_rows``: TensorRT-LLM) has its FP8 (W8A8) and NVFP4
    (W4A4) GEMMs of ``T`` rows timed at the share of the peak they reach (:func:`gpuplan.speed.gemm.trtllm_gpu`,
    :data:`~gpuplan.overheads.TRTLLM_GEMM_PEAK_SHARE`: fitted on the H100 and B200 rows of NVIDIA's performance
    overview), as the offline model times them: one GEMM, one price."""
    timer = step_timer(s, m, gpu, network)
    if not engine_for(s).gemm_share_by_rows or timer.dtype not in ("fp8", "fp4"):
        return sample(timer, calibration)
    return sample(timer, calibration, timer_at=lambda t: step_timer(s, m, trtllm_gpu(gpu, t), network))
