"""A build: ``count`` cards of one kind in a host (a profile of ``owning.yaml``, or the user's own figures), or one
unified-memory computer (DGX Spark, Strix Halo, a Mac), whose price is the whole computer and whose "host RAM" is
the part of its one memory pool the GPU does not take.

The host's RAM has a stated default (the profile's, said in the answer) and ``--host-ram`` sets it; the host's own
draw busy and idle likewise (``--host-w``, ``--host-idle-w``)."""

from __future__ import annotations

import math

from pydantic import BaseModel, Field, computed_field

from ..errors import GpuplanError
from ..hardware import GpuSpec, load_gpu, short_id
from ..market.owned_power import computer_draw
from ..plan.recommend import parse_have
from .facts import host_for, host_profile, linked
from .prices import Price, card_price


class Build(BaseModel):
    """What is bought: the cards (or the computer), the host around them, and the host's RAM and draw."""

    gpu_id: str
    gpu_name: str
    count: int
    whole_computer: bool  # a unified-memory computer: its price is the whole machine, no host is added
    card: Price  # per card (or per computer)
    host: str  # the host profile's id, or "" for a whole computer
    host_label: str
    host_usd: float
    host_price: str  # where the host's price comes from
    host_ram_gib: float
    host_ram_note: str  # the default taken, or "given"
    host_busy_w: float
    host_idle_w: float
    display: str = "none"  # the desktop one card drives: linux | windows (the scenario's display) | none
    owned: int = 0  # of the cards (or computers), those the user has already: not bought (make_build)
    # the owned cards' host is this build's (not bought: make_build); a fact, not read from host_price's words
    host_owned: bool = Field(default=False, exclude=True)
    notes: list[str] = Field(default_factory=list)

    @computed_field  # in the answer, so that the page prints the words `gpuplan buy` prints (app.js renderBuy)
    @property
    def label(self) -> str:
        """``2x 3090 (1 owned)``: the build as every face names it."""
        return f"{self.count}x {short_id(self.gpu_id)}" + (f" ({self.owned} owned)" if self.owned else "")

    @property
    def bought(self) -> int:
        """The cards (or computers) bought: the build's, less those owned."""
        return self.count - self.owned

    @property
    def purchase_usd(self) -> float:
        return self.card.usd * self.bought + self.host_usd


class UnknownDraw(GpuplanError):
    """A whole computer whose chip has no TDP in the catalog and whose draw is not on file: the user gives it."""


def _positive(value: float | None, what: str, high: float, low: float = 0.0) -> float | None:
    """``value`` checked to lie in [``low``, ``high``]; None left unset."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not low <= value <= high:
        raise GpuplanError(f"{what} must be between {low:g} and {high:,.0f}, got {value!r}")
    return float(value)


def whole_computer(gpu: GpuSpec) -> bool:
    return gpu.unified_memory


def make_build(gpu: GpuSpec | str, count: int = 1, *, price: float | None = None, used: bool = False,
               host: str | None = None, host_usd: float | None = None, host_ram_gib: float | None = None,
               host_w: float | None = None, host_idle_w: float | None = None, display: str = "none",
               owned: int = 0) -> Build:
    """A build of ``count`` of ``gpu``: priced (``price`` per card, else street or MSRP), in ``host`` (a profile;
    default the smallest that holds the cards), with the host's price, RAM and draw given or the profile's.

    ``owned`` of the cards the user has already: they are not bought (a sunk cost is not a cost of the decision:
    what was paid for them is the same whatever is decided now), and neither is the host when the smallest host
    for the owned cards (:func:`.facts.host_for`) is the build's and ``--host-usd`` is not given."""
    gpu = gpu if isinstance(gpu, GpuSpec) else load_gpu(gpu)
    if gpu.form_factor == "Laptop":  # gpus.yaml's laptop GPUs: no card to buy, and the laptop's price is not its own
        raise GpuplanError(f"{gpu.name} comes soldered into a laptop, whose price and draw are the whole laptop's: "
                           f"buy prices desktop cards and whole computers, not laptops (estimate --gpu "
                           f"{short_id(gpu.id)} says what it runs and prices its power)")
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 8:
        raise GpuplanError(f"a build holds 1 to 8 cards in one machine, got {count!r}")
    if not isinstance(owned, int) or isinstance(owned, bool) or not 0 <= owned <= count:
        raise GpuplanError(f"--have counts the build's cards you own already: 0 to {count} of {count}x "
                           f"{short_id(gpu.id)}, got {owned!r}")
    host_usd, host_ram_gib = _positive(host_usd, "--host-usd", 1e7), _positive(host_ram_gib, "--host-ram", 65536, 1)
    host_w, host_idle_w = _positive(host_w, "--host-w", 1e5), _positive(host_idle_w, "--host-idle-w", 1e5)
    if display not in ("none", "linux", "windows"):
        raise GpuplanError(f"--display takes linux, windows or none (the desktop's OS), got {display!r}")
    card = card_price(gpu, given=price, used=used)
    if whole_computer(gpu):
        return _computers(gpu, count, card, host_ram_gib, host_w, host_idle_w, display).model_copy(
            update={"owned": owned})
    module = not gpu.form_factor.lower().startswith("pcie")  # SXM/OAM: on a vendor's baseboard, in a server
    profile = host_profile(host) if host else host_profile("server-8gpu") if module else host_for(count)
    if module and profile.id != "server-8gpu":
        raise GpuplanError(f"{gpu.name} is a {gpu.form_factor} module: it goes on a baseboard in a server "
                           "(--host server-8gpu, with --host-usd for the server)")
    if count > profile.max_gpus:
        raise GpuplanError(f"the {profile.id} host holds {profile.max_gpus} cards, not {count}: choose another "
                           "--host (desktop, epyc-4gpu, workstation, server-8gpu)")
    if host_usd is None and profile.usd is None:
        raise GpuplanError(f"no sourced price for a {profile.label} host: give what the computer around the cards "
                           "costs with --host-usd USD")
    host_owned = owned > 0 and host_usd is None and host_for(owned).id == profile.id
    return Build(gpu_id=gpu.id, gpu_name=gpu.name, count=count, whole_computer=False, card=card,
                 host=profile.id, host_label=profile.label,
                 host_usd=host_usd if host_usd is not None else 0.0 if host_owned else float(profile.usd),
                 host_price="given" if host_usd is not None else _owned_host(owned, profile.id) if host_owned else
                 f"{profile.sources[0].line()} ({profile.notes[0] if profile.notes else 'profile'})",
                 host_ram_gib=host_ram_gib if host_ram_gib is not None else profile.ram_gib,
                 host_ram_note="given" if host_ram_gib is not None else
                 f"the {profile.id} profile's {profile.ram_gib:,.0f} GiB (--host-ram to change)",
                 host_busy_w=host_w if host_w is not None else profile.busy_w,
                 host_idle_w=host_idle_w if host_idle_w is not None else profile.idle_w, display=display,
                 owned=owned, host_owned=host_owned, notes=list(profile.notes[1:]))


