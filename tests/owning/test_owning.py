"""Owning GPUs (issue 33): the sourced figures, the cost of owning worked by hand, the build checks, buy vs rent, and
the buying advisor against docs/owning.md's case worked by hand."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import gpuplan
from gpuplan.errors import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.owning.builds import make_build
from gpuplan.owning.checks import build_checks
from gpuplan.owning.compare import break_even_months, break_even_utilization
from gpuplan.owning.facts import host_for, host_profiles, owning_facts
from gpuplan.owning.plans import JobPlan, job_plan
from gpuplan.owning.power import HOURS_PER_YEAR, electricity_price, energy
from gpuplan.owning.prices import card_price
from gpuplan.owning.resale import consumer_rate, depreciation_of
from gpuplan.owning.tco import own
from gpuplan.owning.workloads import load_workloads

ROOT = Path(__file__).resolve().parents[2]
WEEKLY = ROOT / "examples" / "weekly-8b-finetunes.yaml"


@pytest.fixture(autouse=True)
def _pinned_day(monkeypatch):
    monkeypatch.setenv("GPUPLAN_TODAY", "2026-11-28")  # the offers in force, as the golden answers have them


def test_every_figure_has_a_source():
    facts = owning_facts()
    rows = [r for rows in facts["street_prices"].values() for r in rows]
    assert len(rows) >= 12
    for r in rows:
        assert r["url"].startswith("https://") and r["where"] and r["date"], r
        assert r["condition"] in ("new", "used")
    regions = facts["electricity"]["regions"]
    assert len(regions) >= 10
    assert all(r["url"].startswith("https://") and r["where"] for r in regions.values())
    for profile in host_profiles().values():
        assert profile.sources or profile.usd is None, profile.id  # a priced profile says where the price is from
        assert profile.sources[0].url.startswith("https://") if profile.sources else True


def test_derived_figures_follow_from_their_sources():
    """The consumer rate is the RTX 3090's $1,499 -> $700 over 5.75 years; the data-center rate the median of
    SpotWire's four measured decays; the idle share the median of the five captures' W / TDP."""
    assert consumer_rate() == pytest.approx(1 - (700 / 1499) ** (1 / 5.75))
    assert consumer_rate() == pytest.approx(0.1240, abs=1e-4)
    decays = sorted([54.5, 28.2, 36.5, -0.6])
    assert owning_facts()["depreciation"]["datacenter"]["per_year"] == pytest.approx(
        (decays[1] + decays[2]) / 200, abs=1e-3)
    idle = owning_facts()["idle"]
    shares = sorted(v["w"] / load_gpu(k).tdp_w for k, v in idle["watts"].items())
    assert len(shares) == 5
    assert idle["idle_share_of_tdp"] == pytest.approx(shares[2], abs=1e-3)
    assert depreciation_of(load_gpu("h100-sxm")).kind == "datacenter"
    assert "no used-market study" in depreciation_of(load_gpu("dgx-spark")).note


def test_card_prices_street_msrp_given_and_missing():
    p = card_price(load_gpu("rtx-5090"))
    assert (p.usd, p.kind, p.date) == (2699, "street new", "2026-06-22") and "signal-noise" in p.source
    assert card_price(load_gpu("rtx-3090")).kind == "street used"  # no new 3090 is sold: the used price
    assert card_price(load_gpu("rtx-4080")).kind == "launch MSRP"
    assert card_price(load_gpu("rtx-4080")).usd == 1199
    assert card_price(load_gpu("rtx-5090"), given=3000).kind == "given"
    with pytest.raises(GpuplanError, match="--price"):
        card_price(load_gpu("apple-m4-max"))  # only the 36 GB configuration is priced
    with pytest.raises(GpuplanError, match="no used price"):
        card_price(load_gpu("rtx-5090"), used=True)


def test_a_price_for_the_builds_card_prices_it_and_one_that_prices_nothing_is_refused():
    """``buy 2x3090 --price 3090=100`` was answered at the $700 street price (CARD=USD read only in a search), and
    ``--price 4090=5`` on that build, or a bare ``--price 100`` in a budget search, priced nothing without a word
    (session 18's fuzzing). Hand arithmetic: 2 cards x $100 given + the desktop host's $1,500 = $1,700."""
    for given in (gpuplan.buy("2x3090", prices={"3090": 100}, hours=100),
                  gpuplan.buy("2x3090", price=100, prices={"rtx-3090": 100}, hours=100)):
        build = given.builds[0].build
        assert (build.card.usd, build.card.kind, build.count * build.card.usd + build.host_usd) == (100, "given", 1700)
    with pytest.raises(GpuplanError, match="is for rtx-4090, a card the build of rtx-3090 does not hold"):
        gpuplan.buy("2x3090", prices={"4090": 5}, hours=100)
    with pytest.raises(GpuplanError, match=r"two prices for the build's rtx-3090 \(100 and 200 USD\)"):
        gpuplan.buy("2x3090", price=100, prices={"3090": 200}, hours=100)
    with pytest.raises(GpuplanError, match="names no card, and a search prices several"):
        gpuplan.buy(budget_usd=4000, workloads=ROOT / "examples" / "owning-example.yaml", price=100)


def test_electricity_by_region_and_given():
    assert electricity_price("us-ca").usd_per_kwh == pytest.approx(0.2951)
    assert electricity_price("us-ca", "commercial").usd_per_kwh == pytest.approx(0.2391)
    assert electricity_price("de").usd_per_kwh == pytest.approx(0.3835 * 1.0968)
    assert "no commercial figure for de" in electricity_price("de", "commercial").label
    assert electricity_price(usd_per_kwh=0.31).usd_per_kwh == 0.31
    with pytest.raises(GpuplanError, match="did you mean"):
        electricity_price("us-cx")


def test_energy_is_busy_hours_at_busy_draw_and_the_rest_idle():
    price = electricity_price(usd_per_kwh=0.25)
    e = energy(1000, 100, 2000, 8766, 1.2, price)
    assert e.kwh == pytest.approx((2000 * 1000 + 6766 * 100) / 1000 * 1.2)
    assert e.usd == pytest.approx(e.kwh * 0.25)
    off = energy(1000, 100, 2000, 8766, 1.0, price, off_when_idle=True)
    assert off.kwh == pytest.approx(2000.0)


def _use(hours: float) -> JobPlan:
    return JobPlan(job="use", setup="", runs=True, busy_hours_per_year=hours, busy_hours_per_year_low=hours * 1.25)


def test_cost_of_owning_by_hand():
    """2x RTX 5090 at $2,500 in the desktop profile ($1,500; 450 W busy, 60 W idle), 1,000 h of work a year (1,250 at
    the low end), 2 years, $0.30/kWh, PUE 1.1, $200 a year of maintenance and $50 a month of space."""
    b = make_build("rtx-5090", 2, price=2500)
    price = electricity_price(usd_per_kwh=0.30)
    o = own(b, [_use(1000)], 2, price, pue=1.1, maintenance_usd_per_year=200, space_usd_per_month=50)
    idle_w = 2 * 575 * 0.094 + 60
    busy_w = 2 * 575 + 450
    assert (o.busy_w, o.idle_w) == (pytest.approx(busy_w), pytest.approx(idle_w))
    hours = 2 * HOURS_PER_YEAR
    kwh_low = (2500 * busy_w + (hours - 2500) * idle_w) / 1000 * 1.1
    resale = 5000 * (1 - consumer_rate()) ** 2
    assert o.resale_usd == pytest.approx(resale)
    assert o.total_usd_low == pytest.approx(5000 + 1500 + 400 + 1200 + kwh_low * 0.30 - resale)
    assert o.utilization_low == pytest.approx(2500 / hours)


def test_a_job_on_one_card_of_a_build_draws_the_others_idle_by_hand():
    """4x RTX 5090 in the desktop profile (450 W busy): 1,000 h a year of a module job on one card (the other three
    at 575 W x 0.094 idle) and 3,000 h of a job on all four. Busy draw, averaged over the 4,000 h:
    4 x 575 + 450 - (1,000 x 3 / 4,000) x 575 x (1 - 0.094) = 2,750 - 0.75 x 521.05 = 2,359.2 W."""
    b = make_build("rtx-5090", 4, price=2500)
    one = _use(1000).model_copy(update={"cards": 1})
    o = own(b, [one, _use(3000)], 1, electricity_price(usd_per_kwh=0.30))
    assert o.spare_cards == pytest.approx(0.75)
    assert o.busy_w == pytest.approx(4 * 575 + 450 - 0.75 * 575 * (1 - 0.094))
    assert o.busy_w == pytest.approx(2359.2, abs=0.1)
    alone = own(b, [one], 1, electricity_price(usd_per_kwh=0.30))
    assert alone.busy_w == pytest.approx(575 + 3 * 575 * 0.094 + 450)


def test_break_even_months_and_utilization_by_hand():
    """Owning: $10,000 up front, nothing kept (a card class losing 100 % a year is not real: it makes the sums
    plain), no power (0 $/kWh). Renting the same work: $5,000 a year. Break-even: month 24. Utilization: owning
    costs the purchase whatever the work, so renting must cost $10,000 over the horizon: 2x the work."""
    b = make_build("rtx-5090", 1, price=10000 - 1500)
    o = own(b, [_use(1000)], 1, electricity_price(usd_per_kwh=0.0))
    o = o.model_copy(update={"depreciation": o.depreciation.model_copy(update={"per_year": 1.0}), "resale_usd": 0.0})
    assert break_even_months(o, 5000) == 24
    assert break_even_utilization(o, 5000) == pytest.approx(2 * o.busy_hours_low / HOURS_PER_YEAR)
    assert break_even_utilization(o, 1) is None  # the share would pass every hour of the year


def test_build_checks_8x5090():
    b = make_build("rtx-5090", 8, host_usd=6000)
    checks = {c.name: c for c in build_checks(b, [])}
    power = checks["power supply"].line
    assert "8 x 575 W + 1,300 W host = 5,900 W sustained" in power
    assert "7,550 W" in power  # (3 x 4,600 + 1,300) / 2: the cards' spikes against a supply's 2x
    assert checks["circuits"].line.startswith("5,900 W continuous needs 5 circuit(s) of 1,440 W")
    assert checks["slot width"].status == "ok"  # 2-slot Founders Edition cards in 8 double-width bays
    assert checks["cooling"].status == "warn" and "90 mm" in checks["cooling"].line
    assert "no NVLink" in checks["NVLink"].line and "peer-to-peer off" in checks["NVLink"].line
    assert all(c.source for c in checks.values() if c.status in ("warn", "fail"))


def test_the_circuits_are_the_electricity_regions_own():
    """s13 walk: `buy 2x4090 --region de` checked a US 15 A, 120 V circuit. A European region's is a 230 V socket
    circuit behind 16 A whose sockets carry 10 A continuously (elektrofachkraft.de): 10 x 230 = 2,300 W. Eight
    5090s and their host draw 5,900 W: 5,900 / 2,300 -> 3 circuits there, 5,900 / (0.8 x 1,800) -> 5 in the US."""
    assert [electricity_price(r).circuit for r in ("de", "eu", "hu", "us", "us-ca")] == \
        ["europe", "europe", "europe", "us", "us"]
    assert electricity_price(usd_per_kwh=0.3).circuit == "us"
    b = make_build("rtx-5090", 8, host_usd=6000)
    here = {c.name: c for c in build_checks(b, [], "europe")}["circuits"]
    assert here.line.startswith("5,900 W continuous needs 3 circuit(s) of 2,300 W: a European 230 V, 16 A")
    assert here.status == "warn" and "elektrofachkraft.de" in here.source and "three-phase" in here.line
    small = {c.name: c for c in build_checks(make_build("rtx-4090", 2), [], "europe")}["circuits"]
    assert small.status == "ok" and small.line.startswith("1,350 W continuous needs 1 circuit(s) of 2,300 W")
    assert {c.name: c for c in build_checks(b, [])}["circuits"].line.startswith("5,900 W continuous needs 5 ")


def test_build_checks_that_fail():
    three_slot = {c.name: c for c in build_checks(make_build("rtx-4090", 4, host="epyc-4gpu"), [])}
    assert three_slot["slot width"].status == "fail"  # 3-slot cards in single-pitch slots 1, 4 and 7: 3 fit of 4
    assert "3 fit, 4 asked" in three_slot["slot width"].line
    passive = {c.name: c for c in build_checks(make_build("h100-pcie", 2, price=25000), [])}
    assert passive["cooling"].status == "fail" and "passive" in passive["cooling"].line
    assert "pairs" in passive["NVLink"].line
    psu = {c.name: c for c in build_checks(make_build("rtx-5090", 4, host="epyc-4gpu"), [])}
    assert psu["power supply"].status == "fail"  # 4 x 575 W spikes need more than the board's 1600 W supply


def test_host_ram_and_display_against_the_plans():
    """A job whose Plan keeps 70B optimizer states in host memory does not fit the desktop's 64 GiB; --host-ram
    256 does. A Linux desktop on the card holds 400 MiB of it, counted by the job's Plan (the scenario's display, as
    estimate --display counts it), and the display check reads that plan."""
    w = load_workloads([{"per_year": 1, "scenario": {"model": "llama-3.1-8b", "task": "train", "method": "full",
                                                      "train_tokens": 1e6, "sharding": "zero3",
                                                      "offload": "optimizer+params"}}])
    plan = job_plan(w.workloads[0], load_gpu("rtx-4090"), 2, owned=True)
    assert plan.cpu_gib > 64
    small = {c.name: c for c in build_checks(make_build("rtx-4090", 2), [plan])}
    assert small["host RAM"].status == "fail" and "64 GiB" in small["host RAM"].line
    big = {c.name: c for c in build_checks(make_build("rtx-4090", 2, host_ram_gib=256), [plan])}
    assert big["host RAM"].status == "ok"
    with_desktop = job_plan(w.workloads[0], load_gpu("rtx-4090"), 2, owned=True, display="linux")
    assert with_desktop.scenario["display"] == "linux"
    assert with_desktop.device_peak_gib == pytest.approx(plan.device_peak_gib + 400 / 1024, abs=0.011)
    shown = [c for c in build_checks(make_build("rtx-4090", 2, display="linux"), [with_desktop])
             if c.name == "display"]
    assert len(shown) == 1 and "the desktop (linux) holds 0.39 GiB of the card" in shown[0].line
    assert f"{with_desktop.device_peak_gib:,.1f} of {with_desktop.capacity_gib:,.1f} GiB" in shown[0].line
    with pytest.raises(GpuplanError, match="--display takes linux, windows or none"):
        make_build("rtx-4090", 2, display="mac")


@pytest.mark.parametrize("ram", [0, 0.5])
def test_a_host_without_ram_is_refused(ram):
    """s22 fuzz: 'buy 2x3090 --host-ram 0 --utilization 0.5' priced the build and checked it 'ok: no job keeps
    anything in host memory; the host has 0 GiB', a computer that cannot boot. Its RAM starts at 1 GiB."""
    with pytest.raises(GpuplanError, match=r"--host-ram must be between 1 and 65,536, got 0"):
        make_build("rtx-3090", 2, host_ram_gib=ram)
    assert make_build("rtx-3090", 2, host_ram_gib=1).host_ram_gib == 1


