"""One serving setup under a load, as the benchmark clients measure it: ``estimate --users N`` (a closed loop),
``--rate R`` (an open loop) and the offline run of ``batch_size`` requests queued at once.

- **closed loop** (``users``): N clients, each sending its next request ``think_time_s`` (exponential, that mean)
  after its last reply; think 0 is ``vllm bench serve --max-concurrency N --request-rate inf``, SGLang's
  ``bench_serving --max-concurrency`` and genai-perf's ``--concurrency``;
- **open loop** (``rate_rps``): Poisson arrivals at R requests/s (``vllm bench serve --request-rate R``);
- **offline**: every request queued in the engine at once (``vllm bench throughput``, ``LLM.generate`` of a list,
  no API server between: a burst through ``vllm serve``, ``vllm bench serve --request-rate inf``, is an open loop
  at a rate that sends it at once, and passes the API server one request at a time, :class:`.simulate._Frontend`):
  the engine's own cap on running requests
  (``max_num_seqs``, SGLang's ``max_running_requests``) and its KV pool decide how many run together; the rest wait
  and are admitted as others finish (waves), and a pool that runs out preempts requests, which recompute when they
  resume (vLLM V1 with its prefix cache only what the pool handed out since: :func:`.simulate._keep_preempted`;
  :func:`preempted_words` says which).

The run is the scheduler simulation ``capacity`` uses (:mod:`.simulate`: the engine's pool and limits from
:func:`gpuplan.plan.capacity.engine_memory`, as the plan's memory states them; the step model of :mod:`.steptime`,
the plan's speed layer sampled), over a finite set of requests sent from an idle engine, and it is summarised as the
clients summarise theirs (all completed requests, start-up included): ``vllm bench serve``
(``vllm/benchmarks/serve.py`` ``BenchmarkMetrics`` and its saved result's keys: mean, median and percentiles of
TTFT, TPOT, ITL and E2EL in ms; request, output and total token throughput over the benchmark's duration), which
SGLang's ``bench_serving`` prints under the same names and genai-perf as time to first token, inter-token latency
and request latency (avg, p50, p90, p99). TPOT is each request's ``(e2e - ttft) / (output - 1)``, its percentiles
over requests; ITL every token's gap since the previous one, pooled over all tokens (:class:`.simulate.TokenGaps`).

**Lengths.** The scenario's ``prompt_tokens`` and ``output_tokens`` are the means; each request draws its own from
the integers in ``[floor(L (1 - r)), ceil(L (1 + r))]``, ``r = length_spread`` (``vllm bench serve --dataset-name
random --random-range-ratio r``, ``vllm/benchmarks/datasets/random.py`` ``RandomDataset.get_sampling_params``), by
default ``r = 0.5`` (:data:`gpuplan.overheads.SERVING_LENGTH_SPREAD`). Fixed lengths (``length_spread 0``) keep a
closed loop in lockstep: requests sent together finish together and come back together, so every prompt queues
behind a whole wave of others (new-user review 3, question 2: SGLang served 34 users per H200 at fixed lengths, 193
at the same means drawn from a distribution). The offline run keeps the lengths fixed, as ``vllm bench throughput
--input-len --output-len`` and ``trtllm-bench`` run.

Each request also pays the engine's fixed latency outside its steps (:attr:`.steptime.StepModel.request_s`: the
API server's HTTP and OpenAI-protocol handling, tokenizing, the hand-off to the engine core and the first streamed
chunk; fitted per engine on published runs, :data:`gpuplan.overheads.VLLM_V1_REQUEST_S`,
:data:`gpuplan.overheads.SGLANG_REQUEST_S`); detokenizing runs beside the steps (vLLM's API-server process, SGLang's
detokenizer process) and adds to no token's latency.
"""

# No `from __future__ import annotations` here: the LoadRun's ~40 field annotations are read as objects when the
# class is made (FieldInfo.annotation; its pydantic twin compiles text), and evaluated on import they come compiled in
# the bytecode (bench/results/startup_s25.md); the names imported for type checking only stay quoted.
import dataclasses
from typing import TYPE_CHECKING, Literal

from ..datafiles import made
from ..errors import GpuplanError
from ..hardware import GpuSpec, Network
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..stored import ConfigDict, Field, StoredModel, computed_field

if TYPE_CHECKING:  # (the step model and the workload load with a run: a plan's LoadRun field needs neither)
    from .simulate import Scheduler
    from .steptime import StepModel
    from .workload import Lengths

