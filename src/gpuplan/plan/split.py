"""A llama.cpp run split over mixed cards (``--tensor-split``; a 4090 beside a 3090): each device's own plan,
composed into one (issue 33).

Each device is planned as the scenario's ``gpu`` with its share first in ``tensor_split`` and its place in
llama.cpp's device order in ``_split_device`` (its layers and whether it holds the output head, as llama.cpp places
them: :func:`gpuplan.engines.llama_cpp.split_layers`); the split's default is in proportion to each card's memory, as
llama.cpp splits by the devices' free memory when ``--tensor-split`` is not given (src/llama-model.cpp
``load_tensors``). The whole fits when every device fits; the memory shown is the fullest device's (least
headroom), with every device in ``memory.engine["devices"]``. A layer split runs the devices one after another for
each token, so a step is each device's step weighted by the fraction of the layers it holds: ``step = sum(share_i
x step_i)``, and tokens/s ``1 / sum(share_i / tokens_per_s_i)`` (each device timed as if it held the whole model, its
host loop counted once). A split over one kind of card (``tensor_split`` alone) is priced on that card's offers, as
``build`` prices a plan, at the composed speed; no offer rents a mixed pair, so a split over mixed cards is not.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import GpuplanError
from ..hardware import GpuSpec, resolve_gpu, short_id
from ..market.cost import Cost
from ..market.store import load_offers
from ..result import GpuFacts
from ..scenario import Scenario, scenario_from
from ..speed.breakdown import Speed
from .advice import largest_fitting
from .build import build, choose, links_that_matter, offers_for, price_offers, price_warnings
from .edge import batch_fields
from .plan import Plan, Verdict
from .resolve import resolve


def split_cards(s: Scenario) -> list[GpuSpec]:
    """The devices in order: ``gpu``, then ``extra_gpus`` (or ``gpu`` on every device of an uneven split). A split is
    one llama.cpp process's devices, in one machine: an Apple silicon chip is a whole computer, beside which no
    other device sits (Apple: eGPUs work only with Intel-based Macs, support.apple.com/102363), so a split that
    holds one is refused."""
    main = resolve_gpu(s.gpu)[0]
    cards = [main, *(resolve_gpu(g)[0] for g in s.extra_gpus)] if s.extra_gpus else [main] * s.num_gpus
    apple = next((c for c in cards if c.vendor == "Apple"), None)
    if apple is not None and len(cards) > 1:
        raise GpuplanError(f"{apple.name} is a whole computer, and a llama.cpp split runs the devices of one machine: "
                           "no other device sits beside it (Apple silicon takes no eGPU); plan it alone, or on "
                           "the other cards")
    return cards


def _device_scenario(s: Scenario, cards: list[GpuSpec], split: list[float], i: int) -> Scenario:
    order = [i] + [j for j in range(len(cards)) if j != i]
    update = {"gpu": cards[i].id, "tensor_split": [split[j] for j in order]}
    if s.extra_gpus:
        update["extra_gpus"] = [cards[j].id for j in order[1:]]
    device = s.model_copy(update=update)
    device._split_device = i
    return device


def _speed(plans: list[Plan], shares: list[float]) -> Speed | None:
    speeds = [p.speed for p in plans]
    if any(sp is None for sp in speeds):
        return None

    def weighted(attr: str) -> float | None:
        values = [getattr(sp, attr) for sp in speeds]
        return None if any(v is None for v in values) else sum(w * v for w, v in zip(shares, values, strict=True))

    def rate(attr: str) -> float:
        return 1 / sum(w / getattr(sp, attr) for w, sp in zip(shares, speeds, strict=True))

    step = weighted("step_time_s")
    parts = {k: sum(w * sp.parts_s.get(k, 0.0) for w, sp in zip(shares, speeds, strict=True))
             for k in {k for sp in speeds for k in sp.parts_s}}
    return replace(speeds[0], tokens_per_s=rate("tokens_per_s"), tokens_per_s_low=rate("tokens_per_s_low"),
                   tokens_per_s_high=rate("tokens_per_s_high"), step_time_s=step, parts_s=parts,
                   ttft_s=weighted("ttft_s"), ttft_burst_s=weighted("ttft_burst_s"),
                   request_overhead_s=weighted("request_overhead_s"),
                   streaming_tokens_per_s_per_user=1 / step if step else None,
                   tokens_per_s_per_sequence=rate("tokens_per_s_per_sequence")
                   if speeds[0].tokens_per_s_per_sequence else None,
                   request_latency_s=weighted("request_latency_s"), requests_per_s=rate("requests_per_s")
                   if speeds[0].requests_per_s else None)


def _device_row(card: GpuSpec, share: float, plan: Plan) -> dict:
    engine = plan.memory.engine or {}
    return {"gpu": card.id, "name": card.name, "share": share, "layers": engine.get("device_layers"),
            "model_buffer_gib": engine.get("model_buffer_gib"), "kv_buffer_gib": engine.get("kv_buffer_gib"),
            "compute_buffer_gib": engine.get("compute_buffer_gib"), "device_peak_gib": plan.memory.device_peak_gib,
            "usable_gib": card.usable_gib, "fits": plan.memory.fits}


def _verdict(cards: list[GpuSpec], fullest: Plan, card: GpuSpec, fits: bool) -> Verdict:
    """The split's verdict: every device fits, said of the fullest one."""
    mem, word = fullest.memory, "fits" if fits else "does not fit"
    return Verdict(fits=fits, word=word, sentence=f"{word} on {' + '.join(c.name for c in cards)}: the fullest "
                   f"device, {card.name}, holds {mem.device_peak_gib:,.2f} of {mem.capacity_gib:,.2f} GiB usable, "
                   f"headroom {mem.headroom_gib:+,.2f} GiB", device_peak_gib=mem.device_peak_gib,
                   capacity_gib=mem.capacity_gib, headroom_gib=mem.headroom_gib, details=fullest.verdict.details)


