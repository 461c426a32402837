"""capacity's rows are readings of plans (gpuplan/plan/capacity.py): each setup's KV pool and scheduler limits come
from its memory plan (one memory report each), and each row's TTFT alone and streaming speed from the plan at the
load found, the same plan ``estimate`` makes of that scenario."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import gpuplan
from counting import MEMORY, counting
from gpuplan.errors import GpuplanError
from gpuplan.model.catalog import load_model
from gpuplan.plan.capacity import capacity, setups
from gpuplan.scenario import scenario_from
from gpuplan.serving.workload import load_workload

PLANS = "plan/plan.py:memory_plan"


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_capacity_rows_read_their_plans(engine):
    m = load_model("llama-3.1-8b")
    s = scenario_from({"model": "llama-3.1-8b", "task": "infer", "engine": engine})
    w = load_workload(None, {"rate_rps": 2, "prompt_tokens": 1000, "output_tokens": 100, "ttft_s": 2,
                             "tpot_s": 0.1, "num_requests": 60})
    gpus = ("nvidia-l40s", "nvidia-h100-sxm5-80gb")
    with counting(MEMORY, PLANS) as seen:
        rows = capacity(s, m, w, gpu_ids=gpus, max_gpus=2, simulate_top=2)
    considered = len(setups(s, m, gpus, 2))
    assert considered == 4 and len(rows) == 2
    # the cards named as every other command names them (it said 'h100-sxm5-80gb', where recommend says 'h100-sxm')
    assert {x.label for x in setups(s, m, gpus, 1)} == {"1x l40s tp1", "1x h100-sxm tp1"}
    # a memory plan per setup considered, one per row at its load; each one memory report
    assert seen[PLANS] == seen[MEMORY] == considered + len(rows)
    for row in rows:
        plan = row.plan
        sc = plan.setup.scenario
        assert (sc.gpu, sc.tp, sc.engine) == (row.gpu_id, row.tp, engine)
        best = max((p for p in row.curve if p.meets_slo and p.rate_rps <= row.max_rate_rps), key=lambda p: p.rate_rps)
        # the load found, by Little's law over the mean latency (the row's e2e_s is the SLO percentile's)
        assert best.e2e_mean_s < row.e2e_s and sc.batch_size == max(1, round(row.max_rate_rps * best.e2e_mean_s))
        assert row.kv_tokens == plan.memory.max_context_tokens == plan.pool.kv_tokens > 0
        assert row.max_concurrency == plan.memory.max_concurrency
        assert row.ttft_alone_s == plan.speed.ttft_s
        assert row.streaming_tokens_per_s_per_user == plan.speed.streaming_tokens_per_s_per_user
        again = gpuplan.estimate(sc.model_dump(exclude_unset=True), advise=False)
        assert again.speed.ttft_s == pytest.approx(row.ttft_alone_s, rel=1e-12)
        assert again.memory.max_concurrency == row.max_concurrency


def _job(model: str, gpu: str, batch: int, prompt: int, output: int, **scenario):
    m = load_model(model)
    s = scenario_from({"model": model, "task": "infer", "engine": "vllm", **scenario})
    w = load_workload(None, {"batch": batch, "prompt_tokens": prompt, "output_tokens": output})
    return capacity(s, m, w, gpu_ids=(gpu,), max_gpus=1, simulate_top=1)


def test_an_offline_job_is_the_plans_offline_run_priced():
    """capacity --batch (issue 31 item 4): each row is estimate --batch-size's offline run of the batch through
    vLLM's scheduler, on the setup's own pool: 2,000 requests of 1,000 + 200 tokens of Llama-3.1-8B on one RTX 4090,
    whose pool holds 32 such requests, run a few dozen at a time with preemptions; the job costs the instance's
    price for its time (one group per instance here)."""
    (row,) = _job("llama-3.1-8b", "nvidia-geforce-rtx-4090", 2000, 1000, 200)
    run = row.plan.offline
    assert run is not None and run.completed == 2000 and run.num_prompts == 2000
    assert (row.job_s, row.job_peak_running, row.job_preemptions) == (run.duration, run.peak_running,
                                                                       run.preemptions)
    assert row.max_concurrency == 32 and 32 <= row.job_peak_running < 64 and row.job_preemptions > 0
    assert row.replicas_per_instance == 1
    assert row.usd_per_job == pytest.approx(row.usd_per_hour * row.job_s / 3600, rel=1e-12)
    assert row.output_tokens_per_s == pytest.approx(2000 * 200 / row.job_s, rel=1e-12)
    again = gpuplan.estimate(row.plan.setup.scenario.model_dump(exclude_unset=True), advise=False)
    assert again.offline.duration == pytest.approx(row.job_s, rel=1e-12)


@pytest.mark.parametrize(("version", "cap"), [(None, 1024), ("0.8.5", 256)])
def test_an_offline_job_runs_at_most_the_releases_max_num_seqs(version, cap):
    """vLLM's default cap on running requests by release (vllm/engine/arg_utils.py _set_default_args_v1: 1,024 for
    `vllm serve` on an H100 from 0.9, 256 before): 3,000 short requests of Qwen2.5-0.5B, which the pool could hold
    all of, run at most ``cap`` at a time, in waves, without preemption."""
    extra = {"engine_version": version} if version else {}
    (row,) = _job("qwen2.5-0.5b", "nvidia-h100-sxm5-80gb", 3000, 100, 50, **extra)
    assert row.max_concurrency > 3000
    assert row.job_peak_running == cap and row.job_preemptions == 0
    assert row.plan.offline.running_cap == cap


def test_an_offline_job_takes_the_chunked_prefill_switch():
    """capacity carries the scenario's chunked_prefill into every setup's plan: vLLM 0.6.3 at 65,536 tokens of
    context chunks by default (512 tokens a step); turned off, the profiling run takes 65,536 tokens, so the pool
    is smaller and the job's whole 8,000-token prompts run in steps of their own."""
    on = _job("llama-3.1-8b", "nvidia-h100-sxm5-80gb", 64, 8000, 200, engine_version="0.6.3", max_model_len=65_536)
    off = _job("llama-3.1-8b", "nvidia-h100-sxm5-80gb", 64, 8000, 200, engine_version="0.6.3", max_model_len=65_536,
               chunked_prefill=False)
    assert off[0].plan.setup.scenario.chunked_prefill is False
    assert off[0].plan.memory.engine["max_num_batched_tokens"] == 65_536 > on[0].plan.memory.engine[
        "max_num_batched_tokens"] == 512
    assert off[0].kv_tokens < on[0].kv_tokens and off[0].job_s != on[0].job_s
    assert off[0].job_s == pytest.approx(gpuplan.estimate(off[0].plan.setup.scenario.model_dump(exclude_unset=True),
                                                          advise=False).offline.duration, rel=1e-12)