# Engines whose schedulers the simulation runs (:mod:`.simulate`).
# Requests a run sends when the scenario does not say: vllm bench serve's --num-prompts default; a closed loop sends
# ten per user (InferenceMAX's convention, 10 x CONC prompts per run), within bounds that keep a run to seconds.
DEFAULT_REQUESTS, REQUESTS_PER_USER, MAX_REQUESTS = 1000, 10, 20_000
# A latency with no sample: TPOT and ITL of a run where no request has a second token (one-token replies,
# ``output_tokens`` 0 or 1 with no spread), every figure of a run where no request completed (none admitted: longer
# than the KV pool). None, which every face prints as an empty cell; ``vllm bench serve`` writes 0 there
# (``np.mean(tpots or 0)``, vllm/benchmarks/serve.py ``calculate_metrics``), a time nothing took. A NaN here was
# written into plan.json as ``NaN`` (not JSON) and "TPOT median nan ms" into the launch files (session 20's fuzz).
NO_GAP = None


class LoadRun(StoredModel):
    """One simulated benchmark run of a serving setup, named as ``vllm bench serve --save-result`` names its
    fields (times in ms, throughputs per second over ``duration``). ``mode``: closed loop (``max_concurrency``
    users, each thinking ``think_time_s`` between a reply and its next request), open loop (``request_rate``) or
    offline (every request at once)."""

    # validated from its stored schema (gpuplan.datafiles): pydantic-core coerces each count and time as pydantic
    # would (numpy's float64 from the simulation into float)
    model_config = ConfigDict(frozen=True)

    mode: Literal["closed loop", "open loop", "offline"]
    engine: str
    max_concurrency: int | None = None
    think_time_s: float = 0.0
    request_rate: float | None = None
    lengths: str  # how each request's lengths were drawn, in words
    num_prompts: int
    completed: int
    duration: float
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    # the steady window's (after the warm-up, before the drain: capacity's judgement,
    # gpuplan.serving.capacity.steady_requests_per_s), its requests/s x the run's mean output tokens (a closed loop's
    # rate rises as its drawn replies run short: 500 chat replies averaging 187 tokens, not the preset's 203); what
    # the plan is priced on and its headline says. None: offline, or no steady window
    steady_request_throughput: float | None = Field(default=None, exclude_if=lambda v: v is None)
    steady_output_throughput: float | None = Field(default=None, exclude_if=lambda v: v is None)
    mean_ttft_ms: float | None  # None: no request completed
    median_ttft_ms: float | None
    p90_ttft_ms: float | None
    p99_ttft_ms: float | None
    mean_tpot_ms: float | None  # None: no request had a second token (NO_GAP)
    median_tpot_ms: float | None
    p90_tpot_ms: float | None
    p99_tpot_ms: float | None
    mean_itl_ms: float | None  # None: no request had a second token (NO_GAP)
    median_itl_ms: float | None
    p90_itl_ms: float | None
    p99_itl_ms: float | None
    mean_e2el_ms: float | None  # None: no request completed
    median_e2el_ms: float | None
    p90_e2el_ms: float | None
    p99_e2el_ms: float | None
    running_cap: int  # the engine's cap on running requests (max_num_seqs, max_running_requests)
    peak_running: int  # the most requests the engine ran at once in this run
    preemptions: int  # requests preempted (their KV freed; resumed, they recompute: preempted_words says what)
    per_request_s: float  # the engine's fixed latency per request outside its steps, in TTFT and E2EL
    warnings: tuple[str, ...] = ()
    # the preemptions in words, as every face says them (:func:`preempted_words`); left out of the answer when none
    preempted_words: str = Field(default="", exclude_if=lambda v: not v)
    # an open-loop run whose queue grew (the rate past what the setup serves); left out of the answer when not
    falls_behind: bool = Field(default=False, exclude_if=lambda v: not v)

    @computed_field  # in the answer: the page prints these words (app.js renderSpeed), as estimate does
    @property
    def load_words(self) -> str:
        """The load in a few words, as every face says it: "32 users" (closed loop) or "4 requests/s" (open loop);
        an offline run: "the batch of 16"."""
        if self.mode == "closed loop":
            return f"{self.max_concurrency:,} user{'s' if self.max_concurrency != 1 else ''}"  # not "1 users"
        if self.mode == "open loop":
            return f"{self.request_rate:,g} requests/s"
        return f"the batch of {self.num_prompts:,}"

    @computed_field  # the page's load section heads with it (app.js renderLoad), as estimate's does
    @property
    def load_said(self) -> str:
        """The load and how it arrives: "32 users (closed loop, think 2 s)", "4 requests/s (open loop, Poisson)";
        an offline run: "the batch of 16 (offline, all at once)"."""
        how = {"closed loop": f"closed loop, think {self.think_time_s:g} s", "open loop": "open loop, Poisson",
               "offline": "offline, all at once"}[self.mode]
        return f"{self.load_words} ({how})"

    @property
    def served(self) -> tuple[float, float]:
        """(output tokens/s, requests/s) the setup serves at this load: the steady window's where the run has one
        (what capacity judges), else the whole run's (an offline batch's)."""
        if self.steady_output_throughput is not None and self.steady_request_throughput is not None:
            return self.steady_output_throughput, self.steady_request_throughput
        return self.output_throughput, self.request_throughput

    def latency(self, metric: str) -> dict[str, float | None]:
        """``{"mean": ..., "median": ..., "p90": ..., "p99": ...}`` of ``metric`` (ttft, tpot, itl, e2el), in ms; None
        where the run has no such sample (:data:`NO_GAP`)."""
        return {stat: getattr(self, f"{stat}_{metric}_ms") for stat in ("mean", "median", "p90", "p99")}


