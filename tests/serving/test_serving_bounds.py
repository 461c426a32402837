"""Bounded serving work (issue 29, fuzz report 3: F1/D2, F2/D3, F3, N1, C4): every simulation stops at its bounds
and says so, the preemption pass in closed form keeps vLLM's rule, capacity refuses lengths past the context, and
calibrate-serving refuses what it cannot fit and never applies a correction that makes a run worse."""

import json
import math
import re
from collections import deque

import numpy as np
import pytest

from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving import calibrate
from gpuplan.serving import simulate as sim
from gpuplan.serving.steptime import StepModel

# one step of 10 ms whatever it holds: the tests below are about the scheduler, not the step model
FLAT = StepModel(grid_tokens=(1.0, 1e9), dense_s=(0.01, 0.01), lm_head_s=(0.0, 0.0), attention_s_per_pair=0.0,
                 kv_s_per_token=0.0, step_host_s=0.0, seq_host_s=0.0)


def _preempt_one_by_one(running, waiting, budget, free, bt, prompt, target, done, held, generated, hit):
    """vLLM's rule as its scheduler walks it (``Scheduler.schedule``), one running request at a time: a request
    that needs a block the pool lacks preempts the most recently admitted one, itself if it is the last."""
    i, preempt, served, takes = 0, 0, [], []
    while i < len(running) and budget > 0:
        r = running[i]
        left = target[r] - done[r]
        take = min(left, budget) if left > 0 else 1
        need = math.ceil((done[r] + take) / bt) - held[r]
        while need > free and running[-1] != r:
            v = running.pop()
            free += held[v]
            held[v], done[v], target[v] = 0, hit[v], prompt[v] + generated[v]
            waiting.insert(0, v)
            preempt += 1
        if need > free:
            running.pop(i)
            free += held[r]
            held[r], done[r], target[r] = 0, hit[r], prompt[r] + generated[r]
            waiting.insert(0, r)
            preempt += 1
            continue
        free -= max(need, 0)
        held[r] += max(need, 0)
        served.append(r)
        takes.append(take)
        budget -= take
        i += 1
    return served, takes, budget, free, preempt