def test_the_api_and_cli_take_the_switch_and_refuse_it_for_an_engine_without_it():
    with pytest.raises(gpuplan.GpuplanError, match="chunked_prefill takes True or False"):
        gpuplan.api.capacity("llama-3.1-8b", batch=10, prompt_tokens=100, output_tokens=10, chunked_prefill="no")
    with pytest.raises(gpuplan.GpuplanError, match="TensorRT-LLM takes no chunked_prefill true"):
        gpuplan.api.capacity("llama-3.1-8b", engine="trtllm", batch=10, prompt_tokens=100, output_tokens=10,
                             gpus=["h100-sxm"], chunked_prefill=True)


def test_every_gpu_named_has_a_row_or_says_why():
    """Review 3's second rewalk: ``--gpus l40s,rtx-4090,rtx-pro-6000-blackwell,mi300x`` showed L40S and RTX 4090 rows
    only, with no word of the other two (MI300X is another vendor's card, the RTX PRO 6000 has no offer so it ranked
    below the setups simulated). Each GPU asked for now has a row or a note: here one row (one setup simulated), and a
    note each for the cards ranked below it (the AMD card among them since session 21), and the T4 (15 GiB usable: an
    8B model's 16 GB of bf16 weights do not fit one)."""
    m = load_model("llama-3.1-8b")
    s = scenario_from({"model": "llama-3.1-8b", "task": "infer", "engine": "vllm"})
    w = load_workload(None, {"rate_rps": 1, "prompt_tokens": 500, "output_tokens": 50, "ttft_s": 2, "tpot_s": 0.1,
                             "num_requests": 40})
    named = ("nvidia-l40s", "nvidia-h100-sxm5-80gb", "amd-instinct-mi300x", "nvidia-t4")
    notes: list[str] = []
    rows = capacity(s, m, w, gpu_ids=named, max_gpus=1, simulate_top=1, notes=notes)
    assert len(rows) == 1 and rows[0].gpu_id in named[:2]
    other = next(g for g in named[:2] if g != rows[0].gpu_id)
    assert len(notes) == 4, notes
    assert notes[3].startswith("$/M out and $/M in price each replica at the highest rate it serves within the SLOs")
    assert notes[0].endswith(f"ranked below the 1 setups simulated (the cheapest first by the closed form: the "
                             f"target in whole instances, then per request): raise --top, or give --gpus {other} alone")
    assert notes[1].startswith("Instinct MI300X: ranked below the 1 setups simulated")  # simulated since s21
    assert notes[2].startswith("Tesla T4: no setup of up to 1 GPUs holds the model")
    late: list[str] = []
    tight = w.model_copy(update={"slo": w.slo.model_copy(update={"ttft_s": 0.001})})
    assert capacity(s, m, tight, gpu_ids=named[:1], max_gpus=1, notes=late) == []
    assert late == ["L40S: misses the SLOs even with one request at a time on up to 1 GPUs"]


