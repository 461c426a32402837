"""Time `gpuplan.estimate` on representative scenarios (no assertions: numbers to read).

    python bench/estimate_speed.py
"""

from __future__ import annotations

import time

from gpuplan import estimate

SCENARIOS = {
    "train full 8B": dict(model="llama-3.1-8b", task="train", seq_len=4096, micro_batch_size=2),
    "train qlora 70B": dict(model="llama-3.1-70b", task="train", method="qlora", grad_checkpointing="full"),
    "train zero3 405B": dict(model="llama-3.1-405b", task="train", num_gpus=8, num_nodes=4, sharding="zero3"),
    "infer 70B vllm tp2": dict(model="llama-3.1-70b", task="infer", engine="vllm", num_gpus=2, tp=2),
    "infer deepseek-v3": dict(model="deepseek-v3", task="infer", batch_size=8, prompt_tokens=8192),
}


def timed(fn, repeat: int = 50) -> float:
    fn()  # warm caches (model configs are read once)
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1e3


def main() -> None:
    print(f"{'scenario':24s} {'estimate ms':>12s} {'with GPU + advice ms':>22s}")
    for name, fields in SCENARIOS.items():
        bare = timed(lambda f=fields: estimate(f, advise=False))
        gpu = dict(fields, gpu="h100-sxm")
        advised = timed(lambda f=gpu: estimate(f), repeat=5)
        print(f"{name:24s} {bare:12.2f} {advised:22.1f}")


if __name__ == "__main__":
    main()
