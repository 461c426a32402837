"""The page's API for models that are not decoder LLMs (issue 34): SDXL and Flux LoRA and generation, Whisper
fine-tuning and transcription, an encoder. Each answer is the Python API's for the same scenario (the plan, its
formulas, its exports, the ranked cards), and the page refuses in one sentence what the API refuses (the grid of
every card; a user's module: no user code runs on the server)."""

from __future__ import annotations

import json
import shlex

import pytest
import yaml

from conftest import require

require("fastapi")
require("httpx")

from fastapi.testclient import TestClient  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

import gpuplan  # noqa: E402
from gpuplan import api  # noqa: E402
from gpuplan.cli import app as cli_app  # noqa: E402
from gpuplan.hardware import load_gpu  # noqa: E402
from gpuplan.web.app import create_app  # noqa: E402

SDXL_LORA = {"model": "sdxl", "task": "train", "method": "lora", "resolution": "1024", "gpu": "rtx-3060",
             "train_steps": 1500}
MODULES = [
    SDXL_LORA,
    {"model": "flux-dev", "task": "train", "method": "lora", "resolution": "512", "grad_checkpointing": "full",
     "quant": "fp8", "gpu": "rtx-4090"},
    {"model": "sdxl", "task": "infer", "batch_size": 2, "inference_steps": 30, "gpu": "rtx-4090"},
    {"model": "flux-schnell", "task": "infer", "resolution": "1024", "quant": "fp8", "gpu": "l40s"},
    {"model": "whisper-large-v3", "task": "train", "method": "full", "decoder_tokens": 448, "micro_batch_size": 16,
     "grad_checkpointing": "full", "gpu": "a100-80gb", "train_steps": 4000},
    {"model": "whisper-small", "task": "infer", "audio_seconds": 600, "gpu": "rtx-3060"},
    {"model": "vit-base", "task": "infer", "batch_size": 64, "gpu": "t4"},
]
runner = CliRunner()


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(), base_url="http://127.0.0.1")


def as_json(answer) -> dict:
    return json.loads(json.dumps(answer.model_dump()))


@pytest.mark.parametrize("fields", MODULES, ids=lambda f: f"{f['model']}-{f['task']}")
def test_estimate_is_the_python_api(client, fields):
    """The page's plan of each kind of model is gpuplan.estimate's, to the last digit: the verdict sentence, the
    memory parts, the work (it/s, seconds per image or per recording) and the price."""
    r = client.post("/api/estimate", json=fields)
    assert r.status_code == 200, r.text
    page, plan = r.json(), gpuplan.estimate(fields)
    assert page == as_json(plan)
    assert page["verdict"]["sentence"] == plan.verdict.sentence and plan.verdict.sentence.startswith(
        ("fits on", "does not fit on"))
    assert page["work"]["steps_per_s"] == plan.work.steps_per_s > 0
    assert page["memory"]["device_peak_gib"] == plan.memory.device_peak_gib > 0


def test_sdxl_lora_on_a_3060(client):
    """The issue's first example on the page: SDXL LoRA at 1024 px on an RTX 3060 fits its 12 GB, at the it/s and
    the price the command line prints, and 1,500 steps cost the hours times the offer's price."""
    page = client.post("/api/estimate", json=SDXL_LORA).json()
    cli = runner.invoke(cli_app, ["estimate", "--model", "sdxl", "--task", "train", "--method", "lora",
                                  "--resolution", "1024", "--gpu", "rtx-3060", "--train-steps", "1500", "--json"])
    assert cli.exit_code == 0, cli.output
    assert page == json.loads(cli.stdout)
    w, c = page["work"], page["cost"]
    assert page["verdict"]["fits"] is True and page["gpu"]["id"] == load_gpu("rtx-3060").id
    assert page["memory"]["device_peak_gib"] <= page["memory"]["capacity_gib"] == load_gpu("rtx-3060").usable_gib
    assert w["kind"] == "diffusion training" and w["buckets"] == ["1024x1024"]
    assert w["steps_per_s"] == pytest.approx(1 / w["step_s"]) and 0.2 < w["steps_per_s"] < 2
    assert w["job_hours"] == pytest.approx(1500 * w["step_s"] / 3600)
    assert c["usd_total"] == pytest.approx(w["job_hours"] * c["usd_per_hour"]) and c["usd_total"] > 0


