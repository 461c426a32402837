"""The Python API half: every public function of ``gpuplan`` (its ``__all__``) and ``gpuplan.api`` called with
arguments drawn from its signature (by the parameter's name where it says what it holds, else by its
annotation), wrong types included; and the metamorphic checks (a longer sequence never needs less training
memory; more GPUs under ZeRO-3 never need more memory per GPU).
"""

from __future__ import annotations

import inspect
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import values as V
from .fixtures import OUT, Fixtures, file_value, model_value
from .oracle import NONSENSE, OK, Verdict

WRONG = [None, math.nan, math.inf, -1, 0, 10**30, "x", "", b"x", [1], {}, {"a": None}, object(), True, 1j, set(),
         ("a",), Path("/dev/zero"), "\x00", "a\nb"]
WORKLOAD_FIELDS = {"rate_rps": [0.5, 2, 5], "users": [1, 8], "preset": ["chat", "summarize", "generate"],
                   "prompt_tokens": [128, 1024], "output_tokens": [32, 256], "ttft_s": [1, 2], "tpot_s": [0.05, 0.1],
                   "burstiness": [0.5, 1], "num_requests": [50, 200]}


def functions() -> dict[str, Any]:
    """Every public function: ``gpuplan.__all__`` and ``gpuplan.api.__all__``, by name (but ``smoke``, which trains
    for minutes: tests/launchers/test_smoke.py runs it)."""
    import gpuplan
    import gpuplan.api

    from .draw import RUNS_JOBS

    names = sorted({*gpuplan.__all__, *getattr(gpuplan.api, "__all__", ())} - set(RUNS_JOBS))  # they train
    found = {}
    for name in names:
        obj = getattr(gpuplan, name, None) or getattr(gpuplan.api, name, None)
        if inspect.isfunction(obj):
            found[name] = obj
    return found


@dataclass
class ApiCase:
    function: str
    args: list[Any]
    kwargs: dict[str, Any]
    mode: str
    optional: list[str] = field(default_factory=list)  # kwargs shrinking may drop
    files: dict[str, bytes] = field(default_factory=dict)  # made files (mutate.py), written into the run's folder

    def call(self, drop: tuple[int, ...] = ()) -> tuple[list[Any], dict[str, Any]]:
        gone = {self.optional[i] for i in drop if i < len(self.optional)}
        return self.args, {k: v for k, v in self.kwargs.items() if k not in gone}

    def text(self, drop: tuple[int, ...] = (), roots: tuple[str, ...] = ()) -> str:
        args, kwargs = self.call(drop)
        shown = [_shown(a, roots) for a in args] + [f"{k}={_shown(v, roots)}" for k, v in kwargs.items()]
        return f"gpuplan.{self.function}({', '.join(shown)})"


def _shown(value: Any, roots: tuple[str, ...]) -> str:
    text = repr(value) if not isinstance(value, object) or type(value) is not object else "object()"
    for root in roots:
        text = text.replace(root, "$FUZZ")
    return text[:300]


def _scenario_fields(r: random.Random, estimate_cmd: Any, hostile: bool, fx: Fixtures) -> dict[str, Any]:
    """A job as a dict of typed fields (numbers as numbers), from the CLI's own recipe."""
    from .recipes import job
    from .tree import BOOL_TEXT, FLOAT, INT

    fields: dict[str, Any] = {}
    for name, text in job(r, estimate_cmd).items():
        p = estimate_cmd.param(name)
        kind = p.kind if p is not None else ""
        try:
            fields[name] = int(text) if kind == INT else float(text) if kind == FLOAT else text
        except ValueError:
            fields[name] = text
    if hostile:
        names = [p.name for p in estimate_cmd.params if p.field]
        for name in r.sample(names, r.randint(1, 2)):
            p = estimate_cmd.param(name)
            fields[name] = r.choice(WRONG) if r.random() < 0.5 else (
                V.bool_text(r, True) if p.kind == BOOL_TEXT else V.scalar(r, p, True, []))
    return fields


