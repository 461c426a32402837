"""Every causal-LM architecture the installed transformers ships, counted by gpuplan and by transformers itself.

For each ``model_type`` of ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``: its configuration class's default config (mostly
the flagship size), built by ``AutoModelForCausalLM.from_config`` on the meta device; the reference is
``sum(p.numel() for p in model.parameters())``. gpuplan reads the same config twice: as ``gpuplan model`` does
(transformers installed: a family reader, else the structure read off transformers), and with the core alone (no
transformers: a family reader, else the common config keys, which must then say they are not exact).

    python bench/architectures.py          # writes bench/results/architectures.md (about 3 minutes on 2 cores)

tests/model/test_model_sweep.py asserts the same rows (>= 95 % within 0.5 %, and never an unflagged miss).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

TOY_PARAMS = 50_000_000  # defaults below this are toy-sized (BLOOM's default is 16M, ELECTRA's 14M)
TOLERANCE = 0.005  # the 0.5 %


@dataclass(kw_only=True)
class Row:
    model_type: str
    reference: int | None = None
    skipped: str | None = None  # why the default config is not swept
    gpuplan: int | None = None
    exact: bool | None = None
    counted_by: str = ""
    core: int | None = None  # without transformers
    core_exact: bool | None = None
    kinds: str = ""
    error: str | None = None  # gpuplan failed to read it
    seconds: float = 0.0

    @property
    def within(self) -> bool:
        return self.gpuplan is not None and abs(self.gpuplan - self.reference) <= TOLERANCE * self.reference

    @property
    def core_within(self) -> bool:
        return self.core is not None and abs(self.core - self.reference) <= TOLERANCE * self.reference


def causal_lm_types() -> list[str]:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def _quiet():
    from gpuplan.model.trace import quiet

    return quiet()


@cache
def default_config(model_type: str) -> dict | None:
    """The configuration class's defaults as a config.json dict (None when transformers cannot make one)."""
    import transformers

    with _quiet():
        try:
            config = transformers.AutoConfig.for_model(model_type).to_dict()
        except Exception:
            return None
    config = {k: v for k, v in config.items() if not (isinstance(v, float) and not math.isfinite(v))}
    config["model_type"] = model_type
    if config.get("is_decoder") is False:  # an encoder family's *ForCausalLM (RoBERTa, CamemBERT, BertGeneration):
        config["is_decoder"] = True  # transformers asks for is_decoder=True to use it as a causal LM (its warning)
    return config


def reference_count(model_type: str) -> tuple[int | None, str | None]:
    """(transformers' parameter count of the default causal LM, or None with the reason it cannot be built)."""
    import torch
    import transformers

    with _quiet():
        try:
            cfg = transformers.AutoConfig.for_model(model_type)
            with torch.device("meta"):
                model = transformers.AutoModelForCausalLM.from_config(cfg)
        except Exception as err:
            text = str(err).strip().splitlines()
            return None, f"transformers cannot build its default config ({type(err).__name__}: " \
                         f"{(text[0] if text else '')[:120]})"
    return sum(p.numel() for p in model.parameters()), None


def measure(model_type: str, *, core: bool = True) -> Row:
    from gpuplan.errors import GpuplanError
    from gpuplan.model.spec import ModelSpec

    started = time.perf_counter()
    row = Row(model_type=model_type)
    row.reference, row.skipped = reference_count(model_type)
    if row.reference is not None and row.reference < TOY_PARAMS:
        row.skipped = f"toy-sized default ({row.reference / 1e6:.0f}M parameters)"
    config = default_config(model_type)
    if row.skipped or config is None:
        row.skipped = row.skipped or "transformers cannot write its default config"
        return row
    try:
        m = ModelSpec.from_config(config, name=model_type)
        row.gpuplan, row.exact, row.counted_by = m.params_total, m.exact, m.counted_by
        kinds: dict[str, int] = {}
        for layer in m.layers:
            kinds[layer.kind] = kinds.get(layer.kind, 0) + 1
        row.kinds = ", ".join(f"{n} {k}" for k, n in kinds.items())
    except GpuplanError as err:
        row.error = str(err)
    if core:
        with _empty_cache():  # the core alone: no structure traced above
            try:
                c = ModelSpec.from_config(config, name=model_type, use_transformers=False)
                row.core, row.core_exact = c.params_total, c.exact
            except GpuplanError:
                row.core, row.core_exact = None, False
    row.seconds = time.perf_counter() - started
    return row


