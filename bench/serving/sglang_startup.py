"""SGLang's KV pool against public startup logs (bench/serving/sglang_startup_cases.yaml).

    python bench/serving/sglang_startup.py [--out bench/results/sglang_startup.md]

Two checks per log: the pool SGLang's profile_max_num_token gives from the log's own memory numbers (the
arithmetic; only where the log prints them), and the pool gpuplan predicts from the model and the card alone
(engines/sglang.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))

from gpuplan.engines import sglang  # noqa: E402
from gpuplan.hardware import load_gpu  # noqa: E402
from gpuplan.model.catalog import load_model  # noqa: E402
from gpuplan.scenario import scenario_from  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench/results/sglang_startup.md"))
    args = ap.parse_args()
    lines = ["# SGLang startup: KV tokens against public logs", "",
             "| log | role | tokens logged | from the log's memory | error | gpuplan alone | error |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for c in yaml.safe_load((HERE / "sglang_startup_cases.yaml").read_text()):
        s = scenario_from({"task": "infer", **c["scenario"]}) if "scenario" in c else None
        log, mfs = c["log"], c["mem_fraction_static"]
        m = load_model(s.model) if s else load_model("llama-3.1-8b")
        cell = sglang.cell_bytes(s or scenario_from({"task": "infer", "model": "llama-3.1-8b"}), m)
        formula = sglang.kv_tokens(log["available_gib"], log["total_gib"], mfs, cell) if "total_gib" in log else None
        err = "" if formula is None else f"{100 * (formula - log['kv_tokens']) / log['kv_tokens']:+.2f}%"
        pred = "" if c.get("formula_only") else sglang.startup_memory(s, m, load_gpu(s.gpu),
                                                                      mem_fraction_static=mfs).kv_tokens
        perr = f"{100 * (pred - log['kv_tokens']) / log['kv_tokens']:+.2f}%" if pred != "" else "(card not named)"
        lines.append(f"| {c['id']} | {c['role']} | {log['kv_tokens']:,} | "
                     f"{'(not logged)' if formula is None else f'{formula:,}'} | {err} | "
                     f"{pred if pred == '' else f'{pred:,}'} | {perr} |")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
