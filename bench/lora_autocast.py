"""A diffusion LoRA job's frozen 16-bit denoiser run under autocast: how much more element-wise work and activation
memory than the 16-bit profile the plan reads (issue 34, session 29; not built).

Every diffusion trainer gpuplan plans runs the denoiser's forward under CUDA autocast when its mixed precision is fp16
or bf16, including over a base cast to 16 bits:

- diffusers' train_dreambooth_lora*.py and the QLoRA blog's script cast the frozen denoiser to ``weight_dtype`` and
  pass it to ``accelerator.prepare``, whose ``prepare_model`` wraps the forward in autocast under native AMP;
- kohya's train_network.py (and sdxl_train.py, train_db.py, flux_train.py) call the denoiser inside
  ``accelerator.autocast()``; ``--full_bf16``/``--full_fp16`` assert ``mixed_precision`` bf16/fp16 (train_network.py
  at 48d368fa, lines 813-825), so autocast stays on with them;
- SimpleTuner prepares its model with accelerate under ``--mixed_precision bf16`` and turns native AMP off only on
  Apple's MPS (helpers/training/trainer.py at bc8e6ab7);
- accelerate turns native AMP on for fp16 and bf16 on CUDA (accelerator.py, 1.15.0, ``Accelerator.__init__``
  ``native_amp``; ``Accelerator.autocast``).

Under autocast (PyTorch aten/src/ATen/autocast_mode.h, replayed by gpuplan.model.autocast) a 16-bit weight needs no
cast, but ``group_norm`` and ``layer_norm`` are on the fp32 list: their outputs are fp32, and the SiLU, modulation or
residual arithmetic that reads them runs in fp32 until the next convolution or linear casts back to 16 bits.

Measured here on fake tensors (gpuplan.model.record.run_pass, the recording the bundled profiles are made with): one
pass of each pipeline's denoiser at batch 1, 64 x 64 latents (512 px), its bundled text length, in bf16 and again
under the replayed lists with the same bf16 weights (LoRA adapters in fp32, as diffusers' cast_training_params and
kohya's networks keep them). ``python bench/lora_autocast.py [MODEL ...]`` prints the table (minutes of CPU:
FLUX.1's training passes take the longest); ``--what-if`` re-plans the bench's diffusion LoRA rows with each
denoiser's element-wise bytes, kernels and dispatches scaled as the inference passes measured (the plan reads a
training step's work from its forward), and each LoRA way's activation peak by its measured ratio (memory rows).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

# the ways the bench's LoRA rows plan (FLUX.1's rows all checkpoint: its slow training passes are left out)
WAYS = {"sd1.5": ("inference", "train-lora-attention-gc", "train-lora-all", "train-lora-all-gc"),
        "sdxl": ("inference", "train-lora-attention-gc", "train-lora-all", "train-lora-all-gc"),
        "flux-dev": ("inference", "train-lora-attention-gc", "train-lora-all-gc")}


def parts(name: str, ways: tuple[str, ...]):
    """The bundled 16-bit part of ``name``'s denoiser and the same part under the replayed autocast lists."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from gpuplan.model import diffusers, kinds

    c = kinds.named(name).main
    plain = diffusers.denoiser_part(c, ways)
    fake = FakeTensorMode(allow_non_fake_inputs=True)

    def build(way: str):
        module = diffusers._with_way(diffusers.build(c.library, c.cls, c.config), way, "bfloat16")
        with fake:
            module = module.to_empty(device="cpu")
        for key, p in module.named_parameters():
            if "lora_" in key:  # diffusers' cast_training_params, kohya's LoRAModule: fp32 adapters
                p.data = p.data.float()
        return module

    return plain, replace(plain, autocast="bfloat16", build=build, materialized=fake)


def measure(name: str, ways: tuple[str, ...]) -> dict[str, tuple]:
    """{way: (bf16 pass, autocast pass)} at batch 1 and 64 x 64 latents."""
    from gpuplan.model.record import run_pass

    plain, amp = parts(name, ways)
    size = (64 * 64, 77 if name.startswith("sd") else 256)
    return {way: (run_pass(plain, way, 1, size, record_ops=True), run_pass(amp, way, 1, size, record_ops=True))
            for way in ways}


