"""Every answer labels a plan's sharding by what it runs (Scenario.sharding_name and Scenario.layout): torchtitan's
FSDP2 as ``fsdp2`` (recommend's rows said ``zero3``, estimate "ZeRO-3"), a Megatron job that tensor and pipeline
parallelism lay over all 16 GPUs by its layout (estimate said "single GPU, tensor parallel 8, 2 pipeline stages" and
its JSON ``"sharding": "single"``), and DeepSpeed ZeRO-3 under the Trainer as ``zero3``."""

from __future__ import annotations

import contextlib
import io
import json

import pytest


def gpuplan(*args: str) -> str:
    """What ``gpuplan ARGS`` prints, run in this process (:func:`gpuplan.cli.run`, as the README's commands are):
    a fresh interpreter for each of these twelve commands imported the package again to plan one job."""
    from gpuplan.cli import run

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(list(args))
    assert code == 0, err.getvalue()
    return out.getvalue()


TITAN = ("--model", "llama-3.1-8b", "--task", "train", "--stack", "torchtitan", "--train-tokens", "1e9")
ZERO3 = ("--model", "qwen2.5-32b", "--task", "train", "--stack", "hf", "--train-tokens", "1e8")
MEGATRON_8B = ("--model", "llama-3.1-8b", "--task", "train", "--stack", "megatron", "--train-tokens", "1e9")
MEGATRON = ("--model", "llama-3.1-70b", "--task", "train", "--stack", "megatron", "--train-tokens", "1e9")


@pytest.mark.parametrize(("job", "max_gpus", "word"), [(TITAN, "8", "fsdp2"), (ZERO3, "16", "zero3"),
                                                      (MEGATRON_8B, "16", "zero1")])  # its distributed optimizer
def test_recommend_rows_name_the_sharding_that_runs(job, max_gpus, word):
    """The table's setup cell and the --json row's ``sharding`` both carry the plan's sharding word (recommend lays
    training out over data parallelism alone: a tensor and pipeline layout is estimate's and launch's)."""
    where = ("--gpus", "h100-sxm", "--max-gpus", max_gpus, "--top", "5")
    rows = json.loads(gpuplan("recommend", *job, *where, "--json"))["setups"]
    assert len(rows) == 5 and {r["sharding"] for r in rows} == {word}
    assert all(r["num_gpus"] > 1 for r in rows)
    table = gpuplan("recommend", *job, *where, "--format", "plain")
    cells = [line for line in table.splitlines() if "x h100-sxm " in line]
    assert len(cells) >= 5 and all(f"x h100-sxm {word}" in line for line in cells), table
    assert "zero3" not in table or word == "zero3"


@pytest.mark.parametrize(("job", "layout", "words", "sharding"), [
    ((*TITAN, "--num-gpus", "8", "--sharding", "fsdp"), (), "8 x h100-sxm, FSDP2", "fsdp2"),
    ((*ZERO3, "--num-gpus", "8", "--sharding", "zero3"), (), "8 x h100-sxm, ZeRO-3", "zero3"),
    ((*MEGATRON, "--num-gpus", "16"), ("--tp", "8", "--pp", "2"),
     "16 x h100-sxm, tensor parallel 8, 2 pipeline stages", None),  # one data-parallel rank: nothing sharded
])
def test_estimate_names_the_sharding_that_runs(job, layout, words, sharding):
    plan = json.loads(gpuplan("estimate", *job, *layout, "--gpu", "h100-sxm", "--json"))
    assert plan["resolved"].endswith(words), plan["resolved"]
    assert plan["scenario"]["sharding"] == sharding
    assert "single" not in plan["resolved"] and "ZeRO-3" not in plan["resolved"].replace(words, "")
    text = " ".join(gpuplan("estimate", *job, *layout, "--gpu", "h100-sxm").split())
    assert words in text and "single GPU" not in text