@pytest.mark.parametrize("fields", MODULES, ids=lambda f: f"{f['model']}-{f['task']}")
def test_formulas_give_the_plan_numbers(client, fields):
    """Each speed and price number of a module plan opens into its arithmetic, which gives the plan's number; the
    step's parts in whole percent sum to 100."""
    plan = gpuplan.estimate(fields)
    r = client.post("/api/explain", json=fields)
    assert r.status_code == 200, r.text
    numbers = r.json()["numbers"]
    assert {"work.steps_per_s", "work.samples_per_s"} <= set(numbers)
    assert _memory_rows(plan) <= set(numbers)  # each memory line of the page opens into its formula
    assert ("work.image_s" in numbers) is (plan.work.image_s is not None)
    # the page showed "no formula for this number" for these two (session 8's page walk)
    assert "work.mfu" in numbers and numbers["work.mfu"]["value"] == plan.work.mfu > 0
    assert ("work.images_per_hour" in numbers) is (plan.work.images_per_hour is not None)
    for key, f in numbers.items():
        assert f["computed"] == pytest.approx(f["value"], rel=1e-9), key
    assert numbers["work.steps_per_s"]["value"] == plan.work.steps_per_s
    if plan.cost is not None:
        assert numbers["work.usd_per_1000_samples"]["value"] == plan.work.usd_per_1000_samples
    shares = r.json()["step_shares"]
    assert shares and sum(pct for _, pct in shares) == 100


def _memory_rows(plan) -> set[str]:
    """The keys of the memory lines the page shows for ``plan`` (app.js: the parts above 0.0005 GiB, each other
    entry, the three levels, and the card's usable memory and headroom)."""
    m = plan.memory
    parts = {f"memory.{k}_gib" for k in ("weights", "gradients", "optimizer", "activations")
             if getattr(m, f"{k}_gib") > 0.0005}
    levels = {"memory.allocated_peak_gib", "memory.reserved_peak_gib", "memory.device_peak_gib"}
    card = {"memory.capacity_gib", "memory.headroom_gib"} if m.capacity_gib is not None else set()
    return parts | {f"memory.other.{k}" for k in m.other} | levels | card