def _owned_host(owned: int, profile: str) -> str:
    return (f"owned: the {owned} card{'s' * (owned > 1)} you have {'are' if owned > 1 else 'is'} in a {profile} host "
            "already (--host-usd if not)")


def _computers(gpu: GpuSpec, count: int, card: Price, host_ram_gib: float | None, host_w: float | None,
               host_idle_w: float | None, display: str) -> Build:
    """``count`` unified-memory computers: one, or several linked over their own network ports (the catalog's
    ``network``) where owning.yaml says how many join without a switch (two DGX Sparks, one QSFP cable: a plan
    across them has one GPU per node)."""
    link = linked(gpu.id) if count > 1 else None
    if count > 1 and (link is None or not gpu.network or count > link["most"]):
        raise GpuplanError(f"{gpu.name} is a whole computer: " + (
            f"at most {link['most']} link with one cable ({count} need a switch gpuplan does not price)" if link
            else "buy one (gpuplan has no sourced way to link several)"))
    pool_left = max(gpu.memory_gib - gpu.usable_gib, 0.0)
    busy_w, idle_w, notes = _computer_draw(gpu, host_w, host_idle_w)
    if link:
        notes.append(f"{count} linked over their own ports ({gpu.network} {gpu.network_gbps:,.0f} Gb/s), one GPU "
                     f"per node ({link['sources'][0]['url']}); {link['note']}")
    return Build(gpu_id=gpu.id, gpu_name=gpu.name, count=count, whole_computer=True, card=card, host="",
                 host_label="the computer itself" if count == 1 else "the computers themselves", host_usd=0.0,
                 host_price="included in the computer's price",
                 host_ram_gib=host_ram_gib if host_ram_gib is not None else pool_left,
                 host_ram_note="given" if host_ram_gib is not None else
                 f"one memory pool{' in each' if count > 1 else ''}: {gpu.memory_gib:,.0f} GB, {gpu.usable_gib:,.1f} "
                 f"GiB for the GPU, {pool_left:,.1f} GiB left for the CPU side",
                 host_busy_w=busy_w, host_idle_w=idle_w, display=display, notes=notes)


def _computer_draw(gpu: GpuSpec, host_w: float | None, host_idle_w: float | None) -> tuple[float, float, list[str]]:
    """What a whole computer draws beyond its chip's TDP, at work and at rest (W), and the note that says whence: the
    chip's TDP alone (the catalog's), else the maker's published wall figures (owning.yaml ``computers``: a Mac's
    chip has no TDP), else what the user gives; never a silent 0 W."""
    if gpu.tdp_w:
        return host_w or 0.0, host_idle_w or 0.0, [
            "the computer's draw is the chip's TDP (the whole machine's supply may be larger)"]
    published = computer_draw(gpu.id)
    if published is None and host_w is None:
        raise UnknownDraw(f"no published power draw for {gpu.name} in gpuplan's data: give the computer's draw at "
                          "the wall with --host-w W (at work) and --host-idle-w W (at rest)")
    busy, idle = (published.busy_w, published.idle_w) if published else (host_w, host_idle_w or 0.0)
    busy, idle = host_w if host_w is not None else busy, host_idle_w if host_idle_w is not None else idle
    said = f"the maker's wall figures ({published.url}: {published.where})" if published else "given"
    return busy, idle, [f"the computer draws {busy:,.0f} W at work and {idle:,.0f} W at rest: {said}"]


def parse_build(text: str) -> tuple[GpuSpec, int]:
    """``8x5090`` -> (the card, 8); a bare name is one card."""
    if not isinstance(text, str) or not text.strip():
        raise GpuplanError("name the build: COUNTxCARD, e.g. 8x5090 or 2x3090")
    gpu_id, count = parse_have(text)
    return load_gpu(gpu_id), count
