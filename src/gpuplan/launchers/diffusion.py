"""Launch files for diffusion training: the four trainers' own inputs, written with the plan's settings.

- ``diffusers``: ``accelerate launch`` of diffusers' DreamBooth script for the pipeline
  (``examples/dreambooth/train_dreambooth[_lora][_sdxl|_sd3|_flux].py``), its flags as the script's ``parse_args``
  reads them (a test parses the written command with the script's own parser);
- ``kohya``: a TOML config for kohya-ss sd-scripts (``train_network.py``, ``sdxl_train_network.py``,
  ``sd3_train_network.py``, ``flux_train_network.py``; ``train_db.py``, ``sdxl_train.py``, ``flux_train.py`` for full
  fine-tuning) read with ``--config_file`` (``library/train_util.read_config_from_file``: every table's keys become
  the arguments), and the command;
- ``simpletuner``: SimpleTuner's ``config.json`` (its options, with their ``--`` names) and the data backend
  ``multidatabackend.json`` it points to (the images, and the text-embedding cache);
- ``ai-toolkit``: ai-toolkit's job YAML (``config/examples/train_lora_flux_24gb.yaml``'s layout), run by
  ``python run.py``.

Paths the user must supply (the images, FLUX's separate text-encoder and AE files for kohya) are placeholders said
in each file's header; every value goes through the writers of :mod:`.files`, which quote it for its format.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from .. import clock
from .._version import __version__
from ..errors import GpuplanError
from ..scenario import Scenario
from ..scenario.diffusion_stacks import DIFFUSION_STACKS
from ..scenario.modules import encoders_trained, parse_resolution, pipeline_family
from .files import LaunchFile, command_text, comment, json_data, toml_text, yaml_text

NAMES = tuple(DIFFUSION_STACKS)  # one target per trainer, named as its stack


@dataclass(frozen=True, kw_only=True)
class DiffusionLaunch:
    """A diffusion training plan to launch: the scenario as resolved and its plan (memory, work, cost)."""

    scenario: Scenario
    result: Any  # gpuplan.plan.modules.ModulePlan
    command: str
    family: str  # sd, sdxl, sd3, flux

    @property
    def setup_label(self) -> str:
        s = self.scenario
        return f"{s.world_size}x {self.result.gpu.name}, {s.stack}, {s.method}"

    def predictions(self) -> dict[str, Any]:
        mem, w = self.result.memory, self.result.work
        return {"device_peak_gib_per_gpu": round(mem.device_peak_gib, 2),
                "allocated_peak_gib_per_gpu": round(mem.allocated_peak_gib, 2),
                "capacity_gib_per_gpu": round(mem.capacity_gib or 0.0, 2), "peak_phase": mem.peak_phase,
                "it_per_s": round(w.steps_per_s, 3), "images_per_s": round(w.samples_per_s, 3),
                "step_time_s": round(w.step_s, 3), "max_steps": self.scenario.train_steps,
                "hours": None if w.job_hours is None else round(w.job_hours, 2),
                "usd_per_hour": None if self.result.cost is None else round(self.result.cost.usd_per_hour, 4)}

    def header(self) -> list[str]:
        p = self.predictions()
        return [f"written by gpuplan {__version__} on {clock.today().isoformat()}: {self.command}",
                f"plan: {self.setup_label}", f"  {self.result.resolved}",
                f"predicted per GPU: device peak {p['device_peak_gib_per_gpu']:.1f} GiB of "
                f"{p['capacity_gib_per_gpu']:.1f} (allocated {p['allocated_peak_gib_per_gpu']:.1f}), peak in "
                f"{p['peak_phase']}; {p['it_per_s']:.2f} it/s ({p['step_time_s']:.2f} s per optimizer step)",
                KOHYA_FOLDERS if self.scenario.stack == "kohya" else
                "edit before running: the image folder (and its captions or instance prompt)"]


def diffusion_launch(s: Scenario, spec, result, command: str) -> DiffusionLaunch:
    """The launch plan of a diffusion training scenario's plan ``result`` (it must fit its card)."""
    if s.task != "train":
        raise GpuplanError("gpuplan launch writes training files for diffusion models; generation runs in your own "
                           "diffusers script or ComfyUI")
    if not s.gpu:
        raise GpuplanError("launch needs a GPU: set --gpu")
    if result.memory.fits is False:
        raise GpuplanError(f"the plan does not fit: {result.memory.device_peak_gib:.1f} GiB per GPU on "
                           f"{result.gpu.name} ({result.memory.capacity_gib:.1f} usable); run `gpuplan estimate` for "
                           "the changes that would make it fit")
    return DiffusionLaunch(scenario=result_scenario(result, s), result=result, command=command,
                           family=pipeline_family(spec))


