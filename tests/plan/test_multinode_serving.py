"""A copy of a model served across nodes is priced (issue 33, item 5): tensor parallel inside each node, pipeline
stages across nodes (vLLM's multi-node recipe), whole instances on every node of a provider with a fabric; and
what refuses a serving job names a serving fix."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.errors import GpuplanError

R1 = {"model": "deepseek-r1", "task": "infer", "engine": "vllm", "gpu": "nvidia-a100-sxm4-80gb"}


@pytest.fixture(autouse=True)
def _pinned_day(monkeypatch):
    monkeypatch.setenv("GPUPLAN_TODAY", "2026-11-28")


def test_two_nodes_of_eight_serve_deepseek_r1_and_are_priced():
    p = gpuplan.estimate({**R1, "num_gpus": 8, "num_nodes": 2})
    assert (p.scenario["tp"], p.scenario["pp"]) == (8, 2)  # the default split: TP inside a node, PP across
    assert any("tensor parallel 8 inside each node, 2 pipeline stages across nodes" in d for d in p.defaults)
    assert p.memory.fits and p.cost is not None
    assert (p.cost.num_gpus, p.cost.instances, p.cost.gpus_per_instance) == (16, 2, 8)
    assert p.cost.usd_per_hour == pytest.approx(16 * p.cost.usd_per_gpu_hour)
    hop = p.speed.parts_s["pipeline_across_nodes"]  # one stage boundary between the nodes per decode step
    assert 0 < hop < 0.01 * p.speed.step_time_s
    one = gpuplan.estimate({**R1, "num_gpus": 8, "num_nodes": 2, "tp": 8, "pp": 2}, advise=False)
    assert one.cost.usd_per_hour == pytest.approx(p.cost.usd_per_hour)


def test_the_hop_between_nodes_is_timed():
    from gpuplan.hardware import Network, load_gpu
    from gpuplan.model.catalog import load_model
    from gpuplan.scenario import scenario_from
    from gpuplan.speed.inference import step_timer

    s = scenario_from({**R1, "num_gpus": 8, "num_nodes": 2, "tp": 8, "pp": 2})
    timer = step_timer(s, load_model("deepseek-r1"), load_gpu(s.gpu), Network(inter_node="infiniband",
                                                                                inter_node_gbps=1600))
    hop = timer.decode_parts(32, 2048)["pipeline_across_nodes"]
    link = timer.inter
    assert hop == pytest.approx(link.latency_s + 2 * 32 * 7168 * 2 / link.bytes_per_s)


def test_recommend_searches_serving_across_nodes():
    rec = gpuplan.recommend({"model": "deepseek-r1", "task": "infer", "engine": "vllm"}, gpus=["a100-80gb"],
                            max_gpus=16)
    assert rec.setups and {x.num_gpus for x in rec.setups} == {16}
    assert all(x.scenario.num_nodes == 2 and x.scenario.pp == 2 and x.scenario.tp == 8 for x in rec.setups)
    assert all(x.gpus_per_instance == 8 for x in rec.setups)


def test_serving_refusals_name_a_serving_fix():
    with pytest.raises(GpuplanError, match="keep tp at most 8 and split across nodes with pp"):
        gpuplan.estimate({**R1, "num_gpus": 8, "num_nodes": 2, "tp": 16, "pp": 1})
    with pytest.raises(GpuplanError, match="one copy of the model across them"):
        gpuplan.estimate({**R1, "num_gpus": 8, "num_nodes": 2, "tp": 8, "pp": 1})
    from typer.testing import CliRunner

    from gpuplan.cli import app

    out = CliRunner().invoke(app, ["cost", "--model", "deepseek-r1", "--task", "infer", "--engine", "vllm",
                                   "--gpu", "a100-80gb"]).stdout
    assert "no offer in force fits" in out and "QLoRA" not in out and "--quant" in " ".join(out.split())
    rec = gpuplan.recommend({"model": "deepseek-r1", "task": "infer", "engine": "vllm"}, gpus=["a100-80gb"])
    assert not rec.setups and any("--max-gpus 16" in c for c in rec.changes)
    assert not any("LoRA" in c for c in rec.changes)
