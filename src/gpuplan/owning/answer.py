"""``buy`` for one named build: each job's Plan on it and on the rentals asked for (the same cards by default),
the cost of owning it, the build checks, and the verdict at the pessimistic end of the speed band. Without
workloads, ``hours`` (or a utilization, the share of the horizon's hours) of use against renting the same cards."""

from __future__ import annotations

from dataclasses import dataclass

from ..hardware import GpuSpec, gpus, short_id
from ..market.cost import spot_dearer
from ..market.offers import spot_rows_missing
from ..plan.gpus import cheapest_rentals
from .builds import Build
from .checks import build_checks
from .compare import BuildAnswer, BuyReport, Keep, RentalAnswer, build_answer, rental_answer
from .plans import JobPlan, job_plan
from .power import HOURS_PER_YEAR, Electricity
from .resale import depreciation_of, resale_usd
from .tco import own
from .workloads import Workloads


@dataclass(frozen=True, kw_only=True)
class Terms:
    """The owner's terms: the horizon, the electricity price, the room's PUE, whether the machine is switched off
    between jobs, and maintenance and space where given."""

    years: float
    electricity: Electricity
    pue: float = 1.0
    off_when_idle: bool = False
    maintenance_usd_per_year: float = 0.0
    space_usd_per_month: float = 0.0


def jobs_per_horizon(w: Workloads) -> float:
    """Runs over the horizon: training runs, and a serving day counted as one job."""
    return sum((HOURS_PER_YEAR / 24 if j.serving else j.runs_per_year) for j in w.workloads) * w.years


def workload_rows(w: Workloads) -> list[dict]:
    return [{"label": j.label, "kind": j.kind,
             "runs_per_year": None if j.serving else j.runs_per_year, "hours_per_day": j.hours_per_day,
             "output_tokens_per_day": j.output_tokens_per_day, "scenario": j.scenario} for j in w.workloads]


def rentals_for(w: Workloads, rent: list[tuple[GpuSpec, int]]) -> tuple[list[RentalAnswer], list[str]]:
    """Each rental asked for, on-demand, and spot when a job trains (spot serving would be interrupted); and a note
    for each with no offer in force at all, or a spot rent above its on-demand rent (:func:`_dearer`)."""
    out, missing = [], []
    trains = any(not j.serving for j in w.workloads)
    for gpu, count in rent:
        setup = f"{count}x {short_id(gpu.id)}"
        for pricing in ("on_demand", "spot") if trains else ("on_demand",):
            plans = [job_plan(j, gpu, count, owned=False, pricing=pricing) if not (j.serving and pricing == "spot")
                     else job_plan(j, gpu, count, owned=False) for j in w.workloads]
            answer = rental_answer(setup, pricing, plans)
            if pricing == "on_demand" and not answer.runs_all and any(p.offer for p in plans):
                answer.runs_all_on = fewest_rented(w, gpu, count, plans)
            if not any(p.offer for p in plans):
                if pricing == "on_demand":
                    missing.append(f"no offer of {setup} in force to rent: `gpuplan prices --gpu {short_id(gpu.id)}`; "
                                   "--rent names cards to rent instead")
                continue
            if pricing == "spot" and not answer.runs_all:
                continue  # no spot offer of these cards in force: the on-demand row says what renting costs
            dearer = _dearer(answer, out[-1] if out and out[-1].setup == setup else None)
            if dearer:
                missing.append(dearer)
                continue
            out.append(answer)
    return out, missing


# the counts of a card a rental is tried at when the work does not all run on the count asked: the instances'
# sizes (1, 2, 4, 8 GPUs a machine) and whole 8-GPU machines beyond
RENT_COUNTS = (2, 4, 8, 16, 32, 64)


def fewest_rented(w: Workloads, gpu: GpuSpec, count: int, plans: list[JobPlan]) -> str:
    """The fewest of ``gpu`` above ``count`` (:data:`RENT_COUNTS`) on which every job runs on demand, as ``"4x
    h100-sxm"`` ("" where none does): each job planned again there, those that did not run on ``count`` first."""
    order = sorted(range(len(w.workloads)), key=lambda i: plans[i].runs)
    for n in (c for c in RENT_COUNTS if c > count):
        if all(job_plan(w.workloads[i], gpu, n, owned=False).runs for i in order):
            return f"{n}x {short_id(gpu.id)}"
    return ""