MEMORY_CASES = [  # the ways a module plan's memory is reached beyond MODULES': offloading, quantized bases,
    # a full fine-tune under autocast with frozen text encoders and the VAE on the card, Adafactor, eager attention
    {"model": "sdxl", "task": "infer", "gpu": "rtx-3060", "cpu_offload": "model"},
    {"model": "flux-dev", "task": "infer", "gpu": "rtx-3060", "cpu_offload": "sequential"},
    {"model": "flux-dev", "task": "infer", "gpu": "h100-sxm", "quant": "nf4"},
    {"model": "flux-dev", "task": "train", "method": "qlora", "quant": "nf4", "resolution": "512", "gpu": "rtx-4090",
     "optimizer": "adamw-8bit"},
    {"model": "sdxl", "task": "train", "method": "full", "resolution": "512", "gpu": "a100-80gb",
     "precision": "bf16-mixed", "text_encoders": "frozen", "cache_latents": False},
    {"model": "sdxl", "task": "train", "method": "full", "resolution": "512", "gpu": "a100-80gb",
     "optimizer": "adafactor"},
    {"model": "sd-1.5", "task": "infer", "gpu": "t4", "attention": "eager", "precision": "fp16-true"},
    {"model": "sdxl", "task": "train", "stack": "kohya", "method": "lora", "lora_rank": 32, "resolution": "1024",
     "gpu": "rtx-3090-ti", "optimizer": "adafactor", "text_encoders": "trained"},
    {"model": "whisper-large-v3", "task": "train", "method": "lora", "gpu": "t4", "quant": "int8"},
    {"model": "flan-t5-base", "task": "train", "method": "full", "gpu": "t4", "precision": "fp32"},
    # text encoders trained whole with the denoiser: CLIP under autocast with Adafactor; SD3's three, T5 too
    {"model": "sd1.5", "task": "train", "method": "full", "resolution": "512", "gpu": "rtx-4090",
     "precision": "fp16-mixed", "optimizer": "adafactor", "text_encoders": "trained", "grad_checkpointing": "full"},
    {"model": "sd3-medium", "task": "train", "method": "full", "resolution": "512", "gpu": "h200",
     "text_encoders": "trained"},
    # gradients freed after each step (kohya): the peak before the backward, or at its end
    {"model": "sd1.5", "task": "train", "stack": "kohya", "method": "full", "resolution": "512", "gpu": "rtx-4090",
     "precision": "fp16-mixed", "grad_checkpointing": "full", "text_encoders": "trained"},
    {"model": "sd1.5", "task": "train", "stack": "kohya", "method": "full", "resolution": "768", "gpu": "h200",
     "precision": "fp16-mixed", "micro_batch_size": 8, "text_encoders": "trained"},
]


@pytest.mark.parametrize("fields", MEMORY_CASES, ids=lambda f: "-".join(str(v) for v in f.values())[:60])
def test_every_memory_line_opens_into_arithmetic_that_gives_it(fields):
    """A module plan's memory lines had no formula on the page (a decoder LLM's each have one): each now shows
    the rule of gpuplan.memory.modules with the scenario's values, whose own arithmetic gives the plan's number."""
    plan = gpuplan.estimate(fields)
    numbers = api.explain(fields).numbers
    assert _memory_rows(plan) <= set(numbers)
    memory = {k: f for k, f in numbers.items() if k.startswith("memory.")}
    for key, f in memory.items():
        assert f.computed == pytest.approx(f.value, rel=1e-9, abs=1e-12), (key, f.substituted)
        assert f.formula and f.substituted
    assert numbers["memory.weights_gib"].value == plan.memory.weights_gib
    assert plan.memory.peak_phase in numbers["memory.activations_gib"].substituted


def test_exports_plan_the_same_job(client, tmp_path):
    """scenario.yaml, the command and the permalink of a diffusion plan carry its own fields (resolution, train
    steps), and each reads back into the same plan."""
    exp = client.post("/api/export", json=SDXL_LORA).json()
    assert "resolution: '1024'" in exp["yaml"] and "train_steps: 1500" in exp["yaml"]
    assert "resolution=1024" in exp["query"] and "train_steps=1500" in exp["query"]
    path = tmp_path / "scenario.yaml"
    path.write_text(exp["yaml"], encoding="utf-8")
    assert yaml.safe_load(exp["yaml"]) == SDXL_LORA
    assert as_json(gpuplan.estimate(str(path))) == as_json(gpuplan.estimate(SDXL_LORA))
    words = shlex.split(exp["command"])
    assert words[:2] == ["gpuplan", "estimate"] and "--train-steps" in words
    cli = runner.invoke(cli_app, [*words[1:], "--json"])
    assert cli.exit_code == 0 and json.loads(cli.stdout) == client.post("/api/estimate", json=SDXL_LORA).json()
    assert "it/s" in exp["markdown"] and "per 1,000 images" in exp["markdown"]


