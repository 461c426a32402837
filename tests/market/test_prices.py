"""Prices you can trust: the snapshot, the sources (SkyPilot CSV, gpuhunt, the user's file) on recorded data, the
cache, the price filter, spot against the best on-demand price, the bill, and the provider networks."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import cli_in_process
from gpuplan import GpuplanError, estimate
from gpuplan.market.bill import billed_hours
from gpuplan.market.cost import daly_wall_time_h, spot_dearer
from gpuplan.market.offers import COLUMNS, read_offers
from gpuplan.market.sources import Query, SourceError, fetch
from gpuplan.market.sources.gpuhunt_source import GpuhuntSource
from gpuplan.market.sources.names import gpu_id_for
from gpuplan.market.store import bundled_offers, load_offers, refreshes
from gpuplan.model.catalog import load_model
from gpuplan.plan.recommend import Constraints, recommend
from gpuplan.scenario import scenario_from

INFO = "\"{'Gpus': [{'Name': '%s', 'Count': %d, 'MemoryInfo': {'SizeInMiB': %d}}]}\""
VMS = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
       "AvailabilityZone\n"
       f"g6.xlarge,L4,1.0,4.0,16.0,{INFO % ('L4', 1, 22888)},0.8048,0.3512,us-east-1,use1-az1\n"
       f"g6.xlarge,L4,1.0,4.0,16.0,{INFO % ('L4', 1, 22888)},0.8048,0.3311,us-east-1,use1-az2\n"
       f"g6.2xlarge,L4,1.0,8.0,32.0,{INFO % ('L4', 1, 22888)},0.9776,0.3689,us-east-1,use1-az1\n"
       f"p4d.24xlarge,A100,8.0,96.0,1152.0,{INFO % ('A100', 8, 40960)},21.96,30.0,us-east-1,use1-az1\n"
       "m5.large,,,2.0,8.0,,0.096,0.03,us-east-1,use1-az1\n"
       f"inf2.xlarge,Inferentia2,1.0,4.0,16.0,{INFO % ('Inferentia2', 1, 32768)},0.7582,0.2,us-east-1,use1-az1\n")


def gpuplan(*args: str) -> subprocess.CompletedProcess:
    return cli_in_process(*args)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(folder))
    return folder


# ---- the bundled snapshot -----------------------------------------------------------------------------------
def test_snapshot_covers_25_gpu_types_12_providers_each_row_dated_and_cited():
    proc = gpuplan("prices", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert set(COLUMNS) <= set(rows[0]) and "price_origin" in rows[0]
    assert len({r["gpu_id"] for r in rows}) >= 25 and len({r["provider"] for r in rows}) >= 12
    assert all(dt.date.fromisoformat(r["observed_at"]) and r["source"] and r["confidence"] for r in rows)
    cheap = {"nvidia-l4", "nvidia-t4", "nvidia-a10g", "nvidia-a10", "nvidia-geforce-rtx-5090",
             "nvidia-rtx-6000-ada", "nvidia-gh200-96gb", "nvidia-a40", "nvidia-v100-sxm2-16gb"}
    assert cheap <= {r["gpu_id"] for r in rows}
    t4 = json.loads(gpuplan("prices", "--gpu", "t4", "--json").stdout)
    assert [(r["instance"], r["pricing"], r["price_usd_per_gpu_hour"]) for r in t4] == [
        ("g4dn.xlarge", "spot", 0.1845), ("g4dn.xlarge", "on_demand", 0.526)]  # AWS list price since 2019


# ---- sources on recorded data -------------------------------------------------------------------------------
def test_a_skypilot_gpu_info_past_its_bound_is_not_parsed(tmp_path, cache):
    """Session 18's security audit: a GpuInfo cell of 100,000 minus signs before a 1 ran Python's parser out of
    memory (MemoryError, a traceback, from a catalog someone sent); a cell past MAX_GPU_INFO characters is not
    read, and the row is priced as one without the column."""
    from gpuplan.market.sources import skypilot

    vms = tmp_path / "vms.csv"
    vms.write_text("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region\n"
                   f"g6.xlarge,L4,1.0,4.0,16.0,\"{{'Gpus': {'-' * 100_000}1}}\",0.8048,0.3512,us-east-1\n")
    assert skypilot._memory_gib("{'a': " + "-" * skypilot.MAX_GPU_INFO + "1}") is None
    offers = skypilot.read_catalog(vms, "aws").offers
    assert sorted((o.gpu_id, o.pricing, o.price_usd_per_gpu_hour) for o in offers) == [
        ("nvidia-l4", "on_demand", 0.8048), ("nvidia-l4", "spot", 0.3512)]


def test_skypilot_import_then_cost_uses_it_and_says_where_from(tmp_path, cache):
    """The issue's 'done when': prices update --source skypilot --file vms.csv --provider aws, then cost --gpu l4."""
    vms = tmp_path / "vms.csv"
    vms.write_text(VMS)
    proc = gpuplan("prices", "update", "--source", "skypilot", "--file", str(vms), "--provider", "aws", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["unmapped_gpu_names"] == {"Inferentia2": 1}  # reported, not guessed; CPU rows skipped
    saved = read_offers(summary["path"])
    by_key = {(o.gpu_id, o.gpu_count, o.pricing): o for o in saved}
    l4 = by_key["nvidia-l4", 1, "on_demand"]
    assert (l4.instance, l4.price_usd_per_gpu_hour, l4.vcpus, l4.region) == ("g6.xlarge", 0.8048, 4.0, "us-east-1")
    assert by_key["nvidia-l4", 1, "spot"].price_usd_per_gpu_hour == 0.3311  # cheapest zone
    a100 = by_key["nvidia-a100-sxm4-40gb", 8, "on_demand"]
    assert a100.price_usd_per_gpu_hour == pytest.approx(21.96 / 8)  # prices per instance, divided by its GPUs
    assert ("nvidia-a100-sxm4-40gb", 8, "spot") not in by_key  # spot above on-demand: dropped
    cost = gpuplan("cost", "--model", "llama-3.2-1b", "--task", "infer", "--gpu", "l4", "--json")
    assert cost.returncode == 0, cost.stderr
    first = json.loads(cost.stdout)["rows"][0]
    assert first["usd_per_gpu_hour"] == 0.8048 and first["instance"] == "g6.xlarge"
    assert "skypilot refresh" in first["price_origin"] and str(cache) in first["price_origin"]


def test_a_bad_file_changes_nothing_and_is_a_usage_error(tmp_path, cache):
    """A missing or malformed file is bad input (exit 2, one line); a source that cannot answer exits 1
    (test_cli_errors.py)."""
    proc = gpuplan("prices", "update", "--source", "skypilot", "--file", str(tmp_path / "missing.csv"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "no SkyPilot catalog at" in proc.stderr and proc.stderr.count("\n") == 1
    assert not (cache / "offers").exists() or not list((cache / "offers").iterdir())
    bad = tmp_path / "vms.csv"
    bad.write_text("InstanceType,Price\nx,1\n")
    proc = gpuplan("prices", "update", "--source", "skypilot", "--file", str(bad), "--provider", "aws")
    assert proc.returncode == 2 and "no column AcceleratorName" in proc.stderr


def test_gpuhunt_recorded_response_maps_names_and_keeps_shapes(cache):
    """Items as gpuhunt's CatalogItem holds them (price per instance); a raising query is a SourceError."""
    item = lambda **k: SimpleNamespace(**{"cpu": 8, "memory": 64.0, "location": "us-east-1", "spot": False,  # noqa: E731
                                          "instance_name": "", "gpu_memory": None, **k})
    recorded = [item(provider="lambdalabs", gpu_name="A100", gpu_memory=80.0, gpu_count=8, price=14.32,
                     instance_name="gpu_8x_a100_80gb_sxm4"),
                item(provider="aws", gpu_name="L4", gpu_count=1, price=0.8048, instance_name="g6.xlarge"),
                item(provider="aws", gpu_name="L4", gpu_count=1, price=0.35, instance_name="g6.xlarge", spot=True),
                item(provider="vastai", gpu_name="RTX4090", gpu_count=2, price=0.8, instance_name="12345"),
                item(provider="aws", gpu_name="K80", gpu_count=1, price=0.9, instance_name="p2.xlarge")]
    got = GpuhuntSource(lambda **kw: recorded).get(Query(today=dt.date(2026, 11, 23)))
    offers = {(o.provider, o.gpu_id, o.pricing): o for o in got.offers}
    assert offers["lambda", "nvidia-a100-sxm4-80gb", "on_demand"].price_usd_per_gpu_hour == pytest.approx(1.79)
    assert offers["vast", "nvidia-geforce-rtx-4090", "on_demand"].price_usd_per_gpu_hour == pytest.approx(0.4)
    assert offers["vast", "nvidia-geforce-rtx-4090", "on_demand"].inter_node == "none"  # from providers.yaml
    assert offers["aws", "nvidia-l4", "spot"].observed_at == dt.date(2026, 11, 23)
    assert got.unmapped == {"K80": 1}

    def offline(**kw):
        raise OSError("Name or service not known")

    with pytest.raises(SourceError, match="gpuhunt could not fetch offers"):
        GpuhuntSource(offline).get(Query())


def test_users_file_and_atomic_cache(tmp_path, cache, monkeypatch):
    mine = tmp_path / "mine.csv"
    mine.write_text(",".join(COLUMNS) + "\n" + "runpod,secure,nvidia-l40s,1,on_demand,0.70,US,,,,,,,2026-11-20,"
                    "my contract,high,negotiated\n")
    fetched = fetch("file", Query(path=mine))
    from gpuplan.market.store import save_refresh

    save_refresh("file-mine", "file", str(mine), fetched.offers)
    offers = load_offers()
    l40s = next(o for o in offers if o.key == ("runpod", "secure", "nvidia-l40s", 1, "on_demand", "US"))
    assert l40s.price_usd_per_gpu_hour == 0.70 and "file refresh" in l40s.origin
    assert [r.name for r in refreshes()] == ["file-mine"]

    import gpuplan.market.offers as offers_module

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(offers_module.csv, "DictWriter", broken)
    with pytest.raises(OSError):
        save_refresh("file-mine", "file", str(mine), fetched.offers)
    assert len(read_offers(cache / "offers" / "file-mine.csv")) == 1  # the old file stands, no temp left
    assert sorted(p.name for p in (cache / "offers").iterdir()) == ["file-mine.csv", "file-mine.json"]


def test_names_from_catalogs():
    assert gpu_id_for("A100-80GB", instance="1x_A100-80GB_SECURE", provider="runpod") == "nvidia-a100-pcie-80gb"
    assert gpu_id_for("A100", memory_gib=40, instance="p4d.24xlarge") == "nvidia-a100-sxm4-40gb"
    assert gpu_id_for("H100", memory_gib=94, instance="epyc-genoa-h100-nvl-pcie_1x2v4gb") == "nvidia-h100-nvl-94gb"
    assert gpu_id_for("V100", memory_gib=16, instance="p3.2xlarge") == "nvidia-v100-sxm2-16gb"
    assert gpu_id_for("RTX6000-Ada") == "nvidia-rtx-6000-ada" and gpu_id_for("Inferentia2") is None


def test_bad_rows_say_where(tmp_path):
    path = tmp_path / "future.csv"
    path.write_text("provider,gpu_id,pricing,price_usd_per_gpu_hour,observed_at\n"
                    "x,nvidia-l4,on_demand,1.0,2999-01-01\n")
    with pytest.raises(GpuplanError, match="line 2: observed_at 2999-01-01 is in the future"):
        read_offers(path)
    path.write_text("provider,gpu_id,pricing,price_usd_per_gpu_hour,observed_at\nx,nvidia-l4,on_demand,nan,2026-01-01\n")
    with pytest.raises(GpuplanError, match="positive and finite"):
        read_offers(path)
    with pytest.raises(GpuplanError, match="no offers file ''"):
        read_offers("")


# ---- the four problems of the issue ------------------------------------------------------------------------
def test_stale_row_is_not_ranked_unless_asked():
    """RunPod's A6000 spot at $0.232 was observed on 2025-04-01 (601 days before 2026-11-23): it ranked second
    before."""
    args = ("cost", "--model", "qwen2.5-7b", "--task", "train", "--method", "lora", "--train-tokens", "2e8",
            "--pricing", "any", "--top", "200", "--json")
    rows = json.loads(gpuplan(*args).stdout)["rows"]
    assert rows and max(r["price_age_days"] for r in rows) <= 90
    assert not any(r["provider"] == "runpod" and r["gpu_id"] == "nvidia-rtx-a6000" and r["pricing"] == "spot"
                   for r in rows)
    old = json.loads(gpuplan(*args, "--max-price-age-days", "1000", "--include-low-confidence", "true").stdout)["rows"]
    age = (dt.date.today() - dt.date(2025, 4, 1)).days  # the test runs on any later day too
    assert any(r["price_age_days"] == age and r["pricing"] == "spot" for r in old)


def test_low_confidence_row_is_not_on_the_pareto_front_unless_asked():
    """Vultr's 8x H200 at $1.99 is marked low confidence; it sat on the Pareto front."""
    s = scenario_from(dict(model="llama-3.1-8b", task="train", train_tokens=1e8))
    m = load_model(s.model)
    plain = recommend(s, m, Constraints(any_method=True, top=500)).setups
    assert plain and all(x.price_confidence != "low" for x in plain)
    assert not any(x.provider == "vultr" for x in plain)
    asked = recommend(s.model_copy(update={"include_low_confidence": True, "max_price_age_days": 1000}), m,
                      Constraints(any_method=True, top=500)).setups
    assert any(x.provider == "vultr" and x.price_confidence == "low" for x in asked)


def test_spot_is_compared_with_the_best_on_demand_price_anywhere():
    """GCP's 1-GPU H100 spot ($6.57) was called 0.66x 'the on-demand cost' (GCP's own $10.98). Now the multiplier
    is against the cheapest on-demand H100 SXM in force (Hyperbolic $1.29), and the warning says spot loses."""
    r = estimate(dict(model="llama-3.1-8b", task="train", method="lora", gpu="h100-sxm", train_tokens=1e8,
                      pricing="spot"))
    c = r.cost
    assert c.best_on_demand_usd_per_gpu_hour == 1.29 and "hyperbolic" in c.best_on_demand_offer
    assert c.spot_multiplier == pytest.approx(c.spot.overhead * c.usd_per_gpu_hour / 1.29)
    assert c.spot_multiplier > 1 and any("--pricing any" in w for w in r.warnings)
    anyp = estimate(dict(model="llama-3.1-8b", task="train", method="lora", gpu="h100-sxm", train_tokens=1e8,
                         pricing="any")).cost
    assert anyp.pricing == "on_demand" and anyp.usd_per_gpu_hour == 1.29


def test_a_serving_plan_on_spot_is_compared_with_the_best_on_demand_price_too():
    """The s19 walk: `estimate --task infer --pricing spot` of gpt-oss-120b on one H100 took GCP's spot at $6.57 an
    hour without a word, where Hyperbolic rents it on demand at $1.29: the comparison was made for training only.
    A serving hour has no checkpoints to redo, so the multiplier is the hour's price alone, 6.57 / 1.29 = 5.09."""
    job = dict(model="llama-3.1-8b", task="infer", engine="vllm", gpu="h100-sxm")
    r = estimate({**job, "pricing": "spot"})
    c = r.cost
    assert c.pricing == "spot" and c.usd_per_gpu_hour == 6.57 and c.best_on_demand_usd_per_gpu_hour == 1.29
    assert c.spot_multiplier == pytest.approx(6.57 / 1.29) and round(c.spot_multiplier, 2) == 5.09
    said = [w for w in r.warnings if "--pricing any" in w]
    assert said and "5.09x" in said[0] and "before the restarts" in said[0]
    assert estimate({**job, "pricing": "any"}).cost.usd_per_gpu_hour == 1.29
    l4 = estimate({**job, "gpu": "l4", "pricing": "spot"}).cost  # spot below every on-demand L4: nothing said
    assert l4.spot_multiplier < 1


def test_spot_dearer_is_one_verdict_in_one_sentence():
    """Spot dearer than on demand was judged and worded three times (estimate's warning, capacity's note, buy's
    rentals), each with its own comparison and its own words. One function says it now: the ratio, both prices in
    one unit, what each counted and what to do; an equal price keeps spot, and no other module words it."""
    said = spot_dearer("1x h100-sxm tp1", (13.14, "gcp 1x spot"), (1.29, "hyperbolic 1x on-demand"), per="/h",
                       counted="spares counted", instead="--pricing on-demand ranks them so")
    assert said == ("spot costs 10.19x on demand for 1x h100-sxm tp1: $13.14/h on gcp 1x spot against $1.29/h on "
                    "hyperbolic 1x on-demand (spares counted); --pricing on-demand ranks them so")
    year = spot_dearer("1x a100", (33785.4, "aws 8x spot"), (4819.0, "runpod 1x on-demand"), per=" a year",
                       counted="c", instead="i")
    assert "7.01x" in year and "$33,785 a year on aws 8x spot against $4,819 a year" in year
    assert spot_dearer("x", (1.29, "a"), (1.29, "b"), per="/h", counted="c", instead="i") == ""
    assert spot_dearer("x", (1.0, "a"), (1.29, "b"), per="/h", counted="c", instead="i") == ""
    source = Path(__file__).resolve().parents[2] / "src" / "gpuplan"
    wording = [p.relative_to(source).as_posix() for p in source.rglob("*.py")
               if re.search(r"spot costs|costs more than on demand", p.read_text(encoding="utf-8"))
               and p.name != "cost.py"]
    assert wording == []


def test_spot_on_a_whole_instance_counts_its_idle_gpus_in_the_comparison():
    """The rewalk of review-1 F14 with two GPUs: AWS sells A100 80GB spot only as 8-GPU p4de instances ($1.08 per
    GPU-hour), so a 2-GPU LoRA pays for 8 ($15.00 in all) while RunPod rents 2 on demand at $1.39 ($4.02); the line
    said spot cost "0.93x the cheapest on-demand". The multiplier is what the job pays per GPU-hour it uses."""
    job = dict(model="qwen2.5-7b", task="train", method="lora", gpu="a100-sxm4-80gb", num_gpus=2, train_tokens=5e7)
    r = estimate({**job, "pricing": "spot"})
    c = r.cost
    assert c.num_gpus == 8 and c.best_on_demand_usd_per_gpu_hour == 1.39
    assert c.spot_multiplier == pytest.approx(c.spot.overhead * c.usd_per_hour / (2 * 1.39))
    assert c.spot_multiplier > 3 and any("--pricing any" in w for w in r.warnings)
    on_demand = estimate(job).cost
    assert c.usd_total > 3 * on_demand.usd_total  # the multiplier's verdict is the totals' verdict


def test_t4_has_a_price_and_a_gpu_without_one_says_no_price():
    s = scenario_from(dict(model="llama-3.2-1b", task="infer", precision="fp16-mixed"))
    m = load_model(s.model)
    t4 = recommend(s, m, Constraints(gpus=("nvidia-t4",))).setups
    assert t4 and t4[0].provider == "aws" and t4[0].usd_per_hour == pytest.approx(0.526)
    none = recommend(s, m, Constraints(gpus=("nvidia-l40",)))
    assert not none.setups and none.changes[0].startswith("no price for L40")


# ---- labels, bill, networks ------------------------------------------------------------------------------------
def test_multi_gpu_label_says_count_and_per_gpu_price():
    # a setup that fits (a job that does not fit is not priced): 70B at fp8 over two H100s
    c = estimate(dict(model="llama-3.1-70b", task="infer", engine="vllm", quant="fp8", num_gpus=2, tp=2,
                      gpu="h100-sxm")).cost
    assert c.num_gpus == 2 and " 2x " in c.label
    assert c.label.endswith(f"at ${c.usd_per_hour:,.2f}/h (2 x ${c.usd_per_gpu_hour:,.2f})")
    assert c.usd_per_hour == pytest.approx(2 * c.usd_per_gpu_hour)


def test_bill_lines_add_up_and_include_idle_gpus_storage_and_egress():
    """LoRA of Llama-3.2-1B on the 8-GPU-only p5 H100 shape (AWS): 7 idle GPUs are billed; storage at $0.08/GB-month
    and egress at $0.09/GB for the adapter (fp32, 4 B/param)."""
    r = estimate(dict(model="llama-3.2-1b", task="train", method="lora", gpu="h100-sxm", train_tokens=1e8,
                      provider="aws"))
    c = r.cost
    lines = {line.item.split(":")[0]: line for line in c.bill}
    assert c.num_gpus == 8 and c.bill_usd == pytest.approx(sum(line.usd for line in c.bill))
    assert lines["idle GPUs"].quantity == pytest.approx(7 * c.hours)
    gpu_and_idle = lines["GPU time"].usd + lines["idle GPUs"].usd
    assert gpu_and_idle == pytest.approx(c.usd_total)  # on-demand: GPU lines = hours x rented x price
    assert lines["storage"].usd_per_unit == 0.08 and lines["egress"].usd_per_unit == 0.09
    trainable = r.model.params_trainable
    assert lines["egress"].quantity == pytest.approx(trainable * 4 / 1e9)
    assert billed_hours(10 / 3600, 1, 60) == pytest.approx(60 / 3600)  # EC2: per second, 60 s minimum
    assert billed_hours(1.0001, 60, 60) == pytest.approx(1 + 60 / 3600)


def test_networks_from_providers_and_rows_and_no_multi_node_without_fabric():
    offers = {(o.provider, o.tier, o.gpu_id, o.gpu_count, o.pricing): o for o in bundled_offers()}
    assert offers["vast", "marketplace", "nvidia-h100-sxm5-80gb", 1, "on_demand"].inter_node == "none"
    nebius = offers["nebius", "neocloud", "nvidia-h100-sxm5-80gb", 8, "on_demand"].network
    assert (nebius.inter_node, nebius.inter_node_gbps) == ("infiniband", 3200.0)
    p5 = offers["aws", "hyperscaler", "nvidia-h100-sxm5-80gb", 8, "on_demand"].network
    assert (p5.intra_node, p5.inter_node, p5.inter_node_gbps) == ("nvlink", "roce", 3200.0)  # row override
    assert offers["runpod", "community", "nvidia-geforce-rtx-4090", 1, "on_demand"].intra_node == "pcie-no-p2p"
    s = scenario_from(dict(model="llama-3.1-70b", task="train", train_tokens=1e9))
    setups = recommend(s, load_model(s.model), Constraints(max_gpus=32, top=200)).setups
    multi = [x for x in setups if x.scenario.num_nodes > 1]
    assert multi and not any(x.provider == "vast" or x.offer.startswith("runpod community") for x in multi)


def test_spot_that_never_finishes_is_no_crash():
    assert daly_wall_time_h(10, 1e-3, 1e6, 0.1, 2.0) == float("inf")
    with pytest.raises(GpuplanError, match="disk_gbs"):
        scenario_from(dict(model="llama-3.1-8b", task="train", disk_gbs=1e-9))
    with pytest.raises(GpuplanError, match="mtbi_hours"):
        scenario_from(dict(model="llama-3.1-8b", task="train", mtbi_hours=float("inf")))


def test_gpuplan_today_pins_the_day_prices_age_on(monkeypatch):
    """GPUPLAN_TODAY repeats an answer as of a day: an offer's age counts from it; a bad date is one sentence."""
    from gpuplan import clock
    from gpuplan.market.store import bundled_offers

    offer = min(bundled_offers(), key=lambda o: o.observed_at)
    monkeypatch.setenv("GPUPLAN_TODAY", (offer.observed_at + dt.timedelta(days=7)).isoformat())
    assert clock.today() == offer.observed_at + dt.timedelta(days=7)
    assert offer.age_days() == 7
    monkeypatch.setenv("GPUPLAN_TODAY", "next tuesday")
    with pytest.raises(GpuplanError, match="GPUPLAN_TODAY must be a date like 2026-11-28, got 'next tuesday'"):
        clock.today()


def test_a_price_list_is_read_by_the_bounded_reader(tmp_path):
    """s17-sec: price lists and catalogs were read with csv.DictReader on the open file, not the bounded reader
    docs/security.md promises: a byte-order mark (Excel's "CSV UTF-8") made the first column "\\ufeffprovider",
    so the row was refused as missing its provider, and the file's size had no bound. Now UTF-8 with or without
    the mark, at most userfiles.MAX_BYTES, a NUL byte refused, each in one sentence."""
    from gpuplan import userfiles

    text = "provider,gpu_id,pricing,price_usd_per_gpu_hour,observed_at\nmycloud,nvidia-l4,on_demand,0.5,2026-01-01\n"
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert [(o.provider, o.price_usd_per_gpu_hour) for o in read_offers(path)] == [("mycloud", 0.5)]
    with path.open("r+b") as f:  # sparse: no disk used
        f.truncate(userfiles.MAX_BYTES + 1)
    with pytest.raises(GpuplanError, match="more than gpuplan reads for a price list file"):
        read_offers(path)
    path.write_bytes(text.encode().replace(b"mycloud", b"my\0cloud"))
    with pytest.raises(GpuplanError, match="not price list text: it holds a NUL byte"):
        read_offers(path)


def test_the_buy_or_rent_page_counts_the_snapshot():
    """docs/buy-or-rent.md's "Where prices come from" counts data/offers.csv (rows, GPU types, providers, the dates'
    span, the rows by age as of its last date and the rows added that day); the counts were held by nothing (session
    18's docs audit counted them equal). The ages are days before the snapshot's last observation, as the page says."""
    page = " ".join((Path(__file__).resolve().parents[2] / "docs" / "buy-or-rent.md").read_text(
        encoding="utf-8").split())
    offers = bundled_offers()
    last = max(o.observed_at for o in offers)
    ages = [(last - o.observed_at).days for o in offers]
    first = min(o.observed_at for o in offers)
    said = (f"`data/offers.csv`, {len(offers)} rows: {len({o.gpu_id for o in offers})} GPU types, "
            f"{len({o.provider for o in offers})} providers")
    assert said in page, said
    span = (f"Observed between {first.isoformat()} and {last.isoformat()}: {sum(a <= 30 for a in ages)} rows are 30 "
            f"days old or less, {sum(30 < a <= 90 for a in ages)} between 31 and 90 days, "
            f"{sum(a > 90 for a in ages)} older (as of {last.isoformat()})")
    assert span in page, span
    added = re.search(r"The (\d+) rows added on (\S+) ", page)
    assert added and (int(added[1]), added[2]) == (ages.count(0), last.isoformat())
