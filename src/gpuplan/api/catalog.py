"""The catalogs as answers: the bundled models and one model's facts, the GPUs (and several side by side), the
offers in force and their refresh, and the GPU guide's table recomputed. Each function returns what its command's
``--json`` prints (``gpuplan models``, ``model``, ``gpus``, ``gpus compare``, ``prices``, ``prices update``,
``table``); the command line only renders it.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import Field

from ..answer import Answer
from ..errors import GpuplanError, SourceError, UnknownNameError, echo
from ..result import finite
from . import arguments as arg

MODEL_SORT = ("name", "params", "active", "layers", "hidden", "context", "family")
GPU_SORT = ("memory", "bandwidth", "bf16", "fp8", "tdp", "msrp", "usd_per_gb", "rent", "usd_per_tflop", "name")
PRICE_SOURCES = ("gpuhunt", "skypilot", "file", "bundled")


def models(*, family: str | None = None, search: str | None = None, moe: bool | None = None,
           min_params: float = 0.0, max_params: float | None = None, sort: str = "params",
           reverse: bool = False) -> list[dict[str, Any]]:
    """The bundled models, one row each (parameters total and active, layers, width, heads, context, dtype, the
    names that find it), filtered and sorted: ``gpuplan models``. ``min_params``, ``max_params``: billions."""
    from ..model.catalog import bundled, load_model
    from ..model.report import model_summary

    family, search = arg.text(family, "family", optional=True), arg.text(search, "search", optional=True)
    if moe is not None:
        arg.flag(moe, "moe")
    arg.flag(reverse, "reverse")
    if not isinstance(sort, str) or sort not in MODEL_SORT:
        raise GpuplanError(f"--sort must be one of {', '.join(MODEL_SORT)}, got {echo(sort)}")
    for name, value in (("--min-params", min_params), ("--max-params", max_params)):
        if value is not None and not (isinstance(value, (int, float)) and not isinstance(value, bool)
                                      and math.isfinite(value) and value >= 0):
            raise GpuplanError(f"{name} takes a number of billions >= 0, got {echo(value)}")
    rows = [model_summary(load_model(repo), repo) for repo in bundled()]
    if family:
        rows = [r for r in rows if r["family"].lower() == family.lower()]
    if search:
        rows = [r for r in rows if search.lower() in r["name"].lower()
                or any(search.lower() in n.lower() for n in r["names"])]
    if moe is not None:
        rows = [r for r in rows if r["moe"] == moe]
    rows = [r for r in rows if r["params_total"] >= min_params * 1e9
            and (max_params is None or r["params_total"] <= max_params * 1e9)]
    key = {"params": "params_total", "active": "params_active", "layers": "num_layers", "hidden": "hidden_size",
           "context": "max_context"}.get(sort, sort)
    rows.sort(key=lambda r: (r[key] is None, r[key] or 0) if key not in ("name", "family") else str(r[key]).lower(),
              reverse=reverse)
    return rows


def model(name: str) -> dict[str, Any]:
    """One model's facts: parameters by part, layer kinds, KV bytes per token, weight sizes as shipped and at
    bf16 / int8 / int4, and how it was counted: ``gpuplan model``."""
    from ..model.catalog import load_model
    from ..model.kinds import NotADecoder
    from ..model.report import model_facts, module_facts

    try:
        return model_facts(load_model(arg.text(name, "model")))
    except NotADecoder as other:  # a diffusion pipeline, an encoder-decoder, an encoder: its components
        return module_facts(other.spec)


def short_names() -> dict[str, list[str]]:
    """Each bundled model's short names (what a table cell shows), by repo id."""
    from ..model.catalog import short_names as names

    return names()