def scenario_value(r: random.Random, estimate_cmd: Any, hostile: bool, fx: Fixtures) -> Any:
    pick = r.random()
    if pick < 0.1:
        return file_value(r, "scenarios", hostile, fx)
    fields = _scenario_fields(r, estimate_cmd, hostile, fx)
    if pick < 0.15 and not hostile:
        import gpuplan

        try:
            return gpuplan.load_scenario(None, fields)
        except Exception:
            return fields
    return fields


def _by_annotation(r: random.Random, annotation: str) -> Any:
    text = str(annotation)
    if "bool" in text:
        return r.choice([True, False])
    if "Iterable" in text or "list" in text or "tuple" in text:
        return [V.named(r, "model", False)]
    if "Mapping" in text or "dict" in text:
        return {}
    if "int" in text:
        return r.choice([1, 2, 4, 8])
    if "float" in text:
        return r.choice([0.0, 0.5, 1.0, 10.0])
    return V.named(r, "model", False)


def _valid(r: random.Random, name: str, param: inspect.Parameter, ctx: dict[str, Any]) -> Any:
    """A valid value for an API parameter, by its name first."""
    fx: Fixtures = ctx["fixtures"]
    table = {
        "scenario": lambda: scenario_value(r, ctx["estimate"], False, fx),
        "model": lambda: model_value(r, False, fx), "name": lambda: model_value(r, False, fx),
        "gpu": lambda: r.choice(["rtx-4090", "2x3090", "l40s", "h100-sxm", "a100-sxm4-80gb"]),
        "workload": lambda: r.choice([file_value(r, "workloads", False, fx), {"rate_rps": 1, "preset": "chat"},
                                      None]),
        "workloads": lambda: r.choice([file_value(r, "owning", False, fx), None]),
        "build": lambda: r.choice(["4090", "2x3090", "rtx-a6000"]), "hours": lambda: r.choice([None, 100.0]),
        "prices": lambda: r.choice([None, {"3090": 700}, {"4090": 1700}]),
        "folder": lambda: r.choice(OUT["folder"][0]), "path": lambda: file_value(r, "scenarios", False, fx),
        "overrides": lambda: {"task": r.choice(["train", "infer"])},
        "targets": lambda: r.sample(["trainer", "accelerate", "torchrun", "skypilot", "vllm", "deepspeed"],
                                    r.randint(0, 2)),
        "catalogs": lambda: [file_value(r, "offers", False, fx)] if r.random() < 0.3 else [],
        "discounts": lambda: r.choice([None, {"runpod": 0.85}, {"vast": 0.5, "aws": 1.0}]),
        "gpus": lambda: r.sample(["l4", "l40s", "h100-sxm", "rtx-4090"], r.randint(1, 2)),
        "providers": lambda: r.sample(["runpod", "vast", "lambda", "aws"], r.randint(0, 2)),
        "have": lambda: r.choice([[], ["2x3090"], [("rtx-4090", 1)]]),
        "models": lambda: r.choice([None, r.sample(V.SMALL_MODELS, 2)]),
        "calibration": lambda: r.choice([None, file_value(r, "calibrations", False, fx)]),
        "dataset": lambda: None, "script": lambda: r.choice([None, "train.py", ["train.py", "--lr", "1e-4"]]),
        "bucket": lambda: r.choice([None, "s3://my-bucket"]), "visible_devices": lambda: r.choice([None, (0,), (0, 1)]),
        "command": lambda: "gpuplan fuzz", "engine": lambda: r.choice(["vllm", "vllm", "sglang"]),
        "objective": lambda: r.choice(["cost", "time", "balanced"]), "min_headroom": lambda: r.choice([0.0, 0.1]),
        "max_gpus": lambda: r.choice([1, 2, 4]), "top": lambda: r.choice([1, 2, 5]),
        "budget_usd": lambda: r.choice([None, 50.0, 1e4]), "deadline_hours": lambda: r.choice([None, 10.0, 1e3]),
        "kv_cache_dtype": lambda: r.choice([None, "auto", "fp8"]), "engine_version": lambda: None,
    }
    make = table.get(name)
    return make() if make else _by_annotation(r, param.annotation)


