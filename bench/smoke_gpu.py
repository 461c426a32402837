"""Smoke runs of the GPU-only targets on a CUDA machine: each plan rewritten onto a tiny model of its architecture
(gpuplan.launchers.smoke), its launch files written and run.

    python bench/smoke_gpu.py [--out DIR] [--steps N] [--megatron PATH] [--only NAME,...]

- training: torchtitan (a tiny Llama built from gpuplan_model.py, its tokenizer.json and local chats), Unsloth
  (QLoRA on a tiny Qwen2), Megatron-LM (``megatron-pretrain.sh`` from a Megatron-LM checkout given with
  ``--megatron``, on mock data), and the CPU targets again on the GPU (TRL, accelerate, torchrun, DeepSpeed);
  each passes when it exits 0, logs finite losses, the last lower than the first, and leaves its checkpoint;
- serving: vLLM, SGLang and TensorRT-LLM start the tiny model with the written script, answer /v1/models and one
  completion of 8 tokens on loopback, and are stopped.

A target whose package is missing is reported as skipped. Nothing here runs in CI (no GPU there); the CPU targets
are tests/launchers/test_smoke.py's. Prints one line per target and exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from importlib.util import find_spec
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from gpuplan.launchers import launch_files, launch_plan, write  # noqa: E402
from gpuplan.launchers.settings import LaunchOptions  # noqa: E402
from gpuplan.launchers.smoke import STEPS, environment, model_config, smoke, write_inputs  # noqa: E402
from gpuplan.scenario import scenario_from  # noqa: E402

GPU = "h100-sxm"
TRAIN = {  # name -> (scenario, targets, the package it needs)
    "torchtitan": (dict(model="llama-3.1-8b", task="train", stack="torchtitan", gpu=GPU, num_gpus=1),
                   ["torchtitan"], "torchtitan"),
    "unsloth": (dict(model="qwen2.5-0.5b", task="train", stack="unsloth", method="qlora", gpu=GPU),
                ["unsloth"], "unsloth"),
    "hf": (dict(model="qwen2.5-0.5b", task="train", method="full", gpu=GPU, num_gpus=1), ["trainer"], "trl"),
    "deepspeed": (dict(model="qwen2.5-0.5b", task="train", method="full", gpu=GPU, num_gpus=1, sharding="zero2",
                       offload="optimizer"), ["deepspeed"], "deepspeed"),
}
SERVE = {"vllm": ("vllm", "vllm-serve.sh"), "sglang": ("sglang", "sglang-serve.sh"),
         "trtllm": ("tensorrt_llm", "trtllm-serve.sh")}
PORT = 8000


def train(root: Path, names: list[str], steps: int) -> list[tuple[str, str, str]]:
    out = []
    for name in names:
        scenario, targets, package = TRAIN[name]
        if find_spec(package) is None:
            out.append((name, "skipped", f"{package} is not installed"))
            continue
        _, runs = smoke(scenario_from(scenario), root / name, targets, steps=steps, cuda=True, timeout_s=900)
        for r in runs:
            out.append((r.target, "passed" if r.passed else "FAILED",
                        f"{r.seconds:.0f} s, losses {' '.join(f'{x:.3f}' for x in r.losses)}"
                        + ("" if r.passed else f"\n{r.tail[-1500:]}")))
    return out


def megatron(root: Path, checkout: Path | None, steps: int) -> tuple[str, str, str]:
    """``megatron-pretrain.sh`` of a tiny Llama on mock data, run inside the Megatron-LM checkout."""
    if checkout is None or not (checkout / "pretrain_gpt.py").is_file():
        return "megatron", "skipped", "no Megatron-LM checkout (--megatron PATH)"
    from gpuplan.launchers.smoke import losses_in

    inputs = write_inputs(root / "megatron" / "inputs", model_config(scenario_from(TRAIN["torchtitan"][0])))
    plan = launch_plan(dict(model=str(inputs["model"]), task="train", stack="megatron", gpu=GPU, num_gpus=1,
                            train_tokens=1e6))  # HuggingFaceTokenizer reads the model folder's tokenizer
    write(launch_files(plan, ["megatron"], LaunchOptions(max_steps=steps)), root / "megatron", force=True)
    start = time.monotonic()
    done = subprocess.run(["bash", str(root / "megatron" / "megatron-pretrain.sh")], cwd=checkout,
                          env=environment(True), capture_output=True, text=True, timeout=1200)
    losses = losses_in(done.stdout + done.stderr)
    ok = done.returncode == 0 and len(losses) >= 2 and losses[-1] < losses[0]
    return "megatron", "passed" if ok else "FAILED", f"{time.monotonic() - start:.0f} s, losses {losses}" + (
        "" if ok else f"\n{(done.stdout + done.stderr)[-1500:]}")


def serve(root: Path, engine: str) -> tuple[str, str, str]:
    """Start the tiny model with the written serving script, ask for /v1/models and one completion, stop it."""
    package, script = SERVE[engine]
    if find_spec(package) is None:
        return engine, "skipped", f"{package} is not installed"
    folder = root / f"serve-{engine}"
    inputs = write_inputs(folder / "inputs", model_config(scenario_from(TRAIN["hf"][0])))
    plan = launch_plan(dict(model=str(inputs["model"]), task="infer", engine=engine, gpu=GPU, batch_size=4,
                            prompt_tokens=64, output_tokens=16, max_model_len=256))
    write(launch_files(plan, [engine], LaunchOptions(port=PORT)), folder, force=True)
    start = time.monotonic()
    proc = subprocess.Popen(["bash", script], cwd=folder, env=environment(True), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        while time.monotonic() - start < 600 and proc.poll() is None:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{PORT}/v1/models", timeout=5).read()
                break
            except OSError:
                time.sleep(5)
        body = json.dumps({"model": plan.model_ref, "prompt": "The plan", "max_tokens": 8}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{PORT}/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        answer = json.loads(urllib.request.urlopen(request, timeout=60).read())
        text = answer["choices"][0]["text"]
        return engine, "passed", f"{time.monotonic() - start:.0f} s to answer {text!r}"
    except (OSError, KeyError, ValueError) as err:
        return engine, "FAILED", f"{type(err).__name__}: {err}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--megatron", type=Path, default=None, help="a Megatron-LM checkout (pretrain_gpt.py)")
    ap.add_argument("--only", default="", help="comma-separated names: " + ", ".join([*TRAIN, "megatron", *SERVE]))
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: the GPU smoke runs need one (the CPU ones are bench/smoke.py's)")
        return 2
    root = args.out or Path(tempfile.mkdtemp(prefix="gpuplan-smoke-gpu-"))
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    chosen = [n for n in TRAIN if not only or n in only]
    results = train(root, chosen, args.steps)
    if not only or "megatron" in only:
        results.append(megatron(root, args.megatron, args.steps))
    results += [serve(root, e) for e in SERVE if not only or e in only]
    for name, verdict, detail in results:
        print(f"{name:<11} {verdict:<8} {detail}")
    print(f"files in {root}")
    return 1 if any(v == "FAILED" for _, v, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