def _limits(plans: list[Plan]) -> tuple[int | None, int | None]:
    """The largest batch and longest prompt the whole split holds: the least over its devices, each searched on
    its own plan (:func:`gpuplan.plan.advice.largest_fitting`); None where a device holds none."""
    found = [largest_fitting(p.setup.scenario, p.setup.model, p.setup.gpu, p) for p in plans]
    batches, lengths = [b for b, _ in found], [n for _, n in found]
    return (min(batches) if all(batches) else None), (min(lengths) if all(lengths) else None)


def _priced(s: Scenario, device: Plan, speed: Speed | None, fits: bool) -> tuple[Cost | None, tuple[str, ...]]:
    """The cost of a split over one kind of card: the composed ``speed`` on every offer of that card that holds the
    scenario's GPUs (:func:`.build.price_offers`, each class of links given that speed), the cheapest chosen, and
    what its price needs said; none for mixed cards, which no offer rents."""
    if s.extra_gpus:
        return None, ("no offer rents a mixed pair of cards: not priced (owning them: gpuplan buy)",)
    if speed is None or not fits:
        return None, ()
    r = device.setup
    offers = offers_for(r, load_offers())
    speeds = {links_that_matter(r.scenario, r.gpu, o.network): (speed, ()) for o in offers.candidates}
    chosen = choose(price_offers(r.scenario, r.model, r.gpu, device.model.params_trainable, offers, speeds=speeds))
    return (chosen.cost if chosen else None), tuple(price_warnings(r, chosen, offers))


def _composed_words(base: Plan, speed: Speed | None, s: Scenario) -> Plan:
    """``base`` (the first device's plan) with its decode-step and time-to-first-token assumptions said of the
    composed ``speed``: they were the first device's own (an RTX 4070's 0.28 s to first token beside an RTX 3060,
    where the split's headline said 0.43 s; session 24's walk)."""
    if speed is None:
        return base
    parts = ", ".join(f"{k.replace('_', ' ')} {1e3 * v:.2f} ms" for k, v in
                      sorted(speed.parts_s.items(), key=lambda kv: -kv[1])[:4])
    b, p = s.batch_size, s.prompt_tokens
    words = []
    for a in base._said[0]:
        if a.startswith("decode step of "):
            a = f"{a.split(':', 1)[0]}, each device's step weighted by its share of the layers: {parts}"
        elif a.startswith("time to first token ") and speed.ttft_s is not None:
            a = (f"time to first token {speed.ttft_s:.2f} s for one {p:,}-token prompt alone"
                 + (f", {speed.ttft_burst_s:.2f} s for the last of {b} arriving together" if b > 1 else "")
                 + " (each device's prefill of its layers, in turn)")
        words.append(a)
    plan = base.model_copy()
    plan._said = (tuple(words), base._said[1])
    return plan


