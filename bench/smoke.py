"""Run the launch files of every target that runs here for a few steps on a tiny model, and time each.

    python bench/smoke.py [--out DIR] [--steps N] [--cuda]

The CPU targets (the TRL trainer, accelerate and torchrun with 2 DDP processes, SkyPilot's run section on one
node, DeepSpeed ZeRO-2 on its CPU accelerator, torchtune where it imports) are what tests/launchers/test_smoke.py
runs in CI; this script prints each run's seconds, so the suite's budget can be checked (2 cores: the five runs
take about 2 minutes). Then llama.cpp's llama-server started by its written script on a tiny GGUF and asked for one
completion (tests/launchers/test_launch_llama_cpp.py; the binary from bench/llama_server.py or PATH). The GPU-only
targets are bench/smoke_gpu.py's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from gpuplan.launchers.smoke import STEPS, smoke  # noqa: E402
from gpuplan.launchers.smoke_serve import llama_server, smoke_llama_cpp  # noqa: E402
from gpuplan.scenario import scenario_from  # noqa: E402

BASE = dict(model="qwen2.5-0.5b", task="train", gpu="l40s")
PLANS = (({**BASE, "method": "full", "num_gpus": 2, "sharding": "ddp"}, ["trainer", "accelerate", "torchrun",
                                                                          "skypilot"]),
         ({**BASE, "method": "full", "num_gpus": 2, "sharding": "zero2"}, ["deepspeed"]),
         ({**BASE, "method": "lora", "stack": "torchtune"}, ["torchtune"]))
SERVE = dict(model="qwen2.5-0.5b", task="infer", engine="llama.cpp", gpu="l40s", batch_size=2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="folder for the runs (default: a temporary one)")
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--cuda", action="store_true", help="run on the GPU (default: the CPU)")
    args = ap.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="gpuplan-smoke-"))
    failed = 0
    print(f"{'target':<11} {'result':<7} {'s':>6}  losses")
    for i, (scenario, targets) in enumerate(PLANS):
        start = time.monotonic()
        try:
            _, runs = smoke(scenario_from(scenario), root / f"plan{i}", targets, steps=args.steps, cuda=args.cuda,
                            force=True)
        except Exception as err:  # a plan that cannot be written here (torchtune without its torchao)
            print(f"{','.join(targets):<11} error   {time.monotonic() - start:6.1f}  {type(err).__name__}: {err}")
            continue
        for r in runs:
            failed += not r.passed
            print(f"{r.target:<11} {'passed' if r.passed else 'FAILED':<7} {r.seconds:6.1f}  "
                  f"{' '.join(f'{x:.4f}' for x in r.losses)}")
    binary = llama_server()
    if binary is None:
        print("llama.cpp   skipped  no llama-server (python bench/llama_server.py builds it)")
    else:
        _, run = smoke_llama_cpp(scenario_from(SERVE), root / "serve", binary, force=True)
        failed += not run.passed
        print(f"{run.target:<11} {'passed' if run.passed else 'FAILED':<7} {run.seconds:6.1f}  {run.tokens} tokens "
              f"{run.text!r}")
    print(f"files in {root}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
