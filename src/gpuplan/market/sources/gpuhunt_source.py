"""Live offers through dstack's gpuhunt (the optional ``live`` extra).

``gpuhunt.query(...)`` returns ``CatalogItem``s (gpuhunt ``_internal/models.py``): ``provider``,
``instance_name``, ``location``, ``price`` (USD per instance hour), ``cpu``, ``memory`` (GiB), ``gpu_count``,
``gpu_name``, ``gpu_memory`` (GiB), ``spot``. Offline providers come from gpuhunt's published catalog, online ones
(RunPod, Vast, ...) are queried when asked; either may fail without network, which is a :class:`SourceError`;
gpuhunt not installed is the user's to fix (a :class:`GpuplanError` naming the extra).
Items are mapped to catalog GPUs (:mod:`.names`) and kept per GPU, GPUs per instance, pricing and region at
their cheapest shape, with the instance name, vCPUs and RAM.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterable
from typing import Any

from ...errors import GpuplanError, SourceError
from ...hardware import gpus
from ..offers import Offer, providers, with_network
from .base import Fetched, Query, plausible
from .names import devices_offered, gpu_id_for

PROVIDERS = {"lambdalabs": "lambda", "vastai": "vast", "datacrunch": "verda"}  # gpuhunt name -> gpuplan id
INSTALL = "pip install 'gpuplan[live]'"


def _default_query() -> Callable[..., Iterable[Any]]:
    try:
        import gpuhunt
    except ImportError:
        raise GpuplanError(f"gpuplan prices update --source gpuhunt needs gpuhunt: {INSTALL}") from None
    return gpuhunt.query


def offers_from_items(items: Iterable[Any], today: dt.date, version: str = "") -> Fetched:
    """Catalog items (gpuhunt's fields) as offers; pure, so that recorded responses test it."""
    best: dict[tuple, Offer] = {}
    unmapped: dict[str, int] = {}
    left_out: dict[str, int] = {}
    for item in items:
        if not item.gpu_count or not item.gpu_name or not item.price or item.price <= 0 or \
                item.gpu_count != int(item.gpu_count):  # no GPU, no price, or a slice of a GPU
            continue
        provider = PROVIDERS.get(item.provider, item.provider)
        gpu_id = gpu_id_for(item.gpu_name, memory_gib=item.gpu_memory, instance=item.instance_name or "",
                            provider=provider)
        devices = devices_offered(gpu_id, int(item.gpu_count), item.price, item.gpu_memory) \
            if gpu_id in gpus() else None
        if devices is None:
            unmapped[item.gpu_name] = unmapped.get(item.gpu_name, 0) + 1
            continue
        offer = Offer(provider=provider, tier=providers().get(provider, {}).get("tier", ""), gpu_id=gpu_id,
                      gpu_count=devices[0], pricing="spot" if item.spot else "on_demand",
                      price_usd_per_gpu_hour=devices[1], region=item.location or "",
                      instance=item.instance_name or "", vcpus=float(item.cpu) if item.cpu else None,
                      memory_gib=float(item.memory) if item.memory else None, intra_node="", observed_at=today,
                      source=f"gpuhunt {version}".strip(), notes="", origin="gpuhunt", confidence="high")
        if plausible(offer, left_out) and (offer.key not in best or offer.price_usd_per_gpu_hour <
                                           best[offer.key].price_usd_per_gpu_hour):
            best[offer.key] = offer
    return Fetched(offers=[with_network(o) for o in best.values()], origin=f"gpuhunt {version}".strip(),
                   unmapped=unmapped, implausible=left_out)


class GpuhuntSource:
    name = "gpuhunt"

    def __init__(self, query_fn: Callable[..., Iterable[Any]] | None = None):
        self._query = query_fn

    def get(self, query: Query) -> Fetched:
        run = self._query or _default_query()
        reverse = {v: k for k, v in PROVIDERS.items()}
        kwargs = {"provider": [reverse.get(query.provider, query.provider)]} if query.provider else {}
        quiet = logging.getLogger("gpuhunt")  # gpuhunt logs a traceback per unreachable provider
        was = quiet.level
        quiet.setLevel(logging.CRITICAL + 1)
        try:
            items = list(run(min_gpu_count=1, **kwargs))
        except SourceError:
            raise
        except Exception as err:  # network, provider API or catalog download failures, whatever their class
            raise SourceError(f"gpuhunt could not fetch offers ({type(err).__name__}: {str(err)[:120]})") from None
        finally:
            quiet.setLevel(was)
        version = ""
        if self._query is None:
            import gpuhunt.version

            version = getattr(gpuhunt.version, "__version__", "")
        return offers_from_items(items, query.today, version)
