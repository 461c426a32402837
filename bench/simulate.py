"""Time ``gpuplan simulate`` on the two jobs of the issue (goal: under 60 s each on 2 CPU cores).

    python bench/simulate.py
"""

from __future__ import annotations

import time
import warnings

from gpuplan import estimate
from gpuplan.sim.simulate import simulate

JOBS = {
    "Llama-3.1-70B QLoRA, seq 4096": dict(model="llama-3.1-70b", task="train", method="qlora", seq_len=4096,
                                          grad_checkpointing="full"),
    "Llama-3.1-8B full fine-tuning, seq 2048": dict(model="llama-3.1-8b", task="train", method="full",
                                                    seq_len=2048, grad_checkpointing="full"),
}


def main() -> None:
    warnings.simplefilter("ignore")
    print(f"{'job':42s} {'seconds':>8s} {'runs':>5s} {'simulated GiB':>14s} {'estimate GiB':>13s} {'error':>7s}")
    for name, fields in JOBS.items():
        start = time.perf_counter()
        sim = simulate(fields)
        seconds = time.perf_counter() - start
        mem = estimate(fields, advise=False).memory
        analytic = mem.allocated_peak_gib - mem.other.get("cuBLAS workspace", 0.0)
        print(f"{name:42s} {seconds:8.1f} {len(sim.runs):5d} {sim.allocated_peak_gib:14.2f} {analytic:13.2f} "
              f"{100 * (analytic / sim.allocated_peak_gib - 1):+6.1f}%")


if __name__ == "__main__":
    main()
