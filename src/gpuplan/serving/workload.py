"""A serving workload: how requests arrive, how long they are, what they share, and the latency targets.

A YAML file or CLI flags; validated here (finite, in range, one sentence per error). Lengths are fixed, drawn
from a distribution, a named preset, or read from a trace:

- ``vllm bench serve --save-result --save-detailed`` JSON (its ``input_lens`` and ``output_lens``);
- JSON lines / JSON lists of requests with ``input_len`` / ``prompt_len`` / ``input_length`` and ``output_len`` /
  ``output_tokens`` / ``output_length`` (and optionally ``timestamp`` in ms or ``arrival_s``: Mooncake and
  Azure LLM traces use ``timestamp``, ``input_length``, ``output_length``);
- ShareGPT JSON (vLLM's default benchmark set): lengths from the text at 4 characters per token (no tokenizer
  offline; said in the assumptions).

Arrivals follow ``vllm bench serve``: Poisson at ``rate_rps`` (burstiness 1), or gamma inter-arrival times with
shape ``burstiness`` and the same mean (``vllm/benchmarks/serve.py`` ``get_request``): below 1 burstier.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from .. import overheads as oh
from ..errors import GpuplanError, did_you_mean, echo_value, renamed
from ..userfiles import number, parse_json, read_mapping, read_text

MAX_TOKENS = 10_000_000  # one request's prompt or output, as the workload's own lengths


class Lengths(BaseModel):
    """A length distribution in tokens: ``fixed``, ``uniform`` (min..max), ``normal`` (mean, std) or
    ``lognormal`` (mean, std of the tokens), clipped to ``[min, max]``; ``trace``: a trace's own lengths summed up
    (:func:`trace_lengths`; the simulation draws the trace's requests themselves)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["fixed", "uniform", "normal", "lognormal", "trace"] = "fixed"
    mean: float = Field(gt=0, le=MAX_TOKENS, allow_inf_nan=False)
    std: float = Field(default=0.0, ge=0, le=MAX_TOKENS, allow_inf_nan=False)
    min: int = Field(default=1, ge=1, le=MAX_TOKENS)
    max: int = Field(default=MAX_TOKENS, ge=1, le=MAX_TOKENS)

    @model_validator(mode="after")
    def _ordered(self) -> Lengths:
        """min above max clips every length to max, and a uniform draw between them fails in numpy (s19's fuzz:
        ``{kind: uniform, min: 300, max: 2}`` was a ValueError traceback): one sentence."""
        if self.min > self.max:
            raise ValueError(f"min {self.min:,} is above max {self.max:,}: the lengths are drawn between them")
        return self


# Named workloads: (prompt, output, what they stand for). chat is ShareGPT as vLLM's benchmarks sample it: means
# from vLLM PR #18566's run (229,711 input and 203,068 output tokens over 1,000 requests) after clipping as
# ``vllm/benchmarks/datasets.py`` ``is_valid_sequence`` keeps them (4..1,024 prompt tokens, 2,048 in all), with
# a long tail: lognormal with std = mean (an assumption of shape: ShareGPT's conversations span two orders of
# magnitude, vLLM paper, Kwon et al. SOSP'23, figure 11). The others are the fixed shapes NVIDIA's NIM and
# TensorRT-LLM performance tables use (input/output 2048/128, 128/2048, 1000/1000) and two common mixes.
def _fixed(n: int) -> Lengths:
    return Lengths(mean=n)


PRESETS: dict[str, tuple[Lengths, Lengths, str]] = {
    "chat": (Lengths(kind="lognormal", mean=236, std=236, min=4, max=1024),  # clipped means: 230 and 203
             Lengths(kind="lognormal", mean=207, std=207, min=4, max=1024),
             "ShareGPT as vLLM's benchmarks sample it (long-tailed)"),
    "summarize": (_fixed(2048), _fixed(128), "long prompt, short answer (NIM/TensorRT-LLM 2048/128)"),
    "generate": (_fixed(128), _fixed(2048), "short prompt, long answer (NIM/TensorRT-LLM 128/2048)"),
    "balanced": (_fixed(1000), _fixed(1000), "NIM/TensorRT-LLM 1000/1000"),
    "rag": (_fixed(4000), _fixed(300), "retrieval-augmented: long context, short answer"),
    "code": (_fixed(1500), _fixed(400), "code completion with file context"),
}


def preset_means(name: str) -> tuple[int, int]:
    """The mean prompt and output tokens of preset ``name``, clipped as its requests are drawn (chat: 230 and 203),
    rounded as capacity gives them to each setup's plan (:func:`gpuplan.plan.capacity.capacity`)."""
    prompt, output, _ = PRESETS[name]
    return round(_clipped_mean(prompt)), round(_clipped_mean(output))


DEFAULT_SPREAD = oh.SERVING_LENGTH_SPREAD  # lengths given as means (flags): uniform within +-50 % of the mean


def spread_lengths(mean: float, spread: float, least: int = 1) -> Lengths:
    """Lengths around ``mean``: the integers in ``[floor(mean (1 - spread)), ceil(mean (1 + spread))]``, uniformly
    (``vllm bench serve --random-range-ratio``: ``vllm/benchmarks/datasets/random.py``
    ``RandomDataset.get_sampling_params``), at least ``least``; ``mean`` itself at spread 0 (fixed)."""
    if spread <= 0:
        return Lengths(mean=max(mean, least))
    low = max(math.floor(mean * (1 - spread)), least)
    high = min(max(math.ceil(mean * (1 + spread)), least), MAX_TOKENS)  # a mean near the bound: its spread clipped
    return Lengths(kind="uniform", mean=max(mean, least), min=low, max=high)


def lengths_words(prompt: Lengths, output: Lengths) -> str:
    """How a workload's lengths are drawn, in words: "prompts 1,000-3,000 (uniform, mean 2,000) and outputs 400
    tokens"."""
    def one(d: Lengths, what: str) -> str:
        if d.kind == "fixed" or d.min == d.max:
            return f"{what} {_clipped_mean(d):,.0f}"
        between = f"{d.min:,}-{d.max:,}" if d.max < MAX_TOKENS else f"{d.min:,} or more"
        spread = f", std {d.std:,.0f}" if d.kind in ("normal", "lognormal") else ""
        kind = "" if d.kind == "trace" else f"{d.kind}, "
        return f"{what} {between} ({kind}mean {_clipped_mean(d):,.0f}{spread})"

    return f"{one(prompt, 'prompts')} and {one(output, 'outputs')} tokens"


class Slo(BaseModel):
    """Latency targets at a percentile of requests; unset targets do not constrain."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ttft_s: float | None = Field(default=None, gt=0, le=3600, allow_inf_nan=False,
                                 description="time to first token")
    tpot_s: float | None = Field(default=None, gt=0, le=60, allow_inf_nan=False,
                                 description="time per output token after the first (mean over a request)")
    e2e_s: float | None = Field(default=None, gt=0, le=86_400, allow_inf_nan=False, description="end to end")
    percentile: Literal[50, 90, 95, 99] = 95


class Workload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    rate_rps: float | None = Field(default=None, gt=0, le=100_000, allow_inf_nan=False,
                                   description="the expected arrival rate, requests/s")
    # at most the scenario's batch_size (65,536), which capacity plans each setup at: 100,000 users were refused as
    # "scenario field 'batch_size'", a field the user had not given (walk s20)
    users: int | None = Field(default=None, ge=1, le=65_536, description="closed loop: concurrent users, each "
                              "sending its next request think_time_s after its last one finished (instead of rate_rps)")
    batch: int | None = Field(default=None, ge=2, le=65_536, description="an offline job: this many requests queued "
                              "at once, the engine running as many as its cap and KV pool allow (instead of "
                              "rate_rps or users)")
    think_time_s: float = Field(default=0.0, ge=0, le=3600, allow_inf_nan=False, description="closed loop: mean "
                                "think time between a user's requests, seconds (the scenario's name; think_s, its old "
                                "name, still reads)")
    burstiness: float = Field(default=1.0, gt=0, le=100, allow_inf_nan=False,
                              description="gamma shape of inter-arrival times (1: Poisson; < 1: bursty)")
    preset: str | None = None
    prompt: Lengths | None = None
    output: Lengths | None = None
    shared_prefix_tokens: int = Field(default=0, ge=0, le=10_000_000,
                                      description="tokens every prompt starts with (prefix cache hits)")
    distinct_prompts: int | None = Field(default=None, ge=1, le=10_000_000, description="requests cycle through "
                                         "this many distinct prompts (from the second round their full blocks "
                                         "hit the prefix cache)")
    trace: str | None = Field(default=None, description="a trace file (vLLM bench formats)")
    slo: Slo = Slo()
    num_requests: int = Field(default=600, ge=20, le=200_000, description="fewest requests per simulated rate "
                              "point (more where requests live long: serving.capacity.run_requests)")
    seed: int = 0

    @model_validator(mode="after")
    def _lengths_known(self) -> Workload:
        if self.preset is not None and self.preset not in PRESETS:
            close = did_you_mean(self.preset, PRESETS)
            raise ValueError(f"unknown preset {self.preset!r}" + (f"; did you mean {close[0]!r}?" if close else
                             f"; choose one of {', '.join(PRESETS)}"))
        # one load at a time, a think time only with users: gpuplan.plan.refusals.load_refusal, which capacity asks
        if self.trace is not None and (self.prompt or self.output or self.preset):  # the trace's lengths are drawn
            raise ValueError("a trace says its requests' lengths: drop the prompt and output lengths (or the preset) "
                             "given beside it")
        if self.preset is not None and (self.prompt or self.output):  # as estimate (plan.resolve.preset_lengths)
            mean_prompt, mean_output = preset_means(self.preset)
            raise ValueError(f"preset {self.preset} says the requests' lengths ({mean_prompt:,} prompt and "
                             f"{mean_output:,} output tokens on average): drop the prompt and output lengths, or "
                             "the preset")
        if self.prompt is None and self.preset is None and self.trace is None:
            raise ValueError("say how long requests are: prompt and output lengths, a preset "
                             f"({', '.join(PRESETS)}) or a trace file")
        if self.trace is None and self.shared_prefix_tokens >= self.mean_prompt_tokens:  # as the scenario's rule
            raise ValueError(f"shared_prefix_tokens ({self.shared_prefix_tokens:,}) must be below the mean prompt "
                             f"({self.mean_prompt_tokens:,.0f} tokens): the shared start is part of each prompt")
        return self

    _traced: tuple[str, Lengths, Lengths] | None = PrivateAttr(default=None)  # (trace, prompts, outputs)

    def _trace_lengths(self) -> tuple[Lengths, Lengths]:
        """The trace's prompt and output lengths, read once: the lengths the simulation draws its requests from
        (serving.capacity ``_requests``), so the plans, prices and limits beside it take the same means and
        longest request. Before, a trace-only workload was the chat preset's everywhere but the simulation: 9,000-
        token prompts planned, priced and checked as 230-token ones."""
        if self._traced is None or self._traced[0] != self.trace:  # a copy with another trace reads its own
            ins, outs, _, _ = read_trace(self.trace)
            self._traced = (self.trace, trace_lengths(ins), trace_lengths(outs))
        return self._traced[1:]

    def prompt_lengths(self) -> Lengths:
        if self.trace:
            return self._trace_lengths()[0]
        return self.prompt or PRESETS[self.preset or "chat"][0]

    def output_lengths(self) -> Lengths:
        if self.trace:
            return self._trace_lengths()[1]
        return self.output or PRESETS[self.preset or "chat"][1]

    @property
    def mean_prompt_tokens(self) -> float:
        return _clipped_mean(self.prompt_lengths())

    @property
    def mean_output_tokens(self) -> float:
        return _clipped_mean(self.output_lengths())


def _clipped_mean(d: Lengths) -> float:
    """The mean of ``d`` after clipping (for lognormal lengths, by the clipped lognormal's closed form)."""
    if d.kind == "lognormal" and d.std > 0:
        sigma = math.sqrt(math.log(1 + (d.std / d.mean) ** 2))
        mu = math.log(d.mean) - sigma**2 / 2
        phi = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
        lo, hi = math.log(d.min), math.log(d.max)
        inside = math.exp(mu + sigma**2 / 2) * (phi((hi - mu - sigma**2) / sigma) - phi((lo - mu - sigma**2) / sigma))
        return inside + d.min * phi((lo - mu) / sigma) + d.max * (1 - phi((hi - mu) / sigma))
    return min(max(d.mean, d.min), d.max)


def trace_lengths(xs: list[int]) -> Lengths:
    """A trace's lengths summed up: their mean, spread and range (an output length may be 0: a prompt-only
    request, which the field limits of a drawn distribution do not allow, hence built unchecked from read
    values)."""
    mean = sum(xs) / len(xs)
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs))
    return Lengths.model_construct(kind="trace", mean=mean, std=std, min=min(xs), max=max(xs))


