"""Time `gpuplan capacity`: one simulated rate point and the full catalog search for one workload.

    python bench/serving/capacity_speed.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from gpuplan.engines import vllm
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving.capacity import capacity, evaluate
from gpuplan.serving.simulate import vllm_scheduler
from gpuplan.serving.steptime import step_model
from gpuplan.serving.workload import load_workload


def main() -> None:
    w = load_workload(None, dict(rate_rps=5, prompt_tokens=2000, output_tokens=300, ttft_s=1.0, tpot_s=0.05))
    m = load_model("llama-3.1-8b")
    s = scenario_from(dict(model="llama-3.1-8b", task="infer", engine="vllm", gpu="h100-sxm", max_model_len=2300))
    gpu = load_gpu("h100-sxm")
    mem = vllm.startup_memory(s, m, gpu)
    eng = vllm_scheduler(s, mem)
    sm = step_model(s, m, gpu)
    for rate in (1.0, 10.0, 40.0):
        t0 = time.perf_counter()
        evaluate(sm, eng, w, rate)
        print(f"one rate point ({w.num_requests} requests at {rate:g} req/s): {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    plans = capacity(scenario_from(dict(model="llama-3.1-8b", task="infer", engine="vllm")), m, w)
    print(f"full catalog search ({len(plans)} setups simulated): {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