def test_thinking_users_stream_at_the_load_in_flight():
    """Review 3's second rewalk: 100 users thinking 10 s between ~5 s replies (gpt-oss-20b, one H100) keep about 35
    requests in flight (Little's law: the simulated rate x end-to-end latency), yet the row's tok/s/user was the
    decode step of all 100 at once (133.7 tok/s: 7.48 ms, slower than the simulation's own p95 TPOT of 7.06 ms).
    The row's plan is now at the load in flight; users who never pause keep every slot busy."""
    m = load_model("gpt-oss-20b")
    s = scenario_from({"model": "gpt-oss-20b", "task": "infer", "engine": "vllm"})
    fields = {"users": 100, "prompt_tokens": 1200, "output_tokens": 500, "ttft_s": 1.5, "tpot_s": 0.04}
    (row,) = capacity(s, m, load_workload(None, {**fields, "think_time_s": 10}), gpu_ids=("nvidia-h100-sxm5-80gb",),
                      max_gpus=1, simulate_top=1)
    # Little's law over the closed loop: 100 users = rate x (10 s + the mean end-to-end latency), so the mean in
    # flight is 100 - rate x 10
    in_flight = row.plan.setup.scenario.batch_size
    assert row.max_users == 100 and 20 < in_flight < 60
    assert abs(in_flight - (100 - row.max_rate_rps * 10)) <= 0.1 * in_flight
    assert 1 / row.streaming_tokens_per_s_per_user <= row.tpot_s  # the step at the load, under the p95 TPOT
    (busy,) = capacity(s, m, load_workload(None, {**fields, "users": 40}), gpu_ids=("nvidia-h100-sxm5-80gb",),
                       max_gpus=1, simulate_top=1)
    assert busy.plan.setup.scenario.batch_size == busy.max_users == 40  # think 0: every user's request in flight


def test_a_prompt_only_trace_has_no_tpot_and_says_why(tmp_path):
    """Session 7's walk: a trace of ``output_length: 0`` read ``p95 TPOT 0 ms`` and a streaming speed for requests
    that stream nothing. vllm bench serve counts a request's TPOT only when it streams a second token
    (``calculate_metrics``: ``output_len > 1``), so the row's TPOT is None (n/a) and a note says why; an SLO on it
    holds (no gap between tokens to miss it)."""
    trace = tmp_path / "prefill.jsonl"
    trace.write_text("".join(f'{{"input_length": {300 + 7 * i}, "output_length": {i % 2}}}\n' for i in range(60)))
    m = load_model("llama-3.1-8b")
    s = scenario_from({"model": "llama-3.1-8b", "task": "infer", "engine": "vllm"})
    w = load_workload(None, {"rate_rps": 1, "trace": str(trace), "ttft_s": 2, "tpot_s": 0.05, "num_requests": 40})
    notes: list[str] = []
    (row,) = capacity(s, m, w, gpu_ids=("nvidia-l40s",), max_gpus=1, simulate_top=1, notes=notes)
    assert row.ttft_s > 0 and row.max_rate_rps > 1
    assert row.tpot_s is None and row.streaming_tokens_per_s_per_user is None
    assert len(notes) == 2 and notes[1].startswith("TPOT n/a: no request of the workload streams a second token")
    assert notes[0].startswith("$/M out and $/M in price each replica at the highest rate")


def test_the_tpot_percentile_is_over_the_requests_that_stream():
    """A mixed trace: the p95 TPOT is the 95th percentile of the requests with more than one output token, as
    vllm bench serve reports it and ``estimate --users`` reads its runs (serving/load.py). Before, the requests of
    0 or 1 output tokens entered it at 0 ms and pulled it down: here 39.8 ms against 44.0 ms; qwen3-8b on an L40S
    with a trace of three in four prompt-only requests, 143 ms against the streaming requests' own 153 ms."""
    import numpy as np

    from gpuplan.serving.capacity import COOLDOWN_SHARE, WARMUP_SHARE, _point

    n = 200
    tpot = np.where(np.arange(n) % 4 == 0, np.linspace(0.010, 0.050, n), 0.0)  # one request in four streams
    out = SimpleNamespace(ttft_s=np.full(n, 0.2), tpot_s=tpot, e2e_s=np.full(n, 1.0), sent_at=np.arange(n, dtype=float),
                          finished_at=np.arange(n) + 1.0, completed=n, output_tokens=10 * n)
    w = load_workload(None, {"rate_rps": 1, "prompt_tokens": 100, "output_tokens": 10, "tpot_s": 0.042})
    point = _point(out, w, 1.0, n)
    keep = np.arange(n)[int(WARMUP_SHARE * n):int((1 - COOLDOWN_SHARE) * n)]  # the steady window
    streamed = tpot[keep][tpot[keep] > 0]
    assert point.tpot_s == pytest.approx(np.percentile(streamed, 95)) and point.tpot_s > 0.04
    everyone = np.percentile(tpot[keep], 95)
    assert everyone < 0.042 < point.tpot_s and not point.meets_slo  # over all requests the p95 met the target


