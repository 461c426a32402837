"""Launch files for diffusion training (issue 34): diffusers' DreamBooth scripts, kohya sd-scripts, SimpleTuner and
ai-toolkit, each read back by its own reader where it can be (the diffusers scripts' ``parse_args``, copied
verbatim into tests/data/diffusers), else checked against the trainer's own list of options (tests/data/kohya,
tests/data/simpletuner) or example config (tests/data/ai-toolkit); names stay data (the hostile-names harness)."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import sys
from pathlib import Path

import pytest
import test_hostile_names as hostile
import tomllib
import yaml

import gpuplan
from gpuplan.cli import run
from gpuplan.errors import GpuplanError
from gpuplan.model import diffusers as diff

DATA = Path(__file__).resolve().parents[1] / "data"
FLUX = "black-forest-labs/FLUX.1-dev"


def parse_with_script(script: str, argv: list[str]):
    """``argv`` through the diffusers script's own ``parse_args``."""
    path = DATA / "diffusers" / script.replace(".py", "_args.py")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.parse_args(argv)


def command_of(text: str) -> list[str]:
    """The command of a written shell script, as bash splits it (comments and ``set`` left out)."""
    body = "\n".join(line for line in text.splitlines() if not line.startswith(("#", "set ")))
    return shlex.split(body.replace("\\\n", " "))  # bash's line continuations


