"""Owning against renting: the year's work priced on an owned build (:mod:`.tco`) and on rented GPUs of any card
(on-demand whole instances, and spot with Daly's checkpoint-and-restart overhead), side by side, at the pessimistic
end of the speed band (each setup's own low end: the work takes longer everywhere).

- **break-even months**: how long this work must go on before owning has cost less than renting it (the resale
  falling with the months): the first month ``m`` with ``own(m) <= rent(m)``, up to ten years;
- **break-even utilization**: over the horizon, the share of hours the build must be busy for owning to cost what
  renting the same work costs: owning is ``A + B k`` and renting ``R k`` for ``k`` times the work, so
  ``k* = A / (R - B)`` and the share is ``k*`` times the build's busy share (none when power alone outruns rent).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..answer import Answer
from .builds import Build
from .checks import Check
from .plans import JobPlan
from .power import HOURS_PER_YEAR
from .tco import Ownership, owned_total

MAX_MONTHS = 120


class RentalAnswer(BaseModel):
    """The work on rented GPUs: each job's Plan there, and the year's rent (central and at the low end)."""

    setup: str  # "8x h100-sxm"
    pricing: str  # on_demand | spot
    jobs: list[JobPlan]
    runs_all: bool
    usd_per_year: float | None = None
    usd_per_year_low: float | None = None
    offers: list[str] = Field(default_factory=list)
    # where the work does not all run: the fewest of the same cards on which it does ("2x h100-sxm"; "": none up to
    # :data:`gpuplan.owning.answer.RENT_COUNTS`' last), None where it runs or was not searched
    runs_all_on: str | None = Field(default=None, exclude_if=lambda v: v is None)

    @property
    def label(self) -> str:
        return f"{self.setup} {self.pricing.replace('_', '-')}"


class Versus(BaseModel):
    """One owned build against one rental, over the horizon, at the low end of both speed bands."""

    rental: str
    own_usd: float
    rent_usd: float
    own_usd_central: float
    rent_usd_central: float
    cheaper: str  # buy | rent
    break_even_months: float | None = None  # None: renting stays cheaper for ten years of this work
    break_even_utilization: float | None = None  # None: power alone costs more than renting the work
    line: str = ""


class Keep(BaseModel):
    """The cards owned already, kept, and the rest of the work rented (answer.py ``keep_answers``): their power and
    upkeep, and the rent of the jobs they cannot run and of the hours beyond their capacity, over the horizon."""

    rental: str
    own_usd: float  # the owned cards' power (busy and idle) and upkeep; nothing bought
    rent_usd: float  # the jobs they cannot run, and the share of the work beyond the horizon's hours, rented
    total_usd: float
    total_usd_central: float
    rented: list[str] = Field(default_factory=list)  # the jobs rented whole
    overflow: float = 0.0  # the share of the owned cards' work beyond the horizon's hours, rented
    line: str = ""


class BuildAnswer(BaseModel):
    """One owned build: each job's Plan on it, the cost of owning it, whether it can be built, what it cannot do,
    and how it compares with each rental."""

    build: Build
    jobs: list[JobPlan]
    ownership: Ownership
    checks: list[Check]
    runs: int  # jobs it can run
    cannot: list[str] = Field(default_factory=list)  # each job it cannot run, and why
    largest: str = ""  # the largest job it runs (by the model's parameters)
    usd_per_job: float | None = None  # the cost of owning over the horizon per run (a serving day is one job)
    versus: list[Versus] = Field(default_factory=list)
    renting_wins: str = ""  # where renting is cheaper: the cheapest rental, by how much
    keep: list[Keep] = Field(default_factory=list)  # with cards owned: those kept and the rest rented, per rental
    owned_value_usd: float = 0.0  # the owned cards' value now (at the price the build's cards are bought at)
    owned_resale_usd: float = 0.0  # ... and after the horizon: selling them now saves the difference


class BuyReport(Answer):
    """``buy``'s answer: the workloads, each build (one named, or those a budget buys, ranked), the rentals of the
    same work, and the verdict; ``to_dict()`` is what ``gpuplan buy --json`` prints."""

    years: float
    workloads: list[dict] = Field(default_factory=list)  # label, kind, how often
    budget_usd: float | None = None
    builds: list[BuildAnswer]
    rentals: list[RentalAnswer] = Field(default_factory=list)
    unranked: list[str] = Field(default_factory=list)  # builds a budget buys that could not be ranked, and why
    verdict: str = ""
    notes: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


def rental_answer(setup: str, pricing: str, plans: list[JobPlan]) -> RentalAnswer:
    runs = all(p.runs for p in plans)
    return RentalAnswer(setup=setup, pricing=pricing, jobs=plans, runs_all=runs,
                        usd_per_year=sum(p.usd_per_year or 0 for p in plans) if runs else None,
                        usd_per_year_low=sum(p.usd_per_year_low or 0 for p in plans) if runs else None,
                        offers=sorted({p.offer for p in plans if p.offer}))


def break_even_months(o: Ownership, rent_per_year: float) -> float | None:
    """The first month at which owning (the resale at that month counted) costs no more than renting the work."""
    for month in range(1, MAX_MONTHS + 1):
        years = month / 12
        if owned_total(o, years, 1.0) <= rent_per_year * years:
            return float(month)
    return None


def break_even_utilization(o: Ownership, rent_total: float) -> float | None:
    """The share of the horizon's hours the build must work for owning to cost what renting the same work costs
    (module docstring); None when power alone outruns the rent, or the share would exceed every hour."""
    fixed = owned_total(o, o.years, 0.0)
    per_work = owned_total(o, o.years, 1.0) - fixed
    if rent_total <= per_work or not o.busy_hours_low:
        return None
    share = fixed / (rent_total - per_work) * o.busy_hours_low / (o.years * HOURS_PER_YEAR)
    return share if share <= 1 else None


def versus(o: Ownership, r: RentalAnswer) -> Versus | None:
    if r.usd_per_year_low is None:
        return None
    rent, rent_central = r.usd_per_year_low * o.years, r.usd_per_year * o.years
    months, share = break_even_months(o, r.usd_per_year_low), break_even_utilization(o, rent)
    cheaper = "buy" if o.total_usd_low < rent else "rent"
    when = f"owning pays after {months:,.0f} months of this work" if months else \
        "at this much work owning does not pay within 10 years"
    need = f"; break-even at {share:.1%} of hours busy (now {o.utilization_low:.1%})" if share else \
        "; no utilization makes owning pay over the horizon" if rent > 0 else ""
    line = (f"vs {r.label}: own ${o.total_usd_low:,.0f} vs rent ${rent:,.0f} over {o.years:g} y -> {cheaper}; "
            f"{when}{need}")
    return Versus(rental=r.label, own_usd=o.total_usd_low, rent_usd=rent, own_usd_central=o.total_usd,
                  rent_usd_central=rent_central, cheaper=cheaper, break_even_months=months,
                  break_even_utilization=share, line=line)


def build_answer(build: Build, plans: list[JobPlan], o: Ownership, checks: list[Check],
                 rentals: list[RentalAnswer], jobs_per_horizon: float) -> BuildAnswer:
    """One build's answer: what it runs and cannot, its cost per job, and each rental against it."""
    running = [p for p in plans if p.runs]
    cannot = [f"{p.job}: {p.why_not}" for p in plans if not p.runs]
    if o.overbooked:
        cannot.append(f"all the work in time: it keeps the build busy {o.busy_hours_low:,.0f} h at the low end of its "
                      f"speed, more than the {o.horizon_hours:,.0f} h of {o.years:g} y")
    biggest = max(running, key=lambda p: (p.plan.model.params_total if p.plan else 0,
                                          (p.device_peak_gib or 0) * build.count), default=None)
    answer = BuildAnswer(build=build, jobs=plans, ownership=o, checks=checks, runs=len(running), cannot=cannot,
                         largest=biggest.job if biggest else "",
                         usd_per_job=o.total_usd_low / jobs_per_horizon if jobs_per_horizon and not cannot else None)
    answer.versus = [v for r in rentals if (v := versus(o, r)) is not None]
    cheaper = [v for v in answer.versus if v.cheaper == "rent"]
    if cheaper:
        best = min(cheaper, key=lambda v: v.rent_usd)
        answer.renting_wins = (f"renting wins: {best.rental} ${best.rent_usd:,.0f} vs owning ${best.own_usd:,.0f} "
                               f"over {o.years:g} y")
    return answer
