"""The step's breakdown adds up in every interface: the parts sum to the step they describe (the Python API and
``--json``), and the shares printed (the CLI's ``step:`` line, the page's, from :meth:`Speed.step_shares`) sum to
100%. The web page's own check is in tests/web/test_web_page.py.

The third new-user review found ``step: gemm 563%, attention 152%`` whenever data was given: the step was timed
at the data's batch lengths while the parts stayed those of a full ``seq_len`` row (7.47 s of parts for a 1.22 s
step)."""

from __future__ import annotations

import json
import re

import pytest

import gpuplan
from gpuplan.cli import run
from gpuplan.speed.breakdown import Speed

SCENARIOS = {
    # the review's repro: padded batches of a log-normal mix (dataset/mix.py times 6 batch lengths)
    "padded-mix": dict(model="qwen3-8b", task="train", method="qlora", gpu="rtx-4070-ti-super", samples=2000,
                       mean_tokens=650, framework="unsloth"),
    # packed rows (bfd): the per-token parts scale with the fill
    "packed": dict(model="qwen3-8b", task="train", method="qlora", gpu="rtx-4070-ti-super", samples=2000,
                   mean_tokens=650, seq_len=4096, framework="unsloth"),
    "no-data": dict(model="qwen3-8b", task="train", method="lora", gpu="h100-sxm", num_gpus=4),
    "decode": dict(model="qwen3-8b", task="infer", gpu="h100-sxm", batch_size=32),
}


def flags(fields: dict) -> list[str]:
    return [a for k, v in fields.items() for a in (f"--{k.replace('_', '-')}", str(v))]


@pytest.fixture(scope="module", params=list(SCENARIOS))
def case(request):
    fields = SCENARIOS[request.param]
    return fields, gpuplan.estimate(fields)


def test_parts_add_up_to_the_step_in_the_api(case):
    _, plan = case
    sp = plan.speed
    assert len(sp.parts_s) >= 3
    assert sum(sp.parts_s.values()) == pytest.approx(sp.step_time_s, rel=1e-9)
    if plan.scenario["task"] == "train":  # the micro-steps' busy time is a part of the step it describes
        assert 0 < sp.compute_s <= sp.step_time_s * (1 + 1e-9)


def test_no_part_is_longer_than_its_step(case):
    """Each part is a share of the step it belongs to: none above the step itself (was gemm 563%)."""
    _, plan = case
    assert max(plan.speed.parts_s.values()) <= plan.speed.step_time_s


def test_json_parts_add_up(case, capsys):
    fields, plan = case
    assert run(["estimate", *flags(fields), "--json"]) == 0
    sp = json.loads(capsys.readouterr().out)["speed"]
    assert sum(sp["parts_s"].values()) == pytest.approx(sp["step_time_s"], rel=1e-9)
    assert sp["parts_s"] == pytest.approx(plan.speed.parts_s, rel=1e-12)


def test_cli_step_line_sums_to_100(case, capsys, monkeypatch):
    fields, plan = case
    monkeypatch.setenv("COLUMNS", "400")  # one line, unwrapped
    assert run(["estimate", *flags(fields)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if re.match(r"\s*(decode )?step: ", x))
    shown = [(name.strip(), int(pct)) for name, pct in re.findall(r"([a-z ]+?) (\d+)%", line.split(": ", 1)[1])]
    assert sum(pct for _, pct in shown) == 100, line
    assert shown == [(k.replace("_", " "), pct) for k, pct in plan.speed.step_shares()]


def test_step_shares_round_to_exactly_100():
    """Largest-remainder rounding: three equal thirds are 34, 33, 33, not 33 x 3; the tail beyond ``top`` is one
    ``other``; a part under half a percent drops out."""
    sp = Speed(tokens_per_s=1.0, step_time_s=3.0, bound="compute", parts_s={"a": 1.0, "b": 1.0, "c": 1.0})
    assert sorted(pct for _, pct in sp.step_shares()) == [33, 33, 34]
    sp = Speed(tokens_per_s=1.0, step_time_s=1.0, bound="compute",
               parts_s={"a": 0.5, "b": 0.2, "c": 0.1, "d": 0.1, "e": 0.06, "f": 0.04})
    assert sp.step_shares(top=4) == [("a", 50), ("b", 20), ("c", 10), ("other", 20)]
    assert sp.step_shares(top=6) == [("a", 50), ("b", 20), ("c", 10), ("d", 10), ("e", 6), ("f", 4)]
    sp = Speed(tokens_per_s=1.0, step_time_s=1.0, bound="compute", parts_s={"a": 0.996, "b": 0.004})
    assert sp.step_shares() == [("a", 100)]
    assert Speed(tokens_per_s=1.0, step_time_s=1.0, bound="compute").step_shares() == []
