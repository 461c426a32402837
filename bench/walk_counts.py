"""How often the architecture review's two walks pass through the road's stages: one CLI ``estimate`` each
(walk 1: QLoRA on Llama-3.1-8B, one RTX 4090, 1e8 train tokens; walk 2: Qwen2.5-7B under vLLM on one L40S, batch
16 of 2,048-token prompts), counted with the suite's profiler hook (``tests/counting.py``).

    PYTHONPATH=src:tests python bench/walk_counts.py

Per walk: the plans made (``memory_plan``), the scenario's validations, the resolver and refusal runs, memory
estimates and reports, speed timings, and the calls that repeat work inside one plan (the engine's profile looked
up, the weight format read and derived, the catalog filtered). The review (commit 294329f) counted walk 1 at 40
validations, 32 memory reports and 4 timings, walk 2 at 50, 32 and 6.
"""

from __future__ import annotations

import contextlib
import io

from counting import ESTIMATES, MEMORY, VALIDATIONS, counting
from gpuplan.cli import run

WALKS = {
    "walk 1 (train)": ["estimate", "--model", "llama-3.1-8b", "--task", "train", "--method", "qlora", "--seq-len",
                       "2048", "--gpu", "rtx-4090", "--train-tokens", "1e8"],
    "walk 2 (serve)": ["estimate", "--model", "qwen2.5-7b", "--task", "infer", "--engine", "vllm", "--gpu", "l40s",
                       "--batch-size", "16", "--prompt-tokens", "2048"],
}
COUNTED = {
    "plans": "plan/plan.py:memory_plan", "validations": VALIDATIONS, "resolves": "plan/resolve.py:resolve",
    "refusal checks": "plan/refusals.py:check", "memory estimates": ESTIMATES, "memory reports": MEMORY,
    "timings": "speed/__init__.py:speed_of", "builds": "plan/build.py:build",
    "engine looked up": "engines/__init__.py:engine_for", "weight format read": "tensors/state.py:weight_format",
    "weight format derived": "tensors/state.py:derive_weight_format",
    "catalog filtered": "market/choice.py:cheapest_in_force",
}


def main() -> None:
    for name, argv in WALKS.items():
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            run(argv)  # loaded and warm: the count is the answer's, not the first import's
            with counting(*COUNTED.values()) as seen:
                code = run(argv)
        assert code == 0, name
        print(f"{name}: " + ", ".join(f"{label} {seen[where]}" for label, where in COUNTED.items()))


if __name__ == "__main__":
    main()