def result_scenario(result, s: Scenario) -> Scenario:
    from ..scenario import scenario_from

    given = {k: getattr(s, k) for k in s.model_fields_set}
    return scenario_from({**given, "stack": result.scenario["stack"]})


def named(names: list[str] | None) -> list[str]:
    """The trainers named, each checked to be a diffusion trainer (or ``all``) before the plan is made: a trainer
    named sets the plan's stack (:func:`gpuplan.launchers.with_targets`), and the files are that stack's."""
    chosen = [n.strip().lower() for text in names or () for n in text.split(",") if n.strip()]
    for name in chosen:
        if name not in NAMES and name != "all":
            raise GpuplanError(f"--target {name} does not apply to a diffusion model: choose from {', '.join(NAMES)}")
    return list(dict.fromkeys(chosen))


def files(plan: DiffusionLaunch, dataset: str | None = None) -> list[LaunchFile]:
    """The files of the plan's stack's trainer, and ``plan.json``."""
    images = dataset or "images"
    out = {"diffusers": diffusers_files, "kohya": kohya_files, "simpletuner": simpletuner_files,
           "ai-toolkit": ai_toolkit_files}[plan.scenario.stack](plan, images)
    summary = {"written_by": plan.header()[0], "setup": plan.setup_label, "predicted": plan.predictions(),
               "scenario": plan.result.scenario, "files": {f.name: f.reader for f in out}}
    out.append(LaunchFile(name="plan.json", target="plan", text=json.dumps(summary, indent=2, default=str) + "\n",
                          reader="you and scripts: the predictions"))
    return out


def _pixels(plan: DiffusionLaunch) -> list[tuple[int, int]]:
    """The plan's aspect buckets, (width, height) each."""
    return parse_resolution(",".join(plan.result.work.buckets))


def _repo(plan: DiffusionLaunch) -> str:
    """The pipeline as the trainers load it: the folder given, or the Hugging Face repo id."""
    from pathlib import Path

    given = plan.scenario.model
    return given if Path(given).is_dir() else plan.result.model.name


def _steps(plan: DiffusionLaunch) -> int:
    return plan.scenario.train_steps or 1000


# ---- diffusers ---------------------------------------------------------------------------------------------------
SCRIPTS = {("sd", "lora"): "train_dreambooth_lora.py", ("sd", "full"): "train_dreambooth.py",
           ("sdxl", "lora"): "train_dreambooth_lora_sdxl.py", ("sd3", "lora"): "train_dreambooth_lora_sd3.py",
           ("sd3", "full"): "train_dreambooth_sd3.py", ("flux", "lora"): "train_dreambooth_lora_flux.py",
           ("flux", "full"): "train_dreambooth_flux.py"}


