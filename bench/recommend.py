"""Time a full `gpuplan recommend` over the bundled catalog (goal: under 0.5 s on 2 cores).

    python bench/recommend.py

Prints, per job, the wall time of one recommendation (best of 5, caches warm as in a long-lived process;
the first, cold call is shown too), the setups evaluated and setups per second.
"""

from __future__ import annotations

import time

from gpuplan.model.catalog import load_model
from gpuplan.plan.recommend import Constraints, recommend
from gpuplan.scenario import Scenario

JOBS = {
    "train full 8B, 1e8 tokens": (dict(model="llama-3.1-8b", task="train", train_tokens=1e8), {}),
    "train 8B, any method": (dict(model="llama-3.1-8b", task="train", train_tokens=1e8), {"any_method": True}),
    "train 70B, any method, 64 GPUs": (dict(model="llama-3.1-70b", task="train", train_tokens=1e8),
                                        {"any_method": True, "max_gpus": 64}),
    "serve 70B 32x4k, vLLM": (dict(model="llama-3.1-70b", task="infer", engine="vllm", batch_size=32,
                                   prompt_tokens=4096), {}),
    "serve 70B 32x4k, any quant": (dict(model="llama-3.1-70b", task="infer", batch_size=32, prompt_tokens=4096),
                                   {"any_quant": True}),
    "serve 8B, 40 users think 15 s": (dict(model="llama-3.1-8b", task="infer", engine="vllm", users=40,
                                           think_time_s=15, prompt_tokens=2000, output_tokens=300), {}),
    "nothing fits: 405B on 1 GPU": (dict(model="llama-3.1-405b", task="train", train_tokens=1e8),
                                    {"max_gpus": 1}),
}


def main() -> None:
    print(f"{'job':34s} {'cold s':>7s} {'warm s':>7s} {'setups':>7s} {'setups/s':>9s} {'fit':>5s}")
    for name, (fields, constraints) in JOBS.items():
        s = Scenario.model_validate(fields)
        m, c = load_model(s.model), Constraints(**constraints)
        start = time.perf_counter()
        result = recommend(s, m, c)
        cold = time.perf_counter() - start
        warm = min(_time(s, m, c) for _ in range(5))
        print(f"{name:34s} {cold:7.3f} {warm:7.3f} {result.evaluated:7,d} {result.evaluated / warm:9,.0f} "
              f"{result.fitting:5,d}")


def _time(s: Scenario, m, c: Constraints) -> float:
    start = time.perf_counter()
    recommend(s, m, c)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