def per_request_s(model: "StepModel", out) -> float:
    """The engine's latency per request outside its steps: ``request_s``, and where its frontend tokenizes prompts
    (SGLang's TokenizerManager), the mean completed prompt's tokenizing."""
    if model.frontend_s <= 0 or not out.completed:
        return model.request_s
    return model.request_s + out.input_tokens / out.completed * model.frontend_prompt_token_s


def run_load(s: Scenario, m: ModelSpec, gpu: GpuSpec, engine: "Scheduler", network: Network | None = None, *,
             offline: bool = False, said: tuple[str, ...] = ()) -> LoadRun:
    """The benchmark run of ``s`` on ``gpu`` over ``network`` through the scheduler ``engine`` (the plan's pool and
    limits, :func:`.simulate.scheduler_for`): its ``users`` (closed loop) or ``rate_rps`` (open loop), or with
    ``offline`` its ``batch_size`` requests at once (the module docstring); ``said``: notes for its warnings."""
    import numpy as np

    from .simulate import arrivals, simulate
    from .steptime import step_model
    from .workload import sample_lengths

    n, prompt_d, output_d = requests_of(s, offline)
    rng = np.random.default_rng(0)
    prompt, output = sample_lengths(prompt_d, n, rng), sample_lengths(output_d, n, rng)
    model = step_model(s, m, gpu, network)
    if offline:  # the batch is handed to the engine in-process (LLM.generate): no API server to queue through
        model = dataclasses.replace(model, frontend_s=0.0, frontend_token_s=0.0)
    closed = s.users if not offline else None
    send = arrivals(s.rate_rps, n, 1.0, rng) if not offline and not s.users else np.zeros(n)
    out = simulate(model, engine, send, prompt, output, s.shared_prefix_tokens, users=closed,
                   think_s=s.think_time_s if closed else 0.0, rng=rng, inter_token_gaps=True, users_wait=True)
    saturated = _saturated(s, model, engine, out, prompt_d, output_d) if not offline and not s.users else None
    return summary(out, model, s, engine, offline, prompt_d, output_d, list(said), saturated)


def _saturated(s: Scenario, model: "StepModel", engine: "Scheduler", out, prompt_d: "Lengths", output_d: "Lengths"
               ) -> float | None:
    """Requests/s the engine completes saturated, where an open-loop run's queue climbed over its steady window at
    all (else None: a run whose queue held or shrank is not near it, and no second simulation is run): capacity's
    saturated run (:func:`gpuplan.serving.capacity.saturated_rps`, a closed loop of twice the closed-form batch),
    against which capacity judges a rate a steady state only up to :data:`~.capacity.STABLE_LOAD` of it. A 1,000-
    request run at a rate a few percent past saturation climbs by less than the growth test's share (Llama-3.1-8B on
    an H100, 1,000 + 200 tokens, 26.5 requests/s: +54 requests over a window of 700, under the 70 the test asks)."""
    from .capacity import queue_growth, saturated_rps, saturation_rate
    from .workload import Workload

    if queue_growth(out) <= 0:
        return None
    w = Workload(prompt=prompt_d, output=output_d, shared_prefix_tokens=s.shared_prefix_tokens, rate_rps=s.rate_rps)
    _, batch = saturation_rate(model, w, engine.kv_blocks * engine.block_tokens, engine.max_num_seqs,
                               engine.max_num_batched_tokens, engine.mixed_prefill)
    return saturated_rps(model, engine, w, batch).requests_per_s or None


