"""Valid starting points: values that must agree with each other (the task picks the method and stack, or the
engine; a capacity search kept to a few cards so that it answers in seconds). Each recipe names parameters; the
caller keeps those the command has, so a recipe never stops an option from being drawn and a renamed option
simply falls back on its kind.
"""

from __future__ import annotations

import random

from . import values as V
from .fixtures import Fixtures, file_value, model_value
from .tree import Command

# training stacks and the methods each runs (a stack missing here gets every method of the scenario)
STACK_METHODS = {"hf": ("full", "lora", "qlora"), "axolotl": ("full", "lora", "qlora"), "unsloth": ("lora", "qlora"),
                 "torchtune": ("full", "lora"), "torchtitan": ("full",), "megatron": ("full",), "pytorch": ("full",)}
BIG_CARDS = ["h100-sxm", "a100-sxm4-80gb", "h200-sxm", "l40s", "mi300x", "b200"]
ANY_CARDS = [*BIG_CARDS, "rtx-4090", "rtx-3090", "rtx-a6000", "l4", "a10g", "rtx-5090"]
FAST_CARDS = ["l4", "l40s", "h100-sxm", "a100-sxm4-80gb", "rtx-4090"]


def _choices(cmd: Command, *names: str) -> tuple[str, tuple]:
    """The first of ``names`` the command has, with its choices (a field renamed keeps working)."""
    for name in names:
        p = cmd.param(name)
        if p is not None:
            return name, tuple(str(c) for c in p.choices)
    return names[0], ()


def _train(r: random.Random, cmd: Command) -> dict[str, str]:
    stack_name, stacks = _choices(cmd, "stack", "framework")
    stack = "hf" if r.random() < 0.5 or not stacks else r.choice(stacks)
    method = r.choice(STACK_METHODS.get(stack, ("full", "lora", "qlora")))
    model = "llama-3.1-8b" if stack == "torchtitan" else r.choice(
        r.choice([V.SMALL_MODELS, V.SMALL_MODELS, V.MID_MODELS, V.MOE_MODELS]))
    gpus = r.choice([1, 1, 1, 2, 4, 8])
    job = {"task": "train", stack_name: stack, "method": method, "model": model, "num_gpus": str(gpus),
           "gpu": r.choice(BIG_CARDS if method == "full" else ANY_CARDS),
           "seq_len": r.choice(["512", "1024", "2048", "4096"]), "micro_batch_size": r.choice(["1", "1", "2", "4"])}
    if gpus > 1:
        sharding, _ = _choices(cmd, "sharding", "strategy")
        job[sharding] = r.choice(["ddp", "zero2", "zero3", "fsdp"] if stack not in ("torchtune", "torchtitan")
                                 else ["fsdp"])
    if r.random() < 0.5:
        job["train_tokens"] = r.choice(["1e6", "2e7", "1e8", "1e9"])
    return job


def _infer(r: random.Random, cmd: Command) -> dict[str, str]:
    _, engines = _choices(cmd, "engine")
    engine = r.choice(engines or ("vllm",))
    job = {"task": "infer", "engine": engine, "model": r.choice(r.choice([V.SMALL_MODELS, V.MID_MODELS,
                                                                           V.MOE_MODELS])),
           "gpu": r.choice(ANY_CARDS), "batch_size": r.choice(["1", "4", "8", "32"]),
           "prompt_tokens": r.choice(["128", "512", "1024", "2048"]),
           "output_tokens": r.choice(["0", "16", "128", "256"])}
    if r.random() < 0.1:  # an encoder-decoder's generate (transformers), down to no output token (s19's fuzz)
        job.update(model=r.choice(V.ENCODER_DECODERS), engine="transformers", output_tokens=r.choice(["0", "1", "64"]))
    elif engine == "llama.cpp":
        job["quant"] = r.choice(["q4_k_m", "q8_0", "gguf-q4_k_m"])
    if r.random() < 0.2:
        job.update(num_gpus="2", tp="2")
    return job


def job(r: random.Random, cmd: Command) -> dict[str, str]:
    """A coherent training or serving job (scenario fields)."""
    return _train(r, cmd) if r.random() < 0.55 else _infer(r, cmd)