def test_preemption_in_closed_form_keeps_the_rule_one_request_at_a_time():
    """F1: the preemption pass walked thousands of running requests in Python at every step of a full SGLang pool
    (127 s for one setup); its closed form must serve, preempt and requeue exactly as the walk does, over pools
    of 16-token blocks and one-token pages, prompts still prefilling, budgets that run out, and pools so short
    that every request goes."""
    rng = np.random.default_rng(29)
    cut_short = all_gone = 0
    for _ in range(3000):
        n, count, bt = 60, int(rng.integers(1, 40)), int(rng.choice([1, 16]))
        prompt, generated = rng.integers(1, 200, n), rng.integers(0, 50, n)
        target = prompt + rng.integers(0, 2, n) * generated
        done = np.minimum(target, rng.integers(0, 250, n))
        hit = np.minimum(done, rng.integers(0, 30, n))
        held = -(-done // bt) + rng.integers(0, 2, n)
        running = [int(x) for x in rng.permutation(n)[:count]]
        waiting = [int(x) for x in rng.permutation(n)[count:count + 3]]
        budget, free = int(rng.integers(1, 400)), int(rng.integers(0, 40))
        want = _preempt_one_by_one(list(running), list(waiting), budget, free, bt, prompt, target.copy(),
                                   done.copy(), held.copy(), generated, hit)
        st = sim._Engine.__new__(sim._Engine)
        st.ra, st.waiting, st.free, st.preempt, st.bt = np.asarray(running), deque(waiting), free, 0, bt
        st.freed = 0  # blocks freed so far (_Engine.__init__'s count; keeps_preempted off here)
        st.target, st.done, st.held, st.hit, st.prompt = target.copy(), done.copy(), held.copy(), hit, prompt
        st.output = prompt + generated + 5
        st.owed = st.output - generated
        st.prompting = int(np.count_nonzero(st.done[st.ra] < st.target[st.ra]))
        st.engine = sim.Scheduler(kv_blocks=free, block_tokens=bt)  # (no SGLang reserve: vLLM's rule)
        have = st.done[st.ra]
        held_ra = st.held[st.ra]
        _, take, _, need, _ = sim._running_tokens(have, st.target[st.ra] - have, held_ra, budget, bt,
                                                  np.ones(n, dtype=np.int64))
        first, takes, left = sim._schedule_with_preemption(st, budget, take, need, held_ra)
        assert [running[:first], list(takes), left, st.free, st.preempt] == [want[0], want[1], *want[2:]]
        assert st.prompting == np.count_nonzero(st.done[st.ra] < st.target[st.ra])  # the running prompts counted
        cut_short += want[4] > 0
        all_gone += not st.ra.size
    assert cut_short > 500 and all_gone > 10  # both branches of the closed form ran


def test_sglang_saturation_run_of_the_fuzz_report_ends_within_its_bounds():
    """F1: `capacity --model qwen2.5-0.5b --preset generate --engine sglang` ran past 5 minutes; one setup's
    saturation run (1x L40S) took 60-100 s. It now runs to the end within the simulation's bounds: 27,730
    requests, 69,437 preemptions (SGLang's one-token pages preempt at every step of a full pool), about 35,000
    events (bench/serving/capacity_speed.py times it). Its decode batches pass cuda_graph_max_bs and launch each
    kernel from Python at 36.6 us (SGLANG_EAGER_LAUNCH_S; 5 us until 2026-11: 15.915 requests/s); the step model
    takes those launches as the longer of them and the step's whole GPU work past the cap, not interpolated between
    its grid's points inside the token-proportional work, and SGLang's host constants were refitted with it
    (41.5 us a launch: 15.468 until 2026-11-30; 15.607 until SGLang's --max-prefill-tokens cap beside the chunk
    and the per-vendor prompt scale joined that refit on main the same day; 15.585 until SGLang's admission reserve,
    PrefillAdder's new_token_ratio, was switched on and the host constants refitted with it, issue 31: 8.722, of
    which the reserve alone +0.102 (8.620 with it off under the refitted constants) and the refit the rest, its
    per-sequence host cost 22.0 -> 54.6 us in batches of up to max_running_requests 4,096)."""
    from gpuplan.plan import capacity as search
    from gpuplan.serving import capacity as cap
    from gpuplan.serving.workload import load_workload

    m, gpu = load_model("qwen2.5-0.5b"), load_gpu("l40s")
    w = load_workload(None, {"preset": "generate"})
    setup = search.setups(scenario_from({"model": "qwen2.5-0.5b", "task": "infer", "engine": "sglang"}), m,
                       (gpu.id,), 1)[0]
    sc = setup.scenario.model_copy(update={"max_model_len": 2176, "prompt_tokens": 128, "output_tokens": 2048})
    mem = search.engine_memory(sc, m, gpu, 2176)
    model = search.step_model(sc, m, gpu)
    _, batch = cap.saturation_rate(model, w, mem.pool.kv_tokens, mem.engine.max_num_seqs,
                                      mem.engine.max_num_batched_tokens, mem.engine.mixed_prefill)
    point = cap.saturated_rps(model, mem.engine, w, batch)
    assert point.stopped == "" and point.requests_per_s == pytest.approx(8.722, rel=1e-3)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_saturation_run_that_ends_with_its_window_gives_the_whole_runs_rate(engine):
    """The saturation run ends with its steady window's last send (a quarter of its events sooner): its rate is
    the one the whole run gives, bit for bit."""
    from gpuplan.plan import capacity as search
    from gpuplan.serving import capacity as cap
    from gpuplan.serving.workload import load_workload

    m, gpu = load_model("llama-3.1-8b"), load_gpu("h100-sxm")
    w = load_workload(None, {"preset": "chat"})
    sc = search.setups(scenario_from({"model": "llama-3.1-8b", "task": "infer", "engine": engine}), m, (gpu.id,), 1)[0]
    sc = sc.scenario.model_copy(update={"max_model_len": 2048, "prompt_tokens": 230, "output_tokens": 203})
    mem, model = search.engine_memory(sc, m, gpu, 2048), search.step_model(sc, m, gpu)
    _, batch = cap.saturation_rate(model, w, mem.pool.kv_tokens, mem.engine.max_num_seqs,
                                   mem.engine.max_num_batched_tokens, mem.engine.mixed_prefill)
    users = max(int(2 * batch), int(batch) + 16)
    whole = cap.evaluate_users(model, mem.engine, w, users, users_wait=False)  # (a saturation run's users do not)
    assert cap.saturated_rps(model, mem.engine, w, batch).requests_per_s == whole.requests_per_s > 10


def test_every_simulation_stops_at_its_bounds_and_says_so():
    arrive, prompt, output = np.arange(200) * 0.05, np.full(200, 100), np.full(200, 50)  # a request every 50 ms
    engine = sim.Scheduler(kv_blocks=10_000, max_num_seqs=4)
    whole = sim.simulate(FLAT, engine, arrive, prompt, output)
    assert (whole.stopped, whole.completed, whole.events, whole.steps) == ("", 200, 405, 2516)
    cut = sim.simulate(FLAT, engine, arrive, prompt, output, max_events=300)
    assert (cut.events, cut.stopped) == (300, "stopped after 300 events (the bound is 300)")
    assert 0 < cut.completed < 200
    steps = sim.simulate(FLAT, engine, arrive, prompt, output, max_steps=100)
    assert (steps.steps, steps.completed, steps.stopped) == (100, 5, "stopped after 100 engine steps (the bound is "
                                                                        "100)")
    budget = sim.Budget(300)  # a search's budget of events: each run takes what is left and spends what it ran
    short = sim.simulate(FLAT, engine, arrive, prompt, output, budget=budget)
    assert (short.events, short.stopped, budget.left) == (300, "stopped after 300 events, what was left of its "
                                                               "search's budget of simulated events", 0)
    assert (short.completed, short.steps) == (cut.completed, cut.steps)  # the same place as max_events=300
    after = sim.simulate(FLAT, engine, arrive, prompt, output, budget=budget)
    assert (after.events, after.completed, budget.spent) == (0, 0, 300)
    ample = sim.Budget(1_000)
    assert sim.simulate(FLAT, engine, arrive, prompt, output, budget=ample).stopped == "" and ample.left == 1_000 - 405
    assert (ample.share(3).events, sim.Budget(10).share(3).events) == (198, 3)


def test_a_queue_that_can_never_be_admitted_stops_the_run():
    """Without chunked prefill a preempted request recomputes its prompt and output in one step; longer than the
    step's budget, it can never be admitted again, and with every client seat taken the loop spun forever."""
    for mixed in (True, False):  # vLLM's steps and SGLang's prefill first
        engine = sim.Scheduler(kv_blocks=120, block_tokens=1, max_num_seqs=8, max_num_batched_tokens=20,
                               chunked_prefill=False, mixed_prefill=mixed)
        out = sim.simulate(FLAT, engine, np.zeros(4), np.full(4, 10), np.full(4, 100), max_concurrency=2)
        assert (out.completed, out.preemptions) == (1, 1)
        assert out.stopped == "stalled: 2 queued requests can never be admitted" and out.events < 10


def test_capacity_says_which_setups_stopped_early(capsys):
    """A search that spends its events still answers, each setup saying that its simulations were cut short (in its
    JSON row and as a warning on stderr): the saturation run takes the 255 events, the six runs after it none."""
    from gpuplan.cli.capacity import render
    from gpuplan.plan import capacity as cap
    from gpuplan.serving.workload import load_workload

    w = load_workload(None, {"rate_rps": 2, "prompt_tokens": 1000, "output_tokens": 100, "num_requests": 300})
    s = scenario_from({"model": "llama-3.1-8b", "task": "infer", "engine": "vllm"})
    plans = cap.capacity(s, load_model("llama-3.1-8b"), w, gpu_ids=("nvidia-l40s",), max_gpus=1, simulate_top=1,
                         search_events=255)
    assert len(plans) == 1 and len(plans[0].warnings) == 1
    assert plans[0].warnings[0].startswith("1x l40s tp1: 7 of its simulations stopped early (saturation run "
                                           "stopped after 255 events, what was left of its search's budget of "
                                           "simulated events)")
    assert cap.shown(plans)[0]["warnings"] == plans[0].warnings
    render(plans, w, "plain")
    assert "warning: 1x l40s tp1: 7 of its simulations stopped early" in " ".join(capsys.readouterr().err.split())
    full = cap.capacity(s, load_model("llama-3.1-8b"), w, gpu_ids=("nvidia-l40s",), max_gpus=1, simulate_top=1)
    assert full[0].warnings == [] and full[0].max_rate_rps > plans[0].max_rate_rps


def test_capacity_answers_the_same_on_a_slow_machine(monkeypatch):
    """An answer is a function of its inputs (session 31): with every clock read advancing 1,000 s, as a machine
    loaded to a crawl would see it, the search gives the same rows, warnings and notes as on a quiet one. Its budget
    is simulated events; the wall-clock budget before cut every simulation at its first check (the old code:
    "stopped at its time limit after 255 events" in each row, lower rates)."""
    import time

    import gpuplan

    fields = {"rate_rps": 2, "prompt_tokens": 1000, "output_tokens": 100, "num_requests": 300, "ttft_s": 2,
              "tpot_s": 0.05, "gpus": ["l40s"], "max_gpus": 1, "top": 1}
    quiet = gpuplan.capacity("llama-3.1-8b", **fields)
    now = [time.monotonic()]

    def crawling() -> float:
        now[0] += 1_000.0
        return now[0]

    for name in ("monotonic", "perf_counter", "time"):
        monkeypatch.setattr(time, name, crawling)
    slow = gpuplan.capacity("llama-3.1-8b", **fields)
    assert slow.plans == quiet.plans and slow.notes == quiet.notes
    assert len(quiet.plans) == 1 and quiet.plans[0]["max_rate_rps"] > 1 and not quiet.plans[0]["warnings"]


def test_capacity_refuses_requests_longer_than_the_context():
    """C4: 10,000,000-token prompts and outputs pass the workload's validation; every request then exceeded the
    pool, none finished, and the steady window's minimum over no request raised numpy's "zero-size array". (Session
    30: capacity plans requests past the model's context as estimate does, so the sentence is now the bound of the
    context any engine is started with, no longer capacity's own "more than ... context" rule.)"""
    import gpuplan
    from gpuplan.serving.capacity import _judged
    from gpuplan.serving.simulate import Outcome

    with pytest.raises(GpuplanError) as err:
        gpuplan.capacity("llama-3.2-1b", rate_rps=1, prompt_tokens=10_000_000, output_tokens=10_000_000,
                         gpus=["l40s"], top=1)
    assert str(err.value) == ("the workload's requests run to 20,000,000 tokens, past the longest context gpuplan "
                              "starts an engine with (10,000,000, max_model_len's bound): shorten them")
    empty = Outcome(ttft_s=np.zeros(0), tpot_s=np.zeros(0), e2e_s=np.zeros(0), duration_s=0.0, input_tokens=0,
                    output_tokens=0, preemptions=0, completed=0)
    keep, start, end = _judged(empty)
    assert (len(keep), start, end) == (0, 0.0, 0.0)


@pytest.mark.parametrize("prompt, said", [
    ({"kind": "uniform", "min": 300, "max": 2, "mean": 100}, "workload prompt: min 300 is above max 2"),
    ({"kind": "normal", "mean": 1000, "std": 100, "min": 10_000_000, "max": 1000},
     "workload prompt: min 10,000,000 is above max 1,000"),
    ({"kind": "normal", "mean": 1000, "max": 100_000_000}, "less than or equal to 10000000"),
])
def test_a_workloads_lengths_between_a_min_above_their_max_are_one_sentence(tmp_path, prompt, said):
    """s19's fuzz (seed 1905): a capacity workload file with prompt ``{kind: uniform, min: 300, max: 2}`` was
    numpy's "high - low < 0" as a traceback; a normal draw with min above max clipped every prompt to max."""
    import yaml

    import gpuplan
    from gpuplan.cli import run

    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump({"rate_rps": 1, "prompt": prompt, "output": {"mean": 100}}))
    with pytest.raises(GpuplanError, match=re.escape(said)):
        gpuplan.capacity("llama-3.2-1b", str(path), gpus=["l4"], top=1)
    assert run(["capacity", str(path), "--model", "llama-3.2-1b", "--gpus", "l4", "--top", "1"]) == 2