def test_recommend_ranks_cards_as_the_python_api(client):
    """The setups of a diffusion LoRA are cards, each on its cheapest offer, as gpuplan.recommend ranks them, cheapest
    job first; the RTX 3060's row is the 3060 plan's speed and price."""
    fields = {k: v for k, v in SDXL_LORA.items() if k != "gpu"}
    r = client.post("/api/recommend", json={"scenario": fields, "constraints": {"gpus": ["rtx-3060", "rtx-4090"]}})
    assert r.status_code == 200, r.text
    page = r.json()
    assert page == as_json(gpuplan.recommend(fields, gpus=["rtx-3060", "rtx-4090"]))
    assert [x["gpu_id"] for x in page["setups"]] == [load_gpu("rtx-4090").id, load_gpu("rtx-3060").id]
    money = [x["usd_total"] for x in page["setups"]]
    assert money == sorted(money) and page["fitting"] == 2
    plan = gpuplan.estimate(SDXL_LORA)
    row = page["setups"][1]
    assert (row["samples_per_s"], row["usd_total"]) == (plan.work.samples_per_s, plan.cost.usd_total)
    everywhere = client.post("/api/recommend", json={"scenario": fields}).json()
    assert everywhere["evaluated"] > 10 and len(everywhere["setups"]) == 10


def test_recommend_on_the_scenario_card_by_its_alias(client):
    """A scenario naming its card by an alias (rtx-3060) is searched on that card (it was matched by catalog id
    only, and nothing was planned)."""
    page = client.post("/api/recommend", json={"scenario": SDXL_LORA}).json()
    assert page["evaluated"] == 1 and [x["gpu_id"] for x in page["setups"]] == [load_gpu("rtx-3060").id]
    assert page["setups"][0]["step_s"] == gpuplan.estimate(SDXL_LORA).work.step_s


def test_what_the_api_refuses_the_page_refuses(client):
    """The grid of every card plans decoder LLMs: one sentence naming what the model is and what ranks its cards;
    buy plans it by its module plan's hours (tests/owning/test_owning_modules.py).
    A user's module is never run on the server: the scenario has no such field. A path stays refused."""
    r = client.post("/api/fit-grid", json={"scenario": SDXL_LORA})
    assert r.status_code == 422
    assert r.json()["detail"] == ("stabilityai/stable-diffusion-xl-base-1.0 is a diffusion pipeline "
                                  "(StableDiffusionXLPipeline): the grid of every card against quantization, method "
                                  "or context plans decoder LLMs; recommend ranks the cards this job fits")
    with pytest.raises(gpuplan.GpuplanError, match="the grid of every card"):
        api.fit_grid(SDXL_LORA)
    r = client.post("/api/estimate", json={**SDXL_LORA, "module": "my_pkg.model:build"})
    assert r.status_code == 422 and r.json()["detail"] == "unknown scenario field 'module'; did you mean 'model'?"
    r = client.post("/api/estimate", json={**SDXL_LORA, "model": "/etc/sdxl/model_index.json"})
    assert r.status_code == 422 and "does not read files on the server" in r.json()["detail"]
    job = {"name": "LoRA", "scenario": {k: v for k, v in SDXL_LORA.items() if k != "gpu"}, "per_week": 2}
    r = client.post("/api/buy", json={"build": "1x3060", "workloads": [job]})  # buy plans it (its module plan)
    assert r.status_code == 200
    hours = gpuplan.estimate(SDXL_LORA, advise=False).work.job_hours  # train_steps x step time on the 3060
    assert r.json()["builds"][0]["jobs"][0]["hours_per_run"] == pytest.approx(hours)
    r = client.post("/api/estimate", json={**SDXL_LORA, "audio_seconds": 30})
    assert r.status_code == 422
    with pytest.raises(gpuplan.GpuplanError) as refused:
        gpuplan.estimate({**SDXL_LORA, "audio_seconds": 30})
    assert r.json()["detail"] == str(refused.value) and "audio_seconds sizes Whisper's audio" in str(refused.value)