def _hostile(r: random.Random, name: str, param: inspect.Parameter, ctx: dict[str, Any]) -> Any:
    fx: Fixtures = ctx["fixtures"]
    if name == "scenario" and r.random() < 0.6:
        return scenario_value(r, ctx["estimate"], True, fx)
    if name in ("model", "name") and r.random() < 0.5:
        return model_value(r, True, fx)
    if name == "folder" and r.random() < 0.6:
        return r.choice(OUT["folder"][1])
    if name in ("workload", "workloads", "calibration", "path", "catalogs") and r.random() < 0.5:
        kind = {"workload": "workloads", "workloads": "owning", "calibration": "calibrations",
                "path": "scenarios"}.get(name, "offers")
        found = file_value(r, kind, True, fx)
        return [found] if name == "catalogs" else found
    return r.choice(WRONG + V.HOSTILE_TEXT[:20] + [-5, 1e308, -math.inf, 2**63])


def draw_api(r: random.Random, name: str, fn: Any, ctx: dict[str, Any]) -> ApiCase:
    """One call of ``fn``, with the files it made."""
    from .mutate import collecting

    with collecting() as files:
        case = _draw_api(r, name, fn, ctx)
    case.files = dict(files)
    return case


def _draw_api(r: random.Random, name: str, fn: Any, ctx: dict[str, Any]) -> ApiCase:
    mode = r.choices(["valid", "mixed", "wild"], [0.55, 0.35, 0.1])[0]
    params = [(n, p) for n, p in inspect.signature(fn).parameters.items() if p.kind not in (p.VAR_POSITIONAL,)]
    args, kwargs, optional = [], {}, []
    spoil = {n for n, _ in r.sample(params, min(len(params), r.randint(1, 2)))} if mode == "mixed" else set()
    for n, p in params:
        if p.kind == p.VAR_KEYWORD:
            for key, v in _extra_fields(r, name, ctx, mode).items():
                kwargs[key] = v
                optional.append(key)
            continue
        required = p.default is p.empty
        if not required and mode == "valid" and r.random() < 0.4 and n not in ("gpus", "max_gpus", "top", "folder"):
            continue  # the default
        hostile = n in spoil or (mode == "wild" and r.random() < 0.5)
        v = _hostile(r, n, p, ctx) if hostile else _valid(r, n, p, ctx)
        if required and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            args.append(v)
        else:
            kwargs[n] = v
            optional.append(n)
    return ApiCase(function=name, args=args, kwargs=kwargs, mode=mode, optional=optional)


def _extra_fields(r: random.Random, name: str, ctx: dict[str, Any], mode: str) -> dict[str, Any]:
    """What ``**fields`` takes: scenario fields (fit) or workload fields (capacity)."""
    if r.random() < 0.4:
        return {}
    if name == "capacity":
        keys = r.sample(sorted(WORKLOAD_FIELDS), r.randint(1, 2))
        out = {k: r.choice(WORKLOAD_FIELDS[k]) for k in keys}
    else:
        fields = _scenario_fields(r, ctx["estimate"], False, ctx["fixtures"])
        keys = r.sample(sorted(k for k in fields if k not in ("model", "gpu", "num_gpus")), 2)
        out = {k: fields[k] for k in keys if k in fields}
    if mode != "valid":
        out[r.choice(["nosuch_field", *out])] = r.choice(WRONG)
    return out


# ---- metamorphic checks ----------------------------------------------------------------------------------------
META_MODELS = ["llama-3.2-1b", "qwen2.5-0.5b", "mistral-7b", "gemma-2-9b", "mixtral-8x7b", "qwen3-4b", "gpt-oss-20b"]


