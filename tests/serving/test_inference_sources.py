"""bench/inference_sources.py: its table names every public source the inference benches score (read here from the
data files themselves, not through the bench), and its summary takes the median and the worst over held-out rows
only."""

import csv
import sys
from pathlib import Path

import pytest

pytest.importorskip("numpy")

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data"
sys.path.insert(0, str(ROOT / "bench"))


def _csv(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _yaml(path: Path):
    import yaml

    return yaml.safe_load(path.read_text())


def data_sources() -> set[tuple[str, str]]:
    """(bench, source) for every scored row of the data files: the part of the id before the first dash."""
    first = lambda rid: rid.split("-", 1)[0]  # noqa: E731
    out = {("serving_accuracy", first(c["id"])) for c in _yaml(ROOT / "bench/serving/serving_cases.yaml")
           if c["role"] != "excluded"}
    out |= {("load_accuracy", first(r["id"])) for r in _csv(DATA / "serving_load_runs.csv")}
    out |= {("sglang_serving", first(r["id"])) for r in _csv(DATA / "sglang_serving.csv")}
    out |= {("trtllm_serving", first(r["id"])) for r in _csv(DATA / "trtllm_serving.csv")}
    out |= {("llama_bench", first(r["id"])) for r in _csv(DATA / "llama-bench.csv") if r["role"] != "excluded"}
    out |= {("mlperf_inference", f"mlperf-{r['round']}") for r in _csv(DATA / "mlperf-inference.csv")}
    out |= {("vllm_startup", first(c["id"])) for c in _yaml(ROOT / "bench/serving/vllm_startup_cases.yaml")
            if "kv_tokens" in c and not c.get("excluded")}
    out |= {("throughput", c["source"]) for c in _yaml(ROOT / "bench/throughput_cases.yaml")["cases"]
            if c["metric"] == "decode_tokens_per_s" and c["scenario"].get("gpu")}  # no card: no speed to score
    return out | {("trtllm", "nvidia-perf-overview-1.0"), ("trtllm", "nvidia-perf-overview-0.17")}


def test_the_table_lists_every_source_in_the_data_files():
    text = (ROOT / "bench" / "results" / "inference_sources.md").read_text()
    listed = {tuple(cell.strip() for cell in line.split("|")[1:3]) for line in text.splitlines()
              if line.startswith("| ") and not line.startswith("| bench")}
    want = data_sources()
    assert len(want) >= 40
    assert want - listed == set()


def test_summary_is_over_held_out_rows_only():
    from inference_sources import Scored, summarize

    rows = [Scored("b", "s", "vllm", "dense", "TTFT", True, 0.9, "fit"),
            Scored("b", "s", "vllm", "dense", "TTFT", False, -0.3, "a"),
            Scored("b", "s", "vllm", "dense", "TTFT", False, 0.1, "b"),
            Scored("b", "s", "vllm", "dense", "TTFT", False, 0.2, "c"),
            Scored("b", "t", "vllm", "dense", "TTFT", True, 0.5, "only fitted")]
    got = summarize(rows)
    assert got[("b", "s", "vllm", "dense", "TTFT")] == {"fitted": 1, "held_out": 3, "median": pytest.approx(0.2),
                                                        "worst": -0.3}
    assert got[("b", "t", "vllm", "dense", "TTFT")] == {"fitted": 1, "held_out": 0, "median": None, "worst": None}