def _capacity(r: random.Random, cmd: Command, fx: Fixtures) -> dict[str, str]:
    out = {"model": r.choice(V.SMALL_MODELS[:3] + V.MID_MODELS[:2]), "gpus": ",".join(r.sample(FAST_CARDS, r.randint(
        1, 2))), "max_gpus": r.choice(["1", "2"]), "top": r.choice(["1", "2"]),
        "engine": "vllm" if r.random() < 0.85 else "sglang"}
    if r.random() < 0.8:
        out["rate"] = r.choice(["0.5", "1", "2", "5"])
    else:
        out["users"] = r.choice(["1", "4", "16"])
    if r.random() < 0.6:
        out["preset"] = r.choice(["chat", "summarize", "generate", "balanced", "rag", "code"])
    elif r.random() < 0.5:
        out.update(prompt_tokens=r.choice(["128", "1024"]), output_tokens=r.choice(["32", "256"]))
    else:
        out["workload"] = file_value(r, "workloads", False, fx)
    return out


def _simulate(r: random.Random, cmd: Command) -> dict[str, str]:
    base = job(r, cmd)
    base.update(model=r.choice(["gpt2", "qwen2.5-0.5b", "llama-3.2-1b"]), layers=r.choice(["1", "2"]),
                seq_len=r.choice(["64", "128", "256"]), micro_batch_size="1", num_gpus="1", batch_size="1",
                prompt_tokens="64", output_tokens=r.choice(["8", "256", "1000000"]))  # bounded: prefill + last step
    base.pop("tp", None)
    return base


def _calibrate_serving(r: random.Random, fx: Fixtures) -> dict[str, list[str] | str]:
    valid, _ = fx.files("results")
    return {"results": [str(p) for p in r.sample(valid, min(len(valid), r.randint(1, 2)))],
            "model": r.choice(V.SMALL_MODELS[:2] + V.MID_MODELS[:2]), "gpu": r.choice(ANY_CARDS), "tp": "1"}


def _prices_update(r: random.Random, fx: Fixtures) -> dict[str, str]:
    source = r.choice(["bundled", "file", "skypilot", "gpuhunt"])
    out = {"source": source}
    valid, other = fx.files("offers")
    sky = [str(p) for p in other if p.name.startswith("skypilot")]
    own = [str(p) for p in valid]
    if source == "file" and own:
        out["file"] = r.choice(own)
    if source == "skypilot" and sky:
        out.update(file=r.choice(sky), provider=r.choice(["aws", "gcp", "mycloud"]))
    return out


def _buy(r: random.Random, fx: Fixtures) -> dict[str, str]:
    """A build (its parameter is ``build``) and what it does: a workloads file, or hours of use."""
    out = {"build": r.choice(["4090", "2x4090", "rtx-3090", "2x3090", "rtx-a6000", "5090", "dgx-spark"])}
    if r.random() < 0.6:
        out["workloads"] = file_value(r, "owning", False, fx)
    else:
        out["hours"] = r.choice(["100", "2000"])
    return out


def recipe(r: random.Random, cmd: Command, fx: Fixtures) -> dict[str, list[str]]:
    """Valid values for the parameters of ``cmd`` that must agree (name -> values)."""
    name = cmd.name
    if name == "capacity":
        base = _capacity(r, cmd, fx)
    elif name == "simulate":
        base = _simulate(r, cmd)
    elif name == "calibrate-serving":
        base = _calibrate_serving(r, fx)
    elif name == "prices update":
        base = _prices_update(r, fx)
    elif cmd.has("task"):  # every scenario command
        base = job(r, cmd)
        if name == "recommend" and r.random() < 0.7:
            base.update(max_gpus=r.choice(["1", "2", "4"]), gpus=",".join(r.sample(FAST_CARDS, r.randint(1, 3))))
        if name in ("recommend", "cost", "fit"):
            for key in ("gpu", "num_gpus", "tp"):
                base.pop(key, None)
        if name == "fit":
            base["gpu"] = r.choice(["rtx-4090", "2x3090", "l40s", "h100-sxm", "4xa100-sxm4-80gb", "apple-m4-max"])
        if name == "launch":
            base["output"] = r.choice(["out", "runs/x"])
        if r.random() < 0.12:
            base["scenario"] = file_value(r, "scenarios", False, fx)
    elif name == "model":
        base = {"name": model_value(r, False, fx)}
    elif name == "buy":
        base = _buy(r, fx)
    elif name == "calibrate":
        base = {"records": file_value(r, "records", False, fx)}
    else:
        base = {}
    if cmd.has("pricing") and r.random() < 0.15:  # spot's own paths: Daly's wall time, a fleet's spare replicas
        base["pricing"] = "spot"  # (s31: --mtbi-hours 5e-324 crashed capacity only with --pricing spot)
    return {k: v if isinstance(v, list) else [v] for k, v in base.items()}
