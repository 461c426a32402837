"""Rewrite the bundled counts and profiles of the models that are not decoder LLMs (diffusion pipelines, Whisper,
T5, BART, ViT, CLIP, SigLIP): ``python -m gpuplan.model.bundle_modules [NAME ...]`` (``--force`` records again
what is bundled; ``--prune`` only prunes the bundled profiles' memory segments again).

Each component's exact parameter count (its real class on the meta device; a model's parameter tensors too) is
written into its bundled file, and each part it runs (a denoiser in every way of training, a VAE encoding and
decoding, a text encoder, an encoder-decoder, an encoder, and a denoiser or text encoder again under autocast for
its mixed-precision full fine-tunes) is recorded on fake tensors (:mod:`.record`) into ``data/modules/profiles``. Tests
check the bundled counts against the classes and one recorded part against a fresh recording. Needs torch,
diffusers, transformers and peft; an hour of CPU for all of them.
"""

from __future__ import annotations

import json
import sys
import time

from . import profile
from .module_spec import ModuleSpec


def parts_of(spec: ModuleSpec) -> list[tuple[dict, str, object]]:
    """(config, part name, Part) for every part of ``spec`` that a plan reads."""
    from . import diffusers, encoders
    from .families import TEXT_ENCODERS

    out = []
    for c in spec.components:
        if c.role == "denoiser":
            out.append((c.config, "denoiser", diffusers.denoiser_part(c)))
            out.append((c.config, diffusers.AUTOCAST_PART,  # a mixed-precision full fine-tune's
                        diffusers.denoiser_part(c, diffusers.AUTOCAST_WAYS, autocast="float16")))
        elif c.role == "vae":
            out += [(c.config, "vae-encode", diffusers.vae_part(c, "encode")),
                    (c.config, "vae-decode", diffusers.vae_part(c, "decode"))]
        elif c.role == "text_encoder":
            ways = diffusers.T5_WAYS if c.cls == "T5EncoderModel" else diffusers.TEXT_ENCODER_WAYS
            out.append((c.config, "text-encoder", diffusers.text_encoder_part(c, ways)))
        else:
            out.append((c.config, "model", encoders.model_part(spec, c)))
            if spec.family in TEXT_ENCODERS:  # a mixed-precision full fine-tune's: fp32 weights under autocast
                out.append((c.config, encoders.AUTOCAST_PART, encoders.model_part(spec, c, autocast="float16")))
    return out


def rewrite(names: list[str]) -> None:
    from . import diffusers, encoders
    from .record import record

    folder = profile.bundled_profiles()
    folder.mkdir(parents=True, exist_ok=True)
    files = {**diffusers.bundled_pipelines(), **encoders.bundled_models()}
    for repo, path in files.items():
        if names and repo not in names:
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        if repo in diffusers.bundled_pipelines():
            spec = diffusers.pipeline_spec(repo, data["model_index"], data["configs"])
        else:
            spec = encoders.bundled_model(repo, count=True)
        data["params"] = {c.name: c.params for c in spec.components}
        if repo not in diffusers.bundled_pipelines():  # the model's tensors, a for-loop optimizer's steps one by one
            data["tensors"] = {c.name: diffusers.count_tensors(c.library, c.cls, c.config) for c in spec.components}
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        for config, part_name, part in parts_of(spec):
            found = profile.lookup(config, part_name)
            if found and found[1] and "--force" not in sys.argv:  # bundled already (not a user-cache copy)
                continue
            start = time.time()
            recorded = record(part)
            profile.store(config, part_name, recorded, folder)
            print(f"{repo} {part_name}: {len(recorded.ops)} op groups, {len(recorded.memory)} ways, "
                  f"{time.time() - start:.0f} s", flush=True)


def reprune() -> None:
    """Prune the bundled profiles' memory segments again (:func:`~.record.prune`), without recording: for a change
    to the pruning alone."""
    from dataclasses import replace

    from . import diffusers, encoders, kinds
    from .record import prune, prune_grid

    for repo in [*diffusers.bundled_pipelines(), *encoders.bundled_models()]:
        for config, part_name, part in parts_of(kinds.named(repo)):
            found = profile.lookup(config, part_name)
            if not found or not found[1]:
                continue
            grid = prune_grid(part.base, part.second)
            memory = {way: prune(segments, grid) for way, segments in found[0].memory.items()}
            if memory != found[0].memory:
                profile.store(config, part_name, replace(found[0], memory=memory), profile.bundled_profiles())
                print(f"{repo} {part_name}: pruned", flush=True)


if __name__ == "__main__":
    if "--prune" in sys.argv:
        reprune()
    else:
        rewrite([a for a in sys.argv[1:] if not a.startswith("--")])