def diffusers_argv(plan: DiffusionLaunch, images: str) -> list[str]:
    """The command: ``accelerate launch <script> --flag value ...`` (flags of the script's ``parse_args``)."""
    s, family = plan.scenario, plan.family
    method = "full" if s.method == "full" else "lora"
    script = SCRIPTS.get((family, method))
    if script is None:
        raise GpuplanError(f"diffusers has no {method} DreamBooth script for {family.upper()} "
                           "(examples/dreambooth): use stack kohya or simpletuner")
    if s.method == "qlora" or s.quant:
        raise GpuplanError("diffusers' DreamBooth scripts load a 16-bit base: for an fp8 or NF4 base use stack "
                           "kohya (--fp8_base), simpletuner or ai-toolkit")
    pixels = _pixels(plan)
    if len(pixels) > 1 or pixels[0][0] != pixels[0][1]:
        raise GpuplanError("diffusers' DreamBooth scripts train one square resolution: use stack kohya, "
                           "simpletuner or ai-toolkit for aspect buckets")
    argv = ["accelerate", "launch", script, "--pretrained_model_name_or_path", _repo(plan),
            "--instance_data_dir", images, "--instance_prompt", "a photo of sks subject", "--output_dir", "output",
            "--resolution", str(pixels[0][0]), "--train_batch_size", str(s.micro_batch_size),
            "--gradient_accumulation_steps", str(s.grad_accum_steps), "--max_train_steps", str(_steps(plan)),
            "--learning_rate", "1e-4" if method == "lora" else "5e-6", "--lr_scheduler", "constant",
            "--lr_warmup_steps", "0", "--mixed_precision", s.precision.split("-")[0] if s.precision != "fp32" else
            "no", "--seed", "0"]
    if method == "lora":
        argv += ["--rank", str(s.lora_rank)]
    if s.grad_checkpointing != "none":
        argv.append("--gradient_checkpointing")
    if s.optimizer in ("adamw-8bit", "paged-adamw-8bit"):
        argv.append("--use_8bit_adam")
    if s.cache_latents and family in ("sd3", "flux"):
        argv.append("--cache_latents")
    if encoders_trained(s):  # LoRA scripts: LoRA on CLIP's q, k, v and out; full scripts: the encoders whole
        argv.append("--train_text_encoder")
    if s.set_grads_to_none and script == "train_dreambooth.py":  # the others free them always (zero_grad())
        argv.append("--set_grads_to_none")
    if s.prior_preservation:
        argv += ["--with_prior_preservation", "--class_data_dir", "class-images", "--class_prompt",
                 "a photo of subject"]
    return argv


def images_read(images: str) -> str:
    """Where a run line says the images are read from: the folder as a shell reads it (a run line is pasted into
    one; s25-sec: ``$(...)`` in the folder's name ran there)."""
    return f"(images read from {shlex.quote(images)})"


# the release whose scripts and classes the plans were profiled with (constraints.txt); its examples ask for it
# (each script's check_min_version), so the checkout and the library are that release's
DIFFUSERS_RELEASE = "0.42.1"
REQUIREMENTS = {"sd": "requirements.txt", "sdxl": "requirements_sdxl.txt", "sd3": "requirements_sd3.txt",
                "flux": "requirements_flux.txt"}  # huggingface/diffusers examples/dreambooth


def diffusers_run_line(family: str, images: str) -> str:
    """How to run the file: the script is diffusers' own, in its checkout's examples/dreambooth, not written here
    (session 24's walk: the file called ``train_dreambooth_lora_sdxl.py`` and said nowhere where it comes from)."""
    return (f"run: git clone --depth 1 --branch v{DIFFUSERS_RELEASE} https://github.com/huggingface/diffusers && "
            f"pip install ./diffusers -r diffusers/examples/dreambooth/{REQUIREMENTS[family]}; then, in "
            "diffusers/examples/dreambooth with this file there: bash diffusers-train.sh " + images_read(images))


def diffusers_files(plan: DiffusionLaunch, images: str) -> list[LaunchFile]:
    argv = diffusers_argv(plan, images)  # (refuses first what has no script)
    text = "#!/usr/bin/env bash\n" + comment([*plan.header(), diffusers_run_line(plan.family, images)]) + \
        "set -euo pipefail\n" + command_text(argv)
    return [LaunchFile(name="diffusers-train.sh", target="diffusers", text=text, executable=True,
                       reader="bash, in a diffusers checkout's examples/dreambooth (its parse_args reads the flags)")]


