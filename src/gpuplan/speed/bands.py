"""How far a decode-speed estimate is from the measured one, per serving engine and class of model: the band the
benches measure (:data:`gpuplan.overheads.DECODE_BANDS`, from bench/serving/bands.py's held-out rows), or none where
no bench measures the pair ("uncalibrated": the range shown is then the card-level spread, widened, and says so).
"""

from __future__ import annotations

from .. import overheads as oh
from ..model.spec import ModelSpec

CLASSES = ("dense", "MoE", "hybrid")


def model_class(m: ModelSpec) -> str:
    """dense; MoE (experts routed per token); hybrid (layers holding a recurrent state, Mamba or linear attention,
    beside attention layers)."""
    if m.is_moe:
        return "MoE"
    if any(layer.state_elements for layer in m.layers):
        return "hybrid"
    return "dense"


def decode_band(engine: str, m: ModelSpec) -> tuple[float, float, str] | None:
    """(low, high, where it comes from) of measured / estimated - 1 for ``engine`` serving ``m``'s class; None when
    no bench measures the pair."""
    found = oh.DECODE_BANDS.get((engine, model_class(m)))
    if found is None:
        return None
    low, high, rows, source = found
    return low, high, f"{engine} x {model_class(m)}: {rows} held-out rows, {source}"
