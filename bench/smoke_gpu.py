"""Smoke runs of the GPU-only targets on a CUDA machine: each plan rewritten onto a tiny model of its architecture
(gpuplan.launchers.smoke), its launch files written and run.

    python bench/smoke_gpu.py [--out DIR] [--steps N] [--megatron PATH] [--only NAME,...] [--dry-run]

- training: torchtitan (a tiny Llama built from gpuplan_model.py, its tokenizer.json and local chats), Unsloth
  (QLoRA on a tiny Qwen2), Megatron-LM (``megatron-pretrain.sh`` from a Megatron-LM checkout given with
  ``--megatron``, on mock data; the engine NeMo 2.0's recipes drive, which need the recipe model's own tokenizer
  from the hub and so cannot be put on a tiny model: ``nemo-recipe.py`` stays checked by its captured API), and the
  CPU targets again on the GPU (TRL, DeepSpeed ZeRO-3 offloading optimizer and weights); each passes when it exits
  0, logs finite losses, the last lower than the first, and leaves its checkpoint;
- serving: vLLM, SGLang and TensorRT-LLM start the tiny model (heads of 64, a size their attention kernels take)
  with the written script, answer /v1/models and one completion of 8 tokens on loopback, and are stopped.

``--dry-run`` writes every target's files and prints the command each run would start, without a GPU
(tests/launchers/test_smoke_gpu.py checks them). A target whose package is missing is reported as skipped. Nothing
here runs in CI (no GPU there); the CPU targets are tests/launchers/test_smoke.py's. Prints one line per target and
exits 1 if any failed, 2 when there is no CUDA device to run on.
"""

from __future__ import annotations

import argparse
import json
import shutil
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
from gpuplan.launchers.smoke import (  # noqa: E402
    COMMANDS,
    STEPS,
    environment,
    losses_in,
    model_config,
    prepare,
    run_target,
    write_inputs,
)
from gpuplan.launchers.smoke_serve import stop  # noqa: E402
from gpuplan.scenario import scenario_from  # noqa: E402

GPU = "h100-sxm"
TRAIN = {  # name -> (scenario, targets, the package it needs)
    "torchtitan": (dict(model="llama-3.1-8b", task="train", stack="torchtitan", gpu=GPU, num_gpus=1),
                   ["torchtitan"], "torchtitan"),
    "unsloth": (dict(model="qwen2.5-0.5b", task="train", stack="unsloth", method="qlora", gpu=GPU),
                ["unsloth"], "unsloth"),
    "hf": (dict(model="qwen2.5-0.5b", task="train", method="full", gpu=GPU, num_gpus=1), ["trainer"], "trl"),
    # one card (the machines lent have one): ZeRO-3 streaming the weights and optimizer states from host memory,
    # the one-GPU DeepSpeed layout gpuplan accepts (ZeRO-2 needs >= 2 data-parallel GPUs)
    "deepspeed": (dict(model="qwen2.5-0.5b", task="train", method="full", gpu=GPU, num_gpus=1, sharding="zero3",
                       offload="optimizer+params"), ["deepspeed"], "deepspeed"),
}
SERVE = {"vllm": ("vllm", "vllm-serve.sh"), "sglang": ("sglang", "sglang-serve.sh"),
         "trtllm": ("tensorrt_llm", "trtllm-serve.sh")}
PORT = 8000
SERVE_HEAD_DIM = 64  # FlashInfer's and FlashAttention's head sizes start at 64 (smoke.tiny_config)


def train_commands(root: Path, name: str, steps: int) -> tuple[object, object, list[tuple[str, list[str]]]]:
    """``name``'s files on its tiny model in ``root/name`` (smoke.prepare, CUDA settings kept: bf16, QLoRA); the
    plan, its options and each target's command."""
    scenario, targets, _ = TRAIN[name]
    folder = root / name
    plan, opts, chosen = prepare(scenario_from(scenario), folder, targets, steps=steps, cuda=True, force=True)
    return plan, opts, [(t, COMMANDS[t](plan, opts, folder)) for t in chosen]


def megatron_command(root: Path, steps: int) -> tuple[object, list[str]]:
    """``megatron-pretrain.sh`` of a tiny Llama on mock data (run from inside the Megatron-LM checkout)."""
    inputs = write_inputs(root / "megatron" / "inputs", model_config(scenario_from(TRAIN["torchtitan"][0])))
    plan = launch_plan(dict(model=str(inputs["model"]), task="train", stack="megatron", gpu=GPU, num_gpus=1,
                            train_tokens=1e6))  # HuggingFaceTokenizer reads the model folder's tokenizer
    write(launch_files(plan, ["megatron"], LaunchOptions(max_steps=steps)), root / "megatron", force=True)
    return plan, ["bash", str(root / "megatron" / "megatron-pretrain.sh")]


