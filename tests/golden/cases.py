"""The golden cases: a few hundred command lines across every command (training and serving, owned and rented,
every stack, sharding and engine), drawn once from a fixed seed, whose ``--json`` answers were recorded before the
one-road redesign (issue 30) so that any number that moves afterwards is seen and named.

Each case is a list of arguments to ``gpuplan``; :func:`cases` returns them as ``{name: args}`` in a fixed order.
"""

from __future__ import annotations

import random

SEED = 20261128

TRAIN_MODELS = ("llama-3.2-1b", "qwen3-0.6b", "llama-3.1-8b", "qwen2.5-7b", "mistral-7b", "gemma-3-1b",
                "qwen3-30b-a3b", "phi-3-mini", "qwen2.5-32b", "llama-3.1-70b", "mixtral-8x7b", "gpt2",
                "smollm3-3b", "falcon-h1-0.5b", "gpt-oss-20b")
SERVE_MODELS = ("llama-3.2-1b", "llama-3.1-8b", "qwen2.5-7b", "qwen3-30b-a3b", "llama-3.1-70b", "mixtral-8x7b",
                "deepseek-r1", "gpt-oss-120b", "qwen3-235b-a22b", "gemma-3-27b", "qwen3-next-80b-a3b",
                "llama-4-scout", "phi-4")
CARDS = ("rtx-4090", "rtx-3090", "rtx-3060", "rtx-5090", "l40s", "a100-sxm4-80gb", "a100-40gb", "h100-sxm",
         "h200", "l4", "a10g", "rtx-a6000", "t4", "v100", "mi300x", "b200")
STACKS = ("hf", "torchtune", "torchtitan", "unsloth", "axolotl", "pytorch", "megatron")
SHARDINGS = ("single", "ddp", "zero1", "zero2", "zero3", "fsdp", "fsdp1", "fsdp2")
ENGINES = ("transformers", "vllm", "sglang", "llama.cpp", "trtllm")


def _train(r: random.Random) -> list[str]:
    model = r.choice(TRAIN_MODELS)
    stack = r.choice(STACKS)
    method = r.choice(("full", "lora", "qlora")) if stack not in ("torchtitan", "megatron") else "full"
    if stack == "megatron" and r.random() < 0.5:
        method = "lora"
    args = ["--model", model, "--task", "train", "--stack", stack, "--method", method,
            "--seq-len", str(r.choice((512, 1024, 2048, 4096, 8192))),
            "--micro-batch-size", str(r.choice((1, 2, 4, 8))), "--train-tokens", r.choice(("1e7", "1e8", "1e9"))]
    count = r.choice((1, 1, 1, 2, 4, 8))
    args += ["--gpu", r.choice(CARDS), "--num-gpus", str(count)]
    if count > 1 and stack == "torchtune":
        args += ["--sharding", r.choice(("fsdp", "fsdp2", "zero2"))]  # zero2 is refused: a refusal is golden too
    elif count > 1 and stack not in ("megatron", "torchtitan", "unsloth"):
        args += ["--sharding", r.choice(SHARDINGS[1:])]
    if r.random() < 0.3:
        args += ["--grad-checkpointing", r.choice(("none", "full"))]
    if r.random() < 0.2:
        args += ["--pricing", r.choice(("spot", "any"))]
    if r.random() < 0.15:
        args += ["--optimizer", r.choice(("adamw-8bit", "paged-adamw-8bit", "adafactor"))]
    return args


def _serve(r: random.Random) -> list[str]:
    engine = r.choice(ENGINES)
    count = r.choice((1, 1, 2, 4, 8))
    args = ["--model", r.choice(SERVE_MODELS), "--task", "infer", "--engine", engine,
            "--batch-size", str(r.choice((1, 4, 16, 64))), "--prompt-tokens", str(r.choice((256, 1024, 4096))),
            "--output-tokens", str(r.choice((64, 256, 1024))), "--gpu", r.choice(CARDS), "--num-gpus", str(count)]
    if engine == "llama.cpp":
        args += ["--quant", r.choice(("q4_k_m", "q8_0", "none"))]
    elif r.random() < 0.25:
        args += ["--quant", r.choice(("fp8", "awq-int4", "int8"))]
    if r.random() < 0.25:
        args += ["--kv-cache-dtype", r.choice(("fp8", "auto"))]
    return args


