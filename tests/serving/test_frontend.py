"""The engine's frontend process in the serving simulation (serving/simulate.py ``_Frontend``): requests pass
one process in the order sent, each for its serial cost, with what streaming the running requests' tokens leaves
of that process; the rest of the per-request latency stays parallel. Expected values are counted by hand."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving.simulate import Scheduler, simulate
from gpuplan.serving.steptime import StepModel, step_model

STEP = 1e-3  # every step 1 ms, whatever it holds
REQUEST, SERIAL = 20e-3, 10e-3


def _model(serial: float = SERIAL, per_token: float = 0.0, per_prompt_token: float = 0.0) -> StepModel:
    return StepModel(grid_tokens=(1.0, 1e9), dense_s=(STEP, STEP), lm_head_s=(0.0, 0.0), attention_s_per_pair=0.0,
                     kv_s_per_token=0.0, step_host_s=0.0, seq_host_s=0.0, request_s=REQUEST, frontend_s=serial,
                     frontend_token_s=per_token, frontend_prompt_token_s=per_prompt_token)


ENGINE = Scheduler(kv_blocks=10**6, max_num_seqs=64)


def test_a_burst_of_four_passes_the_frontend_one_at_a_time():
    """Four requests sent at once, 10 ms of serial frontend work each, one-token outputs: request k reaches the
    engine at (k + 1) x 10 ms and its prompt step ends 1 ms later; TTFT adds the parallel 20 - 10 ms. So 21, 31,
    41, 51 ms: offsets 0, c, 2c, 3c."""
    out = simulate(_model(), ENGINE, np.zeros(4), np.full(4, 16), np.full(4, 1))
    assert out.ttft_s == pytest.approx([0.021, 0.031, 0.041, 0.051], abs=1e-9)
    assert out.e2e_s == pytest.approx(out.ttft_s, abs=1e-9)


def test_without_a_serial_part_a_burst_is_admitted_at_once():
    """No serial part: the four share the first step (1 ms) and each adds the whole 20 ms: 21 ms each, as before
    the frontend was modelled."""
    out = simulate(_model(serial=0.0), ENGINE, np.zeros(4), np.full(4, 16), np.full(4, 1))
    assert out.ttft_s == pytest.approx([0.021] * 4, abs=1e-9)


def test_a_request_alone_pays_the_same_latency_with_or_without_the_frontend():
    """Requests 1 s apart never meet in the frontend: each TTFT is its 1 ms step plus the whole 20 ms, whatever
    part of it is serial."""
    send = np.arange(5, dtype=float)
    alone = simulate(_model(), ENGINE, send, np.full(5, 16), np.full(5, 8))
    parallel = simulate(_model(serial=0.0), ENGINE, send, np.full(5, 16), np.full(5, 8))
    assert alone.ttft_s == pytest.approx([0.021] * 5, abs=1e-9)
    assert alone.e2e_s == pytest.approx(parallel.e2e_s, abs=1e-9)


def test_streaming_running_requests_slows_the_next_admission():
    """Two requests at once, 50 output tokens each, 0.1 ms of the process per streamed token. The first reaches the
    engine at 10 ms and decodes one token a 1 ms step: 1,000 tokens/s x 0.1 ms = 10 % of the process, so the
    second's 10 ms of serial work takes 10 / 0.9 = 11.1 ms: it reaches the engine at 21.1 ms, runs in the step
    that starts then, and its first token lands at 22.1 ms (steps were cut at the hand-over), TTFT 32.1 ms."""
    out = simulate(_model(per_token=1e-4), ENGINE, np.zeros(2), np.full(2, 16), np.full(2, 50))
    assert out.ttft_s[0] == pytest.approx(0.021, abs=1e-9)
    assert out.ttft_s[1] == pytest.approx(0.010 + 0.010 / 0.9 + STEP + 0.010, abs=1e-3)
    assert out.ttft_s[1] > 0.031 + 1e-3  # slower than the serial work alone


def test_streaming_never_stops_admissions():
    """So many tokens streamed that they would take the whole process (64 running x 1,000 tokens/s x 1 ms): the
    load is capped at 90 %, so each later request still reaches the engine, 10 ms / 0.1 = 100 ms apart."""
    n = 70
    out = simulate(_model(per_token=1e-3), ENGINE, np.zeros(n), np.full(n, 16), np.full(n, 400))
    assert out.completed == n
    gaps = np.diff(np.sort(out.ttft_s))
    assert gaps.max() == pytest.approx(0.1, rel=0.02)


def test_a_closed_loop_user_waits_only_the_parallel_part_between_requests():
    """One user, no think time, 4-token outputs: each request's first token lands 1 ms after it reaches the engine,
    which is its serial 10 ms after the user sends it; the user sends the next 10 ms (the parallel part) after the
    last token. TTFT 21 ms each, and the whole latency per request is what the engine did plus 20 ms."""
    out = simulate(_model(), ENGINE, np.zeros(5), np.full(5, 16), np.full(5, 4), users=1, users_wait=True)
    assert out.ttft_s == pytest.approx([0.021] * 5, abs=1e-9)
    assert out.e2e_s == pytest.approx([0.024] * 5, abs=1e-9)


def test_a_long_prompt_is_tokenized_before_the_engine_sees_it():
    """1 us a prompt token on top of the 10 ms serial part: a request of 8,000 tokens alone reaches the engine 18 ms
    after it is sent (TTFT 18 + 1 + 10 ms parallel = 29 ms); sent with one of 1,000 tokens behind it, the short one
    waits for the long one's 18 ms, then takes its own 11: 18 + 11 + 1 + 10 = 40 ms."""
    prompt = np.array([8000, 1000])
    alone = simulate(_model(per_prompt_token=1e-6), ENGINE, np.zeros(1), prompt[:1], np.full(1, 1))
    assert alone.ttft_s == pytest.approx([0.029], abs=1e-9)
    both = simulate(_model(per_prompt_token=1e-6), ENGINE, np.zeros(2), prompt, np.full(2, 1))
    assert both.ttft_s == pytest.approx([0.029, 0.040], abs=1e-9)