def _dearer(spot: RentalAnswer, on_demand: RentalAnswer | None) -> str:
    """Why a spot rental is left out, in :func:`spot_dearer`'s words: its rent over a year, at the low end of the
    speed band, above the same cards' on-demand rent, as when the only spot offer is a whole instance of more cards
    than asked (1x A100 80GB on aws's 8x spot instance: $33,785 against $4,819 on demand over 2 years, s19-rewalk's
    finding); "" to keep it."""
    if spot.pricing != "spot" or on_demand is None or not on_demand.runs_all:
        return ""
    return spot_dearer(spot.setup, (spot.usd_per_year_low or 0.0, ", ".join(spot.offers)),
                       (on_demand.usd_per_year_low or 0.0, ", ".join(on_demand.offers)), per=" a year",
                       counted="whole instances, each as the catalog rents it, at the low end of the speed band",
                       instead="the spot rental is left out")


def answer_build(build: Build, w: Workloads, terms: Terms, rentals: list[RentalAnswer]) -> BuildAnswer:
    gpu = gpus()[build.gpu_id]
    plans = [job_plan(j, gpu, build.count, owned=True, host_ram_gib=build.host_ram_gib, display=build.display)
             for j in w.workloads]
    o = own(build, plans, w.years, terms.electricity, pue=terms.pue, off_when_idle=terms.off_when_idle,
            maintenance_usd_per_year=terms.maintenance_usd_per_year,
            space_usd_per_month=terms.space_usd_per_month)
    return build_answer(build, plans, o, build_checks(build, plans, terms.electricity.circuit), rentals,
                        jobs_per_horizon(w))


def notes_for(build: Build, terms: Terms, answer: BuildAnswer) -> list[str]:
    o = answer.ownership
    busy = "the computer" if build.whole_computer else "cards at TDP + host" if not o.spare_cards else \
        f"the cards a job runs on at TDP, the others idle ({o.spare_cards:,.1f} of {build.count} on average) + host"
    idle = "switched off" if terms.off_when_idle else \
        o.idle_source if build.whole_computer else f"cards {o.idle_source}"
    notes = [f"card price: {build.card.label}: {build.card.source}" if build.card.source else
             f"card price: {build.card.label}",
             f"host: {build.host_label}, ${build.host_usd:,.0f} ({build.host_price}); RAM {build.host_ram_gib:,.0f} "
             f"GiB ({build.host_ram_note})",
             f"electricity: {terms.electricity.label}" + (f" ({terms.electricity.source})"
                                                          if terms.electricity.source else ""),
             f"power: {o.busy_w:,.0f} W while the work runs ({busy}), {o.power.idle_w:,.0f} W idle ({idle}), "
             f"PUE {terms.pue:g}",
             f"resale after {o.years:g} y: {o.depreciation.per_year:.1%} a year ({o.depreciation.note}; "
             f"{o.depreciation.source}); the host counted as worth nothing",
             "maintenance and space: " + (f"${terms.maintenance_usd_per_year:,.0f}/year, "
                                          f"${terms.space_usd_per_month:,.0f}/month" if
                                          terms.maintenance_usd_per_year or terms.space_usd_per_month else
                                          "none counted (--maintenance-usd, --space-usd-per-month)"),
             "rent: GPU hours at each offer's price, whole instances (storage and egress: `gpuplan cost` itemizes "
             "them); spot hours include Daly's checkpoint-and-restart overhead",
             "every total is at the pessimistic end of each setup's speed band (the central figure beside it)"]
    if build.owned:
        notes.append(f"owned: {build.owned} of the {build.count} cards, their price left out (a sunk cost is the same "
                     "whatever is decided now) and so is their resale: buying more and keeping them both keep them, "
                     "so their loss of value is the same in both; renting it all and selling them now saves it; the "
                     "power of all the cards is counted")
    return notes + build.notes


def _verdict(answer: BuildAnswer, rentals: list[RentalAnswer] = ()) -> str:
    if answer.cannot:
        return f"{answer.build.label} cannot run all the work: " + "; ".join(answer.cannot)
    if not answer.versus:
        short = [f"{r.label} cannot run " + ", ".join(j.job for j in r.jobs if not j.runs) + f" (the table says why; "
                 f"{_more(r)})" for r in rentals if not r.runs_all]
        why = f": {'; '.join(short)}" if short else ""
        return f"owning {answer.build.label}: ${answer.ownership.total_usd_low:,.0f} over {answer.ownership.years:g} " \
               f"y (no rental of the work to compare with{why})"
    best = min(answer.versus, key=lambda v: v.rent_usd)
    return best.line.replace("vs ", f"{answer.build.label} vs ", 1)