def table(results: dict[str, dict[str, tuple]]) -> str:
    """The inference pass's element-wise bytes, kernels and dispatches (what a plan's step is timed from) and each
    way's activation peak (what its memory reads), bf16 against autocast."""
    gib = 2 ** 30
    lines = ["| model | way | element-wise GiB | kernels | dispatches | activation peak GiB |",
             "|---|---|---|---|---|---|"]
    for name, ways in results.items():
        for way, (a, b) in ways.items():
            pa, pb = max(a.peaks.values()) / gib, max(b.peaks.values()) / gib
            work = (f"{a.other_bytes / gib:.3f} -> {b.other_bytes / gib:.3f} (x{b.other_bytes / a.other_bytes:.3f}) | "
                    f"{a.other_kernels} -> {b.other_kernels} | {a.dispatches} -> {b.dispatches}"
                    if way == "inference" else "| |")
            lines.append(f"| {name} | {way} | {work} | {pa:.3f} -> {pb:.3f} (x{pb / pa:.2f}) |")
    return "\n".join(lines)


class _Scaled:
    def __init__(self, poly, ratio: float):
        self.poly, self.ratio = poly, ratio

    def at(self, *args, **kwargs) -> float:
        return self.poly.at(*args, **kwargs) * self.ratio


def _changed(main, ways: dict[str, tuple]):
    """``main`` with the inference pass's element-wise bytes, kernels and dispatches and each measured way's
    activation peak scaled from its bf16 pass to its autocast pass."""
    import dataclasses

    a, b = ways["inference"]
    out = dataclasses.replace(main, other_bytes=_Scaled(main.other_bytes, b.other_bytes / a.other_bytes),
                              other_kernels=main.other_kernels + b.other_kernels - a.other_kernels,
                              dispatches=main.dispatches + b.dispatches - a.dispatches)
    peak = {way: max(y.peaks.values()) / max(x.peaks.values()) for way, (x, y) in ways.items()}
    object.__setattr__(out, "activation_bytes", lambda way, batch, sizes: main.activation_bytes(way, batch, sizes)
                       * peak.get(way, 1.0))
    return out


def what_if(results: dict[str, dict[str, tuple]]) -> str:
    """The bench's diffusion LoRA rows planned as now and with the denoiser changed as measured (:func:`_changed`)."""
    import yaml

    import gpuplan
    import gpuplan.plan.modules as pm

    state: dict[str, dict | None] = {"on": None}
    original = pm.profiles

    def changed(job):
        main, others = original(job)
        return (_changed(main, state["on"]) if state["on"] and not main.under_autocast else main), others

    pm.profiles = changed
    cases = yaml.safe_load((Path(__file__).parent / "modules_cases.yaml").read_text())["cases"]
    lines = ["| row | quantity | measured | plan now | under autocast |", "|---|---|---:|---:|---:|"]
    for case in cases:
        s = case.get("scenario") or {}
        if s.get("method") not in ("lora", "qlora") or s.get("model") not in results:
            continue
        read = []
        for on in (None, results[s["model"]]):
            state["on"] = on
            e = gpuplan.estimate(s, advise=False)
            read.append((e.work.steps_per_s, getattr(e.memory, f"{case.get('level', 'device')}_peak_gib")))
        for i, key in ((0, "it_per_s"), (1, "memory_gib"), (1, "memory_below_gib")):
            m = case.get(key)
            if m:
                now, amp = read[0][i], read[1][i]
                lines.append(f"| {case['id']} | {key} | {m:.4g} | {now:.4g} ({100 * (now - m) / m:+.1f} %) | "
                             f"{amp:.4g} ({100 * (amp - m) / m:+.1f} %) |")
    pm.profiles = original
    return "\n".join(lines)


if __name__ == "__main__":
    found = {}
    names = [a for a in sys.argv[1:] if not a.startswith("--")] or list(WAYS)
    for name, ways in ((n, WAYS[n]) for n in names):
        found[name] = measure(name, ways)
        print(table({name: found[name]}), flush=True)
    if "--what-if" in sys.argv:
        print(what_if(found))