STACKS = ["hf", "unsloth", "axolotl", "torchtune", "torchtitan", "pytorch", "megatron"]
ENGINES = ["transformers", "vllm", "sglang", "llama.cpp", "trtllm", "mlx"]


def card_case(r: random.Random) -> dict[str, Any]:
    """A job on any catalog card with its precision left to the card (s24: torchtune took fp16 on a 2080 Ti and was
    refused with "use precision bf16-true", which the card lacks; MLX advised llama.cpp on a Gaudi card)."""
    from gpuplan.hardware import gpus

    gpu = r.choice(sorted(gpus()))
    if r.random() < 0.5:
        return {"model": "llama-3.2-1b", "task": "infer", "engine": r.choice(ENGINES), "gpu": gpu}
    method = r.choice(["full", "lora", "qlora"])
    return {"model": "qwen2.5-0.5b", "task": "train", "method": method, "stack": r.choice(STACKS), "gpu": gpu}


def judge_card(fields: dict[str, Any]) -> Verdict:
    """A refusal of a job whose precision the card chose must not blame that precision nor advise a dtype the card
    lacks, and every engine it advises must plan on that card."""
    import re

    import gpuplan
    from gpuplan.hardware import load_gpu

    try:
        gpuplan.estimate(fields, advise=False)
        return Verdict(OK)
    except gpuplan.GpuplanError as e:
        why = str(e)
    if re.search(r"(use|set) precision", why):
        return Verdict(NONSENSE, "a refusal blames the precision the card chose", f"{fields} -> {why}")
    if not load_gpu(fields["gpu"]).supports_dtype("bf16") and re.search(r"precision (to )?bf16", why):
        return Verdict(NONSENSE, "a refusal advises bf16 on a card without it", f"{fields} -> {why}")
    advice = re.split(r"serve it with|use engine", why)
    for engine in ENGINES if len(advice) > 1 else []:
        if re.search(rf"(?<![\w.-]){re.escape(engine)}(?![\w-])", advice[-1]):
            try:
                gpuplan.estimate({**fields, "engine": engine}, advise=False)
            except gpuplan.GpuplanError as other:
                return Verdict(NONSENSE, "a refusal advises an engine that refuses the card", f"{fields} -> {why} "
                               f"-> {engine}: {other}")
    return Verdict(OK, detail="refused")


MODULE_MODELS = ["bert-base-uncased", "whisper-large-v3", "sdxl", "flux-dev", "flan-t5-base"]
# the decoder's refusals that no model changes: a dtype the card lacks, a base no loader keeps
CARD_OR_BASE = (r"tensor cores|take no gradients|serving format|FlashAttention 2|does not load|MLX's own|"
                r"dequantizes a GGUF")


def module_case(r: random.Random) -> dict[str, Any]:
    """A diffusion pipeline, Whisper, T5 or an encoder with one weight format, precision or attention on any card
    (s25: module plans skipped the decoder's card and base rules: BERT bf16 on a T4, Whisper in q4_k_m, SDXL fully
    fine-tuned on nf4 were planned)."""
    from gpuplan.hardware import gpus

    fields: dict[str, Any] = {"model": r.choice(MODULE_MODELS), "gpu": r.choice(sorted(gpus())),
                              "task": r.choice(["train", "infer"])}
    if fields["task"] == "train":
        fields["method"] = r.choice(["full", "lora", "qlora"])
    which = r.choice(["quant", "precision", "attention"])
    fields[which] = r.choice({"quant": ["int8", "nf4", "fp8", "nvfp4", "awq-int4", "mlx-4bit", "gguf-q4_k_m"],
                              "precision": ["bf16-mixed", "fp16-mixed", "bf16-true", "fp8-mixed", "fp32"],
                              "attention": ["sdpa", "flash", "eager"]}[which])
    return fields