# ---- kohya ---------------------------------------------------------------------------------------------------------
# sd-scripts reads train_data_dir's subfolders named <repeats>_<concept> and skips any other ("ignore directory
# without repeats"), so images put in the folder itself are "No data found"; a caption is the image's name with
# caption_extension, ".caption" unless set (library/config_util.py generate_dreambooth_subsets_config_by_subdirs,
# library/train_util.py --caption_extension, at KOHYA_COMMIT): the TOML sets ".txt", as the other trainers' files read
KOHYA_FOLDERS = ("edit before running: the image folder, whose subfolders sd-scripts reads, each named "
                 "<repeats>_<concept> (images/1_subject/, each image with a .txt caption beside it), not images put "
                 "in the folder itself")
KOHYA_SCRIPTS = {("sd", "lora"): "train_network.py", ("sd", "full"): "train_db.py",
                 ("sdxl", "lora"): "sdxl_train_network.py", ("sdxl", "full"): "sdxl_train.py",
                 ("sd3", "lora"): "sd3_train_network.py", ("sd3", "full"): "sd3_train.py",
                 ("flux", "lora"): "flux_train_network.py", ("flux", "full"): "flux_train.py"}
KOHYA_NETWORKS = {"sd": "networks.lora", "sdxl": "networks.lora", "sd3": "networks.lora_sd3",
                  "flux": "networks.lora_flux"}
KOHYA_OPTIMIZERS = {"adamw": "AdamW", "adamw-8bit": "AdamW8bit", "paged-adamw-8bit": "PagedAdamW8bit",
                    "adafactor": "Adafactor", "lion": "Lion", "sgd": "SGDNesterov", "sgd-momentum": "SGDNesterov"}


def kohya_tables(plan: DiffusionLaunch, images: str) -> dict[str, dict[str, Any]]:
    """The TOML's tables (sd-scripts flattens them into its arguments)."""
    s, family = plan.scenario, plan.family
    pixels = _pixels(plan)
    largest = max(pixels, key=lambda wh: wh[0] * wh[1])
    model: dict[str, Any] = {"pretrained_model_name_or_path": f"{_repo(plan).rsplit('/', 1)[-1]}.safetensors"}
    if family in ("flux", "sd3"):  # the text encoders and AE as separate files (docs/flux_train_network.md)
        model.update(clip_l="clip_l.safetensors", t5xxl="t5xxl_fp16.safetensors")
        if family == "flux":
            model.update(ae="ae.safetensors")
    training: dict[str, Any] = {
        "train_data_dir": images, "output_dir": "output", "output_name": "gpuplan-lora" if s.method != "full" else
        "gpuplan-finetune", "resolution": f"{largest[0]},{largest[1]}", "train_batch_size": s.micro_batch_size,
        "gradient_accumulation_steps": s.grad_accum_steps, "max_train_steps": _steps(plan),
        "learning_rate": 1e-4 if s.method != "full" else 5e-6,
        "optimizer_type": KOHYA_OPTIMIZERS.get(s.optimizer, "AdamW"),
        "mixed_precision": s.precision.split("-")[0] if s.precision != "fp32" else "no",
        "gradient_checkpointing": s.grad_checkpointing != "none", "cache_latents": bool(s.cache_latents),
        "cache_text_encoder_outputs": s.text_encoders == "cached", "sdpa": True, "save_model_as": "safetensors",
        "caption_extension": ".txt", "seed": 0}
    if s.precision == "bf16-true":
        training["full_bf16"] = True
    if len(pixels) > 1:
        training.update(enable_bucket=True, min_bucket_reso=min(min(wh) for wh in pixels),
                        max_bucket_reso=max(max(wh) for wh in pixels))
    if s.prior_preservation:
        training["reg_data_dir"] = "class-images"
    if family == "flux":
        training.update(guidance_scale=1.0, timestep_sampling="flux_shift", model_prediction_type="raw")
    if s.blocks_to_swap:  # flux_train_network.py --blocks_to_swap (the resolver refused it for other pipelines)
        training["blocks_to_swap"] = s.blocks_to_swap
    tables = {"model": model, "training": training}
    if s.method == "full":
        _kohya_full_encoders(s, family, training)
    else:
        tables["network"] = {"network_module": KOHYA_NETWORKS[family], "network_dim": s.lora_rank,
                             "network_alpha": s.lora_rank,
                             "network_train_unet_only": not encoders_trained(s)}
        if s.text_encoders == "trained-all":  # lora_sd3.py / lora_flux.py create_network: T5-XXL's LoRA too
            tables["network"]["network_args"] = ["train_t5xxl=True"]
        if (s.quant or "") == "fp8":  # the only quantized base it loads (its profile's bases)
            tables["network"]["fp8_base"] = True
    return tables


