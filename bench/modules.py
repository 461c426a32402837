"""Diffusion pipelines and encoder-decoders: gpuplan against published measurements (bench/modules_cases.yaml).

Each row is a published number with its locator and the scenario that reproduces its settings: the denoising
iterations per second of Stable Diffusion 1.5 across five cards and three batches (diffusers' PyTorch 2.0
benchmark), FLUX.1-dev generation on an H100 in bf16, NF4, LLM.int8, GGUF and fp8 storage (diffusers' quantization
blog: time per image, memory after loading and at the peak) and in NF4 on an RTX 4090, FLUX.1-dev LoRA and QLoRA
training (diffusers' QLoRA blog, SimpleTuner's quickstart), SDXL LoRA training under 16 GB (diffusers' README),
T0-3B fine-tuning (peft's README), Whisper-large LoRA on an 8-bit base under 8 GB (Hugging Face's PEFT Whisper blog)
and Whisper-large-v3 transcription on an A100 (insanely-fast-whisper's benchmark). Error = (estimate - measured) /
measured; a bound row passes when the estimate is below it. Rows marked ``fit`` set the profiled modules' host,
dequantization and bitsandbytes-loading constants (overheads.py); the summary gives the held-out rows' errors apart.

``python bench/modules.py`` prints the table; ``--write`` also writes bench/results/modules.md.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpuplan import estimate  # noqa: E402

CASES = ROOT / "bench" / "modules_cases.yaml"
RESULTS = ROOT / "bench" / "results" / "modules.md"
LEVEL = {"allocated": "allocated_peak_gib", "reserved": "reserved_peak_gib", "device": "device_peak_gib"}


def scenario(case: dict) -> dict:
    if "scenario" in case:
        return dict(case["scenario"])
    # Stable Diffusion 1.5 txt2img as the benchmark ran it: fp16 weights, 512x512, 50 steps, guidance
    return {"model": "sd-1.5", "task": "infer", "gpu": case["gpu"], "batch_size": case["batch"],
            "precision": "fp16-true"}


def measure(case: dict) -> list[tuple[str, float, float]]:
    """(quantity, estimate, measured) for every number the case published."""
    plan = estimate(scenario(case), advise=False)
    mem, work = plan.memory, plan.work
    out = []
    if "weights_gib" in case:
        # the pipeline on the card after loading: its weights, and what loading left reserved
        out.append(("weights GiB", mem.weights_gib + sum(v for k, v in mem.other.items()
                                                         if "weights" in k or "load cache" in k),
                    case["weights_gib"]))
    if "memory_gib" in case:
        out.append((f"memory GiB ({case['level']})", getattr(mem, LEVEL[case["level"]]), case["memory_gib"]))
    if "memory_below_gib" in case:
        out.append((f"memory GiB ({case['level']}) below", getattr(mem, LEVEL[case["level"]]),
                    case["memory_below_gib"]))
    if "it_per_s" in case:
        out.append(("it/s", work.steps_per_s, case["it_per_s"]))
    if "seconds_per_call" in case:
        out.append(("s per image", work.image_s, case["seconds_per_call"]))
    if "samples_per_s" in case:
        out.append(("samples/s", work.samples_per_s, case["samples_per_s"]))
    return out


def run() -> tuple[list[dict], dict]:
    cases = yaml.safe_load(CASES.read_text(encoding="utf-8"))["cases"]
    rows = []
    for case in cases:
        for quantity, est, measured in measure(case):
            bound = quantity.endswith("below")
            error = None if bound else (est - measured) / measured
            rows.append({"id": case["id"], "fit": bool(case.get("fit")), "quantity": quantity, "estimate": est,
                         "measured": measured, "error": error, "ok": est < measured if bound else None,
                         "source": case["source"]})
    return rows, summary(rows)


def summary(rows: list[dict]) -> dict:
    out = {}
    for kind, test in (("memory", lambda q: "memory" in q or "weights" in q), ("speed", lambda q: "GiB" not in q)):
        for split, fit in (("held-out", False), ("fitted", True)):
            errors = [abs(r["error"]) for r in rows
                      if r["error"] is not None and r["fit"] == fit and test(r["quantity"])]
            if errors:
                limit = 0.15 if kind == "memory" else 0.25
                out[f"{kind} {split}"] = {"rows": len(errors), "median_abs_error": statistics.median(errors),
                                          "max_abs_error": max(errors),
                                          "within_goal": sum(e <= limit for e in errors)}
    bounds = [r for r in rows if r["ok"] is not None]
    out["bounds"] = {"rows": len(bounds), "met": sum(r["ok"] for r in bounds)}
    return out


def table(rows: list[dict], totals: dict) -> str:
    lines = ["| case | split | quantity | estimate | measured | error |", "|---|---|---|---:|---:|---:|"]
    for r in rows:
        err = (f"{100 * r['error']:+.0f}%" if r["error"] is not None else ("below: yes" if r["ok"] else "below: NO"))
        lines.append(f"| {r['id']} | {'fit' if r['fit'] else 'held out'} | {r['quantity']} | {r['estimate']:.3g} | "
                     f"{r['measured']:.3g} | {err} |")
    lines.append("")
    for key, s in totals.items():
        if key == "bounds":
            lines.append(f"- bounds: {s['met']} of {s['rows']} met")
        else:
            goal = "15 %" if key.startswith("memory") else "25 %"
            lines.append(f"- {key}: {s['rows']} rows, median |error| {100 * s['median_abs_error']:.0f} %, max "
                         f"{100 * s['max_abs_error']:.0f} %, {s['within_goal']} within {goal}")
    return "\n".join(lines)


def main() -> None:
    rows, totals = run()
    text = table(rows, totals)
    print(text)
    if "--write" in sys.argv:
        sources = "\n".join(f"- {r['id']}: {r['source']}" for r in {r["id"]: r for r in rows}.values())
        RESULTS.write_text(f"# Diffusion and encoder-decoder accuracy (`python bench/modules.py --write`)\n\n"
                           f"{__doc__.strip()}\n\n{text}\n\n## Sources\n\n{sources}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
