"""The Python API is the one face: each function's typed answer, and ``to_dict()`` equal to the command's
``--json`` for the same inputs (tests/plan/test_plan_consistency.py checks that the numbers agree across them)."""

from __future__ import annotations

import json

import pytest

import gpuplan
from conftest import cli_in_process
from gpuplan import GpuplanError


def cli_json(*args: str) -> object:
    proc = cli_in_process(*args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


LORA_4090 = {"model": "llama-3.1-8b", "task": "train", "method": "qlora", "gpu": "rtx-4090", "train_tokens": 1e8}
LORA_FLAGS = ("--model", "llama-3.1-8b", "--task", "train", "--method", "qlora", "--gpu", "rtx-4090",
              "--train-tokens", "1e8")


def test_the_package_exports_every_question():
    for name in ("estimate", "recommend", "fit", "cost", "capacity", "launch"):
        assert callable(getattr(gpuplan, name)), name
        assert name in gpuplan.__all__
    assert set(gpuplan.__all__) <= set(dir(gpuplan))
    with pytest.raises(AttributeError):
        gpuplan.no_such_name  # noqa: B018


def test_estimate_is_a_typed_immutable_plan_equal_to_the_json():
    plan = gpuplan.estimate(LORA_4090)
    assert isinstance(plan, gpuplan.Plan)
    assert plan.memory.fits and plan.speed.tokens_per_s > 0 and plan.cost.usd_per_hour > 0  # attributes, not dicts
    assert plan.gpu.id == "nvidia-geforce-rtx-4090"
    with pytest.raises(Exception, match="frozen"):
        plan.cost = None
    # the hours are the training tokens over the speed: 1e8 tokens at the plan's own rate
    assert plan.cost.hours == pytest.approx(1e8 / plan.speed.tokens_per_s / 3600, rel=1e-9)
    assert plan.to_dict() == cli_json("estimate", *LORA_FLAGS, "--json")


def test_recommend_to_dict_is_the_json():
    r = gpuplan.recommend({"model": "llama-3.1-8b", "task": "train", "method": "lora", "train_tokens": 1e8},
                          gpus=["l40s", "rtx-4090"], max_gpus=2, top=4, have=["2x3090"])
    assert r.setups and r.owned and r.setups[0].usd_per_million_tokens <= r.setups[-1].usd_per_million_tokens
    cli = cli_json("recommend", "--model", "llama-3.1-8b", "--task", "train", "--method", "lora",
                   "--train-tokens", "1e8", "--gpus", "l40s,rtx-4090", "--max-gpus", "2", "--top", "4",
                   "--have", "2x3090", "--json")
    mine = r.to_dict()
    assert mine.pop("elapsed_s") > 0 and cli.pop("elapsed_s") > 0  # the only field that differs run to run
    assert mine == cli


def test_fit_to_dict_is_the_json():
    report = gpuplan.fit("2x3090", {"task": "train", "method": "lora"}, models=None)
    assert report.num_gpus == 2 and report.gpu_id == "nvidia-geforce-rtx-3090" and report.task == "train"
    assert 0 < report.fitting < len(report.rows)
    assert report.to_dict() == cli_json("fit", "--gpu", "2x3090", "--task", "train", "--method", "lora", "--json")


def test_cost_to_dict_is_the_json():
    table = gpuplan.cost({"model": "qwen2.5-7b", "task": "train", "method": "lora", "train_tokens": 2e8})
    assert table.rows and all(c.device_peak_gib is not None and c.label for c in table.rows)
    assert [c.usd_per_million_tokens for c in table.rows] == sorted(c.usd_per_million_tokens for c in table.rows)
    cli = cli_json("cost", "--model", "qwen2.5-7b", "--task", "train", "--method", "lora", "--train-tokens", "2e8",
                   "--json")
    assert table.to_dict() == cli


def test_capacity_to_dict_is_the_json():
    pytest.importorskip("numpy")
    report = gpuplan.capacity("llama-3.2-1b", gpus=["l4"], max_gpus=1, rate_rps=2, prompt_tokens=500,
                              output_tokens=100, ttft_s=1.0, tpot_s=0.1, top=1)
    assert report.plans and report.workload.rate_rps == 2
    cli = cli_json("capacity", "--model", "llama-3.2-1b", "--gpus", "l4", "--max-gpus", "1", "--rate", "2",
                   "--prompt-tokens", "500", "--output-tokens", "100", "--ttft", "1", "--tpot", "0.1", "--top", "1",
                   "--json")
    assert report.to_dict() == cli


def test_launch_to_dict_is_the_json(tmp_path):
    scenario = {"model": "llama-3.1-8b", "task": "train", "method": "lora", "gpu": "l40s", "train_tokens": 1e8}
    report = gpuplan.launch(scenario, targets=["trainer"], folder=tmp_path / "api")
    assert next(f.target for f in report.files) == "trainer" and (tmp_path / "api" / "plan.json").is_file()
    # the recipe's micro-batch x accumulation (a global batch of 16 or more sequences), then the plan of that
    assert report.scenario["micro_batch_size"] * report.scenario["grad_accum_steps"] >= 16
    plan = gpuplan.estimate(report.scenario, advise=False)
    assert report.predicted["tokens_per_s"] == round(plan.speed.tokens_per_s, 1)  # the plan, not a copy of it
    assert report.predicted["device_peak_gib_per_gpu"] == round(plan.memory.device_peak_gib, 2)
    cli = cli_json("launch", "--model", "llama-3.1-8b", "--task", "train", "--method", "lora", "--gpu", "l40s",
                   "--train-tokens", "1e8", "--target", "trainer", "-o", str(tmp_path / "api"), "--force", "--json")
    assert report.to_dict() == cli


def test_launch_trains_on_the_scenario_dataset(tmp_path):
    """The files train on the data the plan counted: the scenario's own dataset, as ``gpuplan launch --dataset``
    writes it (review 3's second rewalk: the API wrote TRL's example, ``dataset_name: trl-lib/Capybara``, under a
    header that counted the user's file)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "word": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(tmp_path / "tokenizer.json"))
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"text": " ".join(["word"] * n)}) + "\n" for n in (5, 9, 30)))
    scenario = {"model": "qwen2.5-0.5b", "task": "train", "method": "lora", "gpu": "l40s", "dataset": str(data),
                "tokenizer": str(tmp_path / "tokenizer.json")}
    report = gpuplan.launch(scenario, targets=["trainer"], folder="-")
    text = {name: body for name, _, body in report.printed}["trainer.yaml"]
    assert "trl-lib/Capybara" not in text
    assert f"data_files: {data}" in text
    other = gpuplan.launch(scenario, targets=["trainer"], folder="-", dataset="org/other-set")
    assert "dataset_name: org/other-set" in {name: body for name, _, body in other.printed}["trainer.yaml"]


def test_bad_input_is_one_sentence():
    with pytest.raises(GpuplanError, match="did you mean"):
        gpuplan.estimate({"model": "lama-3.1-8b", "task": "train"})
    with pytest.raises(GpuplanError, match="up to 8 cards"):
        gpuplan.fit("16x3090")
    with pytest.raises(GpuplanError, match="provider"):
        gpuplan.recommend({"model": "llama-3.1-8b", "task": "infer"}, providers=["runpodd"])


def test_arguments_of_the_wrong_type_are_one_sentence():
    """The Python API raised TypeError for ``estimate(42)`` and AttributeError for ``fit(["h100"])``: whatever comes
    in, a GpuplanError."""
    for call in (lambda: gpuplan.estimate(42), lambda: gpuplan.cost([1, 2]), lambda: gpuplan.fit(["h100"]),
                 lambda: gpuplan.fit(None)):
        with pytest.raises(GpuplanError) as err:
            call()
        assert "\n" not in str(err.value)


def test_a_list_argument_takes_one_string_as_the_command_line_does():
    """``recommend(job, gpus="h100")`` searched GPUs 'h', '1', '0', '0' (a string iterates its characters) and
    stopped on "unknown GPU 'h'"; a string is now its comma-separated names, as --gpus takes them. A list of
    other things, or a number given as text, is one sentence (it was AttributeError or TypeError)."""
    job = {"model": "qwen2.5-0.5b", "task": "infer"}
    one = gpuplan.recommend(job, gpus="l40s,rtx-4090", max_gpus=1, top=3)
    listed = gpuplan.recommend(job, gpus=["l40s", "rtx-4090"], max_gpus=1, top=3)
    assert [x.gpu_id for x in one.setups] == [x.gpu_id for x in listed.setups] != []
    assert gpuplan.recommend(job, have="1x4090", gpus="l40s", max_gpus=1, top=1).owned
    for call, text in ((lambda: gpuplan.recommend(job, gpus=[1, 2]), "gpus takes names"),
                       (lambda: gpuplan.recommend(job, min_headroom="10%"), "min_headroom must be a number"),
                       (lambda: gpuplan.fit("h100", models=5), "models takes names"),
                       (lambda: gpuplan.capacity("qwen2.5-0.5b", 5), "a workload is a dict")):
        with pytest.raises(GpuplanError, match=text):
            call()