def test_unified_memory_computers_are_bought_whole():
    spark = make_build("dgx-spark")
    assert spark.host_usd == 0 and spark.purchase_usd == 3999 and spark.whole_computer
    assert spark.host_ram_gib == pytest.approx(128 - 115.85)
    assert load_gpu("dgx-spark").usable_gib == pytest.approx(115.85)
    assert load_gpu("amd-ryzen-ai-max-plus-395").usable_gib == 96.0
    with pytest.raises(GpuplanError, match="at most 2 link with one cable"):
        make_build("dgx-spark", 3)
    with pytest.raises(GpuplanError, match="buy one"):
        make_build("amd-ryzen-ai-max-plus-395", 2)  # no sourced way to link several


def test_a_mac_draws_what_apple_measured_at_the_wall_never_0_w():
    """A Mac's chip has no TDP in the catalog: the M2 Max Mac Studio draws 145 W at work and 9 W at rest at the wall
    (support.apple.com/en-us/102027), so 1,000 h of work a year and the rest idle at $0.20/kWh cost
    (1,000 x 145 + 7,766 x 9) / 1000 = 214.894 kWh, $42.98. An M3 Max (MacBook Pro only) has no published figure:
    the user gives it (one sentence naming --host-w), and the advisor says so instead of ranking it at 0 W."""
    mac = make_build("apple-m2-max", price=2000)
    assert (mac.host_busy_w, mac.host_idle_w, mac.host_usd) == (145, 9, 0)
    o = own(mac, [_use(1000)], 1, electricity_price(usd_per_kwh=0.20))
    assert (o.busy_w, o.idle_w) == (145, 9)
    assert o.power.kwh == pytest.approx((1000 * 145 + (HOURS_PER_YEAR - 1000) * 9) / 1000)
    assert o.power.usd == pytest.approx(42.9788)
    power_check = next(c for c in build_checks(mac, []) if c.name == "power supply")
    assert "145 W at work" in power_check.line and "support.apple.com" in power_check.source
    with pytest.raises(GpuplanError, match=r"no published power draw for M3 Max.*--host-w"):
        make_build("apple-m3-max", price=3500)
    given = make_build("apple-m3-max", price=3500, host_w=200, host_idle_w=10)
    assert (given.host_busy_w, given.host_idle_w) == (200, 10)
    spark = make_build("dgx-spark")  # a chip with a TDP: the TDP is the draw, nothing added
    assert (spark.host_busy_w, spark.host_idle_w) == (0, 0)
    report = gpuplan.buy(budget_usd=5000, workloads=ROOT / "examples" / "owning-example.yaml",
                         gpus=["apple-m3-max", "apple-m2-max"], prices={"apple-m3-max": 3500, "apple-m2-max": 2000},
                         usd_per_kwh=0.2)
    assert [b.build.label for b in report.builds] == ["1x apple-m2-max"]
    assert any("no published power draw for apple-m3-max" in u for u in report.unranked)


