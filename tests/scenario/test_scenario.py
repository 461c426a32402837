"""Scenario parsing and validation: every bad input is one sentence naming the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import cli_in_process
from gpuplan import GpuplanError, estimate, load_scenario
from gpuplan.scenario import FIELDS, read_back, scenario_from


def test_file_and_overrides(tmp_path):
    f = tmp_path / "job.yaml"
    f.write_text("model: llama-3.1-8b\ntask: train\nmethod: lora\nmicro_batch_size: 2\n")
    s = load_scenario(f, {"micro_batch_size": "8", "seq_len": None})
    assert (s.method, s.micro_batch_size, s.seq_len) == ("lora", 8, 2048)


def test_two_spellings_of_one_field_are_refused_and_a_flag_still_wins(tmp_path):
    """``batch-size: 8`` then ``batch_size: 4`` in one file (or one dict) planned 4 without a word, where a key
    written twice is refused (session 18's fuzzing); a flag over the file's dashed spelling still wins."""
    path = tmp_path / "s.yaml"
    path.write_text("model: llama-3.2-1b\ntask: infer\nbatch-size: 8\nbatch_size: 4\n")
    with pytest.raises(GpuplanError, match="scenario field 'batch_size' is given twice, as 'batch-size' and "
                                           "'batch_size'; keep one"):
        load_scenario(path)
    with pytest.raises(GpuplanError, match="given twice"):
        scenario_from({"model": "llama-3.2-1b", "task": "infer", "num-gpus": 2, "num_gpus": 1})
    path.write_text("model: llama-3.2-1b\ntask: infer\nbatch-size: 8\n")
    assert load_scenario(path).batch_size == 8
    assert load_scenario(path, {"batch_size": 3}).batch_size == 3


@pytest.mark.parametrize("text, message", [
    ("model: [unclosed", "not valid YAML"),
    ("- a\n- b\n", "must hold a mapping"),
])
def test_bad_files(tmp_path, text, message):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(GpuplanError, match=message):
        load_scenario(f)


@pytest.mark.parametrize("fields, message", [
    ({"model": "llama-3.1-8b", "task": "train", "micro_batch": 4}, "did you mean 'micro_batch_size'"),
    ({"model": "llama-3.1-8b"}, "'task' is required"),
    ({"model": "llama-3.1-8b", "task": "train", "micro_batch_size": -1}, "micro_batch_size"),
    ({"model": "llama-3.1-8b", "task": "train", "seq_len": 10**9}, "seq_len"),
    ({"model": "llama-3.1-8b", "task": "train", "precision": "bf17"}, "precision"),
    ({"model": "llama-3.1-8b", "task": "infer", "quant": "nf5"}, "did you mean"),
    ({"model": "llama-3.1-8b", "task": "train", "method": "qlora", "precision": "fp32"}, "QLoRA"),
    ({"model": "llama-3.1-8b", "task": "train", "sharding": "zero3"}, "num_gpus >= 2"),
    ({"model": "llama-3.1-8b", "task": "infer", "num_gpus": 3, "tp": 3}, "does not divide the 32 attention heads"),
    ({"model": "qwen2.5-7b", "task": "infer", "num_gpus": 14, "tp": 14}, "exceeds the 4 KV heads"),
    ({"model": "llama-3.1-8b", "task": "train", "num_gpus": 2, "tp": 4, "stack": "megatron"}, "must divide"),
    ({"model": "llama-3.1-8b", "task": "train", "offload": "optimizer+params"}, "needs ZeRO-3"),
    ({"model": "llama-3.1-8b", "task": "train", "method": "lora", "lora_targets": ["c_attn"]}, "q_proj"),
])
def test_bad_scenarios(fields, message):
    with pytest.raises(GpuplanError, match=message):
        estimate(fields)


keys = st.sampled_from([*FIELDS, "micro_batch", "gpu_count", "x", ""])
values = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                   st.text(max_size=20), st.lists(st.text(max_size=5), max_size=3),
                   st.sampled_from(["train", "infer", "lora", "qlora", "bf16-mixed", "llama-3.2-1b", "zero3"]))


# no deadline: the first example may import a module (the dataset reader, the synthetic configs), which takes longer
# than hypothesis's 200 ms on a loaded machine; these tests are about the errors, speed is measured in bench/
@settings(deadline=None)
@given(st.dictionaries(keys, values, max_size=8))
def test_fuzz_parser_raises_only_clear_errors(data):
    try:
        scenario_from(data)
    except GpuplanError as err:
        assert str(err) and "\n" not in str(err)


@settings(deadline=None)
@given(st.dictionaries(keys, values, max_size=6))
def test_fuzz_estimate_raises_only_clear_errors(data):
    data = {"model": "llama-3.2-1b", "task": "train", **data}
    try:
        estimate(data, advise=False)
    except GpuplanError as err:
        assert str(err)


def test_defaults_fill_values_not_the_explicit_set():
    """The stack's recipe and the data set the fields left unset; ``model_fields_set`` stays what was given, and a
    copy re-resolves from it (the web page's defaults list, model_copy and the JSON read that set)."""
    given = {"model": "llama-3.1-8b", "task": "train", "method": "qlora", "samples": 1000, "mean_tokens": 300}
    s = scenario_from(given)
    assert s.model_fields_set == set(given)
    # HF QLoRA: prepare_model_for_kbit_training upcasts to fp32 and turns on gradient checkpointing
    assert (s.qlora_fp32_upcast, s.grad_checkpointing, s.precision) == (True, "full", "bf16-mixed")
    # one epoch of 1,000 records of 300 tokens, one record per micro-batch (no padding): 300,000 tokens
    assert s.train_tokens == pytest.approx(1000 * 300, rel=1e-4)
    c = s.model_copy(update={"stack": "axolotl"})
    assert c.model_fields_set == set(given) | {"stack"}
    assert (c.loss, c.grad_checkpointing) == ("fused-linear", "full")  # axolotl's Liger recipe
    with pytest.raises(ValueError):
        s.precision = "fp32"  # frozen


def test_zero3_on_one_gpu_streams_weights_from_cpu_memory():
    """DeepSpeed's ZeRO-Offload/ZeRO-Infinity and FSDP's CPUOffload run with one rank: ZeRO-3 with the parameters
    offloaded fits a model the card cannot hold. Llama-3.1-8B full on one RTX 4090 (24 GB): the 16-bit weights
    alone are 16.06 GB, yet on the GPU only the gathered layers stay; the CPU holds fp32 master weights and both
    Adam moments (12 B) plus the 16-bit weights (2 B) per parameter: 14 x 8,030,261,248 B = 104.7 GiB at least.
    Without offload, ZeRO-3 on one GPU shards nothing and is refused. The host needs that RAM (issue 33): a machine
    with 192 GiB holds its 134.6 GiB, the default 64 GiB per GPU does not."""
    job = {"model": "llama-3.1-8b", "task": "train", "gpu": "rtx-4090", "sharding": "zero3",
           "offload": "optimizer+params", "grad_checkpointing": "full"}
    plan = estimate({**job, "host_ram_gib": 192}, advise=False)
    assert plan.memory.fits and estimate(job, advise=False).memory.fits is False
    assert plan.memory.weights_gib < 2.0
    assert plan.memory.cpu_gib >= 14 * 8_030_261_248 / 2**30
    with pytest.raises(GpuplanError, match="offload optimizer\\+params"):
        estimate({"model": "llama-3.1-8b", "task": "train", "gpu": "rtx-4090", "sharding": "zero3"})


def test_the_other_tasks_settings_are_said_not_dropped_silently():
    """h-walk: `--batch-size 8` on a training job was dropped without a word. A file may hold both tasks'
    settings, so it is a warning naming the fields and the batch this plan uses; fields left at their defaults say
    nothing."""
    train = estimate({"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "batch_size": 8}, advise=False)
    assert any(w.startswith("batch_size is a serving setting") and "micro_batch_size x grad_accum_steps" in w
               for w in train.warnings)
    serve = estimate({"model": "llama-3.1-8b", "task": "infer", "gpu": "h100", "micro_batch_size": 8,
                      "seq_len": 4096}, advise=False)
    assert any(w.startswith("micro_batch_size, seq_len are training settings") for w in serve.warnings)
    plain = estimate({"model": "llama-3.1-8b", "task": "train", "gpu": "h100"}, advise=False)
    assert not any("setting" in w and "leaves" in w for w in plain.warnings)


def test_a_serving_plan_says_once_it_leaves_a_training_runs_settings_out(capsys):
    """s17-walk: ``--mtbi-hours 5`` (spot interruptions, read by a training run's checkpoint interval), ``--disk-gbs``
    (its checkpoints' write speed) and ``--dataset-gb`` (its data on disk) were taken by a serving plan without a
    word, and its scenario stated them. They are training settings (``TRAIN_ONLY``): the resolver says so once, the
    plan's scenario leaves them out, recommend's answer says it, and the page's form shows them for training."""
    from gpuplan import recommend
    from gpuplan.cli import run
    from gpuplan.explain.forms import field_specs

    serve = estimate({"model": "qwen3-0.6b", "task": "infer", "gpu": "l4", "mtbi_hours": 5, "disk_gbs": 2,
                      "dataset_gb": 3}, advise=False)
    said = [w for w in serve.warnings if "plan leaves" in w]
    assert said == ["dataset_gb, disk_gbs, mtbi_hours are training settings: this serving plan leaves them out"]
    assert not {"mtbi_hours", "disk_gbs", "dataset_gb"} & set(serve.scenario)
    rec = recommend({"model": "qwen3-0.6b", "task": "infer", "mtbi_hours": 5}, gpus=["l4"], top=1)
    assert "mtbi_hours is a training setting: this serving plan leaves it out" in rec.warnings
    assert run(["estimate", "--model", "qwen3-0.6b", "--task", "infer", "--gpu", "l4", "--mtbi-hours", "5"]) == 0
    err = capsys.readouterr().err
    assert err.count("mtbi_hours is a training setting") == 1
    tasks = {f.name: f.task for f in field_specs()}
    assert tasks["mtbi_hours"] == tasks["disk_gbs"] == tasks["dataset_gb"] == "train"
    train = estimate({"model": "qwen3-0.6b", "task": "train", "gpu": "l4", "mtbi_hours": 5}, advise=False)
    assert train.scenario["mtbi_hours"] == 5 and not any("plan leaves" in w for w in train.warnings)


def test_a_scenario_an_answer_carries_reads_back_without_its_data(tmp_path):
    """The scenario of an answer (a recommend row) read back from its JSON keeps what the data decided and does
    not read the data again: the file may be gone, or hidden by the page under its upload name."""
    data = tmp_path / "train.jsonl"
    data.write_text('{"text": "the a of and"}\n{"text": "of and the"}\n', encoding="utf-8")
    tok = Path(__file__).resolve().parents[1] / "data" / "fuzz" / "tokenizers" / "ok-word-level.json"
    s = scenario_from({"model": "qwen2.5-0.5b", "task": "train", "method": "lora", "dataset": str(data),
                       "tokenizer": str(tok), "epochs": 2})
    assert s.train_tokens == 2 * (5 + 4)  # 4 and 3 words, each + EOS, twice
    dump = s.model_dump(mode="json")
    data.unlink()
    with pytest.raises(GpuplanError, match="no dataset file"):
        scenario_from(dump)  # as input, the file must be there
    back = read_back(dump)
    assert back.model_dump(mode="json") == dump and back.train_tokens == 18


@pytest.mark.parametrize(("field", "value"), [("batch_size", True), ("num_gpus", False), ("train_tokens", True),
                                              ("gpu_memory_utilization", True), ("users", True)])
def test_a_yes_or_no_for_a_number_is_refused(field, value):
    """pydantic's lax mode read a bool given for a number as 1 or 0: ``batch_size: yes`` in a YAML file (or
    ``"batch_size": true`` in the page's body) planned one request without a word. Now one sentence."""
    with pytest.raises(GpuplanError) as err:
        scenario_from({"model": "llama-3.2-1b", "task": "infer", field: value})
    assert str(err.value) == f"scenario field {field!r} takes a number, not {str(value).lower()}"


def test_a_yes_in_a_scenario_file_is_one_sentence(tmp_path):

    path = tmp_path / "s.yaml"
    path.write_text("model: llama-3.2-1b\ntask: infer\nbatch_size: yes\n")
    proc = cli_in_process("estimate", str(path))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", "error: scenario field 'batch_size' takes a number, not true\n")
    assert scenario_from({"model": "llama-3.2-1b", "task": "infer", "batch_size": 2}).batch_size == 2


@pytest.mark.parametrize("key, said", [
    ("per_device_train_batch_size", "unknown scenario field 'per_device_train_batch_size': gpuplan calls it "
                                    "'micro_batch_size'"),
    ("gradient_accumulation_steps", "gpuplan calls it 'grad_accum_steps'"),
    ("num_train_epochs", "gpuplan calls it 'epochs'"),
    ("lora_r", "gpuplan calls it 'lora_rank'"),
    ("learning_rate", "unknown scenario field 'learning_rate': it changes neither the memory nor the speed gpuplan "
                      "plans; leave it out"),
])
def test_a_trainer_s_own_key_is_told_gpuplan_s_name(key, said):
    """Session 9's walk: a scenario pasted from a TrainingArguments or Axolotl config read "unknown scenario field
    'learning_rate'; `gpuplan estimate --help` lists the fields", and 'num_train_epochs' was offered nothing."""
    with pytest.raises(GpuplanError) as err:
        scenario_from({"model": "qwen3-4b", "task": "train", key: 3})
    assert said in str(err.value), str(err.value)


def test_a_list_of_cards_is_told_where_cards_are_compared():
    """Session 9's walk: 'gpu: [l4, a10g]' in a scenario read "scenario field 'gpu': Input should be a valid
    string"."""
    with pytest.raises(GpuplanError, match=r"^scenario field 'gpu' names one card, not a list \(got .*\): "
                                           r"`gpuplan recommend --gpus l4,a10g` compares cards"):
        scenario_from({"model": "qwen3-4b", "task": "infer", "gpu": ["l4", "a10g"]})