def _kohya_full_encoders(s: Scenario, family: str, training: dict[str, Any]) -> None:
    """A full fine-tune's text-encoder switch as each script reads it: train_db.py trains the CLIP encoder unless
    ``--stop_text_encoder_training -1`` (``train_text_encoder = args.stop_text_encoder_training is None or >= 0``);
    sdxl_train.py and sd3_train.py train theirs only with ``--train_text_encoder`` (sd3_train.py T5-XXL too with
    ``--train_t5xxl``)."""
    trained = encoders_trained(s)
    if family == "sd" and not trained:
        training["stop_text_encoder_training"] = -1
    elif family in ("sdxl", "sd3") and trained:
        training["train_text_encoder"] = True
        if s.text_encoders == "trained-all":  # sd3_train.py: T5-XXL too
            training["train_t5xxl"] = True


# the sd-scripts commit whose options the TOML's keys are checked against (tests/data/kohya/arguments.txt)
KOHYA_COMMIT = "48d368fa557731ad0488c07304dfeba8c07910eb"


def kohya_run_line(images: str) -> str:
    """How to run the files: in an sd-scripts checkout at the commit their keys were checked against, its
    requirements installed (its README: ``pip install -r requirements.txt``, which installs the library itself), as
    the diffusers files say theirs (session 24's walk)."""
    return ("run: git clone https://github.com/kohya-ss/sd-scripts && git -C sd-scripts checkout "
            f"{KOHYA_COMMIT[:12]} && (cd sd-scripts && pip install -r requirements.txt); then, in sd-scripts with "
            "these files there: bash kohya-train.sh " + images_read(images))


def kohya_files(plan: DiffusionLaunch, images: str) -> list[LaunchFile]:
    s, family = plan.scenario, plan.family
    script = KOHYA_SCRIPTS[(family, "full" if s.method == "full" else "lora")]
    notes = ["kohya-ss sd-scripts: accelerate launch " + script + " --config_file kohya.toml",
             f"pretrained_model_name_or_path: the single-file checkpoint (.safetensors) of {_repo(plan)}"]
    toml = toml_text(_plan_header(plan), kohya_tables(plan, images), notes)
    run = "#!/usr/bin/env bash\n" + comment([*plan.header(), kohya_run_line(images)]) + "set -euo pipefail\n" + \
        command_text(["accelerate", "launch", "--num_cpu_threads_per_process", "1", script, "--config_file",
                      "kohya.toml"])
    return [LaunchFile(name="kohya.toml", target="kohya", text=toml,
                       reader=f"kohya-ss sd-scripts {script} --config_file (toml.load, tables flattened)"),
            LaunchFile(name="kohya-train.sh", target="kohya", text=run, executable=True,
                       reader="bash, in an sd-scripts checkout")]


class _Header:
    """What :func:`~.files.toml_text` and :func:`~.files.yaml_text` read of a plan: its header lines."""

    def __init__(self, lines: list[str]):
        self.lines = lines

    def header(self) -> list[str]:
        return self.lines


def _plan_header(plan: DiffusionLaunch):
    return _Header(plan.header())


# ---- SimpleTuner ---------------------------------------------------------------------------------------------------
ST_FAMILY = {"sd": "sd1x", "sdxl": "sdxl", "sd3": "sd3", "flux": "flux"}
ST_OPTIMIZERS = {"adamw": "adamw_bf16", "adamw-8bit": "bnb-adamw8bit", "paged-adamw-8bit": "bnb-adamw8bit",
                 "adafactor": "adafactor", "lion": "optimi-lion"}