def test_a_trace_s_lengths_are_the_plans_and_prices_lengths(tmp_path):
    """A trace-only workload was the chat preset (230-token prompts, 203-token outputs, 2,048 tokens at most)
    everywhere but the simulation, which draws the trace's requests: 6,000-12,000-token prompts on an H100 read
    "TTFT alone 23 ms", "KV reqs 855" and $0.827 per million input tokens (40 times the $0.022 of the prompts
    served), and vLLM's max_model_len stayed 2,048, below every prompt. The workload's lengths are now the trace's
    own, so the row's plan, prices and limits take its means and its longest request."""
    trace = tmp_path / "long.jsonl"
    ins, outs = [6000 + 97 * i for i in range(60)], [100 + 9 * i for i in range(60)]
    trace.write_text("".join(f'{{"input_len": {a}, "output_len": {b}}}\n' for a, b in zip(ins, outs, strict=True)))
    w = load_workload(None, {"trace": str(trace), "ttft_s": 5, "num_requests": 40})
    assert w.mean_prompt_tokens == sum(ins) / 60 and w.mean_output_tokens == sum(outs) / 60
    assert (w.prompt_lengths().max, w.output_lengths().min) == (max(ins), min(outs))
    m = load_model("llama-3.1-8b")
    s = scenario_from({"model": "llama-3.1-8b", "task": "infer", "engine": "vllm"})
    (row,) = capacity(s, m, w, gpu_ids=("nvidia-h100-sxm5-80gb",), max_gpus=1, simulate_top=1)
    sc = row.plan.setup.scenario
    assert (sc.prompt_tokens, sc.output_tokens) == (round(w.mean_prompt_tokens), round(w.mean_output_tokens))
    assert sc.max_model_len == max(ins) + max(outs)  # the longest request, as vLLM must admit it
    assert row.max_concurrency * (sc.prompt_tokens + sc.output_tokens) <= row.kv_tokens
    per_s = row.usd_per_hour / row.replicas_per_instance / 3600
    assert row.usd_per_million_input == pytest.approx(per_s / (row.max_rate_rps * sum(ins) / 60) * 1e6)
    assert row.output_tokens_per_s == pytest.approx(row.max_rate_rps * sum(outs) / 60)


def test_a_trace_takes_a_path_and_no_other_lengths(tmp_path):
    """The Python API took a workload file or calibration as a Path but a trace only as text ("Input should be a
    valid string"); and a trace with prompt_tokens beside it planned the trace's requests and silently dropped the
    lengths given. A Path is read; lengths beside a trace are one sentence."""
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(f'{{"input_len": {100 + i}, "output_len": 20}}\n' for i in range(30)))
    report = gpuplan.capacity("llama-3.2-1b", trace=trace, ttft_s=2, gpus=["l4"], max_gpus=1, top=1)
    assert report.workload.trace == str(trace) and report.workload.mean_prompt_tokens == 114.5
    for lengths in ({"prompt_tokens": 100}, {"output_tokens": 5}, {"preset": "chat"}):
        with pytest.raises(gpuplan.GpuplanError, match=r"^workload: a trace says its requests' lengths: drop the "):
            gpuplan.capacity("llama-3.2-1b", trace=str(trace), ttft_s=2, **lengths)