@contextlib.contextmanager
def _empty_cache():
    saved = os.environ.get("GPUPLAN_CACHE_DIR")
    with tempfile.TemporaryDirectory() as folder:
        os.environ["GPUPLAN_CACHE_DIR"] = folder
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("GPUPLAN_CACHE_DIR")
            else:
                os.environ["GPUPLAN_CACHE_DIR"] = saved


def sweep(core: bool = True, workers: int = 2, types: list[str] | None = None) -> list[Row]:
    """Every architecture (or ``types``), over ``workers`` processes (each imports transformers' model modules
    once)."""
    types = causal_lm_types() if types is None else types
    if workers <= 1:
        return [measure(t, core=core) for t in types]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(functools.partial(measure, core=core), types, chunksize=4))


def table(rows: list[Row]) -> str:
    swept = [r for r in rows if not r.skipped]
    within = [r for r in swept if r.within]
    core_ok = [r for r in swept if r.core_within]
    core_exact = [r for r in swept if r.core_exact]
    lines = [
        f"{len(swept)} of {len(rows)} causal-LM architectures swept ({len(rows) - len(swept)} skipped below); "
        f"`gpuplan model` within 0.5 % of transformers: {len(within)} of {len(swept)} "
        f"({100 * len(within) / max(len(swept), 1):.1f} %). Without transformers: {len(core_ok)} within 0.5 %, "
        f"{len(core_exact)} claimed exact (each of them equal to transformers' count).",
        "",
        "| model_type | transformers | gpuplan | error | counted by | core alone | core exact | layers |",
        "|---|---:|---:|---:|---|---:|---|---|",
    ]
    for r in swept:
        err = f"{100 * (r.gpuplan - r.reference) / r.reference:+.2f} %" if r.gpuplan is not None else r.error
        core = f"{100 * (r.core - r.reference) / r.reference:+.1f} %" if r.core is not None else "cannot read"
        lines.append(f"| {r.model_type} | {r.reference:,} | {r.gpuplan or 0:,} | {err} | {r.counted_by} | {core} | "
                     f"{'yes' if r.core_exact else 'no'} | {r.kinds} |")
    lines += ["", "Skipped:", ""]
    lines += [f"- {r.model_type}: {r.skipped}" for r in rows if r.skipped]
    return "\n".join(lines)


def simulate_sweep(types: list[str], *, one_period: bool = True, workers: int = 2) -> list[SimRow]:
    from concurrent.futures import ProcessPoolExecutor

    run = functools.partial(simulate_row, one_period=one_period)
    if workers <= 1:
        return [run(t) for t in types]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(run, types, chunksize=2))


# ---- simulate on every architecture --------------------------------------------------------------------------
SIM_TASKS = {  # tiny shapes: the point is that the real code runs (few layers, extrapolated), not the numbers
    "infer": dict(task="infer", batch_size=1, prompt_tokens=8, output_tokens=2),
    "lora": dict(task="train", method="lora", seq_len=8),
    "full": dict(task="train", method="full", seq_len=8, precision="bf16-true"),
}


def distinct(rows: list[Row]) -> list[str]:
    """The swept architectures, once per structure: model types whose default builds the same parameter count
    and layer kinds as one already listed (llama4 and llama4_text, the BERT-style family...) are left out."""
    seen: set[tuple] = set()
    out = []
    for r in rows:
        key = (r.reference, r.kinds)
        if r.skipped or r.error is not None or key in seen:
            continue
        seen.add(key)
        out.append(r.model_type)
    return out


@dataclass(kw_only=True)
class SimRow:
    model_type: str
    outcome: dict[str, str]  # task -> "ok" or the one sentence simulate gave
    peak_gib: dict[str, float]
    lora_params: tuple[int, int] | None = None  # (simulated = peft's count, estimated)
    crash: str | None = None  # anything that is not a GpuplanError: a bug
    seconds: float = 0.0
    not_decoder: bool = False  # refused by design: an encoder or encoder-decoder family (model/kinds.of_config)


