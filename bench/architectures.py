"""Every causal-LM architecture the installed transformers ships, counted by gpuplan and by transformers itself.

For each ``model_type`` of ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``: its configuration class's default config (mostly
the flagship size), built by ``AutoModelForCausalLM.from_config`` on the meta device; the reference is
``sum(p.numel() for p in model.parameters())``. gpuplan reads the same config twice: as ``gpuplan model`` does
(transformers installed: a family reader, else the structure read off transformers), and with the core alone (no
transformers: a family reader, else the common config keys, which must then say they are not exact).

    python bench/architectures.py          # writes bench/results/architectures.md (about 3 minutes on 2 cores)

tests/test_model_sweep.py asserts the same rows (>= 95 % within 0.5 %, and never an unflagged miss).
"""

from __future__ import annotations

import contextlib
import math
import os
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


def sweep(core: bool = True) -> list[Row]:
    return [measure(t, core=core) for t in causal_lm_types()]


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


if __name__ == "__main__":
    os.environ["GPUPLAN_CACHE_DIR"] = tempfile.mkdtemp()  # trace afresh
    start = time.perf_counter()
    result = table(sweep())
    out = Path(__file__).parent / "results" / "architectures.md"
    out.write_text(f"# gpuplan model vs transformers, every causal-LM architecture\n\n{result}\n\n"
                   f"({time.perf_counter() - start:.0f} s)\n")
    print(result)
