"""The physics of a plan, on random valid jobs over every card and engine (``meta physics``; fuzz_s31: Metal's
generation step ran a batch of 32 as fast as one row, 1.35x the M3 Pro's FLOPs, and no check drew a batch on a Mac).

- **No speed above the card**: a step of ``t`` tokens multiplies at least ``2 x t x N`` FLOPs (``N``: the parameters
  a token multiplies, :func:`gpuplan.speed.flops.run_params`), a training step ``4N`` per token with a frozen base
  and ``6N`` without (PaLM appendix B; tests/speed/test_speed_ceiling.py), so tokens/s x FLOPs per token stays at or
  below the GPUs' highest dense rate of any type (fp4, fp8, int8 included); layers left on the host (llama.cpp's
  offload) run one after another with the GPU's at a lower rate, so the bound holds for them too.
- **Cost is hours x price**: ``usd_total = hours x usd_per_hour``, and a training job's hours hold at least its tokens
  at its speed.
- **Memory grows with the work**: doubling the batch (serving) or the micro-batch (training) never lowers the
  device peak, unless it moves more layers off the GPU.
"""

from __future__ import annotations

import math
import random
from typing import Any

from .oracle import NONSENSE, OK, Verdict

MODELS = ["llama-3.2-1b", "qwen2.5-0.5b", "llama-3.1-8b", "qwen3-4b", "mistral-7b", "gemma-2-9b", "mixtral-8x7b",
          "gpt-oss-20b", "qwen3-30b-a3b", "falcon-h1-0.5b", "llama-3.1-70b"]
ENGINES = ["transformers", "vllm", "sglang", "llama.cpp", "trtllm", "mlx"]
QUANTS = {"llama.cpp": ["gguf-q4_k_m", "gguf-q8_0", None], "mlx": ["mlx-4bit", "mlx-8bit", None],
          "vllm": ["awq-int4", "fp8", None], "sglang": ["fp8", None], "trtllm": ["fp8", None],
          "transformers": ["nf4", "int8", None]}


def physics_case(r: random.Random) -> dict[str, Any]:
    """A valid job on any catalog card: serving with any engine, batch and lengths, or training any method."""
    from gpuplan.hardware import gpus

    cards = sorted(gpus())
    apple = [g for g in cards if g.startswith("apple-")]  # a tenth of the catalog, the one path with no math term
    fields: dict[str, Any] = {"model": r.choice(MODELS), "gpu": r.choice(apple if r.random() < 0.2 else cards)}
    if r.random() < 0.6:
        engine = r.choice(ENGINES)
        quant = r.choice(QUANTS[engine])
        fields.update(task="infer", engine=engine, batch_size=r.choice([1, 4, 16, 32, 64, 128]),
                      prompt_tokens=r.choice([128, 512, 2048]), output_tokens=r.choice([64, 256, 1024]),
                      **({"quant": quant} if quant else {}))
        if r.random() < 0.2:
            fields["num_gpus"] = r.choice([2, 4])
        return {"physics": fields, "vary": "batch_size"}
    fields.update(task="train", method=r.choice(["full", "lora", "qlora"]), micro_batch_size=r.choice([1, 2, 4, 8]),
                  seq_len=r.choice([512, 2048, 4096]), train_tokens=r.choice([1e6, 1e8, 1e9]),
                  grad_checkpointing=r.choice(["none", "full"]))
    return {"physics": fields, "vary": "micro_batch_size"}


def _peak_flops(gpu: Any) -> float:
    return max((v for k, v in gpu.dense_tflops.items() if v), default=0.0) * 1e12


def speed_problem(fields: dict[str, Any], plan: Any) -> str:
    """The speed's FLOPs against the GPUs' highest dense rate ("" when within)."""
    from gpuplan.hardware import load_gpu
    from gpuplan.model.catalog import load_model
    from gpuplan.speed.flops import run_params

    sp = plan.speed
    if sp is None or not sp.tokens_per_s:
        return ""
    s = plan.scenario  # the resolved fields
    per_token = 2 * run_params(load_model(s["model"]))
    if s["task"] == "train":
        per_token *= 3 if s["method"] == "full" else 2
    gpus = s["num_gpus"] * s.get("num_nodes", 1)
    peak = gpus * _peak_flops(load_gpu(fields["gpu"]))
    if peak and sp.tokens_per_s * per_token > peak * (1 + 1e-9):
        return (f"{sp.tokens_per_s:,.1f} tokens/s x {per_token:.4g} FLOPs = {sp.tokens_per_s * per_token:.4g} FLOP/s "
                f"above {gpus} GPU(s)' peak {peak:.4g}")
    return ""


def cost_problem(plan: Any) -> str:
    """``usd_total`` against hours x price, and a training job's hours against its tokens at its speed."""
    c = plan.cost
    if c is None or not all(math.isfinite(x) for x in (c.hours, c.usd_per_hour, c.usd_total)):
        return ""
    if not math.isclose(c.usd_total, c.hours * c.usd_per_hour, rel_tol=1e-9, abs_tol=1e-9):
        return f"usd_total {c.usd_total} is not hours {c.hours} x usd_per_hour {c.usd_per_hour}"
    s, sp = plan.scenario, plan.speed
    tokens = s.get("train_tokens") if s["task"] == "train" else None
    if tokens and sp and sp.tokens_per_s and c.hours < tokens / sp.tokens_per_s / 3600 * (1 - 1e-9):
        return f"{c.hours} hours are fewer than {tokens:g} tokens at {sp.tokens_per_s:,.1f} tokens/s"
    return ""


def judge_physics(case: dict[str, Any]) -> Verdict:
    """The three rules of the module docstring on ``case``'s job and on it with ``vary`` doubled."""
    import gpuplan

    fields, vary = case["physics"], case["vary"]
    plans = []
    for f in (fields, {**fields, vary: fields[vary] * 2}):
        try:
            plans.append(gpuplan.estimate(f, advise=False))
        except gpuplan.GpuplanError:
            break  # a refusal of the larger job leaves nothing to compare
        why = speed_problem(f, plans[-1]) or cost_problem(plans[-1])
        if why:
            return Verdict(NONSENSE, "a plan breaks physics or arithmetic", f"{f} -> {why}")
    if len(plans) == 2:
        a, b = (p.memory for p in plans)
        fewer_off = (b.offloaded_layers or 0) <= (a.offloaded_layers or 0)
        if b.device_peak_gib < a.device_peak_gib * (1 - 1e-9) and fewer_off:
            return Verdict(NONSENSE, f"doubling {vary} lowered the device peak",
                           f"{fields} -> {a.device_peak_gib:.4f} then {b.device_peak_gib:.4f} GiB")
    return Verdict(OK, detail="planned" if plans else "refused")