def serve_command(root: Path, engine: str) -> tuple[object, Path, list[str]]:
    """``engine``'s serving script for the tiny model (4 requests of 64 + 16 tokens, 256 positions)."""
    folder = root / f"serve-{engine}"
    inputs = write_inputs(folder / "inputs", model_config(scenario_from(TRAIN["hf"][0])), head_dim=SERVE_HEAD_DIM)
    plan = launch_plan(dict(model=str(inputs["model"]), task="infer", engine=engine, gpu=GPU, batch_size=4,
                            prompt_tokens=64, output_tokens=16, max_model_len=256))
    write(launch_files(plan, [engine], LaunchOptions(port=PORT)), folder, force=True)
    return plan, folder, ["bash", SERVE[engine][1]]


def train(root: Path, names: list[str], steps: int) -> list[tuple[str, str, str]]:
    out = []
    for name in names:
        package = TRAIN[name][2]
        if find_spec(package) is None:
            out.append((name, "skipped", f"{package} is not installed"))
            continue
        try:
            plan, opts, commands = train_commands(root, name, steps)
        except Exception as err:  # a plan that cannot be written here: said, and the others still run
            out.append((name, "FAILED", f"{type(err).__name__}: {err}"))
            continue
        for target, _ in commands:
            shutil.rmtree(root / name / opts.output_dir, ignore_errors=True)  # each run starts, not resumes
            r = run_target(target, plan, opts, root / name, True, 900)
            out.append((r.target, "passed" if r.passed else "FAILED",
                        f"{r.seconds:.0f} s, losses {' '.join(f'{x:.3f}' for x in r.losses)}"
                        + ("" if r.passed else f"\n{r.tail[-1500:]}")))
    return out


def megatron(root: Path, checkout: Path | None, steps: int) -> tuple[str, str, str]:
    if checkout is None or not (checkout / "pretrain_gpt.py").is_file():
        return "megatron", "skipped", "no Megatron-LM checkout (--megatron PATH)"
    _, argv = megatron_command(root, steps)
    start = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=checkout, env=environment(True), capture_output=True, text=True,
                              timeout=1200)
        code, text = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as err:
        code, text = 124, f"{err.stdout or ''}{err.stderr or ''}\ntimed out after 1200 s"
    losses = losses_in(text)
    ok = code == 0 and len(losses) >= 2 and losses[-1] < losses[0]
    return "megatron", "passed" if ok else "FAILED", f"{time.monotonic() - start:.0f} s, losses {losses}" + (
        "" if ok else f"\n{text[-1500:]}")


def serve(root: Path, engine: str) -> tuple[str, str, str]:
    """Start the tiny model with the written serving script, ask for /v1/models and one completion, stop it."""
    if find_spec(SERVE[engine][0]) is None:
        return engine, "skipped", f"{SERVE[engine][0]} is not installed"
    plan, folder, argv = serve_command(root, engine)
    start, log = time.monotonic(), folder / "server.log"
    with open(log, "wb") as sink:  # a file, not a pipe nobody reads: a full pipe would stall the server
        proc = subprocess.Popen(argv, cwd=folder, env=environment(True), stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
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
            return engine, "passed", f"{time.monotonic() - start:.0f} s to answer {answer['choices'][0]['text']!r}"
        except (OSError, KeyError, ValueError) as err:
            return engine, "FAILED", f"{type(err).__name__}: {err}\n{log.read_text(errors='replace')[-1500:]}"
        finally:
            stop(proc, grace_s=60)


def dry_run(root: Path, names: list[str], steps: int, checkout: Path | None) -> list[tuple[str, str, list[str]]]:
    """Every chosen target's files written under ``root``; (name, folder it runs in, command) for each."""
    out = []
    for name in (n for n in TRAIN if n in names):
        _, _, commands = train_commands(root, name, steps)
        out += [(target, str(root / name), argv) for target, argv in commands]
    if "megatron" in names:
        _, argv = megatron_command(root, steps)
        out.append(("megatron", str(checkout or "<Megatron-LM checkout>"), argv))
    for engine in (e for e in SERVE if e in names):
        _, folder, argv = serve_command(root, engine)
        out.append((engine, str(folder), argv))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--megatron", type=Path, default=None, help="a Megatron-LM checkout (pretrain_gpt.py)")
    ap.add_argument("--only", default="", help="comma-separated names: " + ", ".join([*TRAIN, "megatron", *SERVE]))
    ap.add_argument("--dry-run", action="store_true", help="write the files and print the commands; run nothing")
    args = ap.parse_args(argv)
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    names = [n for n in [*TRAIN, "megatron", *SERVE] if not only or n in only]
    root = args.out or Path(tempfile.mkdtemp(prefix="gpuplan-smoke-gpu-"))
    if args.dry_run:
        for name, cwd, command in dry_run(root, names, args.steps, args.megatron):
            print(f"{name:<11} in {cwd}: {' '.join(command)}")
        return 0
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: the GPU smoke runs need one (the CPU ones are bench/smoke.py's; --dry-run writes the "
              "files and prints the commands)", file=sys.stderr)
        return 2
    results = train(root, [n for n in names if n in TRAIN], args.steps)
    if "megatron" in names:
        results.append(megatron(root, args.megatron, args.steps))
    results += [serve(root, e) for e in SERVE if e in names]
    for name, verdict, detail in results:
        print(f"{name:<11} {verdict:<8} {detail}")
    print(f"files in {root}")
    return 1 if any(v == "FAILED" for _, v, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
