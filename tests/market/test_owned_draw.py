"""One rule for a card's draw under load (:func:`gpuplan.market.owned_power.busy_draw`), read by a plan on one's own
cards and by ``gpuplan buy``. Before, a plan priced a card with no TDP on file (Apple silicon) at 300 W, an
unsourced figure, while ``buy`` took the Mac's draw as Apple measured it at the wall: an M2 Max Mac Studio was
$0.048 an hour of work in ``estimate`` and $0.0232 in ``buy`` (145 W). Now both read the card's TDP or power limit,
else the computer's measured draw (data/owning.yaml ``computers``: support.apple.com/en-us/102027 for the Mac
Studio, 103253 for the Mac mini), else nothing:
``buy`` asks for ``--host-w``, a plan is not priced by power, and ``recommend --have`` says so in one sentence."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.cli import run
from gpuplan.hardware import gpus, load_gpu
from gpuplan.market.owned_power import busy_draw, computer_draw, home_kwh
from gpuplan.owning.builds import make_build
from gpuplan.owning.plans import JobPlan
from gpuplan.owning.power import electricity_price
from gpuplan.owning.tco import own

SERVE = dict(model="qwen3-0.6b", task="infer")


def test_the_draw_of_a_card_and_of_a_computer_without_a_tdp():
    assert busy_draw(load_gpu("rtx-4090")) == (450.0, "its TDP")
    assert busy_draw(load_gpu("apple-m2-max")) == (145.0, "the computer's measured draw at work")  # Apple: Max 145 W
    assert busy_draw(load_gpu("apple-m1-ultra")) == (215.0, "the computer's measured draw at work")  # Max 215 W
    assert busy_draw(load_gpu("apple-m3-max")) is None  # no TDP and no figure of Apple's on file


# Apple's wall figures (idle, max W), each on the page of the desktop it was measured in: the Mac Studio (102027;
# its 2025 revision for M4 Max and M3 Ultra) and the Mac mini (103253: M2 Pro 2023, M4 and M4 Pro 2024).
APPLE = {"apple-m1-max": (11, 115, "102027"), "apple-m1-ultra": (13, 215, "102027"),
         "apple-m2-max": (9, 145, "102027"), "apple-m2-ultra": (10, 295, "102027"),
         "apple-m4-max": (6, 145, "102027"), "apple-m3-ultra": (9, 270, "102027"),
         "apple-m2-pro": (7, 100, "103253"), "apple-m4": (4, 65, "103253"), "apple-m4-pro": (5, 140, "103253")}


@pytest.mark.parametrize("gpu_id", sorted(APPLE))
def test_each_macs_wall_figures_and_their_page(gpu_id):
    idle, busy, page = APPLE[gpu_id]
    drawn = computer_draw(gpu_id)
    assert (drawn.idle_w, drawn.busy_w) == (idle, busy)
    assert drawn.url == f"https://support.apple.com/en-us/{page}"
    assert f"Idle {idle} W" in drawn.where and f"Max {busy} W" in drawn.where
    assert ("Mac mini" if page == "103253" else "Mac Studio") in drawn.where
    assert busy_draw(load_gpu(gpu_id)) == (busy, "the computer's measured draw at work")


def test_only_the_laptop_chips_have_no_draw():
    """Apple publishes wall figures for its desktops only: the M3 Pro and M3 Max were sold in MacBook Pros alone."""
    apple = [g.id for g in gpus().values() if g.vendor == "Apple"]
    assert sorted(g for g in apple if busy_draw(load_gpu(g)) is None) == ["apple-m3-max", "apple-m3-pro"]
    assert sorted(g for g in apple if g not in ("apple-m3-max", "apple-m3-pro")) == sorted(APPLE)


def test_a_macs_hour_in_a_plan_is_buys_busy_hour():
    """M2 Max, one computer, PUE 1.0, $0.16/kWh (us residential 2023): 145 W x 1 h = 0.145 kWh = $0.0232, in both."""
    plan = gpuplan.estimate(SERVE | {"gpu": "apple-m2-max"})
    assert home_kwh()[0] == 0.16
    assert plan.cost.offer == "your 1x apple-m2-max (power only)"
    assert plan.cost.usd_per_hour == pytest.approx(0.145 * 0.16, rel=1e-12)  # was 0.300 x 0.16 = $0.048
    assert any(a.startswith("cost: your 1x apple-m2-max (power only): 145 W per card under load (the computer's "
                            "measured draw at work) x PUE 1.0 x $0.16/kWh") for a in plan.assumptions)
    hour = JobPlan(job="use", setup="", runs=True, busy_hours_per_year=1, busy_hours_per_year_low=1)
    o = own(make_build("apple-m2-max", price=2000), [hour], 1, electricity_price())
    assert o.busy_w == 145
    assert o.busy_w / 1000 * o.power.pue * o.electricity.usd_per_kwh == pytest.approx(plan.cost.usd_per_hour)


def test_a_chip_with_no_draw_on_file_is_not_priced():
    plan = gpuplan.estimate(SERVE | {"gpu": "apple-m3-max"})
    assert plan.cost is None and plan.speed.tokens_per_s > 0
    assert [w for w in plan.warnings if w.startswith("no price")] == [
        "no price for M3 Max (40-core GPU, up to 128GB): no offer of it at all, and no power draw on file to price it "
        "as your own card by (no TDP in the GPU catalog, no measured draw of its computer in data/owning.yaml; "
        "`gpuplan buy --host-w W` prices yours)"]


def test_recommend_have_of_such_a_chip_is_one_sentence(capsys):
    assert run(["recommend", "--model", "gemma-3-1b", "--task", "infer", "--engine", "llama.cpp", "--have",
                "1xapple-m3-max"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --have 1xapple-m3-max: no power draw on file for M3 Max") and err.count("\n") == 1
