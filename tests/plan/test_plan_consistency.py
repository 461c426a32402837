"""One scenario, one answer: every interface reports the numbers of the one plan (issue: "One scenario, one
answer"). Hypothesis draws scenarios (training and serving, rented and owned cards); for each, ``recommend``
ranks setups, and each setup it lists is asked again of ``estimate``, ``launch`` (its plan), the web API and
``fit``: memory per GPU, tokens/s, time to first token, streaming speed per user, $/hour and $ per million tokens
must be the same numbers (relative 1e-9: they come from the same functions on the same inputs, so any difference
is a second copy of a number, which is the bug this test exists to catch).

``GPUPLAN_CONSISTENCY_EXAMPLES`` sets how many scenarios are drawn (default 500)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpuplan
from gpuplan import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.launchers import launch_plan
from gpuplan.plan.capability import what_fits

EXAMPLES = int(os.environ.get("GPUPLAN_CONSISTENCY_EXAMPLES", "500"))
MODELS = ("llama-3.2-1b", "qwen3-0.6b", "llama-3.1-8b", "qwen2.5-7b", "mistral-7b", "gemma-3-1b", "qwen3-30b-a3b",
          "phi-3-mini")
CARDS = ("rtx-4090", "rtx-3090", "rtx-5090", "l40s", "a100-sxm4-80gb", "h100-sxm", "l4", "a10g", "rtx-a6000")
SAME = dict(rel=1e-9, abs=1e-9)

training = st.fixed_dictionaries({
    "task": st.just("train"), "method": st.sampled_from(["full", "lora", "qlora"]),
    "seq_len": st.sampled_from([512, 1024, 2048, 4096]), "micro_batch_size": st.sampled_from([1, 2, 4]),
    "grad_checkpointing": st.sampled_from(["none", "full"]), "train_tokens": st.sampled_from([1e7, 1e8]),
}, optional={"stack": st.sampled_from(["hf", "torchtune", "unsloth", "axolotl"]),
             "pricing": st.sampled_from(["on_demand", "spot", "any"])})
serving = st.fixed_dictionaries({
    "task": st.just("infer"), "engine": st.sampled_from(["transformers", "vllm"]),
    "batch_size": st.sampled_from([1, 4, 16]), "prompt_tokens": st.sampled_from([256, 2048, 8192]),
    "output_tokens": st.sampled_from([64, 512]),
}, optional={"kv_cache_dtype": st.sampled_from(["auto", "fp8"])})
scenarios = st.builds(lambda model, job: {"model": model, **job}, st.sampled_from(MODELS),
                      st.one_of(training, serving))


def web_client():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web.app import create_app

    return TestClient(create_app(), base_url="http://127.0.0.1")


@pytest.fixture(scope="module")
def client():
    return web_client()


def check_setup(x, owned_count: int | None, client) -> None:
    """One recommended setup, asked again of every other interface."""
    s = x.scenario
    plan = gpuplan.estimate(s, advise=False)
    assert plan.memory.device_peak_gib == pytest.approx(x.device_peak_gib, **SAME), "estimate's memory"
    if owned_count is None:  # a rental: estimate prices the same offer, on its interconnect
        assert plan.speed.tokens_per_s == pytest.approx(x.tokens_per_s, **SAME), "estimate's tokens/s"
        assert plan.cost.usd_per_hour == pytest.approx(x.usd_per_hour, **SAME), "estimate's $/h"
        assert plan.cost.usd_per_million_tokens == pytest.approx(x.usd_per_million_tokens, **SAME)
        if s.task == "infer":
            assert plan.speed.ttft_s == pytest.approx(x.ttft_s, **SAME)
            assert plan.speed.streaming_tokens_per_s_per_user == pytest.approx(x.tokens_per_s_per_user, **SAME)
        launched = launch_plan(s, offer_label=x.offer)
    else:
        launched = launch_plan(s, owned_usd_per_hour=x.usd_per_hour)
    predicted = launched.predictions()
    assert launched.speed.tokens_per_s == pytest.approx(x.tokens_per_s, **SAME), "launch's tokens/s"
    assert launched.usd_per_hour == pytest.approx(x.usd_per_hour, **SAME), "launch's $/h"
    assert predicted["device_peak_gib_per_gpu"] == round(plan.memory.device_peak_gib, 2)
    if client is not None:  # the page asks for the whole plan: the largest batch and context too
        web = client.post("/api/estimate", json=s.model_dump(mode="json", exclude_unset=True))
        assert web.status_code == 200, web.text
        whole = gpuplan.estimate(s).to_dict()
        assert whole["memory"]["device_peak_gib"] == pytest.approx(plan.memory.device_peak_gib, **SAME)
        for part in ("memory", "speed", "cost", "resolved", "suggestions"):
            assert web.json()[part] == whole[part], f"the web API's {part}"


def check_fit(s, plan) -> None:
    """``fit`` on the same cards: the row of this model is the estimate of the same scenario."""
    template = {k: v for k, v in s.model_dump(exclude_unset=True).items()
                if k not in ("model", "gpu", "num_gpus", "num_nodes", "provider", "pricing")}
    row, = what_fits(template, load_gpu(s.gpu), s.num_gpus, [s.model])
    if row.fits and not row.change and row.sharding == s.layout:
        assert row.device_peak_gib == pytest.approx(plan.memory.device_peak_gib, **SAME), "fit's memory"


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(fields=scenarios, card=st.sampled_from(CARDS), count=st.sampled_from([1, 1, 2, 4]), own=st.booleans())
def test_every_interface_reports_the_same_numbers(client, fields, card, count, own):
    try:
        r = gpuplan.recommend(fields, gpus=[card], max_gpus=count, top=2,
                              have=[f"{count}x{card}"] if own else ())
    except GpuplanError:
        return  # a combination the scenario refuses (torchtune + QLoRA on fp16...): one sentence, checked elsewhere
    for x in r.setups[:1]:
        check_setup(x, None, client)
    for x in r.owned[:1]:
        check_setup(x, count, client)
    listed = (r.setups + r.owned)[:1]
    for x in listed:
        if x.num_gpus <= 8 and not x.techniques:
            check_fit(x.scenario, gpuplan.estimate(x.scenario, advise=False))


def test_the_reviews_owned_geforce_cards_have_one_speed(client):
    """architecture review: ``recommend --have 4x5090`` reported 10,632 tokens/s where ``estimate`` on the same
    setup gave 7,309 (owned GeForce cards were given peer-to-peer PCIe in one path only). Now both time the cards'
    own links: GeForce cards talk through host memory. (The layout is given, so that launch keeps it rather than
    taking its recipe's micro-batch x accumulation, a different scenario with its own plan.)"""
    r = gpuplan.recommend({"model": "llama-3.1-8b", "task": "train", "method": "full", "train_tokens": 1e8,
                           "micro_batch_size": 1, "grad_accum_steps": 1},
                          have=["4x5090"], gpus=["rtx-5090"], max_gpus=4, top=3)
    assert r.owned
    x = r.owned[0]
    launched = launch_plan(x.scenario, owned_usd_per_hour=x.usd_per_hour)
    assert launched.speed.tokens_per_s == pytest.approx(x.tokens_per_s, **SAME)
    assert "without peer-to-peer" in " ".join(gpuplan.estimate(x.scenario).assumptions)
    check_setup(x, 4, client)


@pytest.mark.parametrize("batch", [1, 4])
def test_requests_past_the_context_are_served_as_planned(client, batch):
    """Session 29 (a helper's 60-example run): Phi-3-mini-4k for 8,192 + 64 tokens on a 4090 with vLLM "fit" in
    estimate, whose assumptions said max_model_len 4,096, and recommend listed it, but launch refused it (vLLM
    started at 4,096 refuses 8,256-token requests): one scenario, three answers. Now every interface plans vLLM
    at the requests' 8,256 tokens, and the files start it so (with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, without which
    vLLM's ``_get_and_verify_max_len`` refuses a max_model_len past the model's 4,096). At a batch of 4 (the
    60-example run's falsifying scenario once launch wrote the files) the batch's simulated run refused the requests
    estimate warned of at a batch of 1 (serving.load.longest_request): it now serves them at their length too."""
    fields = {"model": "phi-3-mini", "task": "infer", "engine": "vllm", "batch_size": batch, "prompt_tokens": 8192,
              "output_tokens": 64}
    r = gpuplan.recommend(fields, gpus=["rtx-4090"], max_gpus=1, top=1)
    x, = r.setups
    assert (x.scenario.prompt_tokens, x.scenario.output_tokens) == (8192, 64)
    check_setup(x, None, client)
    plan = gpuplan.estimate({**fields, "gpu": "rtx-4090"})
    assert plan.memory.engine["max_model_len"] == 8256 and plan.verdict.fits
    said = [w for w in plan.warnings if "8,256 tokens exceed" in w]
    assert len(said) == 1 and said[0].endswith("the plan starts vLLM with --max-model-len 8,256 and "
                                               "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, without which it does not start "
                                               "with a context past the model's 4,096"), said
    files = gpuplan.launch(x.scenario, folder="-", targets=["vllm", "skypilot"]).printed
    for name in ("vllm-serve.sh", "sky.yaml"):
        body, = (text for file, _, text in files if file == name)
        assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve" in body and "--max-model-len 8256" in body, name


@pytest.mark.parametrize(("engine", "key", "env"), [
    ("vllm", "max_model_len", "VLLM_ALLOW_LONG_MAX_MODEL_LEN"),
    ("sglang", "context_len", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"),
])
def test_estimate_recommend_capacity_and_launch_start_the_engine_alike(engine, key, env):
    """Session 30 (issue 30, one road): capacity refused the session-29 question ("the workload's requests average
    8,256 tokens ..., more than ... 4,096 tokens: shorten them", its own ``_within_context``) that estimate,
    recommend and launch plan on an engine started at the requests' 8,256 tokens with its long-context switch. Now
    capacity reads the same rule (``Engine.served_context``, the one :meth:`Engine.context` applies), so the four
    give one context, one verdict and one warning."""
    fields = {"model": "phi-3-mini", "task": "infer", "engine": engine, "batch_size": 4, "prompt_tokens": 8192,
              "output_tokens": 64}
    asked = {"estimate": gpuplan.estimate({**fields, "gpu": "rtx-4090"})}
    x, = gpuplan.recommend(fields, gpus=["rtx-4090"], max_gpus=1, top=1).setups
    asked["recommend"] = gpuplan.estimate(x.scenario)
    report = gpuplan.capacity("phi-3-mini", engine=engine, gpus=["rtx-4090"], max_gpus=1, batch=4, prompt_tokens=8192,
                              output_tokens=64, length_spread=0, search_events=600_000)
    asked["capacity"] = report.deployments[0].plan
    said = {name: [w for w in p.warnings if "8,256 tokens exceed" in w] for name, p in asked.items()}
    said["capacity"] = [n for n in report.notes if "8,256 tokens exceed" in n]
    for name, plan in asked.items():
        assert plan.memory.engine[key] == 8256 and plan.verdict.fits, name
        assert said[name] == said["estimate"] and len(said[name]) == 1 and env in said[name][0], name
    launched = gpuplan.launch(report.deployments[0].plan.setup.scenario, folder="-", targets=[engine]).printed
    body, = (text for file, _, text in launched if file.endswith("-serve.sh"))
    flag = {"vllm": "--max-model-len 8256", "sglang": "--context-length 8256"}[engine]
    assert f"{env}=1" in body and flag in body


@pytest.mark.parametrize("fields", [
    # the review's SGLang case: 140.4 of 140.3 GiB usable was called "fits, headroom -0.1 GiB"; SGLang sizes its
    # pool from the memory it finds free, so it fits, holding all that cudaMemGetInfo reports (the driver keeps
    # the rest of the usable figure: 0.41 GiB)
    {"model": "deepseek-v3", "task": "infer", "engine": "sglang", "gpu": "h200", "num_gpus": 8, "tp": 8,
     "prompt_tokens": 4096, "batch_size": 64},
    # the review's vLLM case: a short KV pool was called "does not fit ... headroom +7.8 GiB"
    {"model": "gpt-oss-120b", "task": "infer", "engine": "vllm", "gpu": "h100-sxm", "batch_size": 20,
     "prompt_tokens": 8192, "output_tokens": 256},
    {"model": "llama-3.1-8b", "task": "train", "method": "lora", "gpu": "rtx-4090", "micro_batch_size": 8},
])
def test_a_verdict_never_contradicts_its_headroom(fields):
    """"fits" comes with a headroom of zero or more on every engine; "does not fit" with a positive headroom only
    when memory is not what is short (a KV pool too small for the requests, llama.cpp layers on the CPU), and the
    command line then says so instead of printing the headroom."""
    mem = gpuplan.estimate(fields, advise=False).memory
    assert mem.fits is not None
    if fields.get("engine") == "sglang":
        from gpuplan.engines.vllm import cuda_total_gib
        from gpuplan.hardware import load_gpu

        assert mem.fits and mem.device_peak_gib == pytest.approx(cuda_total_gib(load_gpu(fields["gpu"])))
        assert mem.headroom_gib == pytest.approx(0.41)
    if mem.fits:
        assert mem.headroom_gib >= 0
    elif mem.headroom_gib >= 0:
        assert (mem.max_concurrency is not None and mem.max_concurrency < fields["batch_size"]) or mem.offloaded_layers
    from typer.testing import CliRunner

    from gpuplan.cli import app

    flags = [f"--{k.replace('_', '-')}={v}" for k, v in fields.items()]
    verdict = next(line for line in CliRunner().invoke(app, ["estimate", *flags]).stdout.splitlines()
                   if line.startswith(("fits", "does not fit")))
    assert ("headroom" in verdict) == (mem.fits or mem.headroom_gib < 0), verdict


@pytest.mark.parametrize("load", [{"rate_rps": 4}, {"users": 16}])
def test_cost_prices_a_load_as_estimate_does(load):
    """cost priced a scenario with a load at the decode step's tokens/s at batch_size (one request for a rate):
    Llama-3.1-8B at 4 requests/s on an H100 was $2.31 per million output tokens on hyperbolic's offer in `cost`
    and $0.37 in `estimate`, which prices the tokens its simulated run served (plan.build.priced_on_load). Every
    row of cost is now that price on its own offer: $/h / (served tokens/s x 3,600) x 1e6."""
    s = dict(model="llama-3.1-8b", task="infer", engine="vllm", gpu="h100-sxm", **load)
    rows = gpuplan.cost(s).rows
    assert len(rows) >= 2
    for row in rows[:2]:
        plan = gpuplan.estimate(dict(s, provider=row.provider))
        assert plan.cost.offer == row.offer
        assert row.usd_per_million_tokens == pytest.approx(plan.cost.usd_per_million_tokens, rel=1e-9)
        served = plan.load.served[0]  # its steady window's (session 24)
        assert row.usd_per_million_tokens == pytest.approx(row.usd_per_hour / (served * 3600) * 1e6, rel=1e-9)
