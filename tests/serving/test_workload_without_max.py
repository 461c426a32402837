"""A drawn length with no ``max`` of its own (``examples/chat-workload.yaml``'s outputs: normal, mean 300, std 100,
min 20): session 30 checked the longest request against max_model_len's bound (10,000,000) with the 10,000,000
tokens that stand for "no max" added in, so `gpuplan capacity examples/chat-workload.yaml ...`, the example
`capacity --help` and docs/serve.md show, was refused ("the workload's requests run to 10,008,000 tokens"). The
engine starts at the context it takes for the mean request, as it did before and as a bounded draw's does."""

import pytest

from gpuplan.errors import GpuplanError
from gpuplan.model.catalog import load_model
from gpuplan.plan import capacity as cap
from gpuplan.scenario import scenario_from
from gpuplan.serving.workload import load_workload


def _setup_context(workload: dict) -> int:
    w = load_workload(None, {"rate_rps": 2, "num_requests": 300, **workload})
    s = scenario_from({"model": "llama-3.1-8b", "task": "infer", "engine": "vllm"})
    plans = cap.capacity(s, load_model("llama-3.1-8b"), w, gpu_ids=("nvidia-l40s",), max_gpus=1, simulate_top=1,
                         search_events=0)
    return plans[0].plan.setup.scenario.max_model_len


def test_a_draw_without_a_max_starts_the_engine_at_the_model_s_context():
    bounded = _setup_context({"prompt": {"kind": "lognormal", "mean": 2000, "std": 800, "max": 8000},
                              "output": {"kind": "normal", "mean": 300, "std": 100, "min": 20, "max": 600}})
    assert bounded == 8600
    for output in ({"kind": "normal", "mean": 300, "std": 100, "min": 20},
                   {"kind": "lognormal", "mean": 300, "std": 300}):
        assert _setup_context({"prompt": {"kind": "lognormal", "mean": 2000, "std": 800, "max": 8000},
                               "output": output}) == 131_072  # Llama-3.1-8B's max_position_embeddings


def test_a_max_past_the_bound_is_still_refused():
    with pytest.raises(GpuplanError, match="run to 10,004,999 tokens, past the longest context"):
        _setup_context({"prompt": {"kind": "uniform", "mean": 5_000_000, "min": 1, "max": 9_999_999},
                        "output": {"kind": "fixed", "mean": 5_000}})