def test_capacity_takes_the_weights_format_as_estimate_does():
    """``capacity --quant`` (issue 30): the format goes through the one resolver into every setup's scenario, so
    the row's KV pool and concurrency are estimate's for the same quantized scenario. Llama-3.1-8B in AWQ int4 on
    one L4 under vLLM, 1,000 + 200 tokens a request. Hand arithmetic for the pool: the 4-bit weights free
    (bf16 weights - AWQ weights) bytes, each token of KV cache takes 2 (K, V) x 32 layers x 8 KV heads x 128 dims
    x 2 bytes = 131,072 bytes, so the pool grows by that many tokens (to a 16-token block)."""
    pytest.importorskip("numpy")
    from typer.testing import CliRunner

    from gpuplan.cli import app as cli_app

    lengths = {"prompt_tokens": 1000, "output_tokens": 200}
    report = gpuplan.capacity("llama-3.1-8b", quant="awq-int4", gpus=["l4"], max_gpus=1, rate_rps=1, ttft_s=2.0,
                              tpot_s=0.2, top=1, **lengths)
    (row,) = report.deployments
    assert row.quant == row.plan.setup.scenario.quant == "awq-int4"
    scenario = {"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "gpu": "l4", **lengths}
    quantized = gpuplan.estimate({**scenario, "quant": "awq-int4"}, advise=False)
    assert row.kv_tokens == quantized.memory.max_context_tokens == quantized.pool.kv_tokens
    assert row.max_concurrency == quantized.memory.max_concurrency == 88  # 106,512 tokens // 1,200, a whole block each
    bf16 = gpuplan.estimate(scenario, advise=False)
    freed = (bf16.memory.weights_gib - quantized.memory.weights_gib) * 2**30
    assert row.kv_tokens - bf16.pool.kv_tokens == pytest.approx(freed / 131_072, abs=16)
    # the command line's flag is the API's parameter: the same rows
    out = CliRunner().invoke(cli_app, ["capacity", "--model", "llama-3.1-8b", "--quant", "awq-int4", "--gpus", "l4",
                                       "--max-gpus", "1", "--rate", "1", "--ttft", "2", "--tpot", "0.2", "--top", "1",
                                       "--prompt-tokens", "1000", "--output-tokens", "200", "--json"])
    assert out.exit_code == 0, out.output
    assert [(p["quant"], p["kv_tokens"], p["max_concurrency"]) for p in json.loads(out.output)["plans"]] == \
        [("awq-int4", row.kv_tokens, row.max_concurrency)]


def test_a_search_on_an_unsimulated_engine_is_refused_not_run_as_vllm():
    """The search's setups keep the scenario's engine; an engine whose scheduler is not simulated is refused in the
    sentence a load on it gets from estimate (before, its setups were silently planned on vLLM)."""
    m = load_model("llama-3.2-1b")
    w = load_workload(None, {"rate_rps": 2, "prompt_tokens": 500, "output_tokens": 50})
    with pytest.raises(GpuplanError, match="capacity's searches run a decoder LLM engine's scheduler, simulated for "
                                           "vllm, sglang and trtllm, not transformers: set engine vllm, sglang or "
                                           "trtllm"):
        capacity(scenario_from({"model": "llama-3.2-1b", "task": "infer"}), m, w, gpu_ids=("nvidia-l4",))
    s = scenario_from({"model": "llama-3.2-1b", "task": "infer", "engine": "sglang"})
    assert {x.scenario.engine for x in setups(s, m, ("nvidia-l4",), 2)} == {"sglang"}


def test_a_trace_of_requests_shorter_than_the_shortest_context_is_served(tmp_path):
    """A trace of two-token chats ("hi" -> "ok") was refused with "scenario field 'max_model_len': Input should be
    greater than or equal to 16 (got 2)", a field the user never set: the engine's max_model_len, derived from the
    longest request, is raised to the shortest a scenario takes (scenario/fields.py MIN_MODEL_LEN)."""
    from gpuplan.scenario.fields import MIN_MODEL_LEN

    trace = tmp_path / "tiny.jsonl"
    trace.write_text('{"input_length": 1, "output_length": 1}\n' * 30)
    m = load_model("qwen3-0.6b")
    s = scenario_from({"model": "qwen3-0.6b", "task": "infer", "engine": "vllm"})
    w = load_workload(None, {"rate_rps": 1, "trace": str(trace), "num_requests": 30})
    (row,) = capacity(s, m, w, gpu_ids=("nvidia-l40s",), max_gpus=1, simulate_top=1, notes=[])
    assert row.max_rate_rps > 1
    assert row.plan.setup.scenario.max_model_len == MIN_MODEL_LEN == 16


def test_the_setups_simulated_are_ranked_as_their_rows_are():
    """The setups simulated are the closed form's two ranks in turn: by what the target costs in whole instances
    (as the rows are ranked), then by the cost per request. Ranked by cost per request alone, 40 users of
    gpt-oss-120b thinking 20 s (2,500 + 600 tokens) had 2x A100 at $2.78/h first and left out the 2x L40S that serve
    all 40 at $1.58/h."""
    from gpuplan.plan.capacity import _bound_rank

    w = load_workload(None, {"users": 40, "think_time_s": 20, "prompt_tokens": 2500, "output_tokens": 600})
    # by hand: 40 users within an end-to-end latency of 6 s send 40 / (20 + 6) = 1.54 requests/s; a replica
    # saturating at 1.0 req/s takes 2, two a 2-replica instance: one instance; at 0.5 req/s 4 replicas, 2 instances
    assert _bound_rank(w, 1.0, (3.59, "x", 1), 6.0) == (0, 2 * 3.59, 3.59 / 1.0)
    assert _bound_rank(w, 1.0, (3.59, "x", 2), 6.0) == (0, 3.59, 3.59 / 2)
    assert _bound_rank(w, 0.5, (3.59, "x", 2), 6.0) == (0, 2 * 3.59, 3.59 / 2 / 0.5)
    assert _bound_rank(w, 5.0, None, 6.0)[0] == 2  # unpriced last
    rate = load_workload(None, {"rate_rps": 3, "prompt_tokens": 100, "output_tokens": 10})
    assert _bound_rank(rate, 2.0, (1.0, "x", 1), 0.1)[:2] == (0, 2.0)  # ceil(3 / 2) replicas at $1/h

    m = load_model("gpt-oss-120b")
    s = scenario_from({"model": "gpt-oss-120b", "task": "infer", "engine": "vllm"})
    w = load_workload(None, {"users": 40, "think_time_s": 20, "prompt_tokens": 2500, "output_tokens": 600,
                             "ttft_s": 2, "tpot_s": 0.04})
    named = ("nvidia-h100-sxm5-80gb", "nvidia-h200-sxm-141gb", "nvidia-a100-sxm4-80gb", "nvidia-l40s", "nvidia-b200")
    rows = capacity(s, m, w, gpu_ids=named)
    l40s = [(p.max_users, p.instances_for_target, p.usd_per_hour_for_target) for p in rows if p.setup == "2x l40s tp2"]
    assert l40s == [(40, 1, 1.58)]
    costs = [p.usd_per_hour_for_target for p in rows]
    assert costs == sorted(costs) and costs[0] <= 1.58
    # and the setups far faster than the target still come in, on the cost per request: 2x H100 ($4.80/h)
    assert "2x h100-sxm tp2" in [p.setup for p in rows]


def test_a_setup_whose_bound_undercuts_the_cheapest_row_is_simulated_too():
    """s19-rewalk's finding: GLM-4.5-Air for 80 users (4,000 in, 800 out, p95 TTFT 2 s, TPOT 40 ms) on SGLang
    answered 4x H200 at $14.36/h first, while `--gpus b200` showed 2x B200 serving all 80 at $11.96/h. The closed
    form ranked it 11th, behind an 8x A40 bound at $9.60/h that takes 14 instances ($44.80/h). A setup whose bound
    (a lower bound of its row's cost) is under the cheapest row simulated is simulated too; the cheapest row is
    the B200's, as with --gpus b200 alone."""
    w = dict(users=80, prompt_tokens=4000, output_tokens=800, ttft_s=2, tpot_s=0.04, engine="sglang")
    every = gpuplan.capacity("glm-4.5-air", top=8, **w)  # 8 simulated: the 4x H200 below is the 8th (--top 8)
    alone = gpuplan.capacity("glm-4.5-air", gpus=["b200"], **w)
    first, b200 = every.deployments[0], alone.deployments[0]
    assert (first.setup, first.max_users) == (b200.setup, b200.max_users) == ("2x b200 tp2", 80)
    assert first.usd_per_hour_for_target == b200.usd_per_hour_for_target == 11.96
    assert [p.setup for p in every.deployments[1:3]] == ["4x h200-sxm tp4", "4x h100-nvl tp4"]
    assert every.deployments[1].usd_per_hour_for_target == 14.36


def test_rows_without_a_price_say_why():
    """Walk s20: Llama-3.1-8B for 10 chat users on ``--gpus t4`` listed 2x, 4x and 8x T4 at tp 2-8 with every price
    cell blank under 'cheapest first' and no sentence. The T4's one offer in force is AWS's 1-GPU g4dn.xlarge, and a
    tensor-parallel group is priced on one instance that holds it whole (``cheapest_offer``), so none is priced."""
    report = gpuplan.capacity("llama-3.1-8b", gpus=["t4"], max_gpus=2, top=1, users=4, preset="chat")
    assert [p.setup for p in report.deployments] == ["2x t4 tp2"] and report.deployments[0].usd_per_hour is None
    (note,) = [n for n in report.notes if "no price" in n]
    assert note.startswith("2x t4 tp2: no price: no rented instance holds the group whole (Tesla T4: the offers in "
                           "force rent aws 1x;")
    priced = gpuplan.capacity("llama-3.1-8b", gpus=["l4"], max_gpus=1, top=1, users=4, preset="chat")
    assert priced.deployments[0].usd_per_hour and not any("no price" in n for n in priced.notes)


def test_users_without_a_latency_target_are_told_the_rows_size_nothing():
    """Walk s20: 60,000 chat users thinking 30 s on ``--gpus h100`` with no --ttft/--tpot answered one H100 at
    $1.29/h serving all 60,000 (p95 TTFT 785 s, 0 tok/s a user): a closed loop with no target counts every user
    served however slow. A note says so; with a target, or an open loop (held to what a replica drains), none."""
    fields = {"gpus": ["h100-sxm"], "max_gpus": 1, "top": 1, "preset": "chat"}
    free = gpuplan.capacity("llama-3.1-8b", users=400, think_time_s=30, **fields)
    assert free.deployments[0].max_users == 400
    assert any(n.startswith("no latency target given (--ttft, --tpot, --e2e): each replica counts as serving every "
                            "user however slow") for n in free.notes)
    held = gpuplan.capacity("llama-3.1-8b", users=400, think_time_s=30, ttft_s=2, **fields)
    assert not any("no latency target" in n for n in held.notes)
    # the columns it points at are the percentile asked (review 3 s27: a p90 run was told of "the p95 ... columns")
    p90 = gpuplan.capacity("llama-3.1-8b", users=400, think_time_s=30, percentile=90, **fields)
    (note,) = [n for n in p90.notes if n.startswith("no latency target")]
    assert "(the p90 TTFT and TPOT columns say how slow)" in note and "p95" not in note


def test_users_past_the_bound_are_refused_as_users():
    """Walk s20: ``capacity --users 100000`` was refused as "scenario field 'batch_size': Input should be less than or
    equal to 65536", a field the user had not given: the workload took 100,000 users and capacity plans each setup at
    a batch of that many. The workload's bound is the scenario's batch bound, and the sentence names the users."""
    with pytest.raises(GpuplanError) as e:
        gpuplan.capacity("llama-3.1-8b", users=100_000, preset="chat", gpus=["h100-sxm"])
    assert "users" in str(e.value) and "65536" in str(e.value) and "batch_size" not in str(e.value)


def test_amd_and_gaudi_cards_are_simulated_as_estimate_times_them():
    """capacity refused every card but NVIDIA's ("their step model is measured there") while ``estimate --users``
    simulated vLLM's and SGLang's ROCm builds on MI300X with the AMD band, and vLLM on Gaudi: two roads. A row on
    an Instinct card now reads its plan as an NVIDIA row does: the engine's ROCm timing (decode GPU work
    ``ROCM_DECODE_SLOWDOWN`` x the CUDA build's, engines/rocm.py) said in the plan, the TTFT alone and streaming
    speed the same as estimate's on that setup; TensorRT-LLM, which builds CUDA engines only, is refused by its
    own card rule, named for each card."""
    import gpuplan

    for engine in ("vllm", "sglang"):
        report = gpuplan.capacity("qwen3-8b", engine=engine, users=8, prompt_tokens=1000, output_tokens=200,
                                  ttft_s=2, tpot_s=0.1, gpus=["mi300x"], max_gpus=1, top=1)
        (row,) = report.deployments
        assert row.gpu_id == "amd-instinct-mi300x" and row.max_users == 8
        sc = row.plan.setup.scenario
        again = gpuplan.estimate(sc.model_dump(exclude_unset=True), advise=False)
        assert again.speed.ttft_s == pytest.approx(row.ttft_alone_s, rel=1e-12)
        assert again.speed.streaming_tokens_per_s_per_user == pytest.approx(
            row.streaming_tokens_per_s_per_user, rel=1e-12)
        assert any("on ROCm (Instinct MI300X): decode GPU work" in a for a in row.plan.assumptions)
    gaudi = gpuplan.capacity("qwen3-8b", users=8, prompt_tokens=1000, output_tokens=200, ttft_s=2, tpot_s=0.1,
                             gpus=["gaudi3"], max_gpus=1, top=1)
    assert [d.gpu_id for d in gaudi.deployments] == ["intel-gaudi3"]
    with pytest.raises(GpuplanError, match=r"simulates none of the cards named \(TensorRT-LLM runs on NVIDIA GPUs "
                                           r"only, and Instinct MI300X is AMD's"):
        gpuplan.capacity("qwen3-8b", engine="trtllm", users=8, prompt_tokens=1000, output_tokens=200, ttft_s=2,
                         tpot_s=0.1, gpus=["mi300x"])


@pytest.mark.parametrize("load", [{"rate_rps": 5}, {"users": 4}])
def test_a_setup_that_meets_the_slos_at_no_load_says_so_and_blames_no_offer(load):
    """s22 fuzz: ``capacity --model qwen3-8b --gpus mi300x --max-gpus 1 --rate 5 --preset chat --ttft 0.03`` (TTFT
    alone 22 ms, so the setup is simulated; under any load the p95 TTFT passes 30 ms) listed '1x mi300x tp1 0.00
    req/s' and the note '1x mi300x tp1: no price: no rented instance holds the group whole (Instinct MI300X: the
    offers in force rent runpod 1x ...)', false: runpod's 1x instance holds it, and the row has no price because it
    serves no load within the SLOs. The note now says that, with the lightest load's figures."""
    m = load_model("qwen3-8b")
    s = scenario_from({"model": "qwen3-8b", "task": "infer", "engine": "vllm"})
    w = load_workload(None, {**load, "preset": "chat", "ttft_s": 0.03, "num_requests": 60})
    notes: list[str] = []
    (row,) = capacity(s, m, w, gpu_ids=("amd-instinct-mi300x",), max_gpus=1, simulate_top=1, notes=notes)
    assert row.max_rate_rps == 0 and row.usd_per_hour is None and row.ttft_alone_s < 0.03
    assert not [n for n in notes if "no rented instance holds the group whole" in n], notes
    (said,) = [n for n in notes if n.startswith("1x mi300x tp1: meets the SLOs at none of the loads simulated")]
    lightest = min(row.curve, key=lambda p: p.users or p.rate_rps)
    assert f"p95 TTFT {lightest.ttft_s * 1e3:,.0f} ms" in said and lightest.ttft_s > 0.03


def test_a_card_the_plan_refuses_is_named_with_the_refusal():
    """s22 fuzz: ``capacity --quant nvfp4 --gpus h100,mi300x`` (``estimate`` refuses either card: 'H100 SXM5 80GB
    (Hopper) has no fp4 tensor cores for nvfp4 weights (Blackwell has)') answered exit 0, 'no setup meets the SLOs:
    relax them, allow more GPUs or quantization', each card noted 'no setup of up to 8 GPUs holds the model and one
    request': the refusal was caught as a setup that does not fit. Now the note is the refusal, and a search whose
    every card named is refused is that sentence (exit 2), as estimate's."""
    m = load_model("qwen3-8b")
    s = scenario_from({"model": "qwen3-8b", "task": "infer", "engine": "vllm", "quant": "nvfp4"})
    w = load_workload(None, {"rate_rps": 2, "preset": "chat", "ttft_s": 2, "num_requests": 60})
    with pytest.raises(GpuplanError, match=r"no fp4 tensor cores for nvfp4 weights.*Instinct MI300X|"
                                           r"Instinct MI300X.*no fp4 tensor cores"):
        capacity(s, m, w, gpu_ids=("nvidia-h100-sxm5-80gb", "amd-instinct-mi300x"), max_gpus=1)
    notes: list[str] = []
    rows = capacity(s, m, w, gpu_ids=("nvidia-h100-sxm5-80gb", "nvidia-b200"), max_gpus=1, simulate_top=1,
                    notes=notes)
    assert [r.setup for r in rows] == ["1x b200 tp1 nvfp4"]
    (said,) = [n for n in notes if n.startswith("H100 SXM5 80GB:")]
    assert "no fp4 tensor cores for nvfp4 weights" in said and "holds the model" not in said


def test_the_api_and_the_command_line_simulate_as_many_setups_unless_told():
    """s22 fuzz, the same question through both faces: `gpuplan capacity --model qwen3-8b --gpus mi300x,gaudi3,h100
    --users 20 --preset chat --ttft 2 --tpot 0.1` simulated 6 setups (--top 6) and ``gpuplan.capacity`` with the same
    arguments 8 (its ``top=8``), so the API listed 2x and 8x rows the command line never showed, and could rank
    another setup first. One default, the search's own (``simulate_top``)."""
    import inspect

    import typer

    from gpuplan.cli import app
    from gpuplan.plan import capacity as search

    command = typer.main.get_command(app).get_command(None, "capacity")
    cli = next(p.default for p in command.params if p.name == "top")
    api = inspect.signature(gpuplan.capacity).parameters["top"].default
    plan = inspect.signature(search.capacity).parameters["simulate_top"].default
    assert cli == api == plan == 6


def test_capacity_takes_estimates_name_for_the_shared_prefix():
    """s25 walk: estimate took --shared-prefix-tokens and capacity --shared-prefix for one field; capacity takes
    both now, and either reaches the workload."""
    import typer

    from gpuplan.cli import app

    command = typer.main.get_command(app).get_command(None, "capacity")
    option = next(p for p in command.params if p.name == "shared_prefix")
    assert {"--shared-prefix-tokens", "--shared-prefix"} <= set(option.opts)
    estimate_cmd = typer.main.get_command(app).get_command(None, "estimate")
    assert any("--shared-prefix-tokens" in p.opts for p in estimate_cmd.params)