def saturation_bound(s: Scenario, m: ModelSpec, gpu: GpuSpec, engine: "Scheduler", network: Network | None = None
                     ) -> float:
    """Requests/s the setup completes with its engine full, in closed form (:func:`.capacity.saturation_rate`, the
    bound ``capacity`` drops hopeless setups by): the most an open-loop run of ``s``'s lengths can keep up with."""
    from .capacity import saturation_rate
    from .steptime import step_model
    from .workload import Workload

    _, prompt_d, output_d = requests_of(s, False)
    w = Workload(prompt=prompt_d, output=output_d, shared_prefix_tokens=s.shared_prefix_tokens, rate_rps=s.rate_rps)
    rate, _ = saturation_rate(step_model(s, m, gpu, network), w, engine.kv_blocks * engine.block_tokens,
                              engine.max_num_seqs, engine.max_num_batched_tokens, engine.mixed_prefill)
    return rate


def longest_request(s: Scenario, m: ModelSpec, offline: bool = False) -> int:
    """The longest request a run draws (prompt + output: what the engine's ``max_model_len`` must hold); one
    sentence when it runs past the model's context and the planned requests' (a request past the model's context
    is planned on purpose, warned of and served at its length: :meth:`gpuplan.engines.base.Engine.context`)."""
    _, prompt, output = requests_of(s, offline)
    longest = sum(int(d.mean) if d.kind == "fixed" else d.max for d in (prompt, output))
    if m.max_context and longest > max(m.max_context, s.prompt_tokens + s.output_tokens):
        raise GpuplanError(f"the longest request drawn ({longest:,} tokens) runs past {m.name}'s {m.max_context:,} "
                           "positions: shorten prompt_tokens or output_tokens, or narrow length_spread")
    return longest


def requests_of(s: Scenario, offline: bool) -> "tuple[int, Lengths, Lengths]":
    """How many requests the run sends, and their prompt and output lengths (see the module docstring)."""
    from .workload import spread_lengths

    if offline:
        return s.batch_size, spread_lengths(s.prompt_tokens, 0.0), spread_lengths(max(s.output_tokens, 1), 0.0)
    spread = s.length_spread
    least = s.shared_prefix_tokens + 1  # a prompt holds the shared start and tokens of its own
    n = s.num_requests or (min(max(REQUESTS_PER_USER * s.users, 200), MAX_REQUESTS) if s.users else DEFAULT_REQUESTS)
    if s.preset:  # drawn as capacity draws the preset (serving/workload.py PRESETS), not spread around its means
        from .workload import PRESETS

        prompt, output, _ = PRESETS[s.preset]
        if prompt.min < least <= prompt.max:
            prompt = prompt.model_copy(update={"min": least})
        return n, prompt, output
    return n, spread_lengths(s.prompt_tokens, spread, least), spread_lengths(max(s.output_tokens, 1), spread)


def _falls_behind(out) -> bool:
    """Whether an open-loop run's queue grows: the test capacity's rate points pass
    (:func:`gpuplan.serving.capacity.queue_grows`)."""
    from .capacity import queue_grows

    return queue_grows(out)[0]


