"""Whether a build can be built and run, one line per check, each with its source:

- **power**: the cards at TDP and the host, sustained; the cards' 100 us excursions (PCI-SIG allows 3x the
  sustained power) against ATX 3.x PSUs (200 % of their rating for 100 us), and the household circuits it needs;
- **PCIe lanes and slots**: the lanes per card the host's platform gives (x16 or x8) and the x16-length slots;
- **slot width and spacing**: cards of ``slot_width`` in slots ``slot_pitch`` apart;
- **cooling**: passive cards need a server's airflow; cards with their own fans side by side breathe each other's
  exhaust;
- **NVLink**: the bridge each card has (or none: collectives over PCIe);
- **host RAM**: each job's Plan's CPU memory against the host's RAM (on a unified-memory computer, the same pool);
- **display**: a card that also drives the desktop loses some memory to it.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from ..hardware import GpuSpec, gpus
from ..tensors.breakdown import display_gib
from .builds import Build
from .facts import Source, coolers, host_profiles, linked, power
from .plans import JobPlan


class Check(BaseModel):
    name: str
    status: str  # ok | warn | fail | info
    line: str
    source: str = ""


def _power(b: Build, gpu: GpuSpec, circuit: str = "us") -> list[Check]:
    p = power()
    cards = b.count * float(gpu.power_limit_w or gpu.tdp_w or 0.0)
    sustained = cards + b.host_busy_w
    spikes = p["gpu_excursion"] * cards + b.host_busy_w
    psu = max(sustained, spikes / p["psu_excursion"])
    source = f"{Source(p['gpu_excursion_url'], p['gpu_excursion_where']).line()}; " \
             f"{Source(p['psu_excursion_url'], p['psu_excursion_where']).line()}"
    profile = host_profiles().get(b.host)
    have = profile.psu_w if profile else None
    status = "info" if not have else "fail" if psu > have else "ok"
    verdict = {"info": ": check your supply's rating", "fail": f": more than the host's {have or 0:,.0f} W",
               "ok": f": the host's {have or 0:,.0f} W is enough"}[status]
    line = (f"PSU: {b.count} x {cards / b.count:,.0f} W + {b.host_busy_w:,.0f} W host = {sustained:,.0f} W "
            f"sustained; the cards' 3x spikes need {psu:,.0f} W of ATX 3.x supply (it carries 2x its rating for "
            f"100 us){verdict}")
    out = [Check(name="power supply", status=status, line=line, source=source)]
    c = p["circuits"][circuit]
    watts = c["w"] * c["continuous_share"]
    circuits = math.ceil(sustained / watts)
    out.append(Check(name="circuits", status="warn" if circuits > 1 else "ok",
                     line=f"{sustained:,.0f} W continuous needs {circuits} circuit(s) of {watts:,.0f} W: "
                     f"{c['note']}" + (f"; {c['larger']}" if circuits > 1 else ""), source=c["source"]))
    return out


def _slots(b: Build, gpu: GpuSpec) -> list[Check]:
    profile = host_profiles().get(b.host)
    if b.whole_computer or profile is None:
        return [Check(name="slots", status="info", line="no host profile: check the lanes and slots of your "
                      "board yourself" if not b.whole_computer else "a whole computer: no slots to fill")]
    lanes = profile.gpu_lanes // b.count
    width = 16 if lanes >= 16 else 8 if lanes >= 8 else 4
    src = profile.sources[1].line() if len(profile.sources) > 1 else ""
    out = [Check(name="PCIe lanes", status="ok" if width >= 8 else "warn", source=src,
                 line=f"{profile.gpu_lanes} lanes for cards on the {profile.id} host: x{width} per card for "
                 f"{b.count} (the card: PCIe {gpu.pcie_generation or '?'}.0)"
                 + ("; x4 slows every transfer to the cards" if width < 8 else ""))]
    if gpu.slot_width is None:
        out.append(Check(name="slot width", status="info", line=f"{gpu.name}'s slot width is not in the catalog: "
                         f"{profile.slots} x16 slots, {profile.slot_pitch} slot(s) apart; check your card's"))
        return out
    per_card = math.ceil(gpu.slot_width / profile.slot_pitch)
    fit = (profile.slots - 1) // per_card + 1
    out.append(Check(name="slot width", status="ok" if b.count <= fit else "fail", source=src,
                     line=f"{gpu.slot_width:g}-slot cards in {profile.slots} x16 slots {profile.slot_pitch} apart: "
                     f"{fit} fit, {b.count} asked" + ("" if b.count <= fit else ": risers, water blocks or a "
                                                      "chassis built for it")))
    return out


def _cooling(b: Build, gpu: GpuSpec) -> Check:
    spacing = coolers()["spacing"]
    if "passive" in gpu.form_factor.lower():
        server = b.host == "server-8gpu"
        return Check(name="cooling", status="ok" if server else "fail", source="gpus.yaml form factor (datasheet)",
                     line=f"{gpu.name} is passive (no fan of its own): it needs a server chassis's front-to-back "
                     "airflow" + ("" if server else ", not a desktop case"))
    kind = coolers().get(gpu.id, {}).get("kind")
    fans = kind or ("fans of its own" if gpu.segment == "consumer" else "")
    if not fans:
        return Check(name="cooling", status="info", line=f"{gpu.name}'s cooler is not in gpuplan's data")
    crowded = b.count > 2 and not b.whole_computer
    return Check(name="cooling", status="warn" if crowded else "ok",
                 source=Source(spacing["url"], spacing["where"]).line(),
                 line=f"{gpu.name}: {fans}" + (f"; {b.count} of them: {spacing['note']}" if crowded else ""))


def _nvlink(b: Build, gpu: GpuSpec) -> Check:
    if b.count == 1:
        return Check(name="NVLink", status="ok", line="one card: no link between cards needed")
    link = gpu.nvlink_bandwidth_gbs
    source = "gpus.yaml interconnect (GPUS.md section 3, item 4)"
    if not link:
        p2p = "; GeForce drivers turn peer-to-peer off, so collectives go through host memory" \
            if gpu.segment == "consumer" else ""
        return Check(name="NVLink", status="info", source=source,
                     line=f"{gpu.name} has no NVLink: collectives over PCIe{p2p}")
    if gpu.form_factor.lower().startswith("pcie"):
        return Check(name="NVLink", status="ok" if b.count == 2 else "info", source=source,
                     line=f"{gpu.name}: NVLink bridges join pairs ({link:,.0f} GB/s); between pairs, PCIe")
    return Check(name="NVLink", status="ok", source=source,
                 line=f"{gpu.name}: NVLink on the baseboard ({link:,.0f} GB/s per GPU)")


def _link(b: Build, gpu: GpuSpec) -> Check:
    """Whole computers linked over their own ports: the cable between them, and the fabric the plans run over."""
    link = linked(gpu.id) or {}
    return Check(name="link", status="ok", source="; ".join(Source(s["url"], s["where"]).line()
                                                           for s in link.get("sources", ())),
                 line=f"{b.count} computers, one GPU each, joined port to port ({gpu.network} "
                 f"{gpu.network_gbps or 0:,.0f} Gb/s): each job's Plan runs across {b.count} nodes over it; "
                 f"{link.get('note', '')}")


def _memory(b: Build, gpu: GpuSpec, plans: list[JobPlan]) -> list[Check]:
    out = []
    for p in plans:
        if p.device_peak_gib is None:
            continue
        if b.whole_computer:
            pool = gpu.usable_gib + b.host_ram_gib
            ok = p.device_peak_gib <= gpu.usable_gib and p.cpu_gib <= b.host_ram_gib
            each = "one" if b.count == 1 else "each computer's"
            out.append(Check(name="memory pool", status="ok" if ok else "fail",
                             line=f"{p.job}: {p.device_peak_gib:,.1f} GiB on the GPU (of {gpu.usable_gib:,.1f}) + "
                             f"{p.cpu_gib:,.1f} GiB on the CPU side (of {b.host_ram_gib:,.1f}) of {each} "
                             f"{pool:,.1f} GiB pool", source=b.host_ram_note))
        elif p.cpu_gib:
            ok = p.cpu_gib <= b.host_ram_gib
            out.append(Check(name="host RAM", status="ok" if ok else "fail", source=b.host_ram_note,
                             line=f"{p.job}: needs {p.cpu_gib:,.1f} GiB of host RAM, the host has "
                             f"{b.host_ram_gib:,.0f} GiB" + ("" if ok else ": more RAM (--host-ram) or less offload")))
        if b.display != "none" and p.capacity_gib and p.plan is not None:
            out.append(_display(p, b.display, gpu.memory_gib))
    if not any(c.name in ("host RAM", "memory pool") for c in out):
        out.append(Check(name="host RAM", status="ok", source=b.host_ram_note,
                         line=f"no job keeps anything in host memory; the host has {b.host_ram_gib:,.0f} GiB"))
    return out


def _display(p: JobPlan, display: str, memory_gib: float | None) -> Check:
    """The desktop a card drives, as the job's Plan counts it on the card (the scenario's ``display``); a module
    plan (diffusion, Whisper, encoders) does not read ``display``: its check says the desktop's share is not in it."""
    source = "overheads.DISPLAY_GIB (ComfyUI's default reserve for the OS: comfy/model_management.py " \
             "EXTRA_RESERVED_VRAM)"
    if p.plan.scenario.get("display", "none") == "none":
        gib, left = display_gib(display, memory_gib), p.capacity_gib - p.device_peak_gib
        return Check(name="display", status="ok" if left >= gib else "warn", source=source,
                     line=f"{p.job}: its plan does not count the {display} desktop's {gib:.2f} GiB: "
                     f"{p.device_peak_gib:,.1f} of {p.capacity_gib:,.1f} GiB leaves "
                     f"{left:,.2f} GiB for it")
    desktop, gib = next(((k, v) for k, v in p.plan.memory.device_overheads.items() if k.startswith("desktop")),
                        ("desktop", 0.0))
    ok = p.plan.memory.fits
    return Check(name="display", status="ok" if ok else "warn", source=source,
                 line=f"{p.job}: the {desktop} holds {gib:.2f} GiB of the card, counted in the plan: "
                 f"{p.device_peak_gib:,.1f} of {p.capacity_gib:,.1f} GiB" + ("" if ok else
                                                                             ": run headless, or use other cards"))


def build_checks(b: Build, plans: list[JobPlan], circuit: str = "us") -> list[Check]:
    """The build's checks (module docstring); ``circuit``: the household circuit of the owner's electricity region
    (data/owning.yaml ``power.circuits``)."""
    gpu = gpus()[b.gpu_id]
    draw = b.count * float(gpu.tdp_w or 0.0) + b.host_busy_w
    checks = _power(b, gpu, circuit) if not b.whole_computer else [
        Check(name="power supply", status="ok", line=f"a whole computer with its own supply ({draw:,.0f} W at work"
              + (", the chip's TDP)" if gpu.tdp_w else ")"), source="gpus.yaml tdp_w" if gpu.tdp_w else b.notes[0])]
    checks += _slots(b, gpu)
    if not b.whole_computer:
        checks += [_cooling(b, gpu), _nvlink(b, gpu)]
    elif b.count > 1:
        checks.append(_link(b, gpu))
    return checks + _memory(b, gpu, plans)