def write(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "out"
    assert run(["launch", *args, "-o", str(out)]) == 0
    return out


@pytest.mark.parametrize("model, script, extra", [
    ("flux-dev", "train_dreambooth_lora_flux.py", ["--resolution", "512", "--grad-checkpointing", "full"]),
    ("sd3-medium", "train_dreambooth_sd3.py", ["--method", "full", "--resolution", "512", "--optimizer",
                                               "adamw-8bit", "--grad-checkpointing", "full"]),
    ("sdxl", "train_dreambooth_lora_sdxl.py", ["--resolution", "1024", "--prior-preservation", "true"]),
    ("sd1.5", "train_dreambooth_lora.py", ["--resolution", "512", "--micro-batch-size", "4"]),
    ("sd1.5", "train_dreambooth.py", ["--method", "full", "--resolution", "512"]),
    ("sd3-medium", "train_dreambooth_lora_sd3.py", ["--resolution", "1024", "--lora-rank", "8"]),
    ("sdxl", "train_dreambooth_lora_sdxl.py", ["--resolution", "1024", "--text-encoders", "trained"]),
    ("sd1.5", "train_dreambooth.py", ["--method", "full", "--resolution", "512", "--text-encoders", "trained",
                                      "--set-grads-to-none", "true"]),
    ("sd3-medium", "train_dreambooth_sd3.py", ["--method", "full", "--resolution", "512", "--optimizer",
                                               "adamw-8bit", "--text-encoders", "trained", "--gpu", "h200"]),
])
def test_diffusers_command_reads_back_through_the_scripts_parse_args(model, script, extra, tmp_path):
    args = ["--model", model, "--task", "train", "--method", "lora", "--gpu", "a100-80gb", "--target", "diffusers",
            *extra]
    out = write(tmp_path, *args)
    argv = command_of((out / "diffusers-train.sh").read_text())
    assert argv[:3] == ["accelerate", "launch", script]
    parsed = parse_with_script(script, argv[3:])
    given = dict(zip(extra[::2], extra[1::2], strict=True))
    assert parsed.resolution == int(given["--resolution"])
    assert parsed.pretrained_model_name_or_path == diff.pipeline_aliases()[model.lower()]
    assert parsed.gradient_checkpointing == ("--grad-checkpointing" in given)
    assert parsed.use_8bit_adam == (given.get("--optimizer") == "adamw-8bit")
    assert parsed.train_batch_size == int(given.get("--micro-batch-size", 1))
    assert parsed.with_prior_preservation == ("--prior-preservation" in given)
    assert parsed.train_text_encoder == (given.get("--text-encoders") == "trained")
    assert getattr(parsed, "set_grads_to_none", False) == ("--set-grads-to-none" in given)
    if "lora" in script:
        assert parsed.rank == int(given.get("--lora-rank", 16))
    plan = json.loads((out / "plan.json").read_text())
    assert plan["predicted"]["it_per_s"] > 0 and plan["files"]["diffusers-train.sh"].startswith("bash")
    # where the script comes from (session 24's walk: nowhere said): the pinned release's checkout, its requirements
    from gpuplan.launchers.diffusion import DIFFUSERS_RELEASE, REQUIREMENTS

    run_line = next(line for line in (out / "diffusers-train.sh").read_text().splitlines() if line.startswith("# run:"))
    family = {"flux-dev": "flux", "sd3-medium": "sd3", "sdxl": "sdxl", "sd1.5": "sd"}[model]
    assert f"--branch v{DIFFUSERS_RELEASE} https://github.com/huggingface/diffusers" in run_line
    assert f"diffusers/examples/dreambooth/{REQUIREMENTS[family]}" in run_line
    assert (DATA / "diffusers" / script.replace(".py", "_args.py")).exists()


def test_the_diffusers_release_the_files_clone_is_the_pinned_one():
    from gpuplan.launchers.diffusion import DIFFUSERS_RELEASE

    pins = (Path(__file__).resolve().parents[2] / "constraints.txt").read_text().splitlines()
    assert f"diffusers=={DIFFUSERS_RELEASE}" in pins


def kohya_options() -> set[str]:
    lines = (DATA / "kohya" / "arguments.txt").read_text().splitlines()
    return {line.split()[1].removeprefix("--") for line in lines if line and not line.startswith("#")}


@pytest.mark.parametrize("model, extra", [
    ("flux-dev", ["--quant", "fp8", "--resolution", "1024,1216x832,832x1216", "--grad-checkpointing", "full",
                  "--optimizer", "adamw-8bit", "--text-encoders", "cached"]),
    ("flux-dev", ["--quant", "fp8", "--resolution", "1024", "--grad-checkpointing", "full", "--text-encoders",
                  "cached", "--blocks-to-swap", "16"]),
    ("sdxl", ["--resolution", "1024", "--cache-latents", "true", "--text-encoders", "frozen"]),
    ("sd1.5", ["--method", "full", "--resolution", "512"]),
    ("sd1.5", ["--resolution", "512"]),  # sd-scripts' default for LoRA: the text encoders' LoRA trained too
])
def test_kohya_toml_holds_sd_scripts_options(model, extra, tmp_path):
    out = write(tmp_path, "--model", model, "--task", "train", "--method", "lora", "--gpu", "rtx-4090",
                "--stack", "kohya", *extra)
    tables = tomllib.loads((out / "kohya.toml").read_text())
    keys = {k for table in tables.values() for k in table}
    assert keys <= kohya_options(), keys - kohya_options()
    training = tables["training"]
    assert training["cache_latents"] == ("--cache-latents" in extra)  # sd-scripts' defaults: neither cached
    assert training["cache_text_encoder_outputs"] == ("cached" in extra)
    if "," in extra[extra.index("--resolution") + 1]:
        assert training["enable_bucket"] and training["max_bucket_reso"] == 1216
    if "full" not in extra:
        assert tables["network"]["network_train_unet_only"] == ("--text-encoders" in extra)
    if "fp8" in extra:
        assert tables["network"]["fp8_base"] and tables["network"]["network_module"] == "networks.lora_flux"
    assert training.get("blocks_to_swap") == (16 if "--blocks-to-swap" in extra else None)
    argv = command_of((out / "kohya-train.sh").read_text())
    assert argv[-2:] == ["--config_file", "kohya.toml"]
    assert argv[4] == {"flux-dev": "flux_train_network.py", "sdxl": "sdxl_train_network.py",
                       "sd1.5": "train_db.py" if "full" in extra else "train_network.py"}[model]
    # where sd-scripts comes from (session 24's walk): the commit whose options these keys were checked against
    commit = (DATA / "kohya" / "arguments.txt").read_text().split("at commit ")[1].split()[0]
    run_line = next(line for line in (out / "kohya-train.sh").read_text().splitlines() if line.startswith("# run:"))
    assert f"git -C sd-scripts checkout {commit[:12]}" in run_line and "pip install -r requirements.txt" in run_line


def test_kohya_files_say_the_folders_and_captions_sd_scripts_reads(tmp_path):
    """sd-scripts at the pinned commit reads train_data_dir's subfolders named <repeats>_<concept> alone ("ignore
    directory without repeats"; images in the folder itself are "No data found") and captions of --caption_extension,
    ".caption" unless set (library/config_util.py, library/train_util.py). The files said "the image folder (and its
    captions)", so images put in images/ with .txt captions, as the other trainers' files read them, trained on
    nothing (s30-beyond's walk)."""
    out = write(tmp_path, "--model", "sdxl", "--task", "train", "--method", "lora", "--gpu", "rtx-4090",
                "--stack", "kohya")
    assert tomllib.loads((out / "kohya.toml").read_text())["training"]["caption_extension"] == ".txt"
    for name in ("kohya.toml", "kohya-train.sh"):
        text = " ".join(line.lstrip("# ") for line in (out / name).read_text().splitlines())
        assert "subfolders sd-scripts reads, each named <repeats>_<concept> (images/1_subject/" in text


@pytest.mark.parametrize("model, encoders, key, value", [
    ("sd1.5", "frozen", "stop_text_encoder_training", -1),  # train_db.py trains the CLIP encoder unless told
    ("sd1.5", "trained", "stop_text_encoder_training", None),
    ("sdxl", "trained", "train_text_encoder", True),  # sdxl_train.py trains them only when asked
    ("sdxl", "frozen", "train_text_encoder", None),
    ("sd3-medium", "trained", "train_text_encoder", True),  # sd3_train.py: CLIP-L and CLIP-G
    ("sd3-medium", "trained", "train_t5xxl", None),
    ("sd3-medium", "trained-all", "train_t5xxl", True),  # sd3_train.py --train_t5xxl (with --train_text_encoder)
])
def test_kohya_full_finetune_writes_each_scripts_encoder_switch(model, encoders, key, value, tmp_path):
    out = write(tmp_path, "--model", model, "--task", "train", "--method", "full", "--gpu", "h200", "--stack",
                "kohya", "--resolution", "512", "--text-encoders", encoders, "--optimizer", "adamw-8bit")
    tables = tomllib.loads((out / "kohya.toml").read_text())
    keys = {k for table in tables.values() for k in table}
    assert keys <= kohya_options(), keys - kohya_options()
    assert tables["training"].get(key) == value
    assert tables["training"]["cache_text_encoder_outputs"] is False
    if encoders == "trained-all":  # sd3_train.py asserts --train_text_encoder with --train_t5xxl
        assert tables["training"]["train_text_encoder"] is True


def test_ai_toolkit_trains_the_clip_encoders_lora_for_sdxl(tmp_path):
    """ai-toolkit's train.train_text_encoder (toolkit/config_modules.py TrainConfig), written true for an SDXL
    LoRA whose plan trains the encoders, in the example config's layout."""
    out = write(tmp_path, "--model", "sdxl", "--task", "train", "--method", "lora", "--gpu", "rtx-4090",
                "--stack", "ai-toolkit", "--resolution", "1024", "--text-encoders", "trained")
    ours = yaml.safe_load((out / "ai-toolkit.yaml").read_text())
    process = ours["config"]["process"][0]
    assert process["train"]["train_text_encoder"] is True and process["model"]["is_xl"] is True
    example = yaml.safe_load((DATA / "ai-toolkit" / "train_lora_flux_24gb.yaml").read_text())
    assert set(process["train"]) <= set(example["config"]["process"][0]["train"]) | {"gradient_accumulation_steps"}


def test_simpletuner_config_keys_are_its_options(tmp_path):
    out = write(tmp_path, "--model", "flux-dev", "--task", "train", "--method", "qlora", "--gpu", "rtx-4090",
                "--stack", "simpletuner", "--resolution", "1024", "--micro-batch-size", "2")
    options = {line.strip() for line in (DATA / "simpletuner" / "arguments.txt").read_text().splitlines()
               if line.startswith("--")}
    config = json.loads((out / "config.json").read_text())
    assert set(config) <= options, set(config) - options
    assert config["--model_family"] == "flux" and config["--base_model_precision"] == "nf4-bnb"
    assert config["--train_batch_size"] == 2 and config["--resolution"] == 1024
    backends = json.loads((out / "multidatabackend.json").read_text())
    assert {b["id"] for b in backends} == {"images", "text-embeds"}
    # where SimpleTuner comes from, as kohya's files say theirs: the commit whose options these keys were checked
    commit = (DATA / "simpletuner" / "arguments.txt").read_text().split("at commit ")[1].split()[0]
    script = (out / "simpletuner-train.sh").read_text()
    run_line = next(line for line in script.splitlines() if line.startswith("# run:"))
    assert f"git -C SimpleTuner checkout {commit[:12]}" in run_line and "simpletuner train" in run_line
    assert command_of(script) == ["simpletuner", "train"]


def test_ai_toolkit_yaml_says_where_ai_toolkit_comes_from(tmp_path):
    """The # run: line, as kohya's files have: the commit whose example config the layout follows."""
    out = write(tmp_path, "--model", "flux-dev", "--task", "train", "--method", "lora", "--gpu", "rtx-4090",
                "--stack", "ai-toolkit", "--resolution", "1024")
    commit = (DATA / "ai-toolkit" / "train_lora_flux_24gb.yaml").read_text().split("at commit ")[1].split()[0]
    text = (out / "ai-toolkit.yaml").read_text()
    run_line = next(line for line in text.splitlines() if line.startswith("# run:"))
    assert f"git -C ai-toolkit checkout {commit[:12]}" in run_line and "python run.py ai-toolkit.yaml" in run_line
    assert yaml.safe_load(text)["job"] == "extension"


def test_ai_toolkit_yaml_has_the_example_configs_layout(tmp_path):
    out = write(tmp_path, "--model", "flux-dev", "--task", "train", "--method", "lora", "--gpu", "rtx-4090",
                "--stack", "ai-toolkit", "--quant", "fp8", "--resolution", "512,768,1024")
    ours = yaml.safe_load((out / "ai-toolkit.yaml").read_text())
    example = yaml.safe_load((DATA / "ai-toolkit" / "train_lora_flux_24gb.yaml").read_text())

    def within(mine, theirs, path="") -> list[str]:
        """Keys of ``mine`` the example does not have at the same place."""
        if isinstance(mine, dict):
            return [p for k, v in mine.items() for p in (
                [f"{path}.{k}"] if k not in theirs else within(v, theirs[k], f"{path}.{k}"))]
        if isinstance(mine, list) and mine and isinstance(mine[0], dict):
            return [p for item in mine for p in within(item, theirs[0], path + "[]")]
        return []

    assert within(ours, example) == []
    process = ours["config"]["process"][0]
    assert process["model"]["is_flux"] and process["model"]["quantize"]
    assert process["datasets"][0]["resolution"] == [512, 768, 1024]


@pytest.mark.parametrize("args, words", [
    (["--model", "flux-dev", "--method", "qlora", "--target", "diffusers"], "16-bit base"),
    (["--model", "flux-dev", "--method", "qlora", "--stack", "kohya"], "not NF4"),
    (["--model", "sdxl", "--method", "full", "--target", "diffusers"], "no full DreamBooth script for SDXL"),
    (["--model", "sdxl", "--resolution", "1024,1216x832", "--target", "diffusers"], "aspect buckets"),
    (["--model", "sdxl", "--target", "vllm"], "does not apply to a diffusion model"),
    (["--model", "sdxl", "--target", "kohyaa"], "did you mean kohya"),
    (["--model", "sdxl", "--stack", "kohya", "--target", "simpletuner"],
     "--target simpletuner writes stack simpletuner's files, and --stack kohya plans stack kohya: drop --stack or "
     "pick --target kohya"),
    (["--model", "sdxl", "--target", "kohya,diffusers"], "launch them one at a time"),
    (["--model", "flux-dev", "--target", "ai-toolkit", "--text-encoders", "trained"], "not FLUX"),
    (["--model", "sdxl", "--stack", "simpletuner", "--text-encoders", "trained"], "leaves them frozen"),
    (["--model", "flux-dev", "--method", "full", "--stack", "kohya", "--text-encoders", "trained"],
     "flux_train.py trains neither"),
    (["--model", "flux-dev", "--stack", "ai-toolkit", "--blocks-to-swap", "16"], "not for ai-toolkit"),
    (["--model", "flux-dev", "--stack", "diffusers", "--blocks-to-swap", "16"], "no block swap"),
    (["--model", "sdxl", "--stack", "kohya", "--blocks-to-swap", "8"], "modelled for FLUX.1"),
    (["--model", "flux-dev", "--stack", "kohya", "--quant", "fp8", "--blocks-to-swap", "36"], "at most 35"),
])
def test_what_a_trainer_cannot_run_is_one_sentence(args, words, tmp_path, capsys):
    base = ["launch", "--task", "train", "--method", "lora", "--gpu", "a100-80gb", "-o", str(tmp_path / "o")]
    assert run([*base, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err, err
    assert not (tmp_path / "o").exists()


def test_generation_has_no_launch_files(tmp_path):
    with pytest.raises(GpuplanError, match="generation runs in your own"):
        gpuplan.launch({"model": "sdxl", "task": "infer", "gpu": "rtx-4090"}, folder=tmp_path / "o")


# ---- names are data ----------------------------------------------------------------------------------------------
def pipeline_folder(folder: Path, name: str) -> Path:
    """FLUX.1-dev's bundled configs as a local pipeline folder called ``name``."""
    data = json.loads(diff.bundled_pipelines()[FLUX].read_text())
    local = folder / name
    local.mkdir(exist_ok=True)
    (local / "model_index.json").write_text(json.dumps(data["model_index"]))
    for component, config in data["configs"].items():
        (local / component).mkdir(exist_ok=True)
        (local / component / "config.json").write_text(json.dumps(config))
    return local


def write_named(folder: Path, name: str, via: str, monkeypatch) -> Path:
    """Each trainer's files (its target sets the plan's stack) for a pipeline folder called ``name``, in a folder
    per trainer."""
    fields = {"model": str(pipeline_folder(folder, name)), "task": "train", "method": "lora", "gpu": "a100-80gb",
              "resolution": "512"}
    out = folder / "out" / name
    for trainer in ("diffusers", "kohya", "simpletuner", "ai-toolkit"):
        if via == "cli":
            scenario = folder / f"{name}.yaml"
            scenario.write_text(yaml.safe_dump(fields, allow_unicode=True), encoding="utf-8")
            args = ["launch", str(scenario), "--target", trainer, "-o", str(out / trainer)]
            monkeypatch.setattr(sys, "argv", ["gpuplan", *args])
            assert run(args) == 0
        else:
            gpuplan.launch(fields, targets=[trainer], folder=out / trainer, command=f"{hostile.COMMAND} {name}")
    return out


@pytest.mark.parametrize("via", ["cli", "api"])
def test_a_hostile_pipeline_folder_name_stays_data(via, tmp_path, monkeypatch):
    kit = {"bin": tmp_path / "bin"}
    kit["bin"].mkdir()
    for name in hostile.STUBS:
        stub = kit["bin"] / name
        stub.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                        "with open(os.environ['STUB_LOG'], 'a', encoding='utf-8') as f:\n"
                        "    f.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + '\\n')\n")
        stub.chmod(0o755)
    bad, plain = write_named(tmp_path, hostile.HOSTILE, via, monkeypatch), write_named(tmp_path, hostile.PLAIN, via,
                                                                                        monkeypatch)
    names = sorted(str(p.relative_to(bad)) for p in bad.rglob("*") if p.is_file())
    assert {Path(n).name for n in names} == {"ai-toolkit.yaml", "config.json", "diffusers-train.sh", "kohya-train.sh",
                                             "kohya.toml", "multidatabackend.json", "plan.json",
                                             "simpletuner-train.sh"}
    carried = set()
    for name in names:
        got, want = hostile.reading(bad / name, kit), hostile.reading(plain / name, kit)
        want = hostile.swap(hostile.without_headers(want))
        assert hostile.without_headers(got) == want, name
        if hostile.carries(got):
            carried.add(name)
    assert {"ai-toolkit/ai-toolkit.yaml", "simpletuner/config.json", "diffusers/diffusers-train.sh"} <= carried
    assert not [p for p in tmp_path.rglob("*") if p.name == "PWNED"]


def test_kohya_lora_asks_for_t5s_lora_when_the_plan_trains_it(tmp_path):
    """A FLUX LoRA whose plan trains T5-XXL too (text_encoders trained-all): kohya's networks/lora_flux.py reads
    train_t5xxl from network_args as the string "True" (create_network: ``train_t5xxl == "True"``), and the text
    encoders' LoRA stays on (network_train_unet_only false, their outputs not cached)."""
    out = write(tmp_path, "--model", "flux-dev", "--task", "train", "--method", "lora", "--gpu", "h100-sxm",
                "--stack", "kohya", "--quant", "fp8", "--resolution", "512", "--grad-checkpointing", "full",
                "--text-encoders", "trained-all")
    tables = tomllib.loads((out / "kohya.toml").read_text())
    assert tables["network"]["network_args"] == ["train_t5xxl=True"]
    assert tables["network"]["network_train_unet_only"] is False
    assert tables["training"]["cache_text_encoder_outputs"] is False
    assert {k for table in tables.values() for k in table} <= kohya_options()


def test_ai_toolkit_keeps_the_text_encoders_on_the_gpu_as_its_example_unless_cached(tmp_path):
    """Session 17: ai-toolkit's FLUX example (tests/data/ai-toolkit/train_lora_flux_24gb.yaml) sets neither
    cache_text_embeddings nor unload_text_encoder, so its SDTrainer keeps CLIP-L and T5 (qfloat8 under quantize) on
    the GPU, where the plan took them cached. The default job is written as the example's; text_encoders cached
    writes its TrainConfig's cache_text_embeddings (ostris/ai-toolkit toolkit/config_modules.py)."""
    args = ("--model", "flux-dev", "--task", "train", "--method", "lora", "--gpu", "rtx-4090", "--stack",
            "ai-toolkit", "--resolution", "1024")
    default = yaml.safe_load((write(tmp_path / "a", *args) / "ai-toolkit.yaml").read_text())
    assert "cache_text_embeddings" not in default["config"]["process"][0]["train"]
    cached = yaml.safe_load((write(tmp_path / "b", *args, "--text-encoders", "cached") / "ai-toolkit.yaml").read_text())
    assert cached["config"]["process"][0]["train"]["cache_text_embeddings"] is True


def test_ai_toolkit_writes_quantize_for_a_transformer_only(tmp_path):
    """Its SDXL job says model.quantize false, as its UI's sdxl defaults do (ui/src/app/jobs/new/options.tsx);
    FLUX's says true, as its example does."""
    common = ("--task", "train", "--method", "lora", "--gpu", "rtx-4090", "--stack", "ai-toolkit", "--resolution",
              "1024")
    sdxl = yaml.safe_load((write(tmp_path / "x", "--model", "sdxl", *common) / "ai-toolkit.yaml").read_text())
    flux = yaml.safe_load((write(tmp_path / "f", "--model", "flux-dev", *common) / "ai-toolkit.yaml").read_text())
    assert sdxl["config"]["process"][0]["model"]["quantize"] is False
    assert flux["config"]["process"][0]["model"]["quantize"] is True


def test_a_name_ai_toolkit_would_rewrite_is_refused(tmp_path, capsys):
    """ai-toolkit replaces ``[name]`` with the job's name in every value (``preprocess_config``): a pipeline folder
    so named cannot reach it as written, so it is refused in one sentence, with nothing written (s17-sec)."""
    local = pipeline_folder(tmp_path, "flux [name] v2")
    out = tmp_path / "out"
    args = ["launch", "--model", str(local), "--task", "train", "--method", "lora", "--gpu", "a100-80gb",
            "--resolution", "512", "--target", "ai-toolkit", "-o", str(out)]
    assert run(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "holds [name], which ai-toolkit replaces" in err, err
    assert not out.exists()
    kohya = [a if a != "ai-toolkit" else "kohya" for a in args]  # kohya's TOML holds it as written
    assert run(kohya) == 0 and "flux [name] v2" in (out / "kohya.toml").read_text()


def simpletuner_reading(value, variables=None):
    """SimpleTuner's ``resolve_value_placeholders`` (bghira/SimpleTuner bc8e6ab7,
    ``simpletuner/helpers/configuration/template_vars.py``): ``{env:VAR}`` is the environment's VAR (or nothing),
    ``{name}`` a variable's value when ``variables`` has it, anything else as written."""
    import os
    import re

    def replace(match):
        token = match.group(1)
        if token.startswith("env:"):
            return os.environ.get(token[4:], "")
        return str(variables[token]) if variables and token in variables else match.group(0)

    if isinstance(value, dict):
        return {k: simpletuner_reading(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [simpletuner_reading(v, variables) for v in value]
    return re.sub(r"\{([^{}]+)\}", replace, value) if isinstance(value, str) else value


@pytest.mark.parametrize("name, refused", [("flux {env:HOME} v2", "holds {env:HOME}, which SimpleTuner replaces"),
                                           ("flux {id}", "holds {id}, which SimpleTuner replaces"),
                                           ("flux {x} v2", None)])
def test_simpletuner_gets_names_it_reads_as_written(name, refused, tmp_path, capsys):
    """SimpleTuner replaces ``{env:VAR}`` in config.json's values and ``{model_family}``, ``{output_dir}``, ``{id}``
    in multidatabackend.json's, with no escape: a pipeline folder or image folder it would rewrite is refused in
    one sentence, nothing written; any other brace reaches it as written, through its own replacement (s17-sec)."""
    local = pipeline_folder(tmp_path, name)
    images = tmp_path / f"images {name}"
    out = tmp_path / "out"
    for given in ({"model": str(local)}, {"model": str(pipeline_folder(tmp_path, "plain")), "dataset": str(images)}):
        fields = {"model": given["model"], "task": "train", "method": "lora", "gpu": "a100-80gb", "resolution": "512"}
        if refused:
            with pytest.raises(GpuplanError, match=re.escape(refused)):
                gpuplan.launch(fields, targets=["simpletuner"], folder=out, dataset=given.get("dataset"))
            assert not out.exists()
            continue
        gpuplan.launch(fields, targets=["simpletuner"], folder=out, dataset=given.get("dataset"), force=True)
        config = json.loads((out / "config.json").read_text())
        backends = json.loads((out / "multidatabackend.json").read_text())
        assert simpletuner_reading(config) == config and config["--pretrained_model_name_or_path"] == given["model"]
        variables = {"model_family": "flux", "output_dir": "output", "id": "images"}
        assert simpletuner_reading(backends, variables) == backends
        assert backends[0]["instance_data_dir"] == given.get("dataset", "images")


@pytest.mark.parametrize("stack", ["diffusers", "kohya", "simpletuner", "ai-toolkit"])
def test_the_run_line_names_the_image_folder_as_a_shell_reads_it(stack, tmp_path):
    """Each file's ``# run:`` line is pasted into a shell; the image folder in it is quoted (s25-sec: a folder named
    ``a $(touch PWNED)`` was written bare, so pasting the line ran ``touch``)."""
    images = "my images $(touch PWNED) `id`;x"
    gpuplan.launch(dict(model="sdxl", task="train", method="lora", gpu="rtx-4090", stack=stack), folder=tmp_path / "o",
                   dataset=images)
    lines = [line for f in (tmp_path / "o").iterdir() for line in f.read_text().splitlines() if "# run:" in line]
    assert lines
    for line in lines:
        said = line.split("(images read from ", 1)[1].rstrip(")")
        assert shlex.split(said.replace("$\\x7b", "${")) == [images], line
