"""The page's exports read back to the scenario they were made from (session 29's walk): the command through the
CLI, the permalink's query through the scenario's own reading. Before: ``tensor_split`` (a list of floats) made
/api/export answer HTTP 500 (``",".join`` of floats), and a float was written in ``:g``'s six digits, so 123,456,789
training tokens came back as 123,457,000 and a ``gpu_memory_utilization`` of 0.8512345 as 0.851235."""

from __future__ import annotations

import json
import shlex
from urllib.parse import parse_qsl

import pytest

from gpuplan import api
from gpuplan.cli import run
from gpuplan.explain.export import command, query

CASES = [
    {"model": "llama-3.2-1b", "task": "train", "method": "lora", "gpu": "rtx-4090", "train_tokens": 123456789},
    {"model": "llama-3.2-1b", "task": "infer", "engine": "vllm", "gpu": "l40s", "gpu_memory_utilization": 0.8512345,
     "chunked_prefill": False},
    {"model": "qwen2.5-0.5b", "task": "infer", "engine": "llama.cpp", "quant": "q4_k_m", "gpu": "rtx-4090",
     "extra_gpus": ["rtx-3090"], "tensor_split": [0.6, 0.4]},
    {"model": "llama-3.2-1b", "task": "train", "method": "qlora", "gpu": "rtx-4090",
     "lora_targets": ["q_proj", "v_proj"], "lora_dropout": 0.05, "train_tokens": 1e9},
]


@pytest.mark.parametrize("fields", CASES, ids=lambda f: next(k for k in reversed(f)))
def test_the_exported_command_plans_the_same_scenario(fields, capsys):
    s = api.scenario_from(fields)
    argv = shlex.split(command(s))
    assert argv[:2] == ["gpuplan", "estimate"]
    capsys.readouterr()
    assert run([*argv[1:], "--json"]) == 0
    back = json.loads(capsys.readouterr().out)["scenario"]
    mine = api.estimate(s).to_dict()["scenario"]
    assert {k: back[k] for k in fields} == {k: mine[k] for k in fields}


@pytest.mark.parametrize("fields", CASES, ids=lambda f: next(k for k in reversed(f)))
def test_the_permalink_holds_every_value_whole(fields):
    """The page fills its form from the query and splits a list field at commas (app.js ``readForm``)."""
    s = api.scenario_from(fields)
    lists = {k for k, v in fields.items() if isinstance(v, list)}
    read = {k: v.split(",") if k in lists else v for k, v in parse_qsl(query(s))}
    assert api.scenario_from(read) == s


def test_the_launch_files_say_the_command_that_writes_them_again_whole():
    """``gpuplan.launch(...).said["again"]`` (the page's launch panel shows it) wrote --train-tokens 1.23457e+08."""
    import gpuplan

    report = gpuplan.launch(CASES[0], folder="-", targets=["trainer"])
    argv = shlex.split(report.said["again"])
    assert argv[argv.index("--train-tokens") + 1] == "123456789.0"


@pytest.mark.parametrize("name", ["m`x`", "``m", "plain"])
def test_the_markdown_reproduce_line_renders_the_whole_command(name, tmp_path):
    """A model folder named with backticks ended the Markdown code span early: the rendered command was cut."""
    from markdown_it import MarkdownIt

    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(
        {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000, "max_position_embeddings": 2048}))
    s = api.scenario_from({"model": str(folder), "task": "infer", "gpu": "l4"})
    line = next(x for x in api.export(s).markdown.splitlines() if x.startswith("Reproduce: "))
    tokens = MarkdownIt().parseInline(line)[0].children
    assert [t.content for t in tokens if t.type == "code_inline"] == [command(s)]