def gpus(*, vendor: str | None = None, segment: str | None = None, min_memory: float = 0.0, nvlink: bool = False,
         sort: str = "memory", reverse: bool = False) -> list[dict[str, Any]]:
    """The GPU catalog, one row per card (dense TFLOPS, memory as sold and usable, bandwidth, NVLink, power, launch
    price, the cheapest rental in force), filtered and sorted: ``gpuplan gpus``."""
    from ..hardware import gpus as catalog
    from ..plan.gpus import cheapest_rentals, gpu_row

    vendor, segment = arg.text(vendor, "vendor", optional=True), arg.text(segment, "segment", optional=True)
    nvlink, reverse = arg.flag(nvlink, "nvlink"), arg.flag(reverse, "reverse")
    if not isinstance(sort, str) or sort not in GPU_SORT:
        raise GpuplanError(f"--sort must be one of {', '.join(GPU_SORT)}, got {echo(sort)}")
    if not (isinstance(min_memory, (int, float)) and not isinstance(min_memory, bool) and math.isfinite(min_memory)
            and min_memory >= 0):
        raise GpuplanError(f"--min-memory must be a number of GiB >= 0, got {echo(min_memory)}")
    rentals = cheapest_rentals()
    rows = [gpu_row(g, rentals.get(g.id)) for g in catalog().values()]
    rows = [r for r in rows if r["memory_gib"] >= min_memory and (not nvlink or r["nvlink_gbs"])
            and (not vendor or r["vendor"].lower() == vendor.lower())
            and (not segment or r["segment"] == segment.lower())]
    key = {"memory": "memory_gib", "bandwidth": "bandwidth_gbs", "bf16": "bf16_tflops", "fp8": "fp8_tflops",
           "tdp": "tdp_w", "msrp": "msrp_usd", "rent": "rent_usd_per_hour",
           "usd_per_tflop": "usd_per_tflop_hour"}.get(sort, sort)
    rows.sort(key=lambda r: (r[key] is None, r[key] or 0) if key != "name" else (False, r["id"]), reverse=reverse)
    return rows


def gpus_compare(names: list[str], notes: list[str] | None = None) -> list[dict[str, Any]]:
    """Cards side by side (their catalog rows), each with where the usual marketing numbers differ from the dense
    figures (``marketing_note``: 2:4 sparsity doubles them; GeForce FP16 with FP16 accumulate runs at twice the
    FP32-accumulate rate frameworks use): ``gpuplan gpus compare``. An ambiguous name's variant is said in
    ``notes``."""
    from ..hardware import resolve_gpu
    from ..plan.gpus import cheapest_rentals, gpu_row
    from .arguments import names_of

    needs = "gpus compare needs two or more GPU names, e.g. 4090 a6000"
    blank = (isinstance(names, str) and not names.strip(" ,")) or (
        isinstance(names, (list, tuple)) and all(isinstance(n, str) and not n.strip(" ,") for n in names))
    if blank:  # '' or [''] (the command line's `gpus compare ''`) read as names_of's "names names nothing"
        raise GpuplanError(needs)
    names = names_of(names, "names")
    if notes is not None and not isinstance(notes, list):
        raise GpuplanError(f"gpus_compare's notes takes a list to add the notes to, not {echo(notes)}")
    resolved = [resolve_gpu(n) for n in names]  # every name checked before anything is answered
    if notes is not None:
        notes += [note for _, note in resolved if note]
    rentals = cheapest_rentals()
    rows = []
    for g, _ in resolved:
        half, bf16, fp8 = g.dense_tflops.get("fp16_tensor_fp16acc"), g.peak_tflops("bf16"), g.peak_tflops("fp8")
        text = []
        if bf16 and g.sparse_tensor_cores:  # no such figure for cards without 2:4 sparsity (MI250X, Gaudi)
            also = f" and {2 * fp8:,.0f} fp8" if fp8 else ""  # what guides quote as a card's fp8 speed
            text.append(f"datasheets with 2:4 sparsity say {2 * bf16:,.0f} bf16{also} TFLOPS")
        fp32acc = g.peak_tflops("fp16") or bf16  # Turing has no bf16: its fp16 figure is the FP32-accumulate one
        if half and fp32acc:
            text.append(f"FP16 with FP16 accumulate {half:,.0f}, but PyTorch accumulates in FP32: {fp32acc:,.0f}")
        rows.append({**gpu_row(g, rentals.get(g.id)), "marketing_note": "; ".join(text)})
    return rows


