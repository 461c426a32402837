"""Owned and unpriced cards get hours and an energy cost in ``estimate`` (issue 35; the third new-user review:
``estimate`` on an RTX 4070 Ti SUPER, which no offer prices, printed no hours at all while ``recommend --have`` gave
1.4 h). One place prices them, the Plan builder, on :func:`gpuplan.market.offers.owned_offer`, the offer
``recommend --have`` ranks: so the two commands give the same hours and dollars for the same setup."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.cli import run
from gpuplan.hardware import load_gpu
from gpuplan.market.owned_power import home_kwh
from gpuplan.owning.power import electricity_price

JOB = dict(model="qwen3-8b", task="train", method="qlora", framework="unsloth", samples=2000, mean_tokens=650)


def test_an_unpriced_card_is_priced_by_its_power():
    plan = gpuplan.estimate(JOB | {"gpu": "rtx-4070-ti-super"})
    c = plan.cost
    assert c is not None and c.pricing == "owned" and c.offer == "your 1x rtx-4070-ti-super (power only)"
    # hand calculation: 285 W under load x PUE 1.0 x $0.16/kWh (us residential 2023, as buy prices it) = $0.0456
    watts = load_gpu("rtx-4070-ti-super").tdp_w
    assert watts == 285
    assert c.usd_per_hour == pytest.approx(0.285 * 0.16, rel=1e-12)
    assert electricity_price().usd_per_kwh == home_kwh()[0] == 0.16  # buy's default price is the same kWh
    # hours: the data's 1,300,000 tokens at the plan's speed
    assert plan.scenario["train_tokens"] == 1_300_000
    assert c.hours == pytest.approx(1_300_000 / plan.speed.tokens_per_s / 3600, rel=1e-9)
    assert c.usd_total == pytest.approx(c.hours * c.usd_per_hour, rel=1e-9)
    assert "no price for GeForce RTX 4070 Ti SUPER: no offer of it at all; priced as your own card, by its power " \
        "(--pricing owned)" in plan.warnings
    assert any(a.startswith("cost: your 1x rtx-4070-ti-super (power only): 285 W per card") for a in plan.assumptions)


def test_pricing_owned_matches_recommend_have():
    """The setup ``recommend --have`` ranks first on the user's own RTX 4090, priced by ``estimate --pricing owned``:
    the same hours, dollars per hour and total."""
    fields = dict(model="llama-3.1-8b", task="train", method="qlora", train_tokens=1e8)
    rec = gpuplan.recommend(fields, have=["1x4090"], gpus=["rtx-4090"])
    assert rec.owned
    x = rec.owned[0]
    plan = gpuplan.estimate(x.scenario.model_copy(update={"pricing": "owned"}))
    assert plan.cost.pricing == "owned" and not any("no price" in w for w in plan.warnings)
    assert plan.cost.usd_per_hour == pytest.approx(x.usd_per_hour, rel=1e-12)
    assert plan.cost.hours == pytest.approx(x.hours, rel=1e-9)
    assert plan.cost.usd_total == pytest.approx(x.usd_total, rel=1e-9)
    assert plan.speed.tokens_per_s == pytest.approx(x.tokens_per_s, rel=1e-9)
    # the same card rented is another answer
    rented = gpuplan.estimate(x.scenario).cost
    assert rented.pricing == "on_demand" and rented.usd_per_hour > 2 * plan.cost.usd_per_hour


def test_the_cli_prints_hours_for_an_owned_card(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    assert run(["estimate", "--model", "qwen3-8b", "--task", "train", "--method", "qlora", "--framework", "unsloth",
                "--gpu", "rtx-4070-ti-super", "--samples", "2000", "--mean-tokens", "650"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("cost: "))
    plan = gpuplan.estimate(JOB | {"gpu": "rtx-4070-ti-super"})
    assert line.startswith("cost: your 1x rtx-4070-ti-super (power only) at $0.05/h")
    assert line.endswith(f"; {plan.cost.hours:,.1f} h, ${plan.cost.usd_total:,.2f} in all")


def test_launch_files_say_the_hours_on_an_owned_card(tmp_path, capsys):
    assert run(["launch", "--model", "qwen3-8b", "--task", "train", "--method", "qlora", "--framework", "unsloth",
                "--gpu", "rtx-4070-ti-super", "--samples", "2000", "--mean-tokens", "650", "--pricing", "owned",
                "-o", str(tmp_path / "out")]) == 0
    header = (tmp_path / "out" / "unsloth_train.py").read_text()
    predicted = next(x for x in header.splitlines() if x.startswith("# predicted: "))
    assert " h, $0.05/h, $0.0" in predicted and predicted.endswith(" in total")


@pytest.mark.parametrize("command", [["cost"], ["recommend"]])
def test_commands_that_rank_rentals_refuse_pricing_owned(command, capsys):
    code = run([*command, "--model", "qwen3-8b", "--task", "train", "--pricing", "owned"])
    assert code == 2
    assert capsys.readouterr().err.startswith("error: --pricing owned ")


@pytest.mark.parametrize("given, cards", [
    (["1x3090,1x4090"], ["1x3090", "1x4090"]), (["1x3090", " 2x4090 , "], ["1x3090", "2x4090"]),
    ("2x3090,1x4090", ["2x3090", "1x4090"]), ([("rtx-3090", 2), "1x4090"], [("rtx-3090", 2), "1x4090"]),
])
def test_have_takes_cards_comma_separated_as_repeated(given, cards):
    """``--have 1x3090,1x4090`` was one card named "1x3090,1x4090" ("unknown GPU"); the option is repeatable and
    comma-separated cards are split as ``--target`` splits targets."""
    from gpuplan.api.arguments import haves_of

    assert haves_of(given) == cards


def test_have_names_nothing_is_one_sentence(capsys):
    code = run(["recommend", "--model", "qwen2.5-0.5b", "--task", "infer", "--have", ","])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: have names nothing") and "\n" not in err


def test_recommend_ranks_every_card_of_a_comma_separated_have():
    answer = gpuplan.recommend({"model": "qwen2.5-0.5b", "task": "infer"}, have=["1x3090,1x4090"], top=2)
    assert [(x.gpu_id, x.num_gpus, x.owned) for x in answer.owned] == [
        ("nvidia-geforce-rtx-3090", 1, True), ("nvidia-geforce-rtx-4090", 1, True)]