def test_two_dgx_sparks_linked_serve_qwen3_235b():
    """Two DGX Sparks joined by one QSFP cable: bought as two whole computers, each job planned as two nodes of one
    GPU over their ConnectX-7 RoCE link (200 Gb/s), the 235B model split by tensor parallel 2 across them as the
    published two-Spark runs do. conselara.dev/notes/dgx-spark-benchmarks measured Qwen3-235B-A22B-GPTQ-Int4 on such
    a pair (vLLM, TP 2, fp8 KV cache): 57.64 GiB of weights resident per node and 17.0 tokens/s for one request of
    256 output tokens."""
    pair = make_build("dgx-spark", 2)
    assert pair.purchase_usd == 2 * 3999 and pair.host_usd == 0 and pair.host_ram_gib == pytest.approx(128 - 115.85)
    assert any("one GPU per node" in n for n in pair.notes)
    job = load_workloads([{"name": "235B", "hours_per_day": 8, "scenario": {
        "model": "qwen3-235b-a22b", "task": "infer", "engine": "vllm", "quant": "gptq-int4", "kv_cache_dtype": "fp8",
        "batch_size": 1, "output_tokens": 256, "gpu_memory_utilization": 0.87}}]).workloads[0]
    plan = job_plan(job, load_gpu("dgx-spark"), 2, owned=True, host_ram_gib=pair.host_ram_gib)
    assert plan.runs and not plan.change
    sc = plan.scenario
    assert (sc["num_gpus"], sc["num_nodes"], sc["tp"], sc["pp"]) == (1, 2, 2, 1)
    assert plan.plan.memory.weights_gib == pytest.approx(57.64, rel=0.01)
    assert plan.tokens_per_s == pytest.approx(17.0, rel=0.05)
    checks = {c.name: c for c in build_checks(pair, [plan])}
    assert checks["link"].status == "ok" and "roce 200 Gb/s" in checks["link"].line
    assert checks["memory pool"].status == "ok"
    one = job_plan(job, load_gpu("dgx-spark"), 1, owned=True)
    assert not one.runs and "does not fit" in one.why_not  # 118 GB of weights: one Spark cannot hold them
    ranked = gpuplan.buy(budget_usd=9000, workloads=[{"name": "235B", "hours_per_day": 8, "scenario": {
        "model": "qwen3-235b-a22b", "task": "infer", "engine": "vllm", "quant": "gptq-int4"}}], gpus=["dgx-spark"])
    assert [(b.build.count, b.runs) for b in ranked.builds] == [(2, 1), (1, 0)]  # the pair, then the one it buys