ST_PRECISION = {None: "no_change", "none": "no_change", "fp8": "fp8-torchao", "nf4": "nf4-bnb", "int8": "int8-quanto"}


def simpletuner_config(plan: DiffusionLaunch) -> dict[str, Any]:
    s, family = plan.scenario, plan.family
    quant = s.quant or ("nf4" if s.method == "qlora" else None)  # one of ST_PRECISION's (its profile's bases)
    config = {"--model_type": "full" if s.method == "full" else "lora", "--model_family": ST_FAMILY[family],
              "--pretrained_model_name_or_path": _repo(plan), "--output_dir": "output",
              "--train_batch_size": s.micro_batch_size, "--gradient_accumulation_steps": s.grad_accum_steps,
              "--max_train_steps": _steps(plan), "--learning_rate": 1e-4 if s.method != "full" else 5e-6,
              "--mixed_precision": s.precision.split("-")[0] if s.precision != "fp32" else "no",
              "--optimizer": ST_OPTIMIZERS.get(s.optimizer, "adamw_bf16"),
              "--gradient_checkpointing": s.grad_checkpointing != "none",
              "--data_backend_config": "multidatabackend.json", "--resolution": max(max(wh) for wh in _pixels(plan)),
              "--resolution_type": "pixel", "--seed": 0}
    if s.method != "full":
        config.update({"--lora_rank": s.lora_rank, "--lora_alpha": s.lora_rank,
                       "--base_model_precision": ST_PRECISION[quant]})
    if family == "flux" and s.method != "full":
        config["--flux_lora_target"] = "all" if "block" in plan.result.work.way or "all" in plan.result.work.way \
            else "mmdit"
    return config


# the SimpleTuner commit whose options config.json's keys are checked against (tests/data/simpletuner/arguments.txt)
SIMPLETUNER_COMMIT = "bc8e6ab7738ce457a2ed8eb2d26cadd91c6442cb"


def simpletuner_run_line(images: str) -> str:
    """How to run the files, as kohya's say theirs: a SimpleTuner checkout at the commit the keys were checked
    against, installed as its docs' development setup (``pip install -e ".[cuda]"``), the files in its config/,
    where ``simpletuner train`` reads config/config.json (its INSTALL and QUICKSTART docs)."""
    return ("run: git clone https://github.com/bghira/SimpleTuner && git -C SimpleTuner checkout "
            f"{SIMPLETUNER_COMMIT[:12]} && pip install -e './SimpleTuner[cuda]'; then, in SimpleTuner with "
            "config.json and multidatabackend.json in its config/: simpletuner train " + images_read(images))


def simpletuner_files(plan: DiffusionLaunch, images: str) -> list[LaunchFile]:
    config = simpletuner_config(plan)  # its keys are read as options: the header is in plan.json
    backends = [{"id": "images", "type": "local", "instance_data_dir": images, "caption_strategy": "textfile",
                 "resolution": max(max(wh) for wh in _pixels(plan)), "resolution_type": "pixel",
                 "crop": len(_pixels(plan)) == 1, "cache_dir_vae": "cache/vae", "metadata_backend": "discovery",
                 "repeats": 0},
                {"id": "text-embeds", "type": "local", "dataset_type": "text_embeds", "default": True,
                 "cache_dir": "cache/text"}]
    return [LaunchFile(name="config.json", target="simpletuner", text=json_data(config, expands="simpletuner"),
                       reader="SimpleTuner (config/config.json; its options with their -- names)"),
            LaunchFile(name="multidatabackend.json", target="simpletuner",
                       text=json_data(backends, expands="simpletuner"),
                       reader="SimpleTuner's data backends (--data_backend_config)"),
            LaunchFile(name="simpletuner-train.sh", target="simpletuner", executable=True,
                       text="#!/usr/bin/env bash\n" + comment([*plan.header(), simpletuner_run_line(images)]) +
                       "set -euo pipefail\n" + command_text(["simpletuner", "train"]),
                       reader="bash, in a SimpleTuner checkout")]


