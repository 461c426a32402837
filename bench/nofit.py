"""Nothing fits: ``recommend``'s answer (its ``changes``, "what would fit") recorded and checked (session 29, issue 30).

    python bench/nofit.py check results/nofit_s29.json   # against the answers of main 935dfe07 (before s29)
    python bench/nofit.py record FILE [NAME ...]   # each job's whole answer (less elapsed_s) and its CPU seconds
    python bench/nofit.py check FILE [NAME ...]    # the same answers again, compared; the CPU seconds beside them

The table, plain, markdown and csv formats print ``changes`` and ``owned_changes`` as they are
(``gpuplan.cli.plan._said_below``, ``render_recommendation``), so the JSON answer equal means every format equal.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from gpuplan.model.catalog import load_model
from gpuplan.plan.recommend import Constraints, recommend
from gpuplan.scenario import Scenario

TRAIN_8B = dict(model="llama-3.1-8b", task="train", train_tokens=1e8)
JOBS = {
    "over budget: 8B full": (TRAIN_8B, dict(budget_usd=1)),
    "past deadline: 8B full": (TRAIN_8B, dict(deadline_hours=0.2)),
    "both: 8B full": (TRAIN_8B, dict(budget_usd=1, deadline_hours=0.2)),
    "over budget: 7B LoRA, per GPU, by time": (dict(model="qwen2.5-7b", task="train", method="lora",
                                                    train_tokens=2e8), dict(budget_usd=0.5, per_gpu=True,
                                                                            objective="time")),
    "too big: 70B full on 2x RTX 4090": (dict(model="llama-3.1-70b", task="train", train_tokens=1e8),
                                         dict(gpus=("nvidia-geforce-rtx-4090",), max_gpus=2)),
    "too big: 70B full on 8x H100, any stack, deadline": (
        dict(model="llama-3.1-70b", task="train", train_tokens=1e8),
        dict(gpus=("nvidia-h100-sxm5-80gb",), max_gpus=8, any_stack=True, deadline_hours=24)),
    "too big: serve 70B on one RTX 4090": (dict(model="llama-3.1-70b", task="infer"),
                                           dict(gpus=("nvidia-geforce-rtx-4090",), max_gpus=1)),
    "too big: 70B, 40 users, 2x L4": (dict(model="llama-3.1-70b", task="infer", users=40, think_time_s=15),
                                      dict(gpus=("nvidia-l4",), max_gpus=2)),
    "too big: 405B full on one GPU": (dict(model="llama-3.1-405b", task="train", train_tokens=1e8), dict(max_gpus=1)),
    "too big: 8B LoRA on a T4, any method": (dict(model="llama-3.1-8b", task="train", method="lora", seq_len=8192,
                                                  train_tokens=1e7), dict(gpus=("nvidia-t4",), max_gpus=1,
                                                                          any_method=True)),
    "owned and rented: Gemma-2-9B QLoRA": (
        dict(model="gemma-2-9b", task="train", method="qlora", samples=1200, mean_tokens=900),
        dict(have=(("nvidia-geforce-rtx-4060-ti-16gb", 1),), gpus=("nvidia-geforce-rtx-4090", "nvidia-l4"))),
}


def answer(name: str) -> tuple[dict, float]:
    """The job's answer as ``recommend --json`` prints it (less the wall clock), and the CPU seconds it took."""
    fields, constraints = JOBS[name]
    s = Scenario.model_validate(fields)
    started = time.process_time()
    said = recommend(s, load_model(s.model), Constraints(**constraints)).to_dict()
    said.pop("elapsed_s")
    return json.loads(json.dumps(said)), time.process_time() - started


def main(mode: str, path: str, names: list[str]) -> int:
    names = names or list(JOBS)
    recorded = json.loads(Path(path).read_text(encoding="utf-8")) if mode == "check" or Path(path).exists() else {}
    failed = 0
    for name in names:
        said, cpu_s = answer(name)
        if mode == "record":
            recorded[name] = said
            verdict = f"{len(said['changes'])} changes"
        else:
            verdict = "same" if said == recorded[name] else "DIFFERENT"
            failed += verdict != "same"
        print(f"{cpu_s:7.1f} CPU-s  {verdict:10}  {name}", flush=True)
        if mode == "record":
            Path(path).write_text(json.dumps(recorded, indent=1), encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