def test_host_profiles_and_prices():
    assert host_for(1).id == "desktop" and host_for(4).id == "epyc-4gpu" and host_for(8).id == "server-8gpu"
    assert make_build("rtx-3090", 4).host_usd == pytest.approx(4314 - 4 * 750)
    with pytest.raises(GpuplanError, match="--host-usd"):
        make_build("rtx-3090", 8)  # no sourced price for an 8-GPU server
    with pytest.raises(GpuplanError, match="holds 2 cards"):
        make_build("rtx-3090", 4, host="desktop")


def test_workloads_file_refuses_what_it_cannot_price(tmp_path):
    base = {"model": "llama-3.1-8b", "task": "train", "method": "lora", "train_tokens": 1e8}
    for job, words in (({"scenario": base}, "one of per_week"),
                       ({"per_week": 1, "hours_per_day": 2, "scenario": base}, "not per_week and hours_per_day"),
                       ({"per_week": 1, "scenario": {**base, "gpu": "h100"}}, "leave gpu out"),
                       ({"hours_per_day": 8, "scenario": base}, "trains"),
                       ({"per_week": 1, "scenario": {**base, "train_tokens": None}}, "how much it trains")):
        with pytest.raises(GpuplanError, match=words):
            load_workloads([job])
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "jobs.yaml").write_text("workloads:\n  - per_week: 1\n    scenario: ../x.yaml\n")
    with pytest.raises(GpuplanError, match="outside the workloads file's folder"):
        load_workloads(tmp_path / "w" / "jobs.yaml")
    w = load_workloads(WEEKLY)
    assert [j.runs_per_year for j in w.workloads] == [pytest.approx(365.25 / 7)] * 2