def not_a_decoder(config: dict) -> bool:
    """Whether gpuplan reads ``config`` as an encoder or encoder-decoder (transformers also registers a causal-LM
    head for BERT- and BART-style families): the families :mod:`gpuplan.model.families` models or refuses by name."""
    from gpuplan.model import families

    return (families.is_encoder_family(config) or config.get("model_type") in families.NOT_DECODERS
            or config.get("is_encoder_decoder") is True)


def simulate_row(model_type: str, folder: Path | None = None, *, one_period: bool = False) -> SimRow:
    """Simulate the default config of ``model_type`` for each task: extrapolated from two runs, or (``one_period``,
    the CI sweep) one run of its first period of layers."""
    import json

    from gpuplan import estimate
    from gpuplan.errors import GpuplanError
    from gpuplan.model.catalog import load_model
    from gpuplan.sim.depth import plan
    from gpuplan.sim.simulate import simulate

    started = time.perf_counter()
    folder = Path(folder or tempfile.mkdtemp())
    path = folder / f"{model_type}.json"
    path.write_text(json.dumps(default_config(model_type)))
    row = SimRow(model_type=model_type, outcome={}, peak_gib={})
    layers = whole = None
    try:
        whole = load_model(str(path)).num_layers
        layers = plan(list(load_model(str(path)).layers))[0][0] if one_period else None
    except GpuplanError as err:
        row.outcome = dict.fromkeys(SIM_TASKS, str(err))
        row.not_decoder = not_a_decoder(default_config(model_type))
        return row
    for task, fields in SIM_TASKS.items():
        scenario = {"model": str(path), **fields}
        try:
            sim = simulate(scenario, layers=layers)
        except GpuplanError as err:
            row.outcome[task] = str(err)
            continue
        except Exception as err:  # a traceback the user would see: the sweep fails on it
            row.crash = f"{task}: {type(err).__name__}: {err}"[:300]
            row.outcome[task] = "crash"
            continue
        row.outcome[task], row.peak_gib[task] = "ok", sim.allocated_peak_gib
        if task == "lora" and not one_period:
            row.lora_params = (sim.params_trainable, estimate(scenario, advise=False).model.params_trainable)
        elif task == "lora":  # the estimate of the same first layers
            cut = folder / f"{model_type}-{layers}.json"
            from gpuplan.sim.depth import cut_config

            config = default_config(model_type)  # the whole model's config when the run was whole
            cut.write_text(json.dumps(config if layers == whole else cut_config(config, layers)))
            row.lora_params = (sim.params_trainable,
                               estimate({**scenario, "model": str(cut)}, advise=False).model.params_trainable)
    row.seconds = time.perf_counter() - started
    return row


def simulate_table(rows: list[SimRow]) -> str:
    ran = {task: sum(r.outcome.get(task) == "ok" for r in rows) for task in SIM_TASKS}
    lines = [f"{len(rows)} architectures; simulated: " + ", ".join(f"{task} {n}" for task, n in ran.items())
             + f"; crashes: {sum(r.crash is not None for r in rows)}.", "",
             "| model_type | infer | LoRA | full | LoRA params (peft / estimate) | s |", "|---|---|---|---|---|---:|"]
    for r in rows:
        cells = [("ok" if r.outcome.get(t) == "ok" else (r.outcome.get(t) or "")[:90]) for t in SIM_TASKS]
        lora = f"{r.lora_params[0]:,} / {r.lora_params[1]:,}" if r.lora_params else ""
        lines.append(f"| {r.model_type} | {' | '.join(cells)} | {lora} | {r.seconds:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    os.environ["GPUPLAN_CACHE_DIR"] = tempfile.mkdtemp()  # trace afresh
    start = time.perf_counter()
    rows = sweep()
    counts = table(rows)
    counted = time.perf_counter() - start
    sims = simulate_table(simulate_sweep(distinct(rows), one_period="--one-period" in sys.argv))
    out = Path(__file__).parent / "results" / "architectures.md"
    out.write_text(f"# Every causal-LM architecture of transformers: gpuplan model and gpuplan simulate\n\n"
                   f"## Parameter counts ({counted:.0f} s)\n\n{counts}\n\n"
                   f"## simulate: inference, LoRA, full fine-tuning ({time.perf_counter() - start - counted:.0f} s)\n\n"
                   f"{sims}\n")
    print(counts)
    print(sims)