def cases() -> dict[str, list[str]]:
    """Every golden case, named ``<command>-<n>``."""
    r = random.Random(SEED)
    out: dict[str, list[str]] = {}
    for i in range(170):
        out[f"estimate-train-{i:03d}"] = ["estimate", "--json", *_train(r)]
    for i in range(110):
        out[f"estimate-infer-{i:03d}"] = ["estimate", "--json", *_serve(r)]
    # no card: memory only; a file scenario with flags on top; data shorthands and pretraining
    out["estimate-nocard-train"] = ["estimate", "--json", "--model", "llama-3.1-8b", "--task", "train", "--method",
                                    "lora"]
    out["estimate-nocard-infer"] = ["estimate", "--json", "--model", "qwen2.5-7b", "--task", "infer",
                                    "--batch-size", "8"]
    for name in ("full-llama-8b-zero3", "lora-llama-8b", "mlperf-llama2-70b-lora", "mlperf-llama31-8b-pretrain",
                 "qlora-llama-70b", "serve-llama-70b-vllm"):
        out[f"estimate-example-{name}"] = ["estimate", "--json", f"examples/{name}.yaml"]
    out["estimate-samples"] = ["estimate", "--json", "--model", "qwen3-8b", "--task", "train", "--method", "qlora",
                               "--gpu", "rtx-3060", "--samples", "2000", "--mean-tokens", "600", "--epochs", "2"]
    out["estimate-pretrain"] = ["estimate", "--json", "--model-size", "3B", "--task", "train", "--gpu", "h100-sxm",
                                "--num-gpus", "8"]
    out["estimate-offload"] = ["estimate", "--json", "--model", "llama-3.1-8b", "--task", "train", "--gpu",
                               "rtx-4090", "--sharding", "zero3", "--offload", "optimizer+params"]
    for i, (model, extra) in enumerate((
            ("llama-3.1-8b", ["--method", "lora"]), ("qwen2.5-7b", ["--method", "qlora", "--any-method"]),
            ("llama-3.1-70b", ["--method", "qlora"]), ("qwen3-30b-a3b", ["--method", "lora", "--any-stack"]))):
        out[f"recommend-train-{i}"] = ["recommend", "--json", "--model", model, "--task", "train",
                                       "--train-tokens", "1e8", *extra]
    for i, (model, extra) in enumerate((
            ("llama-3.1-8b", ["--batch-size", "16"]), ("llama-3.1-70b", ["--batch-size", "32", "--prompt-tokens",
                                                                         "4096"]),
            ("qwen3-30b-a3b", ["--engine", "vllm", "--any-quant"]), ("deepseek-r1", ["--engine", "sglang"]))):
        out[f"recommend-infer-{i}"] = ["recommend", "--json", "--model", model, "--task", "infer", *extra]
    out["recommend-have"] = ["recommend", "--json", "--model", "llama-3.1-8b", "--task", "train", "--method",
                             "lora", "--train-tokens", "1e8", "--have", "2x3090"]
    out["recommend-deadline"] = ["recommend", "--json", "--model-size", "1B", "--task", "train",
                                 "--deadline-hours", "168"]
    out["recommend-budget-pergpu"] = ["recommend", "--json", "--model", "qwen2.5-7b", "--task", "train",
                                      "--method", "lora", "--train-tokens", "2e8", "--budget-usd", "50", "--per-gpu"]
    out["recommend-llamacpp"] = ["recommend", "--json", "--model", "llama-3.1-70b", "--task", "infer", "--engine",
                                 "llama.cpp", "--quant", "q4_k_m", "--have", "2x3090"]
    for i, (gpu, extra) in enumerate((("2x3090", ["--task", "train", "--method", "lora"]), ("rtx-4090", []),
                                      ("h100-sxm", ["--task", "train", "--method", "qlora"]),
                                      ("2xrtx-4090", ["--engine", "llama.cpp"]))):
        out[f"fit-{i}"] = ["fit", "--json", "--gpu", gpu, *extra]
    for i, extra in enumerate((["--model", "qwen2.5-7b", "--task", "train", "--method", "lora", "--train-tokens",
                                "2e8", "--pricing", "any"],
                               ["--model", "llama-3.1-8b", "--task", "infer", "--batch-size", "16"],
                               ["--model", "llama-3.1-70b", "--task", "train", "--method", "qlora", "--train-tokens",
                                "1e8", "--gpu", "a100-sxm4-80gb"])):
        out[f"cost-{i}"] = ["cost", "--json", *extra]
    for i, extra in enumerate((["--model", "llama-3.1-8b", "--preset", "chat", "--gpus", "l40s,h100-sxm", "--top",
                                "2"],
                               ["--model", "qwen2.5-7b", "--rate", "2", "--preset", "summarize", "--gpus",
                                "a100-sxm4-80gb", "--top", "1"],
                               ["--model", "llama-3.2-1b", "--users", "20", "--preset", "chat", "--gpus", "l4", "--top",
                                "1"],
                               ["--model", "llama-3.1-8b", "--prompt-tokens", "2000", "--output-tokens", "300",
                                "--rate", "1", "--engine", "sglang", "--gpus", "h100-sxm", "--top", "1"])):
        out[f"capacity-{i}"] = ["capacity", "--json", *extra]
    for i, extra in enumerate((["--model", "llama-3.1-8b", "--task", "train", "--method", "lora", "--gpu",
                                "rtx-4090", "--grad-checkpointing", "full"],
                               ["--model", "qwen2.5-32b", "--task", "train", "--gpu", "a100-sxm4-80gb", "--num-gpus",
                                "8", "--sharding", "zero3", "--train-tokens", "1e8", "--seq-len", "8192",
                                "--loss", "fused-linear", "--grad-checkpointing", "full"],
                               ["--model", "qwen3-8b", "--task", "train", "--method", "qlora", "--stack",
                                "unsloth", "--gpu", "rtx-3060"],
                               ["--model", "llama-3.1-8b", "--task", "train", "--stack", "torchtune", "--method",
                                "lora", "--gpu", "a100-sxm4-80gb", "--num-gpus", "2"],
                               ["--model", "llama-3.1-8b", "--task", "train", "--stack", "torchtitan", "--gpu",
                                "h100-sxm", "--num-gpus", "8", "--sharding", "fsdp"],
                               ["--model", "llama-3.1-8b", "--task", "train", "--stack", "axolotl", "--method",
                                "qlora", "--gpu", "rtx-4090"],
                               ["--model", "llama-3.1-70b", "--task", "train", "--stack", "megatron", "--gpu",
                                "h100-sxm", "--num-gpus", "16", "--tp", "8", "--pp", "2", "--train-tokens", "1e9",
                                "--grad-checkpointing", "full"],
                               ["--model", "llama-3.1-70b", "--task", "infer", "--engine", "vllm", "--gpu",
                                "h100-sxm", "--num-gpus", "4"],
                               ["--model", "qwen3-30b-a3b", "--task", "infer", "--engine", "sglang", "--gpu", "h200"],
                               ["--model", "llama-3.1-8b", "--task", "infer", "--engine", "trtllm", "--gpu",
                                "h100-sxm"])):
        out[f"launch-{i}"] = ["launch", "--json", *extra]
    out["buy-0"] = ["buy", "--json", "rtx-4090", "--hours", "2000"]
    out["buy-1"] = ["buy", "--json", "rtx-5090", "--count", "8", "--hours", "4000", "--host-usd", "4000"]
    out["table"] = ["table", "--json"]
    out["models"] = ["models", "--json"]
    out["gpus"] = ["gpus", "--json"]
    out["model-deepseek-r1"] = ["model", "deepseek-r1", "--json"]
    out["model-mixtral"] = ["model", "mixtral-8x7b", "--json"]
    return out
