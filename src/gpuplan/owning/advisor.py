"""The buying advisor: every build a budget buys (1, 2, 4 or 8 of each card with a price; Macs and unified-memory
computers one machine each, or as many as link with one cable: two DGX Sparks), each job's Plan on it, ranked by
how many of the jobs it runs, then by the cost of owning it per job over the horizon (at the pessimistic end of the
speed band), with what each build cannot do and where renting the same work (each job on its cheapest rental, as
``recommend`` ranks them; a diffusion, Whisper or encoder job on one card) costs less.

Cards in SXM/OAM modules or superchips need a vendor's baseboard server (HGX, DGX, OAM) and are not built here."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from ..errors import GpuplanError
from ..hardware import GpuSpec, gpus, short_id
from ..market.offers import spot_rows_missing
from ..model.catalog import load_model
from ..plan.module_searches import recommend_module
from ..plan.recommend import Constraints, recommend
from ..result import usd_amount
from .answer import Terms, answer_build, jobs_per_horizon, notes_for, workload_rows
from .builds import UnknownDraw, make_build
from .compare import BuildAnswer, BuyReport, RentalAnswer, rental_answer
from .facts import linked
from .plans import job_plan
from .workloads import Workloads

COUNTS = (1, 2, 4, 8)


def buildable(gpu: GpuSpec) -> bool:
    """A card that goes in a PCIe slot, or a unified-memory computer."""
    return gpu.unified_memory or gpu.form_factor.lower().startswith("pcie")


def cheapest_rentals_of(w: Workloads) -> RentalAnswer | None:
    """Each job on its cheapest on-demand rental (``recommend``'s first setup), as one rental of the work."""
    plans = []
    for job in w.workloads:
        s = job.parsed
        if job.module is not None:  # one card per setup (plan/module_searches.py)
            found = recommend_module(s, job.module, Constraints(top=1))
        else:
            found = recommend(s, load_model(s.model), Constraints(top=1))
        if not found.setups:
            return None
        x = found.setups[0]
        plans.append(job_plan(job, gpus()[x.gpu_id], 1 if job.module is not None else x.num_gpus, owned=False))
    return rental_answer("each job on its cheapest offer", "on_demand", plans)


def _counts(gpu: GpuSpec) -> tuple[int, ...]:
    """1, 2, 4 and 8 cards; one unified-memory computer, or as many as link with one cable (two DGX Sparks)."""
    if not gpu.unified_memory:
        return COUNTS
    link = linked(gpu.id)
    return (1, link["most"]) if link else (1,)


def _candidates(budget: float, cards: Iterable[str], prices: Mapping[str, float], used: bool,
                host_usd: float | None, host_ram_gib: float | None, display: str):
    """The builds within the budget, and a sentence for each card or count that could not be priced."""
    builds, unranked, over, no_host, no_price, no_draw = [], [], 0, {}, [], []
    for gpu in (gpus()[g] for g in cards):
        if not buildable(gpu):
            continue
        for count in _counts(gpu):
            try:
                b = make_build(gpu, count, price=prices.get(gpu.id), used=used, host_usd=host_usd,
                               host_ram_gib=host_ram_gib, display=display)
            except UnknownDraw:
                no_draw.append(short_id(gpu.id))
                break
            except GpuplanError as err:
                if "host" in str(err):
                    no_host.setdefault(count, []).append(short_id(gpu.id))
                    continue
                if count == 1:
                    no_price.append(short_id(gpu.id))
                break  # no price for the card: no count of it can be priced
            if b.purchase_usd > budget:
                over += count == 1
                break  # a larger count costs more
            builds.append(b)
    unranked += [f"{n}x builds of {', '.join(cards)}: no sourced price for a {n}-card host: give --host-usd to rank "
                 "them" for n, cards in no_host.items()]
    if no_price:
        unranked.append(f"no price in gpuplan's data for {', '.join(no_price)}: give --price CARD=USD to rank them")
    unranked += [f"no published power draw for {name}: price it alone with `gpuplan buy {name} --host-w W "
                 "--host-idle-w W`" for name in no_draw]
    return builds, unranked, over


def _rank_key(a: BuildAnswer) -> tuple:
    return (-a.runs, a.usd_per_job if a.usd_per_job is not None else math.inf, a.build.purchase_usd)


def advise(w: Workloads, budget_usd: float, terms: Terms, *, cards: Iterable[str] = (),
           prices: Mapping[str, float] | None = None, used: bool = False, host_usd: float | None = None,
           host_ram_gib: float | None = None, display: str = "none", top: int = 10) -> BuyReport:
    """The builds ``budget_usd`` buys for the work ``w``, ranked (module docstring)."""
    ids = list(cards) or list(gpus())
    builds, unranked, over = _candidates(budget_usd, ids, prices or {}, used, host_usd, host_ram_gib, display)
    if not builds:
        raise GpuplanError(f"no build of the cards asked for costs ${budget_usd:,.0f} or less (with its host): raise "
                           "--budget, give --price for cards gpuplan has no price for, or name cards with --gpus")
    reference = cheapest_rentals_of(w)
    rentals = [reference] if reference else []
    answers = sorted((answer_build(b, w, terms, rentals) for b in builds), key=_rank_key)
    report = BuyReport(years=w.years, workloads=workload_rows(w), budget_usd=budget_usd, builds=answers[:top],
                       rentals=rentals, unranked=unranked)
    if over:
        report.notes.append(f"{over} cards cost more than ${budget_usd:,.0f} even one at a time (with a host) and "
                            "were left out")
    if len(answers) > top:
        report.notes.append(f"{len(answers) - top} more builds fit the budget (--top to see them)")
    best = answers[0]
    runs = f"runs {best.runs} of {len(w.workloads)} jobs"
    cost = f", ${usd_amount(best.usd_per_job)} per job over {w.years:g} y" if best.usd_per_job is not None else ""
    report.verdict = (f"best for ${budget_usd:,.0f}: {best.build.label} (${best.build.purchase_usd:,.0f}), {runs}{cost}"
                      + (f"; {best.renting_wins}" if best.renting_wins else ""))
    report.notes += [n for n in notes_for(best.build, terms, best)[2:]] + [
        f"jobs over the horizon: {jobs_per_horizon(w):,.0f} (a serving day counts as one)", spot_rows_missing()]
    return report