def _more(r: RentalAnswer) -> str:
    """What to rent instead of a rental that cannot run the work: the fewest of its cards that can
    (:func:`fewest_rented`), or that no count of them up to :data:`RENT_COUNTS`' last can."""
    if r.runs_all_on:
        return f"{r.runs_all_on} runs it all: --rent {r.runs_all_on.replace(' ', '')}"
    if r.runs_all_on == "":
        return f"no count of these cards up to {RENT_COUNTS[-1]} runs it all: --rent other cards"
    return "--rent more of the cards"


def overflow_share(busy: float, horizon: float) -> float:
    """The share of the work beyond the horizon's hours."""
    return max(busy - horizon, 0.0) / busy if busy else 0.0


def keep_answers(kept: Build, w: Workloads, terms: Terms, rentals: list[RentalAnswer]) -> list[Keep]:
    """Option (b) of ``buy --have``: the owned cards kept (``kept``: nothing bought, so their power and upkeep
    alone, :func:`answer_build`'s), and on each rental the jobs they cannot run rented whole, and the share of their
    work beyond the horizon's hours rented at that rental's price of the same work (each job's hours pro rata)."""
    mine = answer_build(kept, w, terms, [])
    o = mine.ownership
    rented = [k for k, p in enumerate(mine.jobs) if not p.runs]
    running = [k for k, p in enumerate(mine.jobs) if p.runs]
    out = []
    for r in rentals:
        if not all(r.jobs[k].runs for k in rented):
            continue
        ends = []
        for low, busy in ((True, o.busy_hours_low), (False, o.busy_hours)):
            share = overflow_share(busy, o.horizon_hours)
            if share and not all(r.jobs[k].runs for k in running):
                break
            price = [(r.jobs[k].usd_per_year_low if low else r.jobs[k].usd_per_year) or 0.0 for k in range(len(r.jobs))]
            ends.append((share, (sum(price[k] for k in rented) + share * sum(price[k] for k in running)) * o.years))
        if len(ends) < 2:
            continue
        (share, rent), (_, rent_central) = ends
        what = ", ".join([mine.jobs[k].job for k in rented] + ([f"{share:.1%} of the rest"] if share else []))
        out.append(Keep(rental=r.label, own_usd=o.total_usd_low, rent_usd=rent, total_usd=o.total_usd_low + rent,
                        total_usd_central=o.total_usd + rent_central, rented=[mine.jobs[k].job for k in rented],
                        overflow=share,
                        line=f"keep {kept.label}, rent {what or 'nothing'} on {r.label}: power and upkeep "
                             f"${o.total_usd_low:,.0f} + rent ${rent:,.0f} = ${o.total_usd_low + rent:,.0f}"))
    return out


def _with_owned(answer: BuildAnswer, kept: Build, w: Workloads, terms: Terms, rentals: list[RentalAnswer]) -> None:
    """The owned cards' part of the answer: option (b) (:func:`keep_answers`), and their value now and after the
    horizon (at the price the build's cards are bought at, :func:`.resale.resale_usd`), which (a) and (b) both keep
    and so both carry alike; renting everything and selling them now saves the difference."""
    answer.keep = keep_answers(kept, w, terms, rentals)
    answer.owned_value_usd = kept.card.usd * kept.owned
    answer.owned_resale_usd = resale_usd(answer.owned_value_usd, terms.years, depreciation_of(gpus()[kept.gpu_id]))