def judge_module(fields: dict[str, Any]) -> Verdict:
    """A module plan must be refused where a decoder's plan of the same fields on the same card is refused for a
    reason no model changes (:data:`CARD_OR_BASE`); a GGUF denoiser is diffusers' own (kept quantized)."""
    import re

    import gpuplan

    try:
        gpuplan.estimate({**fields, "model": "llama-3.2-1b"}, advise=False)
        return Verdict(OK, detail="decoder plans")
    except gpuplan.GpuplanError as e:
        why = str(e)
    diffusion = fields["model"] in ("sdxl", "flux-dev")
    # diffusers keeps a GGUF denoiser quantized, and stores fp8 weights layer by layer, computing in 16 bits
    # (enable_layerwise_casting: no fp8 tensor cores needed; tests/plan/test_fuzz_s25.py plans SDXL fp8 on a 3090)
    own = diffusion and (("GGUF" in why and fields["task"] == "infer") or fields.get("quant") == "fp8")
    if not re.search(CARD_OR_BASE, why) or own:
        return Verdict(OK, detail="decoder refused for its own reason")
    try:
        gpuplan.estimate(fields, advise=False)
    except gpuplan.GpuplanError:
        return Verdict(OK, detail="refused")
    return Verdict(NONSENSE, "a module is planned where a decoder is refused for the card or base", f"{fields} -> "
                   f"decoder: {why}")


def meta_case(r: random.Random, which: str) -> dict[str, Any]:
    if which == "card":
        return {"card": card_case(r)}
    if which == "module":
        return {"module": module_case(r)}
    if which == "silent":
        from .silent import silent_case

        return silent_case(r)
    if which == "physics":
        from .physics import physics_case

        return physics_case(r)
    base = {"model": r.choice(META_MODELS), "task": "train", "method": r.choice(["full", "lora", "qlora"]),
            "grad_checkpointing": r.choice(["none", "selective", "full"]), "micro_batch_size": r.randint(1, 4)}
    if which == "seq_len":
        base["seq_len"] = 2 ** r.randint(6, 14)
        return {"base": base, "vary": "seq_len", "values": [base["seq_len"], base["seq_len"] * r.choice([1.5, 2])]}
    n = r.choice([2, 4, 8, 16])
    base.update(sharding=r.choice(["zero3", "fsdp"]), gpu=r.choice(["h100-sxm", "a100-sxm4-80gb", "l40s"]),
                seq_len=r.choice([512, 2048]), num_gpus=n)
    return {"base": base, "vary": "num_gpus", "values": [n, n * 2]}


def judge_meta(case: dict[str, Any]) -> Verdict:
    """Longer sequences never need less training memory; more ZeRO-3 GPUs never need more per GPU; a card's own
    defaults are not refused (:func:`judge_card`); a module is refused what the card or loader refuses a decoder
    (:func:`judge_module`); a field the plan does not read is named in a warning (:mod:`.silent`); no speed above
    the card, cost = hours x price, memory that grows with the batch (:mod:`.physics`)."""
    import gpuplan

    if "card" in case:
        return judge_card(case["card"])
    if "module" in case:
        return judge_module(case["module"])
    if "silent" in case:
        from .silent import judge_silent

        return judge_silent(case["silent"])
    if "physics" in case:
        from .physics import judge_physics

        return judge_physics(case)
    peaks = []
    for v in case["values"]:
        fields = {**case["base"], case["vary"]: int(v)}
        try:
            peaks.append(gpuplan.estimate(fields, advise=False).memory.allocated_peak_gib)
        except gpuplan.GpuplanError:
            return Verdict(OK, detail="refused")  # both sides must be plans to compare
    if case["vary"] == "seq_len" and peaks[1] < peaks[0] * (1 - 1e-9):
        return Verdict(NONSENSE, "a longer seq_len lowered training memory", f"{case} -> {peaks}")
    if case["vary"] == "num_gpus" and peaks[1] > peaks[0] * (1 + 1e-9):
        return Verdict(NONSENSE, "more ZeRO-3 GPUs raised memory per GPU", f"{case} -> {peaks}")
    return Verdict(OK)