class Prices(Answer):
    """``prices``'s answer: the offers in force that match, cheapest first per GPU (``rows``: what ``--json``
    prints, each with its age and where its price came from), and what is in force, in words."""

    rows: list[dict[str, Any]]
    in_force: str = Field(default="", exclude=True)
    refreshed: bool = Field(default=False, exclude=True)  # a refresh is in force (else the bundled snapshot)

    def to_dict(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return finite(self.model_dump(mode="json")["rows"])


def prices(*, gpu: str | None = None, provider: str | None = None, spot: bool = False, max_age: int | None = None,
           low_confidence: bool = True) -> Prices:
    """The offers in force, cheapest first per GPU, each with its date, age, source and confidence: ``gpuplan
    prices``. ``max_age``: only prices observed at most this many days ago."""
    from ..hardware import load_gpu
    from ..market.store import PriceFilter, in_force, load_offers, matches, price_origin, status

    gpu, provider = arg.text(gpu, "gpu", optional=True), arg.text(provider, "provider", optional=True)
    spot, low_confidence = arg.flag(spot, "spot"), arg.flag(low_confidence, "low_confidence")
    max_age = arg.count(max_age, "max_age (days)", least=0, most=10**9, optional=True)
    gpu_id = load_gpu(gpu).id if gpu else None
    offers = load_offers()
    if provider and provider not in {o.provider for o in offers}:
        raise UnknownNameError("provider", provider, sorted({o.provider for o in offers}))
    f = PriceFilter(max_age_days=max_age, include_low_confidence=low_confidence)
    rows = [o for o in offers if matches(o, f) and (not gpu_id or o.gpu_id == gpu_id)
            and (not provider or o.provider == provider) and (o.interruptible if spot else True)]
    rows.sort(key=lambda o: (o.gpu_id, o.usd_per_gpu_hour))
    state = status()
    return Prices(rows=[{**o.row(), "age_days": o.age_days(), "price_origin": price_origin(o)} for o in rows],
                  in_force=in_force(state), refreshed=bool(state["refreshes"]))


class PriceUpdate(Answer):
    """``prices update``'s answer: what was fetched and kept (or, from ``bundled``, how many refreshes were
    dropped), as ``--json`` prints it."""

    source: str
    updated: bool = True
    rows: int | None = None
    gpu_types: int | None = None
    path: str | None = None
    fetched_at: str | None = None
    origin: str | None = None
    unmapped_gpu_names: dict[str, int] = Field(default_factory=dict)
    implausible_rows_left_out: dict[str, int] = Field(default_factory=dict)
    dropped_refreshes: int | None = None
    in_force: Any = None  # bundled: the state now in force

    def to_dict(self) -> dict[str, Any]:
        data = finite(self.model_dump(mode="json"))
        if self.source == "bundled":
            return {k: data[k] for k in ("source", "dropped_refreshes", "in_force")}
        return {k: v for k, v in data.items() if k not in ("dropped_refreshes", "in_force")}


def prices_update(source: str = "gpuhunt", *, file: str | Path | None = None,
                  provider: str | None = None) -> PriceUpdate:
    """Refresh the offers into the user's cache from ``source`` (gpuhunt, a SkyPilot catalog, the user's own CSV;
    ``bundled`` drops every refresh): ``gpuplan prices update``. A source that cannot answer, or a cache that
    cannot be written, raises :class:`~gpuplan.errors.SourceError` (its reason); the prices in force stay as they
    were."""
    from ..market.offers import check_provider
    from ..market.sources import Query, fetch
    from ..market.store import clear_refreshes, refresh_name, save_refresh, status

    if not isinstance(source, str) or source not in PRICE_SOURCES:
        raise GpuplanError(f"--source must be one of {', '.join(PRICE_SOURCES)}, got {echo(source)}")
    file = arg.path(file, "file", optional=True)
    if provider is not None:
        check_provider(provider, "--provider")  # it names the cache file: a plain name, never a path
    if source == "file" and file is None:
        raise GpuplanError("--source file needs --file PATH: a CSV with the columns of data/offers.csv")
    if file is not None and source == "gpuhunt":
        source = "file"  # `prices update --file my-offers.csv`: the user's own prices
    if source == "bundled":
        return PriceUpdate(source="bundled", dropped_refreshes=clear_refreshes(), in_force=status())
    path = Path(file) if file is not None else None
    try:  # bad input (a missing file, gpuhunt not installed) is a GpuplanError: one line, exit 2
        fetched = fetch(source, Query(provider=provider, path=path))
        saved = save_refresh(refresh_name(source, provider, path), source, fetched.origin, fetched.offers)
    except (SourceError, OSError) as e:  # the source could not answer, or the cache could not be written
        raise SourceError(str(e)) from None  # the prices in force stay as they were
    return PriceUpdate(source=source, rows=saved.rows, gpu_types=len({o.gpu_id for o in fetched.offers}),
                       path=str(saved.path), fetched_at=saved.fetched_at, origin=fetched.origin,
                       unmapped_gpu_names=fetched.unmapped, implausible_rows_left_out=fetched.implausible)


def prices_in_force() -> str:
    """The prices in force, in words (the bundled snapshot, or the refreshes and their dates)."""
    from ..market.store import in_force

    return in_force()


def prices_status() -> dict[str, Any]:
    """What is in force, as data: the bundled snapshot's date and each refresh kept (``prices update --json``)."""
    from ..market.store import status

    return status()


def plausible_prices() -> tuple[tuple[float, float], int]:
    """The range of $/GPU-hour a vendor row must fall in, and the most GPUs per instance."""
    from ..market.offers import MAX_GPUS_PER_INSTANCE, USD_PER_GPU_HOUR

    return USD_PER_GPU_HOUR, MAX_GPUS_PER_INSTANCE


class GuideTable(Answer):
    """``table``'s answer: each row of the GPU guide's table recomputed (``rows``: what ``--json`` prints; the
    typed rows, for rendering, in ``cells``)."""

    rows: list[dict[str, Any]]
    cells: list[Any] = Field(default_factory=list, exclude=True)

    def to_dict(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return finite(self.model_dump(mode="json")["rows"])


def table(*, catalogs: tuple[str, ...] = (), cheapest: bool = True) -> GuideTable:
    """A GPU guide's model table recomputed: serving memory at bf16 / 8-bit / 4-bit with a 4k context, LoRA and
    QLoRA fine-tuning memory, and (``cheapest``) the cheapest setups to serve and to QLoRA: ``gpuplan table``."""
    from ..plan.table import guide_table

    if isinstance(catalogs, (str, os.PathLike)):
        catalogs = (catalogs,)
    given = tuple(catalogs) if not isinstance(catalogs, (bytes, dict)) and hasattr(catalogs, "__iter__") else None
    if given is None or not all(isinstance(c, (str, os.PathLike)) for c in given):
        raise GpuplanError(f"catalogs takes the paths of offers CSV files, not {echo(catalogs)}")
    typed = guide_table(catalogs=given, cheapest=arg.flag(cheapest, "cheapest"))
    rows = []
    for r in typed:
        raw = {k: v for k, v in asdict(r).items() if k not in ("serve", "qlora")}
        for key in ("serve", "qlora"):
            found = getattr(r, key)
            best = found.setups[0] if found and found.setups else None
            raw[key] = None if best is None else {
                "gpu": best.gpu_id, "num_gpus": best.num_gpus, "sharding": best.sharding,
                "techniques": best.techniques, "offer": best.offer, "usd_per_hour": best.usd_per_hour,
                "device_peak_gib": best.device_peak_gib}
        rows.append(raw)
    return GuideTable(rows=rows, cells=typed)


def check_model_name(name: str, *, hub: bool, where: str = "the web page") -> None:
    """Accept a model name that resolves offline (bundled names, their chat and instruction-tuned variants,
    synthetic models, the bundled diffusion pipelines, encoder-decoders and encoders) always, and Hugging Face repo
    ids with ``hub``; refuse paths on this machine's disk and unknown names, in one sentence (``where`` reads no
    files of its host: the web page). Asked before a scenario is read: the model's tokenizer is looked up by its
    name."""
    from ..model import kinds
    from ..model.catalog import REPO_ID, aliases, base_repo, bundled, bundled_repo, suggestable
    from ..userfiles import user_path

    if name == "":
        return  # no name, not the folder the server runs in: model_size names the model, or the scenario asks for one
    if bundled_repo(name) or name.lower().startswith("synthetic-") or kinds.named(name) is not None:
        return  # a bundled decoder LLM, a synthetic one, or a bundled diffusion pipeline, encoder-decoder or encoder
    try:
        on_disk = user_path(name).exists()
    except (OSError, ValueError):  # too long or otherwise impossible as a path
        on_disk = False
    if on_disk or name.endswith(".json") or name.startswith((".", "~", "/")) or "\\" in name:
        raise GpuplanError(f"{where} does not read files on the server ({name[:100]!r}): name a bundled model "
                           "or a Hugging Face repo id, or use `gpuplan estimate --model PATH` on the command line")
    if base_repo(name):
        return
    if REPO_ID.match(name):
        if hub:
            return
        raise GpuplanError(f"{name!r} is not a bundled model, and this server does not fetch from the Hugging Face "
                           "hub: restart it with `gpuplan serve --hub`, or pick a bundled model")
    if "/" in name:
        raise GpuplanError(f"{where} does not read files on the server ({name[:100]!r}): name a bundled model "
                           "or a Hugging Face repo id, or use `gpuplan estimate --model PATH` on the command line")
    raise UnknownNameError("model", name, suggestable(name, [*bundled(), *aliases()]),
                           hint="GET /api/models lists the bundled models; a Hugging Face repo id (org/name) "
                                "works when the server runs with --hub.")