def test_form_shows_each_kind_its_fields(client):
    """The form says which kinds of model read each field, and lists the bundled models that are not decoder LLMs
    with their kinds (the page shows a diffusion model its resolution and steps, Whisper its audio seconds)."""
    form = client.get("/api/form").json()
    fields = {f["name"]: f for f in form["fields"]}
    assert fields["resolution"]["kinds"] == ["diffusion"] and fields["resolution"]["group"] == "main"
    assert fields["inference_steps"]["kinds"] == ["diffusion"] and fields["inference_steps"]["task"] == "infer"
    assert fields["audio_seconds"]["kinds"] == ["speech"]
    assert fields["train_steps"]["task"] == "train" and "decoder" not in fields["train_steps"]["kinds"]
    assert fields["engine"]["kinds"] == ["decoder"] and fields["kv_cache_dtype"]["kinds"] == ["decoder"]
    assert set(fields["gpu"]["kinds"]) == {"decoder", "diffusion", "speech", "encoder-decoder", "encoder",
                                           "text-encoder"}
    assert "text-encoder" in fields["seq_len"]["kinds"] and "text-encoder" in fields["prompt_tokens"]["kinds"]
    kinds = {m["name"]: m for m in form["module_models"]}
    assert kinds["stabilityai/stable-diffusion-xl-base-1.0"]["kind"] == "diffusion"
    assert "sdxl" in kinds["stabilityai/stable-diffusion-xl-base-1.0"]["names"]
    assert kinds["openai/whisper-large-v3"]["kind"] == "speech"
    assert kinds["google/flan-t5-base"]["kind"] == "encoder-decoder" and kinds["google/vit-base-patch16-224"][
        "kind"] == "encoder"
    assert kinds["google-bert/bert-base-uncased"]["kind"] == "text-encoder"
    assert kinds["google-bert/bert-base-uncased"]["reads"]["infer"].count("prompt_tokens") == 1
    assert kinds["black-forest-labs/FLUX.1-dev"]["params_total"] == gpuplan.estimate(
        {"model": "flux-dev", "task": "infer"}).model.params_total


def test_whispers_blank_output_tokens_placeholder_is_what_its_plan_plans(client):
    """s27 walk, "Left": the speech form showed 256 for output_tokens though a blank field plans a recording's
    windows at the transcript's tokens. The form's speech placeholder says the numbers the plan takes when the
    field is blank: 105 a window of a recording (124 with timestamps), 256 a sample without audio seconds."""
    fields = {f["name"]: f for f in client.get("/api/form").json()["fields"]}
    said = fields["output_tokens"]["kind_defaults"]["speech"]
    assert fields["output_tokens"]["default"] == 256 and "decoder" not in fields["output_tokens"]["kind_defaults"]
    job = {"model": "whisper-small", "task": "infer", "gpu": "rtx-3060"}
    window = api.estimate({**job, "audio_seconds": 600}).work.sizes["decoder_tokens"][0]
    stamped = api.estimate({**job, "audio_seconds": 600, "timestamps": True}).work.sizes["decoder_tokens"][0]
    plain = api.estimate(job).work.sizes["decoder_tokens"][0]
    assert (window, stamped, plain) == (105, 124, 256)
    assert said == f"auto: {window} a 30 s window ({stamped} with timestamps); {plain} without audio seconds"


@pytest.mark.parametrize("extra", [{"train_tokens": 1e6}, {"loss": "chunked"}, {"num_gpus": 2}, {"dataset_gb": 5.0}],
                         ids=lambda e: next(iter(e)))
def test_a_decoder_llm_field_the_module_plan_does_not_read_is_refused_as_the_api_refuses_it(client, extra):
    """A decoder LLM's field given with an SDXL LoRA (it did nothing): the page answers 422 with the sentence
    gpuplan.estimate raises, naming the field and what the plan reads instead."""
    with pytest.raises(gpuplan.GpuplanError) as refused:
        gpuplan.estimate({**SDXL_LORA, **extra})
    name = next(iter(extra))
    assert str(refused.value).startswith(f"{name} is a decoder LLM setting, and stabilityai/stable-diffusion-xl-")
    r = client.post("/api/estimate", json={**SDXL_LORA, **extra})
    assert r.status_code == 422 and r.json()["detail"] == str(refused.value)