def _one_card_faster(s: Scenario, cards: list[GpuSpec], plans: list[Plan], speed: Speed | None) -> tuple[str, ...]:
    """One sentence when the fastest card of a split over mixed cards holds the whole job alone and streams faster
    there: a layer split runs the cards in turn, so the slower card's share slows every token (session 24's walk:
    Llama-3.1-8B Q4_K_M, which an RTX 4070 holds with 6 GiB to spare, split over it and an RTX 3060 streamed 63
    tokens/s a user at 3 users, the 4070 alone 80)."""
    if not s.extra_gpus or speed is None or not speed.step_time_s:
        return ()
    timed = [(p.speed.step_time_s, i) for i, p in enumerate(plans) if p.speed and p.speed.step_time_s]
    if not timed:
        return ()
    step, i = min(timed)  # each device's plan is timed as if it held the whole model (module docstring)
    if step >= 0.95 * speed.step_time_s:
        return ()
    given = {k: getattr(s, k) for k in s.model_fields_set if k not in ("extra_gpus", "tensor_split", "num_gpus",
                                                                          "tp", "pp")}
    try:
        memory = build(resolve(scenario_from({**given, "gpu": cards[i].id})), memory_only=True).memory
    except GpuplanError:
        return ()
    if not memory.fits:
        return ()
    return (f"{cards[i].name} holds this job alone ({memory.device_peak_gib:,.1f} of {memory.capacity_gib:,.1f} GiB) "
            f"and streams {1 / step:,.0f} tokens/s a user there, against {1 / speed.step_time_s:,.0f} split (the "
            f"cards run in turn, each at its own speed): plan it on {short_id(cards[i].id)} alone (drop extra_gpus)",)


def split_estimate(s: Scenario) -> Plan:
    """The plan of a llama.cpp split over the devices of ``s`` (module docstring): each device a plan of its own
    (unpriced, unadvised), composed."""
    cards = split_cards(s)
    split = list(s.tensor_split or [c.usable_gib for c in cards])
    shares = [v / sum(split) for v in split]
    plans = [build(resolve(_device_scenario(s, cards, split, i)), advise=False) for i in range(len(cards))]
    fullest = min(range(len(cards)), key=lambda i: plans[i].memory.headroom_gib)
    rows = [_device_row(c, sh, p) for c, sh, p in zip(cards, shares, plans, strict=True)]
    fits = all(r["fits"] for r in rows)
    batch, length = _limits(plans)
    memory = plans[fullest].memory.model_copy(update={"fits": fits, **batch_fields(batch), "max_seq_len": length,
                                                      "engine": {**(plans[fullest].memory.engine or {}),
                                                                 "devices": rows}})
    said = ", ".join(f"{short_id(r['gpu'])} {r['share']:.0%} ({r['layers']} layers, {r['device_peak_gib']:,.1f} of "
                     f"{r['usable_gib']:,.1f} GiB)" for r in rows)
    how = "as given" if s.tensor_split else "by each card's memory, llama.cpp's default"
    over = tuple(f"{r['name']} is over by {r['device_peak_gib'] - r['usable_gib']:,.1f} GiB: give it a smaller share "
                 "(tensor_split), or a smaller quantization" for r in rows if not r["fits"])
    held = [p.memory.engine["device_share"] for p in plans]  # each device's layers, as llama.cpp places them
    card, base, speed = cards[fullest], plans[0], _speed(plans, held)
    cost, priced = _priced(s, base, speed, fits)
    base = _composed_words(base, speed, s)
    faster = _one_card_faster(s, cards, plans, speed) if fits else ()
    plan = base.said(("a layer split runs the devices in turn: each step is every device's step weighted by its "
                      "share of the layers (plan/split.py)",), (*over, *priced, *faster),
                     memory=memory, speed=speed, cost=cost, suggestions=(),
                     verdict=_verdict(cards, plans[fullest], card, fits),
                     gpu=GpuFacts(id=card.id, name=card.name, memory_gib=card.memory_gib, usable_gib=card.usable_gib,
                                  architecture=card.architecture))
    shares = ",".join(f"{round(v, 2):g}" for v in split)
    plan._setup = replace(base.setup, chosen=(*base.setup.chosen, f"llama.cpp --tensor-split {shares} ({how}): "
                                              f"{said}; the memory shown is the fullest device's"))
    return plan
