"""How far a decode-speed estimate is from the measured one, per serving engine, class of model and card maker: the
band the benches measure (:data:`gpuplan.overheads.DECODE_BANDS`, from bench/serving/bands.py's held-out rows); on a
maker with no band of its own, the engine's NVIDIA band, which the caller widens; or none where no bench measures
the engine on the class ("uncalibrated": the range shown is then the card-level spread, widened, and says so).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import overheads as oh
from ..model.spec import ModelSpec

MAKER_WORDS = {"NVIDIA": "NVIDIA cards (CUDA)", "Apple": "Apple silicon (Metal)", "AMD": "AMD cards (ROCm)"}


def model_class(m: ModelSpec) -> str:
    """dense; MoE (experts routed per token); hybrid (layers holding a recurrent state, Mamba or linear attention,
    beside attention layers). A model with both routed experts and recurrent layers is MoE."""
    if m.is_moe:
        return "MoE"
    if any(layer.state_elements for layer in m.layers):
        return "hybrid"
    return "dense"


@dataclass(frozen=True)
class Band:
    """measured / estimated - 1, low and high; where the rows come from; whether they ran on the plan's maker."""
    low: float
    high: float
    where: str
    own_maker: bool


def decode_band(engine: str, m: ModelSpec, maker: str = "NVIDIA") -> Band | None:
    """The band of ``engine`` serving ``m``'s class on ``maker``'s cards, else on NVIDIA's (``own_maker`` False);
    None when no bench measures the engine on the class."""
    cls = model_class(m)
    for where in (maker, "NVIDIA"):
        found = oh.DECODE_BANDS.get((engine, cls, where))
        if found is not None:
            low, high, rows, source = found
            return Band(low, high, f"{engine} x {cls} on {MAKER_WORDS.get(where, where)}: {rows} held-out rows, "
                        f"{source}", where == maker)
    return None


def uncalibrated_words(engine: str, m: ModelSpec) -> str:
    """What no bench measures, said where a plan's range is uncalibrated: the engine on this class of model, and
    the classes it is measured on, if any."""
    cls = model_class(m)
    measured = sorted({c for e, c, _ in oh.DECODE_BANDS if e == engine})
    also = f" (it is measured on {' and '.join(measured)} models)" if measured else ""
    return f"uncalibrated: no bench measures {engine} on {cls} models{also}"