def test_a_yes_for_a_workloads_number_is_refused_as_the_page_refuses_it(tmp_path):
    """``per_week: true`` was one run a week and ``years: yes`` one year (pydantic's lax mode) in a workloads file,
    where the page's BuyJob refuses a yes/no for a number (session 18's fuzzing)."""
    job = {"per_week": True, "scenario": {"model": "llama-3.1-8b", "task": "train", "train_tokens": 1e8}}
    with pytest.raises(GpuplanError, match=r"workloads\.0: 'per_week' takes a number, not true"):
        load_workloads([job])
    path = tmp_path / "w.yaml"
    path.write_text("years: yes\nworkloads:\n  - per_week: 1\n    scenario: {model: llama-3.1-8b, task: train, "
                    "train_tokens: 1e8}\n")
    with pytest.raises(GpuplanError, match="'years' takes a number, not true"):
        load_workloads(path)


def test_a_workloads_file_without_its_list_says_what_it_holds(tmp_path):
    """A file whose jobs sit under another key (``jobs:``) read "workloads: workloads: Field required" (session 7's
    walk): now one sentence naming the list and the key found."""
    path = tmp_path / "w.yaml"
    path.write_text("jobs:\n  - per_week: 1\n    scenario: {model: llama-3.1-8b, task: train, train_tokens: 1e8}\n")
    with pytest.raises(GpuplanError) as err:
        load_workloads(path)
    assert str(err.value) == ("workloads: no 'workloads' list of jobs (each a scenario and how often it runs: "
                              "per_week, per_month, per_year, hours_per_day or output_tokens_per_day); found 'jobs'")
    with pytest.raises(GpuplanError, match=r"no 'workloads' list of jobs \(each"):
        load_workloads({"years": 2})


def test_a_job_with_its_scenario_fields_on_itself_is_told_where_they_go(tmp_path):
    """Session 9's walk: a job written as 'name, model, task, method, train_tokens, per_week' (the scenario's fields
    on the job itself) read "a workload's scenario is a mapping of scenario fields", naming neither the job nor
    the key it lacks."""
    path = tmp_path / "w.yaml"
    path.write_text("workloads:\n  - name: weekly LoRA\n    model: qwen3-4b\n    task: train\n    method: lora\n"
                    "    train_tokens: 5e7\n    per_week: 3\n")
    with pytest.raises(GpuplanError) as err:
        load_workloads(path)
    assert str(err.value) == ("workload 'weekly LoRA': no 'scenario' (the job's model, task and method, as a "
                              "scenario file holds them); its model, task, method, train_tokens go under "
                              "'scenario:', beside name and per_week")
    with pytest.raises(GpuplanError, match=r"^workload a job: its scenario is a mapping .* not list$"):
        load_workloads([{"per_week": 1, "scenario": ["llama-3.1-8b"]}])