def _run(tmp_path, name: str, data: dict) -> str:
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return str(p)


def _deployment(model: str, gpu: str):
    g, m = load_gpu(gpu), load_model(model)
    return calibrate.deployment(scenario_from({"model": model, "task": "infer", "engine": "vllm", "gpu": g.id}), m, g)


def test_calibrate_serving_refuses_what_it_cannot_fit(tmp_path):
    """F3: a model too big for the card, a run whose TTFT is 0, and files with no benchmark gave StatisticsError
    (a median over no run); F2: a 156-byte file stating 1e9 completed requests allocated 7.45 GiB."""
    ok = {"mean_ttft_ms": 50, "mean_tpot_ms": 20, "completed": 100, "total_input_tokens": 100_000,
          "total_output_tokens": 20_000, "request_rate": 2}
    with pytest.raises(GpuplanError, match=r"^microsoft/phi-4 does not fit GeForce RTX 4090 at tp 1 in vLLM: its "
                                           r"weights take 27\.3 GiB of the 21\.2 GiB vLLM may use"):
        _deployment("phi-4", "rtx-4090")
    model, engine = _deployment("llama-3.2-1b", "h100-sxm")
    with pytest.raises(GpuplanError, match=r"zero\.json: mean_ttft_ms must be a number above 0 to 3,600,000, got 0$"):
        calibrate.read_results(_run(tmp_path, "zero.json", {**ok, "mean_ttft_ms": 0}))
    zero = calibrate.read_results(_run(tmp_path, "zero.json", {**ok, "mean_ttft_ms": 0.001}))
    with pytest.raises(GpuplanError, match=r"^no run can be fitted: .*zero\.json is left out: its mean TTFT is not "
                                           r"above the API server's own latency$"):
        calibrate.fit_corrections(model, engine, zero)
    with pytest.raises(GpuplanError, match=r"^no run to fit: the result files hold no benchmark$"):
        calibrate.fit_corrections(model, engine, [])
    with pytest.raises(GpuplanError, match=r"huge\.json: completed must be a whole number from 1 to 1,000,000, "
                                           r"got 1,000,000,000$"):
        calibrate.read_results(_run(tmp_path, "huge.json", {**ok, "completed": 10**9}))
    huge = calibrate.read_results(_run(tmp_path, "huge.json", {**ok, "completed": 10**6,
                                                                "total_input_tokens": 10**8,
                                                                "total_output_tokens": 10**7}))
    replayed = []
    original = calibrate.replay

    def counting(*args, **kw):
        replayed.append(len(kw["prompt"]))
        return original(*args, **kw)

    calibrate.replay = counting
    try:
        _, rows, notes = calibrate.fit_corrections(model, engine, huge)
    finally:
        calibrate.replay = original
    assert replayed and max(replayed) == calibrate.MAX_REPLAY == 2000
    assert f"{huge[0].source}: 2,000 of its 1,000,000 requests replayed" in notes and len(rows) == 1


