"""Time `gpuplan capacity`: one simulated rate point, and the full catalog search for three workloads and for the
fuzz report's SGLang case (wall and CPU seconds: on a shared machine the CPU time is the one to compare with the
targets, 5 s and 10 s).

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
from gpuplan.plan.capacity import capacity
from gpuplan.scenario import scenario_from
from gpuplan.serving.capacity import evaluate
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
    searches = (("llama-3.1-8b", w),
                ("gpt-oss-120b", load_workload(None, dict(rate_rps=1, prompt_tokens=7000, output_tokens=1000,
                                                         ttft_s=2, tpot_s=0.05))),
                ("gpt-oss-120b", load_workload(None, dict(users=20, prompt_tokens=8192, output_tokens=512, ttft_s=2,
                                                         tpot_s=0.05))))
    for name, wl in searches:
        t0, c0 = time.perf_counter(), time.process_time()
        plans = capacity(scenario_from(dict(model=name, task="infer", engine="vllm")), load_model(name), wl)
        print(f"full catalog search, {name}, {'users' if wl.users else 'rate'} ({len(plans)} setups simulated): "
              f"{time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU")
    # fuzz report 3, F1: `gpuplan capacity --model qwen2.5-0.5b --preset generate --engine sglang` (goal 10 s; it
    # ran past 5 minutes: SGLang's full one-token pool preempts at every step, each preemption walked the running
    # batch in Python); the same with vLLM beside it
    generate = load_workload(None, dict(preset="generate"))
    for engine in ("sglang", "vllm"):
        t0, c0 = time.perf_counter(), time.process_time()
        plans = capacity(scenario_from(dict(model="qwen2.5-0.5b", task="infer", engine=engine)),
                         load_model("qwen2.5-0.5b"), generate)
        print(f"full catalog search, qwen2.5-0.5b, preset generate, {engine} ({len(plans)} setups simulated): "
              f"{time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU")


if __name__ == "__main__":
    main()