def _buy_cli(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "gpuplan", "buy", *args, "--json"], capture_output=True, text=True,
                          env={"GPUPLAN_TODAY": "2026-11-28", "PYTHONPATH": str(ROOT / "src"), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_buy_8x5090_vs_rent_8xh100_in_one_command():
    """The issue's question: a year of weekly 8B fine-tunes (LoRA and full), 8x RTX 5090 owned against 8x H100
    rented, with break-even, resale and power; the Python API and the CLI give the same answer."""
    report = gpuplan.buy("8x5090", workloads=WEEKLY, rent=["8xh100-sxm"], host_usd=6000)
    b = report.builds[0]
    assert b.runs == 2 and not b.cannot
    # what the 5090s need: the full fine-tune 8-bit AdamW too; LoRA's 42M-parameter optimizer saves nothing with it
    assert [(j.job, j.change) for j in b.jobs] == [("weekly LoRA", "zero2+gradient checkpointing"), (
        "weekly full fine-tune", "zero2+gradient checkpointing+paged 8-bit AdamW")]
    o = b.ownership
    assert o.purchase_usd == 8 * 2699 + 6000
    assert o.resale_usd == pytest.approx(8 * 2699 * (1 - consumer_rate()))
    assert o.power_low.usd > o.power.usd > 0 and o.busy_hours_low > o.busy_hours
    labels = [r.label for r in report.rentals]
    assert labels[0] == "8x h100-sxm on-demand"
    versus = b.versus[0]
    assert versus.cheaper == "rent" and versus.rent_usd < versus.own_usd
    assert versus.break_even_months is None and 0 < versus.break_even_utilization < 1
    rent = report.rentals[0]
    assert all(j.hours_per_run_low > j.hours_per_run for j in rent.jobs)  # the pessimistic end takes longer
    assert rent.usd_per_year_low == pytest.approx(sum(j.usd_per_year_low for j in rent.jobs))
    cli = _buy_cli("8x5090", "--rent", "8xh100-sxm", "--workloads", str(WEEKLY), "--host-usd", "6000")
    assert cli == json.loads(json.dumps(report.to_dict()))



def test_a_card_no_offer_rents_is_not_rented_at_its_power():
    """No offer rents an RTX 3080: its Plan prices it as the user's own card, by its power ($0.05/h), and buy read
    that as renting it: "own $1,872 vs rent $79 over 1 y -> rent; owning does not pay within 10 years" (an M4 Max:
    rent $257 vs own $1,342). There is no rental of it to compare with: the note says so, --rent names cards that
    are rented."""
    chat = [{"name": "chat", "hours_per_day": 4, "scenario": {"model": "qwen3-4b", "task": "infer",
                                                              "engine": "llama.cpp", "quant": "gguf-q4_k_m"}}]
    report = gpuplan.buy("1x3080", workloads=chat)
    b = report.builds[0]
    assert b.runs == 1 and not report.rentals and not b.versus
    assert report.verdict.startswith("owning 1x rtx-3080: $") and "no rental of the work" in report.verdict
    assert "no offer of 1x rtx-3080 in force to rent: `gpuplan prices --gpu rtx-3080`; --rent names cards to rent " \
        "instead" in report.notes
    rented = gpuplan.buy("1x3080", workloads=chat, rent=["1xrtx-4090"])
    assert [r.label for r in rented.rentals] == ["1x rtx-4090 on-demand"]
    assert rented.rentals[0].jobs[0].usd_per_hour > 0.1  # an offer's price, not a card's power

def test_hours_of_use_without_workloads():
    """No workloads: hours of use against renting the same cards; --utilization is a share of HOURS."""
    by_hours = gpuplan.buy("2x4090", hours=2000, price=1800)
    by_share = gpuplan.buy("2x4090", utilization=2000 / HOURS_PER_YEAR, price=1800)
    assert by_hours.builds[0].ownership.busy_hours == pytest.approx(2000)
    assert by_share.builds[0].ownership.total_usd == pytest.approx(by_hours.builds[0].ownership.total_usd)
    rent = by_hours.rentals[0].jobs[0]
    assert rent.usd_per_year == pytest.approx(rent.usd_per_hour * 2000)
    with pytest.raises(GpuplanError, match="--workloads"):
        gpuplan.buy("2x4090")
    with pytest.raises(GpuplanError, match="one of them"):
        gpuplan.buy("2x4090", budget_usd=5000, workloads=WEEKLY)


def _worked_case() -> dict:
    text = (ROOT / "docs" / "owning.md").read_text(encoding="utf-8")
    block = re.search(r"```owning-example\n(.*?)```", text, re.S)
    assert block, "docs/owning.md lost its worked case"
    return yaml.safe_load(block[1])


def test_the_advisor_ranks_the_case_worked_by_hand_in_the_docs():
    """docs/owning.md ranks three builds for a $4,000 budget by hand: each number of gpuplan's answer is the doc's."""
    case = _worked_case()
    report = gpuplan.buy(budget_usd=4000, workloads=ROOT / "examples" / "owning-example.yaml",
                         gpus=["rtx-3090", "rtx-4090"], prices={"3090": 700, "4090": 1700}, usd_per_kwh=0.2)
    assert [(b.build.gpu_id, b.build.count) for b in report.builds] == [(c["gpu"], c["count"]) for c in case["builds"]]
    runs = report.builds[0].jobs[0]
    assert runs.busy_hours_per_year_low / runs.hours_per_run_low == pytest.approx(case["runs_per_year"], abs=1e-3)
    for b, c in zip(report.builds, case["builds"], strict=True):
        o = b.ownership
        assert b.build.purchase_usd == c["purchase"]
        assert b.jobs[0].hours_per_run_low == pytest.approx(c["hours_low"], rel=1e-4)
        assert (o.busy_w, round(o.idle_w)) == (c["busy_w"], c["idle_w"])
        assert o.power_low.kwh == pytest.approx(c["kwh"], abs=0.01)
        assert o.resale_usd == pytest.approx(c["resale"], abs=0.01)
        assert o.total_usd_low == pytest.approx(c["total"], abs=0.01)
        assert b.usd_per_job == pytest.approx(c["per_job"], abs=0.005)
    assert report.builds[0].renting_wins.startswith("renting wins")
    assert not math.isnan(report.rentals[0].usd_per_year_low)


def test_how_often_is_one_bound_in_runs_a_year():
    """Session 17's second walk (user D, an image endpoint): 500 FLUX.1-dev images a day are 3,500 calls a week, which
    the file refused ("less than or equal to 2000"), while per_month allowed 10,000 (120,000 a year) and per_year
    100,000: three bounds in three units that disagreed. Now one bound, in runs a year, said in a sentence."""
    flux = {"model": "flux-dev", "task": "infer", "resolution": "1024"}
    job = load_workloads([{"per_week": 3500, "scenario": flux}]).workloads[0]
    assert job.kind == "calls" and job.runs_per_year == pytest.approx(3500 * 365.25 / 7)  # 182,625 calls a year
    for rate, runs in (("per_week", 2e6 * 365.25 / 7), ("per_month", 1e7 * 12), ("per_year", 1.5e8)):
        with pytest.raises(GpuplanError, match=f"{rate} .* is {runs:,.0f} runs a year, more than the 100,000,000"):
            load_workloads([{rate: {"per_week": 2e6, "per_month": 1e7, "per_year": 1.5e8}[rate], "scenario": flux}])
    assert load_workloads([{"per_year": 1e8, "scenario": flux}]).workloads[0].runs_per_year == 1e8  # the bound itself


def test_a_spot_rental_dearer_than_on_demand_is_left_out_and_said():
    """s19-rewalk's finding: twice-weekly QLoRA of Qwen3-32B (3e7 tokens) against 1x A100 80GB rented listed
    "rent 1x a100-sxm4-80gb spot $33,785" over 2 years, seven times its on-demand row ($4,819): the only spot offer
    in force is aws's whole 8x instance. A spot run is the on-demand run with interruptions, so the row is left
    out, and a note gives both rents a year (16,892 x 2 = 33,785 and 2,409 x 2 = 4,819 at the low end)."""
    jobs = [{"name": "weekly-qlora", "per_week": 2, "scenario": {"model": "qwen3-32b", "task": "train",
                                                                 "method": "qlora", "train_tokens": 3e7,
                                                                 "seq_len": 4096}}]
    report = gpuplan.buy("4x4090", workloads={"years": 2, "workloads": jobs}, rent=["1xa100-80gb"], region="de")
    assert [r.label for r in report.rentals] == ["1x a100-sxm4-80gb on-demand"]
    (od,) = report.rentals
    (said,) = [n for n in report.notes if n.endswith("the spot rental is left out")]
    spot = float(re.search(r"\$([\d,]+) a year on aws 8x spot", said).group(1).replace(",", ""))
    assert spot > 5 * od.usd_per_year_low
    assert said.startswith(f"spot costs {spot / od.usd_per_year_low:.2f}x on demand for 1x a100-sxm4-80gb: ")
    assert f"against ${od.usd_per_year_low:,.0f} a year on {od.offers[0]} (whole instances" in said


def test_a_rental_that_cannot_run_a_job_is_named_in_the_verdict():
    """s20-rewalk2's finding: `buy 2xrtx-pro-6000-blackwell --rent h100-sxm` with the weekly 8B fine-tunes said
    only "owning ...: $3,949 over 1 y (no rental of the work to compare with)": one H100 cannot hold the full
    fine-tune (183.3 of 79.6 GiB), which only the per-job table said. The verdict names the rental and the job."""
    jobs = [{"name": f"weekly {m}", "per_week": 1, "scenario": {"model": "llama-3.1-8b", "task": "train",
                                                                 "method": m, "train_tokens": 1e8, "seq_len": 4096}}
            for m in ("lora", "full")]
    report = gpuplan.buy("2xrtx-pro-6000-blackwell", workloads={"years": 1, "workloads": jobs}, rent=["h100-sxm"])
    assert [r.runs_all for r in report.rentals] == [False]
    assert report.verdict.endswith("(no rental of the work to compare with: 1x h100-sxm on-demand cannot run "
                                   "weekly full (the table says why; 2x h100-sxm runs it all: --rent 2xh100-sxm))")


def test_the_verdict_names_the_fewest_rented_cards_that_run_the_work():
    """s20-rewalk2's leftover: the verdict said "--rent more of the cards" without saying how many. The fewest of the
    rented card that run every job (2, 4, 8, then whole machines) is named, and renting it runs all the work: one
    H100 cannot hold the 8B full fine-tune (183.3 of 79.6 GiB), two can; where no count up to 64 does, it says
    so."""
    from gpuplan.owning.answer import _more
    from gpuplan.owning.compare import RentalAnswer

    jobs = [{"name": f"weekly {m}", "per_week": 1, "scenario": {"model": "llama-3.1-8b", "task": "train",
                                                                 "method": m, "train_tokens": 1e8, "seq_len": 4096}}
            for m in ("lora", "full")]
    work = {"years": 1, "workloads": jobs}
    report = gpuplan.buy("2xrtx-pro-6000-blackwell", workloads=work, rent=["h100-sxm"])
    assert [r.runs_all_on for r in report.rentals] == ["2x h100-sxm"]
    two = gpuplan.buy("2xrtx-pro-6000-blackwell", workloads=work, rent=["2xh100-sxm"])
    assert (two.rentals[0].label, two.rentals[0].runs_all) == ("2x h100-sxm on-demand", True)
    assert "runs_all_on" not in two.rentals[0].model_dump() and "cannot" not in two.verdict
    none = RentalAnswer(setup="1x t4", pricing="on_demand", jobs=[], runs_all=False, runs_all_on="")
    assert _more(none) == "no count of these cards up to 64 runs it all: --rent other cards"


def test_a_job_its_layout_refuses_is_one_build_that_cannot_run_it_not_a_failed_search():
    """The s30 walk: `buy --budget 10000` with a serving job (engine transformers) stopped after 33 s with 'error:
    transformers serves on one machine ... across 2 nodes': the search's two linked DGX Sparks place the job on two
    nodes, the refusal escaped job_plan and ended every build's answer. It is that build's reason now."""
    from gpuplan.owning.workloads import load_workloads
    served = load_workloads([{"name": "chat", "hours_per_day": 6,
                              "scenario": {"model": "llama-3.1-8b", "task": "infer", "batch_size": 8}}]).workloads[0]
    p = job_plan(served, load_gpu("dgx-spark"), 2, owned=True)
    assert not p.runs and p.hours_per_run is None
    assert p.why_not.startswith("transformers serves on one machine: set engine to vllm, sglang or trtllm")
    assert job_plan(served, load_gpu("dgx-spark"), 1, owned=True).runs


def test_a_build_that_cannot_do_the_work_in_time_is_not_said_cheaper_than_renting(capsys):
    """The s30 walk: `buy --budget` ranked a DGX Spark that a 70B QLoRA twice a week keeps busy 26,665 h of 2 years'
    17,532 with 'cannot: all the work in time' and, beside it, 'vs renting: owning is cheaper'."""
    from gpuplan.cli.buy import render_search
    work = {"years": 2, "workloads": [{"name": "qlora 70b", "per_week": 2, "scenario": {
        "model": "llama-3.1-70b", "task": "train", "method": "qlora", "train_tokens": 2.0e+7, "seq_len": 2048}}]}
    report = gpuplan.buy(None, workloads=work, budget_usd=5000, gpus=["dgx-spark"])
    assert report.builds[0].cannot[0].startswith("all the work in time: it keeps the build busy")
    render_search(report, "csv")
    out = capsys.readouterr().out
    assert "not compared: it cannot run all the work" in out and "owning is cheaper" not in out


def test_a_field_a_workloads_file_does_not_take_is_named_with_the_nearest_it_does():
    """The s30 walk: a serving job written with ``hours_per_week: 40`` got only 'workloads.1.hours_per_week: Extra
    inputs are not permitted'. The sentence names the fields meant (difflib's nearest), else all of them."""
    from gpuplan.owning.workloads import load_workloads
    job = {"scenario": {"model": "llama-3.2-1b", "task": "infer"}}
    with pytest.raises(GpuplanError, match=r"^workloads: workloads\.0\.hours_per_week: Extra inputs are not "
                                           r"permitted; did you mean hours_per_day or per_week\?$"):
        load_workloads([{**job, "hours_per_week": 40}])
    with pytest.raises(GpuplanError, match=r"; a job's fields: name, scenario, per_year, per_month, per_week, "
                                           r"hours_per_day, output_tokens_per_day$"):
        load_workloads([{**job, "per_week": 1, "zzz": 2}])
    with pytest.raises(GpuplanError, match=r"^workloads: yeers: Extra inputs are not permitted; did you mean years\?"):
        load_workloads({"yeers": 2, "workloads": [{**job, "per_week": 1}]})