# The fuzz report's three well-formed results (fuzz-3-inputs/vllm_ok.json, guidellm_ok.json, aiperf_ok.json), as
# written there: one run each, replayed on Llama-3.1-8B on an H100 SXM. N1: fitted one ratio at a time, the
# corrections moved their TTFT error from -1.9 % to +42.9 %, -40.9 % to +41.9 % and -55.3 % to +22.2 %.
N1_RUNS = {
    "vllm_ok.json": {"mean_ttft_ms": 50, "mean_tpot_ms": 20, "completed": 100, "total_input_tokens": 100000,
                     "total_output_tokens": 20000, "request_rate": 2, "output_throughput": 300},
    "guidellm_ok.json": {"benchmarks": [{"args": {"strategy": {"rate": 2}}, "request_totals": {
        "successful": 50, "errored": 0, "total": 50}, "metrics": {
        "time_to_first_token_ms": {"successful": {"mean": 60}},
        "time_per_output_token_ms": {"successful": {"mean": 25}},
        "prompt_token_count": {"successful": {"mean": 500}}, "output_token_count": {"successful": {"mean": 100}}}}]},
    "aiperf_ok.json": {"time_to_first_token": {"avg": 70}, "inter_token_latency": {"avg": 22},
                       "input_sequence_length": {"avg": 400}, "output_sequence_length": {"avg": 120},
                       "request_count": {"avg": 40}, "input_config": {"loadgen": {"request_rate": 1}}},
}