# ---- ai-toolkit ----------------------------------------------------------------------------------------------------
AT_OPTIMIZERS = {"adamw": "adamw", "adamw-8bit": "adamw8bit", "paged-adamw-8bit": "adamw8bit",
                 "adafactor": "adafactor", "lion": "lion"}


def ai_toolkit_config(plan: DiffusionLaunch, images: str) -> dict[str, Any]:
    s, family = plan.scenario, plan.family
    train_te = encoders_trained(s)
    if s.method == "full":
        raise GpuplanError("gpuplan writes ai-toolkit's LoRA jobs (its sd_trainer with a lora network): use "
                           "stack kohya or simpletuner for full fine-tuning")
    quant = s.quant or ("nf4" if s.method == "qlora" else None)  # None, none or fp8 (its profile's bases)
    quantizes = DIFFUSION_STACKS["ai-toolkit"].quantizes or ()  # transformer denoisers only
    model: dict[str, Any] = {"name_or_path": _repo(plan), "quantize": quant == "fp8" and family in quantizes}
    model.update({"sd": {}, "sdxl": {"is_xl": True}, "sd3": {"is_v3": True}, "flux": {"is_flux": True}}[family])
    train = {"batch_size": s.micro_batch_size, "steps": _steps(plan), "gradient_accumulation_steps": s.grad_accum_steps,
             "train_unet": True, "train_text_encoder": train_te,
             "gradient_checkpointing": s.grad_checkpointing != "none",
             "noise_scheduler": "flowmatch" if family in ("flux", "sd3") else "ddpm",
             "optimizer": AT_OPTIMIZERS.get(s.optimizer, "adamw8bit"), "lr": 1e-4,
             "dtype": s.precision.split("-")[0] if s.precision != "fp32" else "fp32"}
    if s.text_encoders == "cached":  # TrainConfig.cache_text_embeddings (July 2025); unset, the encoders stay on
        train["cache_text_embeddings"] = True  # the GPU (extensions_built_in/sd_trainer/SDTrainer.py)
    process = {"type": "sd_trainer", "training_folder": "output", "device": "cuda:0",
               "network": {"type": "lora", "linear": s.lora_rank, "linear_alpha": s.lora_rank},
               "save": {"dtype": "float16", "save_every": 250, "max_step_saves_to_keep": 4},
               "datasets": [{"folder_path": images, "caption_ext": "txt",
                             "cache_latents_to_disk": bool(s.cache_latents),
                             "resolution": sorted({max(wh) for wh in _pixels(plan)})}],
               "train": train, "model": model}
    return {"job": "extension", "config": {"name": "gpuplan-lora", "process": [process]},
            "meta": {"name": "gpuplan-lora", "version": "1.0"}}


# the ai-toolkit commit whose example config the YAML's layout is checked against (tests/data/ai-toolkit)
AI_TOOLKIT_COMMIT = "27a03a91f23eb1b757d5ec2e80ee3e129cfcc350"


def ai_toolkit_run_line(images: str) -> str:
    """How to run the file, as kohya's say theirs: an ai-toolkit checkout at the commit whose example config the
    layout follows, its requirements installed (its README: ``pip3 install -r requirements.txt``), then its run.py."""
    return ("run: git clone https://github.com/ostris/ai-toolkit && git -C ai-toolkit checkout "
            f"{AI_TOOLKIT_COMMIT[:12]} && (cd ai-toolkit && pip install -r requirements.txt); then, in ai-toolkit "
            "with this file there: python run.py ai-toolkit.yaml " + images_read(images))


def ai_toolkit_files(plan: DiffusionLaunch, images: str) -> list[LaunchFile]:
    header = _Header([*plan.header(), ai_toolkit_run_line(images)])
    text = yaml_text(header, ai_toolkit_config(plan, images), ["ai-toolkit: python run.py ai-toolkit.yaml"],
                     expands="text")  # its get_config replaces ${VAR} in the file's text
    return [LaunchFile(name="ai-toolkit.yaml", target="ai-toolkit", text=text,
                       reader="ai-toolkit's run.py (its job config)")]