def test_only_sglang_charges_the_tokenizer_per_prompt_token():
    """SGLang's TokenizerManager tokenizes each prompt in its event loop (overheads.TOKENIZE_S_PER_TOKEN); vLLM's
    and TensorRT-LLM's step models carry no per-prompt-token cost."""
    m, gpu = load_model("llama-3.1-8b"), load_gpu("h100-sxm")
    per_token = {e: step_model(scenario_from({"task": "infer", "model": "llama-3.1-8b", "gpu": "h100-sxm",
                                             "engine": e}), m, gpu).frontend_prompt_token_s
                 for e in ("vllm", "sglang", "trtllm")}
    assert per_token == {"vllm": 0.0, "sglang": oh.TOKENIZE_S_PER_TOKEN, "trtllm": 0.0}
    # an 8,192-token prompt: 33 ms of the TokenizerManager's time
    assert pytest.approx(0.0328, abs=1e-4) == 8192 * oh.TOKENIZE_S_PER_TOKEN


def test_the_engines_name_their_frontend_costs():
    """vLLM's V1 and SGLang's step models carry the serial part and the per-token cost of overheads.py; vLLM V0 and
    TensorRT-LLM have none (their requests reach the engine as sent)."""
    m, gpu = load_model("llama-3.1-8b"), load_gpu("h100-sxm")
    models = {(e, v): step_model(scenario_from({"task": "infer", "model": "llama-3.1-8b", "gpu": "h100-sxm",
                                                "engine": e, **({"engine_version": v} if v else {})}), m, gpu)
              for e, v in (("vllm", None), ("vllm", "0.6.3"), ("sglang", None), ("trtllm", None))}
    assert (models["vllm", None].frontend_s, models["vllm", None].frontend_token_s) == (
        oh.VLLM_V1_FRONTEND_S, oh.VLLM_V1_FRONTEND_TOKEN_S)
    assert (models["sglang", None].frontend_s, models["sglang", None].frontend_token_s) == (
        oh.SGLANG_FRONTEND_S, oh.SGLANG_FRONTEND_TOKEN_S)
    assert models["vllm", "0.6.3"].frontend_s == models["trtllm", None].frontend_s == 0.0
    # PR #12287's run: 63.62 requests/s of 202 tokens is what the process serves
    per_request = oh.VLLM_V1_FRONTEND_S + 202 * oh.VLLM_V1_FRONTEND_TOKEN_S
    assert 1 / per_request == pytest.approx(63.62, rel=0.01)
    for m_ in models.values():
        assert m_.frontend_s <= m_.request_s