@pytest.mark.parametrize("name", sorted(N1_RUNS))
def test_calibration_never_makes_its_own_run_worse(tmp_path, name):
    """N1: the corrections are fitted together on half of the run's requests and kept only if the other half's
    TTFT and TPOT errors do not grow; the answer says when they are refused (vllm_ok.json: a TPOT three times the
    model's with a TTFT it already predicts within 2 % cannot both be met, so nothing is applied)."""
    model, engine = _deployment("llama-3.1-8b", "h100-sxm")
    runs = calibrate.read_results(_run(tmp_path, name, N1_RUNS[name]))
    cal, rows, notes = calibrate.fit_corrections(model, engine, runs)
    (row,) = rows
    assert abs(row["ttft_err_after_pct"]) <= abs(row["ttft_err_before_pct"])
    assert abs(row["tpot_err_after_pct"]) <= abs(row["tpot_err_before_pct"])
    if name == "vllm_ok.json":
        assert (cal.compute, cal.memory) == (1.0, 1.0) and row["ttft_err_after_pct"] == row["ttft_err_before_pct"]
        assert len(notes) == 1 and notes[0].startswith("the fitted correction (compute x") and notes[0].endswith(
            "made the held-out TTFT of " + row["run"] + " worse: no correction is applied")
    else:  # both quantities within 11 % of the run, from 39-74 % off
        assert abs(row["ttft_err_after_pct"]) < 11 and abs(row["tpot_err_after_pct"]) < 1 and notes == []


