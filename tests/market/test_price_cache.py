"""The price cache is the user's, and only ``prices update`` writes it (fuzz-report-3 S4, N2, N6/F8, N7 and the
temporary file a crash left; issue 29 item 2): provider names are plain ids and cache names are slugs, so nothing is
written outside the cache; a refresh is in force whole or not at all; what a killed update left is swept by the
next; implausible prices and GPU counts are refused; and every message says what is in force."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys

import pytest

from gpuplan import clock
from gpuplan.cli import run
from gpuplan.errors import GpuplanError
from gpuplan.market.offers import COLUMNS, MAX_GPUS_PER_INSTANCE, USD_PER_GPU_HOUR, read_offers
from gpuplan.market.sources.gpuhunt_source import offers_from_items
from gpuplan.market.store import bundled_offers, load_offers, refreshes

VMS = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region\n"
       "g6.xlarge,L4,1,4,16,0.8048,0.3512,us-east-1\n"
       "p4d.24xlarge,A100,8,96,1152,32.77,12.0,us-east-1\n")
HEADER = "provider,tier,gpu_id,gpu_count,pricing,price_usd_per_gpu_hour,region,observed_at,source\n"
TODAY = clock.today().isoformat()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(folder))
    monkeypatch.setenv("GPUPLAN_CONFIG_DIR", str(tmp_path / "config"))
    return folder


@pytest.fixture
def vms(tmp_path):
    path = tmp_path / "vms.csv"
    path.write_text(VMS)
    return path


def update(capsys, *args: str) -> tuple[int, str, str]:
    code = run(["prices", "update", *args])
    got = capsys.readouterr()
    return code, got.out, got.err.strip()


@pytest.mark.parametrize("provider", ["a/../../../escaped", "../escaped", "/tmp/escaped", ".hidden", "a\\b", "",
                                      "a\nb", "x" * 65])
def test_a_provider_is_an_id_not_a_path(provider, cache, vms, tmp_path, capsys):
    """S4: --provider 'a/../../../escaped' wrote escaped.csv beside the cache, made folders inside it, then said
    nothing was updated."""
    before = set(tmp_path.rglob("*"))
    code, _, err = update(capsys, "--source", "skypilot", "--file", str(vms), "--provider", provider)
    assert code == 2 and "is not a provider id" in err and "\n" not in err, err
    assert set(tmp_path.rglob("*")) == before  # no cache, no folder, no CSV anywhere


def test_file_names_become_slugs_inside_the_cache(cache, tmp_path, capsys):
    odd = tmp_path / "a" / "..  My $(x) offers;`y`"
    odd.parent.mkdir()
    path = odd.with_name(odd.name + ".csv")
    path.write_text(HEADER + f"mycloud,,nvidia-l4,1,on_demand,0.5,,{TODAY},me\n")
    code, _, err = update(capsys, "--source", "file", "--file", str(path))
    assert code == 0, err
    assert sorted(p.name for p in (cache / "offers").iterdir()) == ["file-my-x-offers-y.csv",
                                                                    "file-my-x-offers-y.json"]
    assert [o.provider for o in load_offers() if o.provider == "mycloud"] == ["mycloud"]


def test_a_link_in_the_cache_is_replaced_not_followed(cache, vms, tmp_path, capsys):
    victim = tmp_path / "victim.csv"
    victim.write_text("precious")
    (cache / "offers").mkdir(parents=True)
    (cache / "offers" / "skypilot-aws.csv").symlink_to(victim)
    assert update(capsys, "--source", "skypilot", "--file", str(vms), "--provider", "aws")[0] == 0
    assert victim.read_text() == "precious" and not (cache / "offers" / "skypilot-aws.csv").is_symlink()
    assert [r.rows for r in refreshes()] == [4]


def test_a_refresh_is_in_force_whole_or_not_at_all(cache, vms, capsys, monkeypatch):
    """The CSV was written before its note, and a note that failed left the new CSV under the old note while the
    command said the prices were not updated."""
    assert update(capsys, "--source", "skypilot", "--file", str(vms), "--provider", "aws")[0] == 0
    csv = cache / "offers" / "skypilot-aws.csv"
    old = csv.read_text()
    vms.write_text(VMS.replace("0.8048", "0.9"))

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("gpuplan.market.store.json.dump", full_disk)
    code, _, err = update(capsys, "--source", "skypilot", "--file", str(vms), "--provider", "aws")
    assert code == 1 and err.startswith("prices not updated") and "No space left" in err, err
    assert csv.read_text() == old and not [p for p in csv.parent.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.undo()
    real = os.replace

    def note_fails(src, dst):  # the new CSV is in place when its note cannot follow: the old CSV comes back
        if str(dst).endswith(".json"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", note_fails)
    assert update(capsys, "--source", "skypilot", "--file", str(vms), "--provider", "aws")[0] == 1
    assert csv.read_text() == old and not [p for p in csv.parent.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.undo()
    os.environ["GPUPLAN_CACHE_DIR"] = str(cache)
    csv.unlink()  # a refresh with no CSV before: the failed one leaves none either
    (cache / "offers" / "skypilot-aws.json").unlink()
    monkeypatch.setattr("gpuplan.market.store.json.dump", full_disk)
    assert update(capsys, "--source", "skypilot", "--file", str(vms), "--provider", "aws")[0] == 1
    assert sorted(p.name for p in csv.parent.iterdir()) == []


KILL_DURING_RENAME = """import os, signal, sys
os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)  # killed as the refreshed CSV is put in place
from gpuplan import clock
from gpuplan.cli import run
run(sys.argv[1:])
"""


def test_what_a_killed_update_left_is_swept_by_the_next(cache, vms, capsys):
    args = ["prices", "update", "--source", "skypilot", "--file", str(vms), "--provider", "aws"]
    killed = subprocess.run([sys.executable, "-c", KILL_DURING_RENAME, *args], capture_output=True,
                            env={**os.environ, "GPUPLAN_CACHE_DIR": str(cache)})
    assert killed.returncode == -signal.SIGKILL
    left = sorted(p.name for p in (cache / "offers").iterdir())
    assert left and all(name.startswith(".skypilot-aws.") and name.endswith(".tmp") for name in left), left
    assert refreshes() == []  # nothing half-written is in force
    assert update(capsys, *args[2:])[0] == 0
    assert sorted(p.name for p in (cache / "offers").iterdir()) == ["skypilot-aws.csv", "skypilot-aws.json"]


@pytest.mark.parametrize("row, text", [
    (f"mycloud,,nvidia-geforce-rtx-4090,1,on_demand,1e-300,,{TODAY},me", "price $1e-300 per GPU-hour"),
    (f"mycloud,,nvidia-geforce-rtx-4090,1,on_demand,1e300,,{TODAY},me", "price $1e+300 per GPU-hour"),
    (f"mycloud,,nvidia-l40s,1,on_demand,0.004,,{TODAY},me", "outside the plausible $0.01 to $1,000"),
    (f"mycloud,,nvidia-l40s,99999999999999999999,on_demand,1.5,,{TODAY},me", "GPUs per instance"),
    (f"mycloud,,nvidia-l40s,512,on_demand,1.5,,{TODAY},me", "outside the plausible 1 to 256"),
    (f"my/../cloud,,nvidia-l40s,1,on_demand,1.5,,{TODAY},me", "is not a provider id"),
    (f"mycloud,,nvidia-l40s,1,on_demand,1.5,us\x1b[2J,{TODAY},me", "control character"),
    # session 18's fuzzing: Python's float() reads digit grouping, and 0_55 was put in force at $55 an hour
    (f"mycloud,,nvidia-l40s,1,on_demand,0_55,,{TODAY},me", "price_usd_per_gpu_hour must be a number, got '0_55'"),
    (f"mycloud,,nvidia-l40s,1_6,on_demand,1.5,,{TODAY},me", "gpu_count must be a number, got '1_6'"),
    (f"mycloud,,nvidia-l40s,1,on_demand,\uff15,,{TODAY},me", "price_usd_per_gpu_hour must be a number"),
])
def test_implausible_rows_are_refused_everywhere_a_file_is_read(row, text, cache, tmp_path, capsys):
    """N2: $1e-300/h became recommend's first setup (1.9e-300 dollars in total), $1e300/h printed 300 digits, and
    a GPU count of 1e20 was accepted."""
    path = tmp_path / "mine.csv"
    path.write_text(HEADER + row + "\n")
    code, _, err = update(capsys, "--source", "file", "--file", str(path))
    assert code == 2 and text in err and "mine.csv line 2" in err and "\n" not in err, err
    assert not (cache / "offers").exists()
    code = run(["cost", "--model", "llama-3.2-1b", "--task", "infer", "--gpu", "l40s", "--catalog", str(path)])
    assert code == 2 and text in capsys.readouterr().err


def test_a_node_network_past_any_sold_is_refused(cache, tmp_path, capsys):
    """The rewalk of N2 on another column: inter_node_gbps 1e12 was saved and made multi-node collectives free."""
    path = tmp_path / "net.csv"
    path.write_text(",".join(COLUMNS) + "\n" + ",".join(
        {"provider": "mycloud", "gpu_id": "nvidia-h100-sxm5-80gb", "gpu_count": "8", "pricing": "on_demand",
         "price_usd_per_gpu_hour": "2", "inter_node": "infiniband", "inter_node_gbps": "1e12",
         "observed_at": TODAY, "source": "me"}.get(c, "") for c in COLUMNS) + "\n")
    code, _, err = update(capsys, "--source", "file", "--file", str(path))
    assert code == 2 and "inter_node_gbps 1e+12 is above the plausible 12,800 Gbit/s" in err, err
    assert not (cache / "offers").exists()
    path.write_text(path.read_text().replace("1e12", "3200"))
    assert update(capsys, "--source", "file", "--file", str(path))[0] == 0  # 8 x 400 Gbit/s, an H100 node


def test_vendor_catalogs_leave_implausible_rows_out_and_say_so(cache, tmp_path, capsys):
    vms = tmp_path / "vms.csv"
    vms.write_text(VMS + "g6.tiny,L4,1,4,16,0.000001,,us-west-2\nNV6_A10,A10,0.167,6,55,0.45,,eastus\n")
    code, out, err = update(capsys, "--source", "skypilot", "--file", str(vms), "--provider", "aws", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["rows"] == 4 and summary["implausible_rows_left_out"] == {"price": 1}
    assert all(USD_PER_GPU_HOUR[0] <= o.price_usd_per_gpu_hour for o in read_offers(summary["path"]))
    items = [type("Item", (), dict(provider="aws", gpu_name="L4", gpu_memory=24.0, gpu_count=n, price=p,
                                   instance_name="x", location="us", cpu=4, memory=16, spot=False))()
             for n, p in ((1, 0.8), (1, 5000.0), (300, 600.0), (0.5, 0.3))]
    got = offers_from_items(items, clock.today())
    assert [o.price_usd_per_gpu_hour for o in got.offers] == [0.8]
    assert got.implausible == {"price": 1, "GPU count": 1}


def test_the_bundled_snapshot_is_plausible():
    low, high = USD_PER_GPU_HOUR
    offers = bundled_offers()
    assert all(low <= o.price_usd_per_gpu_hour <= high and o.gpu_count <= MAX_GPUS_PER_INSTANCE for o in offers)
    # the bounds keep a margin of 12x under the cheapest bundled price and 70x over the dearest
    assert min(o.price_usd_per_gpu_hour for o in offers) == 0.12 and max(o.price_usd_per_gpu_hour
                                                                         for o in offers) == 14.24


def test_bundled_json_is_json(cache, vms, capsys):
    """N6/F8: prices update --source bundled --json printed prose."""
    assert update(capsys, "--source", "skypilot", "--file", str(vms), "--provider", "aws")[0] == 0
    code, out, _ = update(capsys, "--source", "bundled", "--json")
    data = json.loads(out)
    assert code == 0 and data["source"] == "bundled" and data["dropped_refreshes"] == 1
    assert data["in_force"]["refreshes"] == [] and data["in_force"]["bundled_rows"] == len(bundled_offers())


def test_a_failed_update_says_what_is_in_force(cache, vms, capsys, monkeypatch):
    """N7: the failure line said the bundled snapshot was in force when earlier refreshes were."""
    assert update(capsys, "--source", "skypilot", "--file", str(vms), "--provider", "aws")[0] == 0

    def offline(**kwargs):
        raise ConnectionError("no route to host")

    monkeypatch.setattr("gpuplan.market.sources.gpuhunt_source._default_query", lambda: offline)
    code, _, err = update(capsys, "--source", "gpuhunt")
    assert code == 1 and "prices not updated: gpuhunt could not fetch offers" in err
    assert f"+ refreshes: skypilot {TODAY} (4 rows)" in err, err
    assert [r.name for r in refreshes()] == ["skypilot-aws"]
    update(capsys, "--source", "bundled")
    code, _, err = update(capsys, "--source", "gpuhunt")
    assert code == 1 and "stay as they were: bundled snapshot (observed until" in err and "refreshes" not in err
    code, out, err = update(capsys, "--source", "gpuhunt", "--json")  # a script gets JSON (the fuzzer: none)
    data = json.loads(out)
    assert code == 1 and data["updated"] is False and "no route to host" in data["reason"] and err
    assert data["in_force"]["refreshes"] == [] and data["source"] == "gpuhunt"


def test_save_refresh_takes_only_slugs(cache):
    from gpuplan.market.store import save_refresh

    offer = bundled_offers()[0]
    for name in ("../x", "a/b", ".x", "X", ""):
        with pytest.raises(GpuplanError, match="not a plain name"):
            save_refresh(name, "file", "test", [offer])
    assert not cache.exists()


def test_a_vendor_row_with_a_control_character_is_refused_before_the_cache(cache, tmp_path, capsys):
    """A region holding a terminal escape would be printed by every later command, and the cached CSV would then
    be refused on every read: the refresh is refused whole and the cache is not touched."""
    vms = tmp_path / "vms.csv"
    vms.write_text(VMS.replace("us-east-1\n", "us-east-1\x1b]0;x\x07\n", 1))
    code, _, err = update(capsys, "--source", "skypilot", "--file", str(vms), "--provider", "aws")
    assert code == 2 and "the skypilot source: region" in err and "control character" in err, err
    assert not (cache / "offers").exists()


def test_a_price_list_s_formulas_leave_as_text(cache, tmp_path, capsys):
    """Session 18's security audit: a third party's price list with formulas in its text columns (region, instance,
    source) came out of `gpuplan prices --format csv` as formulas a spreadsheet runs."""
    path = tmp_path / "evil.csv"
    path.write_text("provider,gpu_id,gpu_count,pricing,price_usd_per_gpu_hour,region,instance,observed_at,source\n"
                    f"evilcloud,nvidia-l4,1,on_demand,0.5,=1+1,+1+cmd|' /C calc'!A0,{TODAY},@SUM(1;1)\n")
    assert update(capsys, "--source", "file", "--file", str(path))[0] == 0
    assert run(["prices", "--provider", "evilcloud", "--format", "csv"]) == 0
    import csv
    import io

    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert (row["region"], row["instance"], row["source"]) == ("'=1+1", "'+1+cmd|' /C calc'!A0", "'@SUM(1;1)")
