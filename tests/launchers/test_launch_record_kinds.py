"""The data entry of axolotl's and torchtune's files follows the form of the records the estimate read.

Review 3's second rewalk (bench/results/review3_rewalk_s6.md): a prompt/completion JSONL planned with ``--stack
axolotl`` was written as ``type: chat_template, field_messages: messages`` (and torchtune's as ``chat_dataset`` over
a ``messages`` column), a column the file does not have: the run would stop at loading the data. Now prompt and
completion records go to axolotl's user-defined instruct format and torchtune's ``instruct_dataset``, text records
to axolotl's ``completion`` type and torchtune's ``text_completion_dataset``; chat records stay as they were.
torchtune builds the dataset here (its builders load the file, in process); Axolotl validates the config in a child
process over its cached no-deps install, as test_launch_stacks.py does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_launch_stacks import AXOLOTL_READ, cached_packages, child

from conftest import require
from gpuplan import GpuplanError
from gpuplan.launchers import launch_files, launch_plan, write
from gpuplan.launchers.settings import LaunchOptions
from gpuplan.stacks.releases import AXOLOTL_VERSION

RECORDS = {
    "prompt-completion": [{"prompt": "the cat sat on", "completion": "the mat"},
                          {"prompt": "a dog", "completion": "ran"}],
    "text": [{"text": "the cat sat on the mat"}, {"text": "a dog ran"}],
    "messages": [{"messages": [{"role": "user", "content": "the cat"}, {"role": "assistant", "content": "sat"}]}],
    # ShareGPT: counted as chat (TRL converts it), its turns under conversations, keyed from/value
    "sharegpt": [{"conversations": [{"from": "human", "value": "the cat"}, {"from": "gpt", "value": "sat"}]}],
}


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory) -> Path:
    """A whitespace word-level tokenizer.json: one token per word."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = sorted({w for rows in RECORDS.values() for r in rows for w in json.dumps(r).split()})
    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "</s>": 1, **{w: i + 2 for i, w in enumerate(words)}},
                                     unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return path


def written(kind: str, stack: str, model: str, tmp: Path, tokenizer: Path) -> Path:
    data = tmp / f"{kind}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS[kind]))
    plan = launch_plan(dict(model=model, task="train", method="lora", gpu="l40s", stack=stack, dataset=str(data),
                            tokenizer=str(tokenizer)))
    assert plan.result.dataset["kind"] == {"sharegpt": "messages"}.get(kind, kind)
    folder = tmp / f"{stack}-{kind}"
    write(launch_files(plan, [stack], LaunchOptions(dataset=str(data))), folder)
    return folder


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_torchtune_builds_the_dataset_of_each_kind(kind, tmp_path, tokenizer):
    """torchtune's own builder loads the written file; prompts are masked and completions trained, text trained
    whole, chat turns read from ``messages``."""
    require("torchtune")
    from omegaconf import OmegaConf
    from torchtune import config

    folder = written(kind, "torchtune", "qwen2.5-0.5b", tmp_path, tokenizer)
    cfg = OmegaConf.load(folder / "torchtune.yaml")
    ds = config.instantiate(cfg.dataset, tokenizer=None, cache_dir=str(tmp_path / "hf"))
    assert len(ds._data) == len(RECORDS[kind])
    if kind == "text":
        assert cfg.dataset._component_ == "torchtune.datasets.text_completion_dataset"
        assert ds._data[0][ds._column] == "the cat sat on the mat"
        return
    messages = ds._message_transform(ds._data[0])["messages"]
    said = [(m.role, m.masked, m.text_content) for m in messages]
    if kind == "prompt-completion":
        assert said == [("user", True, "the cat sat on"), ("assistant", False, "the mat")]
    elif kind == "sharegpt":
        assert (cfg.dataset.conversation_column, cfg.dataset.conversation_style) == ("conversations", "sharegpt")
        assert [(r, t) for r, _, t in said] == [("user", "the cat"), ("assistant", "sat")]
    else:
        assert [(r, t) for r, _, t in said] == [("user", "the cat"), ("assistant", "sat")]


@pytest.mark.slow
def test_axolotl_takes_the_dataset_of_each_kind(tmp_path, tokenizer):
    """Axolotl's validate_config accepts each entry, and the fields it names are the file's own columns."""
    folders = {kind: written(kind, "axolotl", "qwen2.5-1.5b", tmp_path, tokenizer) for kind in RECORDS}
    entries = {kind: yaml.safe_load((f / "axolotl.yaml").read_text())["datasets"][0] for kind, f in folders.items()}
    assert entries["prompt-completion"]["type"]["field_instruction"] == "prompt"
    assert entries["prompt-completion"]["type"]["field_output"] == "completion"
    assert entries["text"]["type"] == "completion"  # reads the field text
    assert entries["messages"]["type"] == "chat_template" and entries["messages"]["field_messages"] == "messages"
    assert entries["sharegpt"]["field_messages"] == "conversations"
    assert entries["sharegpt"]["message_property_mappings"] == {"role": "from", "content": "value"}
    path = cached_packages(f"axolotl-{AXOLOTL_VERSION}", [f"axolotl=={AXOLOTL_VERSION}", "addict"])
    jobs = [[str(f), {"bf16": True, "fp8": True, "tf32": True, "n_gpu": 1, "n_node": 1, "compute_capability": "sm_89"}]
            for f in folders.values()]
    read = child(AXOLOTL_READ, [json.dumps(jobs)], tmp_path, path)
    assert len(read) == len(RECORDS)
    for kind, folder in folders.items():
        valid = read[str(folder)]["config"]["datasets"][0]
        assert read[str(folder)]["unknown"] == []
        assert valid["path"] == "json" and valid["data_files"] == str(tmp_path / f"{kind}.jsonl")


def test_chats_without_a_reply_are_refused_by_trl_stacks_and_said_by_others(tmp_path, tokenizer):
    """Chat records with no assistant turn under a loss on the assistant turns only: TRL's SFTTrainer stops on the
    first one ("at least one example has no assistant tokens"), so the hf and Unsloth files would fail before their
    first step: refused in one sentence, nothing written. torchtune masks them and runs: its files say it in a
    warning line of their header."""
    data = tmp_path / "asks.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in [
        {"messages": [{"role": "user", "content": "the cat"}]},
        {"messages": [{"role": "user", "content": "the cat"}, {"role": "assistant", "content": "sat"}]}]))
    scenario = dict(model="qwen2.5-1.5b", task="train", method="lora", gpu="l40s", dataset=str(data),
                    tokenizer=str(tokenizer))
    for stack in ("hf", "unsloth"):
        with pytest.raises(GpuplanError) as err:
            launch_plan({**scenario, "stack": stack})
        assert str(err.value).startswith(f"the {stack} files would stop before the first step: 1 of the 2 records "
                                         "are chats without an assistant turn: ")
    plan = launch_plan({**scenario, "stack": "torchtune"})
    header = [line for line in plan.header() if line.startswith("warning: ")]
    assert header == [f"warning: {plan.result.warnings[-1]}"] and "1 of the 2 records" in header[0]