@pytest.mark.parametrize("fields", [
    {"users": 4, "output_tokens": 1, "length_spread": 0},  # a closed loop of one-token replies
    {"batch_size": 4, "output_tokens": 0},  # an offline batch timed as one token (seed 3006, index 361)
])
def test_a_run_without_a_second_token_has_no_tpot_and_no_nan(tmp_path, fields):
    """Session 20's fuzzing: a run whose requests all stop at their first token has no TPOT or ITL sample. They were
    NaN: the answer's JSON said null against a float schema, plan.json held the bare word NaN (not JSON) and the
    launch files said "TPOT median nan ms". They are None now (load.NO_GAP): null in JSON, an empty cell."""
    import gpuplan
    from gpuplan.cli import run

    job = {"task": "infer", "engine": "vllm", "model": "llama-3.2-1b", "gpu": "l4", "prompt_tokens": 512, **fields}
    plan = gpuplan.estimate(job)
    loaded = plan.load or plan.offline
    assert loaded.median_tpot_ms is None and loaded.p99_itl_ms is None and loaded.median_ttft_ms > 0
    json.dumps(plan.to_dict(), allow_nan=False)
    type(loaded).model_validate(loaded.model_dump())  # the answer matches its own response model
    args = [f"--{k.replace('_', '-')}={v}" for k, v in job.items()]
    assert run(["launch", *args, "-o", str(tmp_path / "out")]) == 0
    figures = json.loads((tmp_path / "out" / "plan.json").read_text(),
                         parse_constant=lambda word: pytest.fail(f"plan.json holds {word}"))
    assert figures["predicted"]["median_tpot_ms"] is None, figures["predicted"]
    script = (tmp_path / "out" / "vllm-serve.sh").read_text()
    assert "nan" not in script and "no TPOT (one-token replies)" in script


def test_a_run_where_no_request_completes_has_no_latency_and_answers():
    """TensorRT-LLM without chunked prefill never admits a 32,768-token prompt past its 8,192-token step: no request
    completes, so no latency has a sample. Those were NaN (null in JSON against a float schema); with None for
    TPOT alone they raised pydantic's error (a traceback, session 20's own fuzzing, seed 3016 index 238). Every
    latency is None now, and the answer is strict JSON."""
    import gpuplan

    plan = gpuplan.estimate({"task": "infer", "engine": "trtllm", "model": "llama-3.2-1b", "gpu": "l4",
                             "batch_size": 64, "prompt_tokens": 32_768, "output_tokens": 1})
    run = plan.offline
    assert run.completed == 0 and run.median_ttft_ms is None and run.p99_e2el_ms is None
    assert any("never admitted" in w for w in run.warnings)
    json.dumps(plan.to_dict(), allow_nan=False)


@pytest.mark.parametrize("setup", [
    {"engine": "vllm"}, {"engine": "sglang"}, {"engine": "trtllm", "quant": "fp8"},
    {"engine": "vllm", "speculative_method": "eagle3", "acceptance_length": 3.0},
    {"engine": "vllm", "engine_version": "0.13.0"},  # synchronous host loop: gpu + host
])
def test_a_decode_step_never_gets_shorter_as_its_context_grows(setup):
    """F1 speed (bench/results/capacity_speed_s28.md): a decode run's later steps hold more context, so the
    simulation cuts a run to one step, without timing the rest, when the next arrival comes before its first step
    ends (``simulate._timed``). That is exact only while a step of decodes takes no less time over a longer
    context: checked here on each engine's step model, with speculation, past the CUDA-graph cap and calibrated."""
    import dataclasses

    from gpuplan.serving.steptime import Calibration, step_model

    s = scenario_from({"model": "llama-3.1-8b", "task": "infer", "gpu": "h100-sxm", **setup})
    base = step_model(s, load_model("llama-3.1-8b"), load_gpu("h100-sxm"))
    for model in (base, dataclasses.replace(base, calibration=Calibration(compute=1.3, memory=0.7, overhead=2.0))):
        for seqs in (1.0, 37.0, 512.0, 4096.0):
            times = [model.time(0.0, seqs, seqs * ctx, 0.0, 0.0, seqs) for ctx in (1.0, 100.5, 1024.0, 32768.0)]
            assert times == sorted(times) and times[0] < times[-1]
