"""Replay public serving benchmarks with gpuplan's scheduler simulation (bench/serving/serving_cases.yaml).

    python bench/serving/serving_accuracy.py

Prints, per source, the measured and predicted output throughput, mean TTFT and mean TPOT with their errors.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "src"))

from gpuplan.hardware import load_gpu  # noqa: E402
from gpuplan.memory.runtimes import vllm  # noqa: E402
from gpuplan.model.catalog import load_model  # noqa: E402
from gpuplan.scenario import scenario_from  # noqa: E402
from gpuplan.serving.calibrate import Measurement, predict  # noqa: E402
from gpuplan.serving.simulate import Engine  # noqa: E402
from gpuplan.serving.steptime import step_model  # noqa: E402


def main() -> None:
    print("| case | quantity | measured | gpuplan | error |")
    print("|---|---|---:|---:|---:|")
    for c in yaml.safe_load((HERE / "serving_cases.yaml").read_text()):
        s = scenario_from({"task": "infer", "engine": "vllm", **c["scenario"]})
        m, gpu = load_model(s.model), load_gpu(s.gpu)
        mem = vllm.startup_memory(s, m, gpu)
        engine = Engine(kv_blocks=mem.num_blocks, max_num_seqs=mem.limits.max_num_seqs,
                        max_num_batched_tokens=mem.limits.max_num_batched_tokens)
        run = Measurement(source=c["id"], rate_rps=c["rate_rps"], num_requests=c["num_requests"],
                          mean_input_tokens=c["mean_input_tokens"], mean_output_tokens=c["mean_output_tokens"],
                          mean_ttft_s=c["mean_ttft_s"], mean_tpot_s=c["mean_tpot_s"],
                          output_tokens_per_s=c["output_tokens_per_s"])
        ttft, tpot, tps = predict(step_model(s, m, gpu), engine, run)
        for what, real, pred in (("output tokens/s", run.output_tokens_per_s, tps), ("mean TTFT s", run.mean_ttft_s,
                                 ttft), ("mean TPOT s", run.mean_tpot_s, tpot)):
            print(f"| {c['id']} | {what} | {real:,.4g} | {pred:,.4g} | {100 * (pred / real - 1):+.0f}% |")


if __name__ == "__main__":
    main()