def _owned_verdict(answer: BuildAnswer) -> str:
    """(a) buy the added cards, (b) keep the owned and rent the rest, (c) rent everything (the owned cards sit,
    or are sold now: their value less their resale at the horizon saved): the cheapest, at the low end."""
    b, o = answer.build, answer.ownership
    options = [(f"buy {b.bought} more" if b.bought else f"run it on the {b.owned} owned", o.total_usd_low, "")]
    if answer.keep:
        best = min(answer.keep, key=lambda k: k.total_usd)
        options.append((f"keep {b.owned} and rent the rest on {best.rental}", best.total_usd, ""))
    if answer.versus:
        rent = min(answer.versus, key=lambda v: v.rent_usd)
        sold = answer.owned_value_usd - answer.owned_resale_usd
        options.append((f"rent it all on {rent.rental}", rent.rent_usd,
                        f" (selling the {b.owned} owned now saves ${sold:,.0f} more)"))
    said = "; ".join(f"{name} ${usd:,.0f}{extra}" for name, usd, extra in options)
    return f"with {b.owned} owned, over {o.years:g} y: {said} -> {min(options, key=lambda x: x[1])[0]}"


def buy_report(build: Build, w: Workloads, rent: list[tuple[GpuSpec, int]], terms: Terms,
               kept: Build | None = None) -> BuyReport:
    """The answer for one named build against the rentals ``rent`` (the same cards when empty); with ``kept`` (the
    cards owned already, as a build of their own), the three options of :func:`_owned_verdict`."""
    rent = rent or [(gpus()[build.gpu_id], build.count)]
    rentals, missing = rentals_for(w, rent)
    answer = answer_build(build, w, terms, rentals)
    if kept is not None:
        _with_owned(answer, kept, w, terms, rentals)
    warnings = [f"{c.name}: {c.line}" for c in answer.checks if c.status == "fail"]
    if answer.ownership.overbooked:
        warnings.append(f"the work needs {answer.ownership.busy_hours_low:,.0f} h at the low end of its speed, more "
                        f"than the {answer.ownership.horizon_hours:,.0f} h of {w.years:g} y")
    notes = missing + notes_for(build, terms, answer)
    if any(r.pricing == "spot" for r in rentals) or any(not j.serving for j in w.workloads):
        notes.append(spot_rows_missing())
    verdict = _owned_verdict(answer) if kept is not None and not answer.cannot else _verdict(answer, rentals)
    return BuyReport(years=w.years, workloads=workload_rows(w), builds=[answer], rentals=rentals,
                     verdict=verdict, notes=notes, warnings=warnings)


def hours_report(build: Build, busy_hours: float, terms: Terms) -> BuyReport:
    """No workloads: ``busy_hours`` of use over the horizon against renting the same cards for those hours at the
    cheapest on-demand price per GPU-hour in force."""
    gpu = gpus()[build.gpu_id]
    use = JobPlan(job=f"{busy_hours:,.0f} h of use", setup=f"{build.label} (owned)", runs=True,
                  busy_hours_per_year=busy_hours / terms.years, busy_hours_per_year_low=busy_hours / terms.years)
    o = own(build, [use], terms.years, terms.electricity, pue=terms.pue, off_when_idle=terms.off_when_idle,
            maintenance_usd_per_year=terms.maintenance_usd_per_year, space_usd_per_month=terms.space_usd_per_month)
    rentals = []
    offer = cheapest_rentals().get(gpu.id)
    if offer is not None:
        per_year = offer.usd_per_gpu_hour * build.count * busy_hours / terms.years
        label = f"{build.count} x ${offer.usd_per_gpu_hour:,.2f}/GPU-h at {offer.provider} (instances of " \
                f"{offer.gpu_count}; {offer.age_days()} days old, {offer.confidence} confidence)"
        cards = f"{build.count}x {short_id(gpu.id)}"  # rented: all the cards, none of them owned
        rented = JobPlan(job=use.job, setup=cards, runs=True, offer=label,
                         usd_per_hour=offer.usd_per_gpu_hour * build.count, usd_per_year=per_year,
                         usd_per_year_low=per_year)
        rentals.append(rental_answer(cards, "on_demand", [rented]))
    answer = build_answer(build, [use], o, build_checks(build, [], terms.electricity.circuit), rentals, 0.0)
    report = BuyReport(years=terms.years, builds=[answer], rentals=rentals, verdict=_verdict(answer),
                       notes=notes_for(build, terms, answer))
    if build.owned:
        report.notes.append("keeping the owned cards and renting what they cannot run needs the work: --workloads FILE")
    if offer is None:
        report.warnings.append(f"no recent on-demand rental of {gpu.name} in force to compare with (`gpuplan prices "
                               f"--gpu {short_id(gpu.id)}`; `gpuplan prices update`)")
    return report