def test_form_gives_each_bundled_model_the_fields_its_plan_reads(client):
    """The form's list of each bundled model that is not a decoder LLM, per task, is the resolver's
    (gpuplan.scenario.modules.reads): SDXL refuses seq_len, so its form has none; SD3 and Flux read it as their
    prompt's T5 tokens, in training and generation alike; T5 reads it as its source in training only (inference:
    prompt_tokens). Every field the list names is a field of the form, and no decoder LLM field is in it."""
    form = client.get("/api/form").json()
    models = {m["name"]: m["reads"] for m in form["module_models"]}
    names = {f["name"] for f in form["fields"]}
    sdxl = models["stabilityai/stable-diffusion-xl-base-1.0"]
    for task in ("train", "infer"):
        assert "resolution" in sdxl[task] and "seq_len" not in sdxl[task] and "num_gpus" not in sdxl[task]
        assert "seq_len" in models["black-forest-labs/FLUX.1-dev"][task]
        assert "seq_len" in models["stabilityai/stable-diffusion-3-medium-diffusers"][task]
        assert "audio_seconds" in models["openai/whisper-large-v3"][task]
        assert "resolution" not in models["google/vit-base-patch16-224"][task]
    assert "engine" not in sdxl["infer"] and "train_tokens" not in sdxl["train"] and "loss" not in sdxl["train"]
    assert "inference_steps" in sdxl["infer"] and "inference_steps" not in sdxl["train"]
    assert "train_steps" in sdxl["train"] and "train_steps" not in sdxl["infer"]
    t5 = models["google/flan-t5-base"]
    assert "seq_len" in t5["train"] and "seq_len" not in t5["infer"] and "prompt_tokens" in t5["infer"]
    assert len(models) >= 10 and all(set(r["train"]) | set(r["infer"]) <= names for r in models.values())
    with pytest.raises(gpuplan.GpuplanError, match="seq_len sets the T5 tokens"):
        gpuplan.estimate({"model": "sdxl", "task": "infer", "seq_len": 256})
    flux = gpuplan.estimate({"model": "flux-dev", "task": "infer", "seq_len": 256, "gpu": "h100-sxm"})
    assert flux.work.sizes["text_tokens"] == [256]


@pytest.mark.parametrize(("fields", "group"), [
    (SDXL_LORA, "diffusion training"), (MODULES[3], "diffusion generation"), (MODULES[4], "encoder-decoders"),
    (MODULES[6], None)], ids=["sdxl-lora", "flux-infer", "whisper-train", "vit-infer"])
def test_memory_and_speed_lines_quote_the_measured_accuracy_of_their_group(fields, group):
    """Issue 34 left module plans' formulas with no "measured accuracy" line, as no shipped table had their rows:
    the held-out rows of bench/modules.py now ship per group (gpuplan/data/accuracy.md), and every memory and speed
    line of a plan quotes its group's; an encoder, which no published row measures, quotes none."""
    numbers = api.explain(fields).numbers
    lines = {k: f for k, f in numbers.items() if k.startswith(("memory.", "work.")) and k != "memory.capacity_gib"}
    assert {"memory.device_peak_gib", "memory.weights_gib", "work.steps_per_s"} <= set(lines)
    if group is None:
        assert all(f.accuracy is None for f in lines.values())
        return
    memory = {f.accuracy.summary for k, f in lines.items() if k.startswith("memory.")}
    speed = {f.accuracy.summary for k, f in lines.items() if k.startswith("work.") and f.accuracy}
    assert len(memory) == 1 and len(speed) == 1 and memory != speed
    (said,) = memory
    assert said.startswith(f"{group}, held-out published rows: median |error| ")
    anchor = "diffusion-pipelines-and-encoder-decoders-against-published-runs"
    assert lines["work.steps_per_s"].accuracy.link == f"/accuracy#{anchor}"