def sample_lengths(d: Lengths, n: int, rng) -> Any:
    """``n`` integer lengths from ``d`` (numpy ``rng``)."""
    import numpy as np

    if d.kind == "fixed":
        x = np.full(n, d.mean)
    elif d.kind == "uniform":
        x = rng.uniform(d.min, d.max, n)
    elif d.kind == "normal":
        x = rng.normal(d.mean, d.std, n)
    else:
        sigma2 = math.log(1 + (d.std / d.mean) ** 2)
        x = rng.lognormal(math.log(d.mean) - sigma2 / 2, math.sqrt(sigma2), n)
    return np.clip(np.rint(x), d.min, d.max).astype(np.int64)


MAX_TRACE_REQUESTS = 1_000_000  # requests a trace may hold (the simulation draws num_requests of them)


def read_trace(path: str | Path) -> tuple[list[int], list[int], list[float] | None, str]:
    """(input lengths, output lengths, arrival offsets in seconds or None, how they were read). Every length is a
    whole number of tokens (prompts 1 to :data:`MAX_TOKENS`, outputs 0 to it), every time finite; one sentence
    naming the record otherwise."""
    p = Path(path)
    records = _trace_records(p)
    if len(records) == 1 and isinstance(records[0], dict) and "input_lens" in records[0]:
        r = records[0]
        ins, outs = r.get("input_lens"), r.get("output_lens")
        if not isinstance(ins, list) or not isinstance(outs, list) or len(ins) != len(outs) or not ins:
            raise GpuplanError(f"{p}: input_lens and output_lens must be lists of the same length, one length per "
                               "request (vllm bench serve --save-detailed)")
        return ([_tokens(x, f"{p}: input_lens[{i}]", 1) for i, x in enumerate(ins)],
                [_tokens(x, f"{p}: output_lens[{i}]", 0) for i, x in enumerate(outs)], None,
                "vllm bench serve result (input_lens, output_lens)")
    ins, outs, times = [], [], []
    how = "request records"
    for i, r in enumerate(records):
        where = f"{p}, record {i + 1:,}"
        if not isinstance(r, dict):
            raise GpuplanError(f"{where} is not an object")
        if "conversations" in r:
            turns = _turns(r["conversations"], where)
            if len(turns) >= 2:
                ins.append(_tokens(max(1, len(turns[0]) // 4), f"{where}: the first turn's tokens", 1))
                outs.append(_tokens(max(1, len(turns[1]) // 4), f"{where}: the second turn's tokens", 1))
                how = "ShareGPT conversations, 4 characters per token"
            continue
        a = _first(r, ("input_len", "prompt_len", "input_length", "prompt_tokens", "input_tokens"))
        b = _first(r, ("output_len", "output_tokens", "output_length", "completion_tokens"))
        if a is None or b is None:
            raise GpuplanError(f"{where} has no input/output lengths (input_len and output_len, or input_length "
                               "and output_length)")
        ins.append(_tokens(r[a], f"{where}: {a}", 1))
        outs.append(_tokens(r[b], f"{where}: {b}", 0))
        key = "arrival_s" if r.get("arrival_s") is not None else "timestamp"
        t = r.get(key)
        times.append(None if t is None else number(t, f"{where}: {key}", least=-1e15, most=1e15)
                     / (1000 if key == "timestamp" else 1))
    if not ins:
        raise GpuplanError(f"{p} holds no requests")
    arrivals = None if any(t is None for t in times) or not times else [t - min(times) for t in times]
    return ins, outs, arrivals, how


def _trace_records(p: Path) -> list[Any]:
    """The records of a trace: a JSON list (or one object), or JSON lines; at most :data:`MAX_TRACE_REQUESTS`."""
    text = read_text(p, "trace")
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if p.suffix.lower() in (".jsonl", ".ndjson") and len(lines) > 1:
        records = [parse_json(line, f"{p}, line {n:,}") for n, line in lines]
    else:
        try:
            data = parse_json(text, str(p))
        except GpuplanError:
            if len(lines) < 2:
                raise
            data = [parse_json(line, f"{p}, line {n:,}") for n, line in lines]
        records = data if isinstance(data, list) else [data]
    if len(records) > MAX_TRACE_REQUESTS:
        raise GpuplanError(f"{p} holds {len(records):,} requests; gpuplan reads traces of up to "
                           f"{MAX_TRACE_REQUESTS:,} (the simulation draws its requests from them)")
    return records


def _tokens(value: Any, where: str, least: int) -> int:
    return int(number(value, where, least=least, most=MAX_TOKENS, whole=True))


def _turns(conversations: Any, where: str) -> list[str]:
    if not isinstance(conversations, list) or not all(isinstance(t, dict) for t in conversations):
        raise GpuplanError(f"{where}: conversations must be a list of turns ({{\"from\": ..., \"value\": ...}})")
    turns = [t.get("value", "") for t in conversations]
    if not all(isinstance(t, str) for t in turns):
        raise GpuplanError(f"{where}: each turn's value must be text")
    return turns


def _first(r: dict, keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if r.get(k) is not None), None)


def load_workload(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Workload:
    """A workload from a YAML file (keys as :class:`Workload`), with flat CLI overrides on top: ``rate_rps``,
    ``preset``, ``prompt_tokens``, ``output_tokens``, ``ttft_s``, ``tpot_s``, ``e2e_s``, ``percentile``...;
    ``length_spread`` draws the lengths given as ``prompt_tokens`` and ``output_tokens`` around them
    (:func:`spread_lengths`; fixed without it)."""
    data: dict[str, Any] = dict(read_mapping(path, "workload")) if path is not None else {}
    flat = {k: v for k, v in (overrides or {}).items() if v is not None}
    for key in ("prompt_tokens", "output_tokens", "length_spread"):  # a file may say them as the flags do
        if key in data:
            value = data.pop(key)
            flat.setdefault(key, value)
    for field in ("prompt", "output"):  # a bare number: that length for every request
        if type(data.get(field)) in (int, float):
            data[field] = {"mean": data[field]}
    slo = data.pop("slo", None) or {}
    if not isinstance(slo, dict):
        raise GpuplanError(f"workload slo: a mapping of latency targets (ttft_s, tpot_s, e2e_s, percentile), not "
                           f"{echo_value(slo)}")
    slo = dict(slo)
    for key in ("ttft_s", "tpot_s", "e2e_s", "percentile"):
        if key in flat:
            slo[key] = flat.pop(key)
    spread = flat.pop("length_spread", None)
    given = [key for key in ("prompt_tokens", "output_tokens") if key in flat]
    if spread is not None and not given:
        raise GpuplanError("length_spread draws the lengths given as prompt_tokens and output_tokens around them; a "
                           "preset, a trace or a workload file's lengths say their own")
    spread = number(spread, "length_spread", least=0, most=0.99) if spread is not None else 0.0
    for key, field in (("prompt_tokens", "prompt"), ("output_tokens", "output")):
        if key in flat:
            mean = flat.pop(key)
            if key == "output_tokens" and type(mean) in (int, float) and mean == 0:  # as estimate: timed as the one
                data[field] = {"mean": 1}  # token a prefill samples (capacity's TPOT n/a note says so)
                continue
            data[field] = {"mean": mean} if not spread else spread_lengths(
                number(mean, key, least=1, most=MAX_TOKENS), spread).model_dump(exclude_defaults=True)
    data.update(flat)
    if "think_s" in data:  # the old name (the scenario's think_time_s is the one word)
        data.setdefault(renamed("think_s", "workload field"), data.pop("think_s"))
    if slo:
        data["slo"] = slo
    try:
        return Workload(**data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(x) for x in first["loc"]) or "workload"
        msg = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            fields = Slo.model_fields if field.startswith("slo.") else Workload.model_fields
            close = did_you_mean(field.split(".")[-1], fields)
            msg = "unknown field" + (f"; did you mean {close[0]!r}?" if close else "")
        if not first["loc"]:  # a rule across fields: the sentence says it all
            raise GpuplanError(f"workload: {msg}") from None
        raise GpuplanError(f"workload {field}: {msg}" + (f" (got {echo_value(first.get('input'))})"
                                                          if first["type"] != "extra_forbidden" else "")) from None
