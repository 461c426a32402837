"""Inference at 32k tokens on the models whose cache is not just keys and values, estimated and simulated whole.

    python bench/hybrid_32k.py      # writes bench/results/hybrid_32k.md (several minutes: Gated DeltaNet's
                                    # reference kernel loops over 512 chunks per layer on fake tensors)

Qwen3-Next-80B-A3B (36 Gated DeltaNet + 12 attention layers), Qwen3.5-27B (48 + 16, a vision tower), Llama 4 Scout
(36 chunked + 12 global layers), Falcon-H1-0.5B (attention and Mamba-2 in every layer): the allocated peak (the
estimate without its CUDA-only cuBLAS workspace), the decode phase, and the cache left after the last token.
tests/model/test_inference_layers.py checks one period of each at full width in CI; Qwen3-Next at 4 layers is where
overheads.REFERENCE_DELTANET_FP32_COPIES was fitted.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from gpuplan import estimate
from gpuplan.model.catalog import bundled, bundled_repo, load_model
from gpuplan.scenario import Scenario
from gpuplan.sim.depth import cut_config
from gpuplan.sim.simulate import simulate
from gpuplan.tensors.kv import kv_bytes_per_sequence

TOKENS = 32_768
NOTE = ("Falcon-H1's prefill peak is not comparable: on the CPU its Mamba-2 layers run transformers' PyTorch\n"
        "reference (`torch_forward`, chunked SSD with per-chunk intermediates in fp32), which the estimate does not\n"
        "model (mamba_ssm's CUDA kernels, which GPUs run, do not hold them; Gated DeltaNet's reference is modelled,\n"
        "fitted on Qwen3-Next). Its decode phase and the cache it keeps, Mamba states included, match.\n")
CASES = [("qwen3-next", None), ("qwen3-next", 4), ("qwen3.5-27b", None), ("qwen3.5-27b", 4),
         ("llama-4-scout", None), ("llama-4-scout", 4), ("falcon-h1-0.5b", None)]


def row(model: str, layers: int | None, folder: Path) -> str:
    path = model
    if layers:
        config = json.loads(bundled()[bundled_repo(model)].read_text())
        path = str(folder / f"{model}-{layers}.json")
        Path(path).write_text(json.dumps(cut_config(config, layers)))
    scenario = {"model": path, "task": "infer", "batch_size": 1, "prompt_tokens": TOKENS - 8, "output_tokens": 8}
    started = time.perf_counter()
    sim = simulate(scenario, layers=layers)
    mem = estimate(scenario, advise=False).memory
    cublas = mem.other.get("cuBLAS workspace", 0.0)
    est, dec = mem.allocated_peak_gib - cublas, mem.phases_gib["decode"] - cublas
    cache = kv_bytes_per_sequence(Scenario.model_validate(scenario), load_model(path), TOKENS) / 2**30
    return (f"| {model} | {layers or 'all'} | {sim.allocated_peak_gib:.2f} | {est:.2f} | "
            f"{100 * (est / sim.allocated_peak_gib - 1):+.1f} % | {sim.phases_gib['decode']:.2f} | {dec:.2f} | "
            f"{100 * (dec / sim.phases_gib['decode'] - 1):+.1f} % | {sim.cache_gib:.4f} | {cache:.4f} | "
            f"{time.perf_counter() - started:.0f} |")


if __name__ == "__main__":
    folder = Path(tempfile.mkdtemp())
    lines = ["| model | layers | simulated peak GiB | estimate | error | decode sim | decode est | error | "
             "cache sim GiB | cache est | s |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for model, layers in CASES if len(sys.argv) < 2 else [(a, None) for a in sys.argv[1:]]:
        lines.append(row(model, layers, folder))
        print(lines[-1], flush=True)
    out = Path(__file__).parent / "results" / "hybrid_32k.md"
    out.write_text("# Inference at 32k tokens: hybrid, chunked and Mamba layers, estimate vs simulation\n\n"
                   + "\n".join(lines) + "\n\n" + NOTE)
