"""Steps past vLLM V1's largest CUDA graph: the compiled model run without a graph, each kernel launched from Python
(``vllm/v1/worker/gpu_model_runner.py``: past ``max_cudagraph_capture_size`` the dispatcher returns
``CUDAGraphMode.NONE``). The step model takes such a step as the longer of its GPU work and the launches, from the
first token past the cap (a cliff), where it once interpolated the launches between its grid's points (a 517-token
step got 1 % of them). Counted by hand on Qwen3-0.6B (28 layers) on one H100 under vLLM 0.19.0, the setup of
kvcached's held-out rows (bench/data/serving_load_runs.csv)."""

import dataclasses

import pytest

from gpuplan import overheads as oh
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving.steptime import step_model
from gpuplan.speed.inference import step_timer

H100, QWEN = load_gpu("h100-sxm"), load_model("Qwen/Qwen3-0.6B")


def scenario(**kw):
    return scenario_from({"model": "Qwen/Qwen3-0.6B", "task": "infer", "engine": "vllm", "gpu": "h100-sxm",
                          "engine_version": "0.19.0", "gpu_memory_utilization": 0.5, "max_model_len": 2048, **kw})


def test_vllm_launches_an_eager_step_at_eager_pytorchs_cost_per_kernel():
    """14 kernels a layer (DECODE_KERNELS_PER_LAYER: 7 linears and 7 others) x 28 layers x 18 us = 7.056 ms, where
    the 5 us floor of a kernel launched from C++ gave 1.96 ms, less than the GPU's 2.3 ms for a 517-token step."""
    assert oh.VLLM_EAGER_LAUNCH_S == oh.EAGER_OP_OVERHEAD_S == 18e-6 and oh.DECODE_KERNELS_PER_LAYER == 14
    timer = step_timer(scenario(), QWEN, H100)
    assert timer.timing.graph_max_batch == 512  # min(2 x max_num_seqs 1,024, 512): vllm/config/vllm.py
    assert timer.launch_host_s() == pytest.approx(14 * 28 * 18e-6) == pytest.approx(7.056e-3)


def test_the_step_past_the_cap_takes_the_launches_from_its_first_token():
    model = step_model(scenario(), QWEN, H100)
    assert model.graph_max_tokens == 512 and model.eager_launch_s == pytest.approx(7.056e-3)
    graphs = dataclasses.replace(model, eager_launch_s=0.0)  # as if every step replayed a graph
    at, past = (512, 0, 0, 512 * 256), (512, 5, 5 * 600, 512 * 256)  # a prompt alone; with five decodes
    assert model.time(*at) == graphs.time(*at) < 3e-3  # 512 tokens: the largest graph
    assert graphs.time(*past) < 3e-3 and model.time(*past) == pytest.approx(7.056e-3)  # 517: past it
    assert model.time(0, 512, 512 * 600) == graphs.time(0, 512, 512 * 600)  # a decode of 512 replays
    assert model.time(0, 513, 513 * 600) == pytest.approx(max(graphs.time(0, 513, 513 * 600), 7.056e-3))


def test_kubecons_host_leaves_a_llama_8b_mixed_step_on_its_gpu_work():
    """The bound from KubeCon's held-out stages: Llama-3.1-8B's eager step (32 layers: 8.06 ms of launches) stays
    below its GPU work at the mixed steps of ~600 tokens those runs hold, so they are timed as before."""
    llama = load_model("meta-llama/Llama-3.1-8B-Instruct")
    s = scenario_from({"model": "meta-llama/Llama-3.1-8B-Instruct", "task": "infer", "engine": "vllm",
                       "gpu": "h100-sxm", "engine_version": "0.11.0"})
    model = step_model(s, llama, H100)
    assert model.eager_launch_s == pytest.approx(14 * 32 * 18e-6)
    graphs = dataclasses.replace(model, eager_launch_s=0.0)
    step = (408, 200, 200 * 300, 2 * 204 * 102, 2)  # two 204-token prompts beside 200 decodes
    assert graphs.time(*step) > model.eager_launch_s and model.time(*step) == graphs.time(*step)


def test_enforce_eager_launches_every_step():
    """vLLM's --enforce-eager captures no graph (``vllm/config/vllm.py``: ``if self.model_config.enforce_eager:
    compilation_config.cudagraph_mode = CUDAGraphMode.NONE``), so every step, a decode of one sequence too, launches
    its kernels one by one: 14 x 28 x 18 us = 7.056 ms, against Qwen3-0.6B's ~1.4 ms decode step with graphs. The
    estimate once kept the graph's speed whatever the flag (715 tokens/s at batch 1 on an H100, both ways)."""
    eager = step_model(scenario(enforce_eager=True), QWEN, H100)
    graphs = step_model(scenario(), QWEN, H100)
    assert graphs.time(0, 1, 600) < 2e-3  # replays its graph
    assert eager.time(0, 1, 600) == pytest.approx(max(graphs.time(0, 1, 600), 7.056e-3))
    assert eager.time(512, 0, 0, 512 * 256) == pytest.approx(7.056e-3)  # a prompt step at the cap: eager too
    timer = step_timer(scenario(enforce_eager=True), QWEN, H100)
    assert timer.decode_s(1, 600) >= 7.056e-3 > step_timer(scenario(), QWEN, H100).decode_s(1, 600)