def summary(out, model: "StepModel", s: Scenario, engine, offline: bool, prompt_d: "Lengths", output_d: "Lengths",
            said: list[str], saturated: float | None = None) -> LoadRun:
    """The run ``out`` of :func:`.simulate.simulate` as a benchmark client reports it (all completed requests);
    ``saturated``: the requests/s the engine completes saturated, where measured (:func:`_saturated`)."""
    import numpy as np

    from .workload import lengths_words

    def stats(x: np.ndarray) -> dict[str, float | None]:
        if not len(x):
            return dict.fromkeys(("mean", "median", "p90", "p99"), NO_GAP)
        return {"mean": float(x.mean()) * 1e3, "median": float(np.percentile(x, 50)) * 1e3,
                "p90": float(np.percentile(x, 90)) * 1e3, "p99": float(np.percentile(x, 99)) * 1e3}

    gaps = out.gaps
    itl = {"mean": gaps.mean_s * 1e3, "median": gaps.percentile(50) * 1e3, "p90": gaps.percentile(90) * 1e3,
           "p99": gaps.percentile(99) * 1e3} if gaps.tokens else dict.fromkeys(("mean", "median", "p90", "p99"), NO_GAP)
    ttft, tpot, e2el = stats(out.ttft_s), stats(out.tpot_s[out.tpot_s > 0]), stats(out.e2e_s)
    values = {f"{stat}_{name}_ms": v for name, d in (("ttft", ttft), ("tpot", tpot), ("itl", itl),
                                                        ("e2el", e2el)) for stat, v in d.items()}
    duration = out.duration_s
    warnings = list(said)
    if out.stopped:
        warnings.append(f"the simulation {out.stopped}: its figures count only the {out.completed:,} "
                        f"request{'s' if out.completed != 1 else ''} that finished")
    if out.refused:
        step = engine.max_num_batched_tokens
        budget = "" if engine.chunked_prefill else \
            f", or their prompts longer than the {step:,} tokens a step takes whole (no chunked prefill)"
        warnings.append(f"{out.refused:,} requests are longer than the engine's KV pool holds{budget}, and were "
                        "never admitted")
    mode = "offline" if offline else "closed loop" if s.users else "open loop"
    from .capacity import STABLE_LOAD, steady_requests_per_s

    steady = None if offline else steady_requests_per_s(out)

    past = saturated is not None and s.rate_rps > STABLE_LOAD * saturated  # capacity's steady-state bound
    behind = mode == "open loop" and bool(out.completed) and (_falls_behind(out) or past)
    if behind:
        most = (f" (at most {saturated:,.3g} saturated, and a steady rate stays under {STABLE_LOAD:.0%} of that, "
                "as capacity judges its rates)" if past else "")
        warnings.append(f"the queue grows at {s.rate_rps:,g} requests/s: the engine completed "
                        f"{out.completed / duration:,.3g} requests/s{most}, so each request waited longer than the "
                        f"last (TTFT median {ttft['median'] / 1e3:,.1f} s, p99 {ttft['p99'] / 1e3:,.1f} s) and the "
                        "figures grow with the run's length; `gpuplan capacity --rate` finds the rate this setup "
                        "serves within your SLOs")
    return made(LoadRun, dict(  # validated: the simulation's numpy floats stored as the floats they are
        mode=mode, engine=s.engine, max_concurrency=None if offline else s.users,
        think_time_s=0.0 if offline else s.think_time_s, request_rate=None if offline or s.users else s.rate_rps,
        lengths=lengths_words(prompt_d, output_d), num_prompts=len(out.sent_all), completed=out.completed,
        duration=duration, total_input_tokens=out.input_tokens, total_output_tokens=out.output_tokens,
        request_throughput=out.completed / duration if duration else 0.0,
        output_throughput=out.output_tokens / duration if duration else 0.0,
        total_token_throughput=(out.input_tokens + out.output_tokens) / duration if duration else 0.0,
        steady_request_throughput=steady,
        steady_output_throughput=None if steady is None else steady * out.output_tokens / out.completed,
        running_cap=engine.max_num_seqs, peak_running=out.peak_running, preemptions=out.preemptions,
        preempted_words=preempted_words(out.preemptions, engine.keeps_preempted),
        per_request_s=per_request_s(model, out), warnings=tuple(warnings), falls_behind=behind, **values))


def preempted_words(preemptions: int, kept: bool) -> str:
    """What the simulation did with the requests it preempted, as every face says it ("" for none): each freed its
    blocks and, resumed, recomputed its prompt and the tokens it had made; with vLLM V1's prefix cache on (``kept``:
    the scheduler's ``keeps_preempted``) only what the pool had handed out again meanwhile
    (:func:`.simulate._keep_preempted`); all of it where the engine has no such cache or it is off (V0, hybrid
    models with recurrent layers, SGLang and TensorRT-LLM as simulated)."""
    if not preemptions:
        return ""
    if kept:
        return (f"{preemptions:,} preempted, each resuming from what the prefix cache still held of it and "
                "recomputing the rest")
    return f"{preemptions:,} preempted and recomputed"
